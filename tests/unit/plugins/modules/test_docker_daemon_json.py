# SPDX-License-Identifier: GPL-3.0-or-later
"""docker_daemon_json as a whole module: check+diff, real, idempotent (community.docker style)."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.inferops.serving.plugins.modules import docker_daemon_json

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}
LAB = {"storage-driver": "vfs", "iptables": False, "bridge": "none"}


def test_merge_check_real_idempotent(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps(LAB))
    args = {"path": str(path), "settings": NVIDIA, "backup": True}

    failed, result = run_module(docker_daemon_json, args, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert json.loads(path.read_text()) == LAB, "check mode must not write"
    assert json.loads(result["diff"]["before"]) == LAB
    assert json.loads(result["diff"]["after"]) == dict(LAB, **NVIDIA)

    failed, result = run_module(docker_daemon_json, args)
    assert not failed and result["changed"]
    assert json.loads(path.read_text()) == dict(LAB, **NVIDIA) == result["settings"]
    assert json.loads(open(result["backup_file"]).read()) == LAB

    failed, result = run_module(docker_daemon_json, args, diff=True)
    assert not failed and not result["changed"] and "backup_file" not in result
    assert result["diff"]["before"] == result["diff"]["after"]


def test_creates_missing_file(run_module, tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    failed, result = run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA}, diff=True)
    assert not failed and result["changed"] and result["diff"]["before"] == ""
    assert json.loads(path.read_text()) == NVIDIA
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"


def test_check_mode_does_not_create(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    failed, result = run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA}, check_mode=True)
    assert not failed and result["changed"] and not path.exists()


def test_keeps_mode_of_existing_file(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text("{}")
    path.chmod(0o600)
    run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA})
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_broken_file_is_refused_untouched(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"storage-driver": "vfs",')
    failed, result = run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA})
    assert failed and "not a usable Docker daemon configuration" in result["msg"]
    assert path.read_text() == '{"storage-driver": "vfs",'


def test_symlink_is_kept_and_its_target_written(run_module, tmp_path):
    target = tmp_path / "managed" / "daemon.json"
    target.parent.mkdir()
    target.write_text(json.dumps(LAB))
    link = tmp_path / "daemon.json"
    link.symlink_to(target)
    failed, result = run_module(docker_daemon_json, {"path": str(link), "settings": NVIDIA})
    assert not failed and result["changed"] and result["target"] == str(target)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text()) == dict(LAB, **NVIDIA)
    assert sorted(os.listdir(target.parent)) == ["daemon.json"]


def test_new_file_is_0644_whatever_the_umask(run_module, tmp_path):
    path = tmp_path / "daemon.json"
    old = os.umask(0o077)
    try:
        run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA})
    finally:
        os.umask(old)
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("data, message", [
    (b'{"labels": ["\xff"]}', "(not UTF-8 text: byte 0xff at offset 13 cannot be decoded)"),
    (b"[" * 100000 + b"]" * 100000, "(nested too deeply to be a daemon configuration (more than 64 levels))"),
    (b'{"max-concurrent-downloads": 1e400}', "(the number 1e400 is out of range for a 64-bit float"),
])
def test_unreadable_files_fail_with_a_message_not_a_traceback(run_module, tmp_path, data, message):
    path = tmp_path / "daemon.json"
    path.write_bytes(data)
    failed, result = run_module(docker_daemon_json, {"path": str(path), "settings": NVIDIA})
    assert failed and "exception" not in result
    assert result["msg"].startswith("%s is not a usable Docker daemon configuration %s" % (path, message))
    assert path.read_bytes() == data
