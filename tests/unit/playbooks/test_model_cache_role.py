# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/model_cache as a playbook runs it, on this machine (connection local), with the real `hf`
(requirements-hub.txt) downloading from the lab's Hub stand-in: stage, verify, a no-op converge that
reads no weights, a new upstream commit that changes nothing, a flipped byte refused naming the file."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HUB_DIR = os.path.join(ROOT, "tests", "lab", "hub")
HF = os.path.join(os.path.dirname(sys.executable), "hf")
MODEL = "inferops-lab/tiny-chat"
COMMIT = "45291e135b1f7baf20b0369dffb1548912a0c868"

# requirements-dev.txt installs it (make test): a missing client is a failure, not a skip.
assert os.path.exists(HF), "huggingface_hub (requirements-hub.txt, part of requirements-dev.txt) is not installed: run scripts/bootstrap-python"

PLAYBOOK = """---
- name: Stage the pinned model
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: inferops.serving.model_cache
      vars:
        model_cache_model: %(model)s
        model_cache_revision: "%(revision)s"
        model_cache_dir: %(cache)s
        model_cache_endpoint: %(endpoint)s
        model_cache_hf_command: %(hf)s
        model_cache_reserve_bytes: 0
        model_cache_progress_interval: 1
        model_cache_timeout: 120
"""


@pytest.fixture
def hub(tmp_path):
    root = tmp_path / "repos"
    shutil.copytree(os.path.join(HUB_DIR, "repos"), root)
    spec = importlib.util.spec_from_file_location("hub_standin", os.path.join(HUB_DIR, "hub_standin.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    log = tmp_path / "requests.jsonl"
    server = module.serve(str(root), request_log=str(log))
    yield {"url": "http://127.0.0.1:%d" % server.server_address[1], "root": root, "log": log}
    server.shutdown()


def converge(tmp_path, hub, *extra):
    playbook = tmp_path / "stage.yml"
    playbook.write_text(PLAYBOOK % {"model": MODEL, "revision": COMMIT, "cache": tmp_path / "hf",
                                    "endpoint": hub["url"], "hf": HF})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([playbook_bin, str(playbook)] + list(extra), cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    return result, result.stdout + result.stderr


def recap(out):
    line = [line for line in out.splitlines() if line.startswith("localhost")][-1]
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def test_stages_verifies_then_a_noop_converge_reads_no_weights(tmp_path, hub):
    result, out = converge(tmp_path, hub, "--check")
    assert result.returncode == 0, out
    assert not (tmp_path / "hf" / "hub").exists()  # check mode downloads nothing
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    snapshot = tmp_path / "hf" / "hub" / "models--inferops-lab--tiny-chat" / "snapshots" / COMMIT
    assert sorted(os.listdir(snapshot)) == sorted(os.listdir(os.path.join(HUB_DIR, "repos", MODEL, "1")))
    marker = json.loads((snapshot.parent.parent / ".inferops-verified.json").read_text())
    assert list(marker) == [COMMIT]
    downloads = [line for line in hub["log"].read_text().splitlines() if "/resolve/" in line]
    # Unchanged: the role's argument check and the manifest read, then the role ends (a meta task,
    # not in the recap); no file fetched.
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    assert recap(out)["changed"] == "0" and recap(out)["ok"] == "2" and recap(out)["skipped"] == "0", out
    assert "Stage and verify the pinned revision" not in out
    assert [line for line in hub["log"].read_text().splitlines() if "/resolve/" in line] == downloads
    # A new commit upstream: the pinned commit is still what the host has.
    shutil.copytree(hub["root"] / MODEL / "2", hub["root"] / MODEL / "3")
    (hub["root"] / MODEL / "3" / "README.md").write_text("# tiny-chat\n\nCommit 3.\n")
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0 and recap(out)["changed"] == "0", out


def test_a_flipped_byte_is_refused_naming_the_file(tmp_path, hub):
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    snapshot = tmp_path / "hf" / "hub" / "models--inferops-lab--tiny-chat" / "snapshots" / COMMIT
    blob = os.path.realpath(snapshot / "model.safetensors")
    data = bytearray(open(blob, "rb").read())
    data[200] ^= 1
    with open(blob, "wb") as handle:
        handle.write(data)
    result, out = converge(tmp_path, hub)
    assert result.returncode != 0
    assert "%s@%s is not the pinned revision in %s: model.safetensors: sha256 " % (MODEL, COMMIT, snapshot) in out


def test_a_truncated_file_is_refused_naming_the_file_and_its_size(tmp_path, hub):
    """A download cut short (a full disk, a killed copy): the size differs from the manifest's."""
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    snapshot = tmp_path / "hf" / "hub" / "models--inferops-lab--tiny-chat" / "snapshots" / COMMIT
    blob = os.path.realpath(snapshot / "model.safetensors")
    size = os.path.getsize(blob)
    with open(blob, "r+b") as handle:
        handle.truncate(size // 2)
    result, out = converge(tmp_path, hub)
    assert result.returncode != 0
    text = " ".join(out.split())
    assert "%s@%s is not the pinned revision in %s: model.safetensors:" % (MODEL, COMMIT, snapshot) in text, text[-2000:]
    assert str(size // 2) in text and str(size) in text, text[-2000:]


def test_an_offline_host_converges_from_the_lock_manifest_without_the_hub(tmp_path, hub):
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    commit = hub_standin_commit(hub)
    manifest = {"revision": COMMIT, "files": {
        path: ({"size": e["size"], "sha256": e["lfs"]["oid"]} if e["lfs"] else {"size": e["size"], "git_sha1": e["oid"]})
        for path, e in commit.files.items()}}
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps({"inferops_serving_image_lock": {"models": {MODEL: {"revision": COMMIT,
                                                                                   "manifest": manifest}}}}))
    before = len(hub["log"].read_text().splitlines())
    offline = dict(hub, url="http://127.0.0.1:9")  # nothing listens there
    result, out = converge(tmp_path, offline, "-e", "@%s" % lock)
    assert result.returncode == 0 and recap(out)["changed"] == "0", out
    assert len(hub["log"].read_text().splitlines()) == before


def hub_standin_commit(hub):
    spec = importlib.util.spec_from_file_location("hub_standin", os.path.join(HUB_DIR, "hub_standin.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Store(str(hub["root"])).repo(MODEL)[0]


def lock_with_manifest(tmp_path, hub):
    commit = hub_standin_commit(hub)
    manifest = {"revision": COMMIT, "files": {
        path: ({"size": e["size"], "sha256": e["lfs"]["oid"]} if e["lfs"] else {"size": e["size"], "git_sha1": e["oid"]})
        for path, e in commit.files.items()}}
    lock = tmp_path / "lock-with-manifest.json"
    lock.write_text(json.dumps({"inferops_serving_image_lock": {"models": {MODEL: {"revision": COMMIT,
                                                                                   "manifest": manifest}}}}))
    return lock


def test_a_peer_copy_is_verified_here_and_asks_the_hub_nothing(tmp_path, hub):
    """model_cache_source: rsync copies the peer's repository folder (a local path here; the lab test
    test_model_cache_in_the_lab.py copies over SSH between two hosts), and this host verifies it."""
    result, out = converge(tmp_path, hub)  # the peer stages from the Hub
    assert result.returncode == 0, out
    lock, before = lock_with_manifest(tmp_path, hub), len(hub["log"].read_text().splitlines())
    offline = dict(hub, url="http://127.0.0.1:9")  # nothing listens there
    result, out = converge(tmp_path, offline, "-e", "@%s" % lock, "-e", "model_cache_dir=%s" % (tmp_path / "copy"),
                           "-e", "model_cache_source=%s" % (tmp_path / "hf" / "hub"))
    assert result.returncode == 0 and recap(out)["changed"] != "0", out
    assert len(hub["log"].read_text().splitlines()) == before
    folder = tmp_path / "copy" / "hub" / "models--inferops-lab--tiny-chat"
    assert list(json.loads((folder / ".inferops-verified.json").read_text())) == [COMMIT]
    weights = os.path.realpath(folder / "snapshots" / COMMIT / "model.safetensors")
    assert weights.startswith(str(folder / "blobs") + os.sep)  # its own blob, not the peer's
    result, out = converge(tmp_path, offline, "-e", "@%s" % lock, "-e", "model_cache_dir=%s" % (tmp_path / "copy"),
                           "-e", "model_cache_source=%s" % (tmp_path / "hf" / "hub"))
    assert result.returncode == 0 and recap(out)["changed"] == "0", out


def test_a_peer_copy_made_of_symlinks_is_refused_naming_the_file(tmp_path, hub):
    """The rsync PR 408 case: the peer's snapshot is links to another tree (cp -rs), and the copy
    carries those links; the verification refuses the first of them before anything uses it."""
    result, out = converge(tmp_path, hub)
    assert result.returncode == 0, out
    staged = tmp_path / "hf" / "hub" / "models--inferops-lab--tiny-chat" / "snapshots" / COMMIT
    linked = tmp_path / "linked" / "hub" / "models--inferops-lab--tiny-chat" / "snapshots" / COMMIT
    linked.mkdir(parents=True)
    for name in os.listdir(staged):
        os.symlink(os.path.realpath(staged / name), linked / name)
    result, out = converge(tmp_path, dict(hub, url="http://127.0.0.1:9"), "-e", "@%s" % lock_with_manifest(tmp_path, hub),
                           "-e", "model_cache_dir=%s" % (tmp_path / "copy"),
                           "-e", "model_cache_source=%s" % (tmp_path / "linked" / "hub"))
    assert result.returncode != 0
    copy = tmp_path / "copy" / "hub" / "models--inferops-lab--tiny-chat"
    assert "README.md: a symlink to %s, outside %s" % (os.path.realpath(staged / "README.md"), copy) in out, out
    assert not (copy / ".inferops-verified.json").exists()
