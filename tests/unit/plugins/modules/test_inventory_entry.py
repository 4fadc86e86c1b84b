# SPDX-License-Identifier: GPL-3.0-or-later
"""inventory_entry as a whole module: two canaries writing at once both keep their entry."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.modules import inventory_entry

COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))), ".collections")
HEADER = "Written by playbooks/pin.yml: digests validated on a canary."


def lock_args(path, image, digest):
    return {"path": str(path), "variable": "inferops_serving_image_lock", "section": "images", "key": image,
            "entry": {"digest": digest, "evidence": {"canary": image.split("/")[0]}}, "header": HEADER}


def start(args, tmp_path, name):
    """The module as Ansible runs it on the controller: a separate Python process with its args file."""
    args_file = tmp_path / ("%s.json" % name)
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    return subprocess.Popen([sys.executable, "-m", "ansible_collections.inferops.serving.plugins.modules.inventory_entry",
                             str(args_file)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    return json.loads(out)


def test_creates_group_vars_all_and_the_file(run_module, tmp_path):
    path = tmp_path / "inv" / "group_vars" / "all" / "image_lock.yml"
    failed, result = run_module(inventory_entry, lock_args(path, "vllm/vllm-openai:cu130-nightly", "d1"),
                                check_mode=True)
    assert not failed and result["changed"] and not (tmp_path / "inv").exists()
    failed, result = run_module(inventory_entry, lock_args(path, "vllm/vllm-openai:cu130-nightly", "d1"), diff=True)
    assert not failed and result["changed"]
    assert oct(os.stat(path.parent).st_mode & 0o777) == "0o755"
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    text = path.read_text()
    assert text.startswith("---\n# Written by playbooks/pin.yml: digests validated on a canary.\n")
    assert yaml.safe_load(text)["inferops_serving_image_lock"]["images"]["vllm/vllm-openai:cu130-nightly"] == \
        {"digest": "d1", "evidence": {"canary": "vllm"}}
    assert result["diff"]["before"] == "" and result["diff"]["after"] == text
    assert sorted(os.listdir(path.parent)) == [".image_lock.yml.lock", "image_lock.yml"]


def test_same_entry_again_is_unchanged_and_other_keys_and_header_kept(run_module, tmp_path):
    path = tmp_path / "lock.yml"
    path.write_text("---\n# hand-written header\nsomething_else: [1, 2]\n")
    args = dict(lock_args(path, "a/b:c", "d1"), header=None)
    failed, result = run_module(inventory_entry, args)
    assert not failed and result["changed"]
    text = path.read_text()
    assert text.startswith("---\n# hand-written header\n")
    assert yaml.safe_load(text)["something_else"] == [1, 2]
    mtime = os.stat(path).st_mtime_ns
    failed, result = run_module(inventory_entry, args)
    assert not failed and not result["changed"] and os.stat(path).st_mtime_ns == mtime


def test_bad_yaml_and_wrong_shape_fail_clearly(run_module, tmp_path):
    path = tmp_path / "lock.yml"
    path.write_text("inferops_serving_image_lock: [\n")
    failed, result = run_module(inventory_entry, lock_args(path, "a/b:c", "d1"))
    assert failed and result["msg"].startswith("%s is not valid YAML (" % path)
    path.write_text("inferops_serving_image_lock: [1]\n")
    failed, result = run_module(inventory_entry, lock_args(path, "a/b:c", "d1"))
    assert failed and result["msg"] == ("cannot merge the entry into %s: inferops_serving_image_lock is a list; "
                                        "expected a mapping" % path)


def test_two_canaries_waiting_on_the_lock_both_keep_their_entry(tmp_path):
    """Both writers start while the lock is held, so both have to wait, then run one after the other."""
    path = tmp_path / "group_vars" / "all" / "image_lock.yml"
    path.parent.mkdir(parents=True)
    lock = os.open(str(path.parent / ".image_lock.yml.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    procs = [start(lock_args(path, "vllm/vllm-openai:cu130-nightly", "sha256:" + "1" * 64), tmp_path, "spark"),
             start(lock_args(path, "lmsysorg/sglang:v0.5.13", "sha256:" + "2" * 64), tmp_path, "g7e")]
    time.sleep(3)
    assert all(proc.poll() is None for proc in procs), "the writers must wait for the lock"
    assert not path.exists()
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    results = [finish(proc) for proc in procs]
    assert all(result["changed"] for result in results)
    images = yaml.safe_load(path.read_text())["inferops_serving_image_lock"]["images"]
    assert images == {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "1" * 64, "evidence": {"canary": "vllm"}},
                      "lmsysorg/sglang:v0.5.13": {"digest": "sha256:" + "2" * 64, "evidence": {"canary": "lmsysorg"}}}


def test_four_known_bad_writers_at_once_keep_every_entry(tmp_path):
    path = tmp_path / "known_bad.yml"
    procs = [start({"path": str(path), "variable": "inferops_known_bad_images", "match": "digest",
                    "entry": {"digest": "sha256:%s" % (str(i) * 64), "signature": "cuda_error"}}, tmp_path, "c%d" % i)
             for i in range(4)]
    for proc in procs:
        finish(proc)
    digests = sorted(e["digest"] for e in yaml.safe_load(path.read_text())["inferops_known_bad_images"])
    assert digests == ["sha256:%s" % (str(i) * 64) for i in range(4)]


def test_lock_timeout_fails_with_a_message(tmp_path):
    path = tmp_path / "lock.yml"
    lock = os.open(str(tmp_path / ".lock.yml.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        proc = start(dict(lock_args(path, "a/b:c", "d1"), lock_timeout=1), tmp_path, "t")
        out, _err = proc.communicate(timeout=60)
    finally:
        os.close(lock)
    result = json.loads(out)
    assert result["failed"]
    assert "another process held the lock %s/.lock.yml.lock for more than 1 s (lock_timeout)" % tmp_path in result["msg"]


@pytest.mark.parametrize("mode", ["0600", 0o600])
def test_mode(run_module, tmp_path, mode):
    path = tmp_path / "lock.yml"
    run_module(inventory_entry, dict(lock_args(path, "a/b:c", "d1"), mode=mode))
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_a_list_entry_is_written_as_ansible_lint_wants_it(run_module, tmp_path):
    """The known-bad list the rollback and the pin write sits in the inventory that ansible-lint
    (production profile, yamllint's default indentation) reads: its sequences are indented."""
    path = tmp_path / "group_vars" / "all" / "known_bad_images.yml"
    entry = {"id": "rolled-back:spark", "digest": "sha256:" + "a" * 64, "rolled_back": {"host": "spark-01"}}
    failed, result = run_module(inventory_entry, {"path": str(path), "variable": "inferops_known_bad_images",
                                                  "match": "id", "entry": entry})
    assert not failed and result["changed"], result
    text = path.read_text()
    assert "inferops_known_bad_images:\n  - id: rolled-back:spark\n" in text, text
    config = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".yamllint")  # the repository's
    # yamllint as ansible-lint runs it: this venv's, else the one on PATH (the lowest ansible-core's
    # venv of scripts/check-ansible-versions has no linters of its own).
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
    candidates = [os.path.join(os.path.dirname(sys.executable), "yamllint"), os.path.join(root, ".venv", "bin", "yamllint")]
    yamllint = next((path for path in candidates if os.path.exists(path)), None) or shutil.which("yamllint")
    assert yamllint, "yamllint is not installed (requirements-dev.txt)"
    lint = subprocess.run([yamllint, "-c", config, "-f", "parsable", str(path)],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
