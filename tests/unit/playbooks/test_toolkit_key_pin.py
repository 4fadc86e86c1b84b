# SPDX-License-Identifier: GPL-3.0-or-later
"""The container_toolkit role's signing-key step (tasks/key.yml) in check mode on this machine
(issue 25, finding 4): a key whose fingerprint is pinned would be installed; any other armored key
is refused before it is trusted (the role used to install whatever armored key the URL served).

The key URL is a loopback HTTP server standing for https://nvidia.github.io/libnvidia-container/gpgkey,
serving the test keys of tests/unit/fixtures/apt_keys (README there: how they were made).
Check mode: nothing is written on this machine.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KEYS = os.path.join(ROOT, "tests", "unit", "fixtures", "apt_keys")
RSA = "17DDAEA3730200EE6D74DAC254F8DF621D8524E5"
ED25519 = "B6791E851FF56D7A219D483374840AED11EA37A6"
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    # The role's read (tasks/preflight.yml): toolkit_info downloads the key, and reads the installed
    # one's digest (keyring_sha256); only its key options matter here.
    - inferops.serving.toolkit_info:
        packages: [nvidia-container-toolkit]
        version: 1.17.8-1
        preferences: ""
        key_url: "{{ container_toolkit_repository_key_url }}"
        keyring: "{{ keyring }}"
        daemon_json_path: "{{ keyring }}.daemon.json"
      register: __container_toolkit_state
    - ansible.builtin.include_role:
        name: inferops.serving.container_toolkit
        tasks_from: key
"""


@pytest.fixture(scope="module")
def key_server():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=KEYS)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def key_step(tmp_path, url, pinned, installed=None):
    """The key step in check mode; ``installed``: the key file on the host (root's, 0644), else none."""
    (tmp_path / "play.yml").write_text(PLAY)
    keyring = tmp_path / "nvidia-container-toolkit-keyring.asc"
    if installed is not None:
        keyring.write_bytes(installed)
        keyring.chmod(0o644)
    extra = {"container_toolkit_repository_key_url": url, "container_toolkit_repository_key_fingerprints": pinned,
             "keyring": str(keyring), "ansible_python_interpreter": sys.executable}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0", no_proxy="127.0.0.1")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, str(tmp_path / "play.yml"), "--check", "-i", "localhost,", "-c", "local",
                           "-e", json.dumps(extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_the_pinned_key_would_be_installed(tmp_path, key_server):
    result = key_step(tmp_path, key_server + "/ed25519.asc", [ED25519.lower()])
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Install the repository signing key" in result.stdout
    # The check passed, so its refusal did not run (a converge runs no task for it).
    refusal = result.stdout.split("Refuse a signing key whose fingerprint is not pinned]")[1]
    assert re.match(r"[^\n]*\nskipping: \[localhost\]", refusal), refusal[:300]


def test_the_pinned_key_already_installed_is_not_written_again(tmp_path, key_server):
    if os.geteuid() != 0:
        pytest.skip("toolkit_info vouches only for a key file owned by root")
    with open(os.path.join(KEYS, "ed25519.asc"), "rb") as handle:
        installed = handle.read()
    result = key_step(tmp_path, key_server + "/ed25519.asc", [ED25519], installed=installed)
    assert result.returncode == 0, result.stdout[-3000:]
    install = result.stdout.split("Install the repository signing key]")[1]
    assert re.match(r"[^\n]*\nskipping: \[localhost\]", install), install[:300]


@pytest.mark.parametrize("served", ["rsa2048.asc", "both.asc"])
def test_a_key_with_another_fingerprint_is_refused_before_it_is_trusted(tmp_path, key_server, served):
    result = key_step(tmp_path, key_server + "/" + served, [ED25519])
    assert result.returncode != 0
    assert ("serves a key with the fingerprint %s, which container_toolkit_repository_key_fingerprints does not list"
            % RSA) in result.stdout, result.stdout[-3000:]
    assert "Install the repository signing key" not in result.stdout


def test_a_key_url_that_does_not_answer_200_fails_the_read_naming_it(tmp_path, key_server):
    result = key_step(tmp_path, key_server + "/missing.asc", [ED25519])
    assert result.returncode != 0
    assert ("the repository signing key %s/missing.asc could not be downloaded: HTTP 404" % key_server) in result.stdout, \
        result.stdout[-3000:]
    assert "Install the repository signing key" not in result.stdout


def test_an_answer_larger_than_a_key_is_refused_before_it_is_read_whole(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "huge.asc").write_bytes(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n" + b"A" * (2 * 1024 * 1024))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d/huge.asc" % server.server_address[1]
        result = key_step(tmp_path, url, [ED25519])
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode != 0
    assert "the repository signing key %s is larger than 1048576 bytes" % url in result.stdout, result.stdout[-3000:]
    assert "Install the repository signing key" not in result.stdout
