# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/pin.yml --check on a one-host inventory (local connection): the tag's current digest
comes from the registry's manifest API (the registry test double, tests/unit/plugins/modules/
registry_double.py, standing for the lab registry), nothing is pulled, deployed or written."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_SPEC = importlib.util.spec_from_file_location(
    "registry_double", os.path.join(ROOT, "tests", "unit", "plugins", "modules", "registry_double.py"))
registry_double = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(registry_double)
DOCKER_MANIFEST_V2, RegistryDouble, manifest = (registry_double.DOCKER_MANIFEST_V2, registry_double.RegistryDouble,
                                                registry_double.manifest)

TAG = "vllm/vllm-openai:cu130-nightly"
LOCKED = "sha256:" + "3d" * 32


def inventory(tmp_path, port, lock_digest):
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"spark-1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (inv / "group_vars" / "all" / "main.yml").write_text(yaml.safe_dump({
        "server_profile": "gb10-nvfp4-mtp-latency", "inferops_become": False,
        "server_registry_prefix": "127.0.0.1:%d" % port}))
    if lock_digest:
        (inv / "group_vars" / "all" / "image_lock.yml").write_text(yaml.safe_dump({"inferops_serving_image_lock": {
            "images": {TAG: {"digest": lock_digest, "pinned_at": "2026-11-01T10:00:00Z"}}}}))
    return inv


def tree(path):
    return {os.path.join(d, f): hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for d, dummy, files in os.walk(path) for f in files}


def pin_check(inv):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "playbooks/pin.yml", "--check", "-i", str(inv / "hosts.yml")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_pin_check_reads_the_new_digest_from_the_registry_and_writes_nothing(tmp_path):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        inv = inventory(tmp_path, double.port, LOCKED)
        before = tree(inv)
        result = pin_check(inv)
        new = double.digest(TAG)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert ("%s now points to %s (%s, read from http://127.0.0.1:%d/v2/vllm/vllm-openai/manifests/cu130-nightly); "
            "the lock has %s, pinned 2026-11-01T10:00:00Z." % (TAG, new, DOCKER_MANIFEST_V2, double.port, LOCKED)) in out
    assert "Without --check: deploy it on canary spark-1" in out
    assert [r["method"] for r in double.requests] == ["HEAD"]
    assert tree(inv) == before
    assert "changed=0" in out


def test_pin_check_with_nothing_new_says_so(tmp_path):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        inv = inventory(tmp_path, double.port, None)
        (inv / "group_vars" / "all" / "image_lock.yml").write_text(yaml.safe_dump({"inferops_serving_image_lock": {
            "images": {TAG: {"digest": double.digest(TAG), "pinned_at": "2026-11-29T08:00:00Z"}}}}))
        result = pin_check(inv)
        digest = double.digest(TAG)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "%s is still %s, pinned 2026-11-29T08:00:00Z: nothing new." % (TAG, digest) in result.stdout
    assert "Without --check" not in result.stdout
