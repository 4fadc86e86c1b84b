# SPDX-License-Identifier: GPL-3.0-or-later
"""image_digest_info against the real registry with authentication on (issue 26): Debian's
docker-registry (distribution 2.8, what the lab's registry runs) with htpasswd auth on a loopback
port, an image manifest pushed through its HTTP API, and the credentials read from a Docker config
as `docker login` writes it. Skipped where docker-registry is not installed."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.modules import image_digest_info

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
REGISTRY = shutil.which("docker-registry")
pytestmark = pytest.mark.skipif(REGISTRY is None, reason="docker-registry (distribution) is not installed")

# bcrypt of "s3cret" (made once with Python 3.12's crypt.crypt(..., crypt.mksalt(crypt.METHOD_BLOWFISH,
# rounds=32)); distribution reads htpasswd files with bcrypt entries only.
HTPASSWD = "robot:$2b$05$TaoSROyBxbcuEVsst1itH.EezBUZA9kxJYGl/9MMBOgErXV8Msyrm\n"
BASIC = "Basic " + base64.b64encode(b"robot:s3cret").decode()
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}, Authorization=BASIC))
    with urllib.request.urlopen(req, timeout=10) as response:
        return response.status, response.headers


def push_blob(base, name, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    dummy, headers = request("POST", "%s/v2/%s/blobs/uploads/" % (base, name))
    location = headers["Location"]
    location = location if location.startswith("http") else base + location
    request("PUT", "%s%sdigest=%s" % (location, "&" if "?" in location else "?", digest), data,
            {"Content-Type": "application/octet-stream"})
    return digest, len(data)


@pytest.fixture
def registry(tmp_path):
    """(host:port, the pushed manifest's digest) of a running htpasswd-protected registry."""
    port = free_port()
    (tmp_path / "htpasswd").write_text(HTPASSWD)
    (tmp_path / "config.yml").write_text(
        "version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s}}\n"
        "http: {addr: '127.0.0.1:%d', secret: test-only}\nauth: {htpasswd: {realm: inferops-test, path: %s}}\n"
        % (tmp_path / "data", port, tmp_path / "htpasswd"))
    process = subprocess.Popen([REGISTRY, "serve", str(tmp_path / "config.yml")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    try:
        for dummy in range(100):
            try:
                request("GET", base + "/v2/")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        config_digest, config_size = push_blob(base, "vllm/vllm-openai", b'{"architecture":"amd64","os":"linux"}')
        layer_digest, layer_size = push_blob(base, "vllm/vllm-openai", b"layer bytes")
        manifest = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_V2,
                               "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                                          "size": config_size, "digest": config_digest},
                               "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                                           "size": layer_size, "digest": layer_digest}]}).encode()
        request("PUT", base + "/v2/vllm/vllm-openai/manifests/cu130-nightly", manifest, {"Content-Type": MANIFEST_V2})
        yield "127.0.0.1:%d" % port, "sha256:" + hashlib.sha256(manifest).hexdigest()
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def docker_config(tmp_path, monkeypatch):
    directory = tmp_path / "docker-config"
    directory.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(directory))
    return directory / "config.json"


def test_docker_logins_credentials_read_the_protected_registry(run_module, registry, docker_config):
    where, digest = registry
    image = "%s/vllm/vllm-openai:cu130-nightly" % where
    failed, result = run_module(image_digest_info, {"image": image}, check_mode=True)
    assert failed and result["msg"].startswith("%s asks for a user name and password" % where)
    docker_config.write_text(json.dumps({"auths": {where: {"auth": base64.b64encode(b"robot:s3cret").decode()}}}))
    failed, result = run_module(image_digest_info, {"image": image}, check_mode=True)
    assert not failed, result
    assert result["digest"] == digest and result["authenticated"] == "basic"
    assert result["credentials"] == "%s auths[%s]" % (docker_config, where) and "s3cret" not in repr(result)


def test_pin_check_reads_the_protected_registry_with_the_docker_login(registry, docker_config, tmp_path):
    """playbooks/pin.yml --check on a one-host inventory (local connection, as
    tests/unit/playbooks/test_pin_check.py) whose registry prefix is the protected registry: the
    canary's Docker config (DOCKER_CONFIG) is what lets it read the tag's digest."""
    where, digest = registry
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"spark-1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (inv / "group_vars" / "all" / "main.yml").write_text(yaml.safe_dump({
        "server_profile": "gb10-nvfp4-mtp-latency", "inferops_become": False, "server_registry_prefix": where}))
    docker_config.write_text(json.dumps({"auths": {where: {"auth": base64.b64encode(b"robot:s3cret").decode()}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([playbook, "playbooks/pin.yml", "--check", "-i", str(inv / "hosts.yml")], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "now points to %s" % digest in result.stdout
    assert "s3cret" not in result.stdout and base64.b64encode(b"robot:s3cret").decode() not in result.stdout
