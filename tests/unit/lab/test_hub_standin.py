# SPDX-License-Identifier: GPL-3.0-or-later
"""The Hub stand-in (tests/lab/hub) against the real huggingface_hub client (requirements-hub.txt).

`hf download` by commit into a cache and into a local dir, `hf cache verify`, model_info with
file metadata, a resumed (ranged) download; git computes the same commit id from the same files.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

HUB_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab", "hub")
_SPEC = importlib.util.spec_from_file_location("hub_standin", os.path.join(HUB_DIR, "hub_standin.py"))
hub_standin = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hub_standin)

HF = os.path.join(os.path.dirname(sys.executable), "hf")
REPO = "inferops-lab/tiny-chat"
REPO_DIR = os.path.join(HUB_DIR, "repos", *REPO.split("/"))
FIRST = "45291e135b1f7baf20b0369dffb1548912a0c868"
SECOND = "64ead9037d63135d5285ad54d4f00ee9b2c7add9"

# requirements-dev.txt installs it (make test): a missing client is a failure, not a skip.
assert os.path.exists(HF), "huggingface_hub (requirements-hub.txt, part of requirements-dev.txt) is not installed: run scripts/bootstrap-python"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    log = tmp_path_factory.mktemp("hub") / "requests.jsonl"
    server = hub_standin.serve(os.path.join(HUB_DIR, "repos"), request_log=str(log))
    yield {"url": "http://127.0.0.1:%d" % server.server_address[1], "log": log}
    server.shutdown()


def hf(hub, *args, home):
    env = dict(os.environ, HF_ENDPOINT=hub["url"], HF_HOME=str(home), HF_HUB_DISABLE_UPDATE_CHECK="1",
               HF_HUB_DISABLE_TELEMETRY="1", NO_COLOR="1")
    env.pop("HF_TOKEN", None)
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run([HF] + list(args), env=env, capture_output=True, text=True, timeout=120, check=False)


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_the_commits_are_what_git_computes_from_the_same_files(tmp_path):
    commits = hub_standin.Store(os.path.join(HUB_DIR, "repos")).repo(REPO)
    assert [c.sha for c in commits] == [FIRST, SECOND]
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    work = tmp_path / "git"
    shutil.copytree(os.path.join(REPO_DIR, "1"), work)
    data = (work / "model.safetensors").read_bytes()
    (work / "model.safetensors").write_bytes(hub_standin.lfs_pointer(hashlib.sha256(data).hexdigest(), len(data)))
    env = dict(os.environ, GIT_AUTHOR_NAME="inferops lab", GIT_AUTHOR_EMAIL="lab@inferops.invalid",
               GIT_AUTHOR_DATE="1764547200 +0000", GIT_COMMITTER_NAME="inferops lab",
               GIT_COMMITTER_EMAIL="lab@inferops.invalid", GIT_COMMITTER_DATE="1764547200 +0000")

    def run(*args, **kwargs):
        return subprocess.run(["git"] + list(args), cwd=work, env=env, capture_output=True, text=True, check=True,
                              **kwargs).stdout.strip()

    run("init", "-q")
    run("add", "-A")
    assert run("commit-tree", run("write-tree"), input="1\n") == FIRST


def test_hf_download_by_commit_and_hf_cache_verify(hub, tmp_path):
    cache = tmp_path / "cache"
    result = hf(hub, "download", REPO, "--revision", FIRST, "--cache-dir", str(cache), home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    snapshot = cache / "models--inferops-lab--tiny-chat" / "snapshots" / FIRST
    assert sorted(os.listdir(snapshot)) == sorted(os.listdir(os.path.join(REPO_DIR, "1")))
    for name in os.listdir(snapshot):
        assert os.path.islink(snapshot / name)  # the cache layout: snapshots link to blobs
        assert sha256(snapshot / name) == sha256(os.path.join(REPO_DIR, "1", name))
    # The LFS blob is named by its sha256, the others by their git blob sha1 (as the Hub's ETags say).
    blobs = sorted(os.listdir(cache / "models--inferops-lab--tiny-chat" / "blobs"))
    assert sha256(os.path.join(REPO_DIR, "1", "model.safetensors")) in blobs
    verify = hf(hub, "cache", "verify", REPO, "--revision", FIRST, "--cache-dir", str(cache),
                "--fail-on-missing-files", "--fail-on-extra-files", home=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "6 file(s)" in verify.stdout
    # One flipped byte in the weights: verify names the file.
    blob = os.path.realpath(snapshot / "model.safetensors")
    data = bytearray(open(blob, "rb").read())
    data[100] ^= 1
    with open(blob, "wb") as handle:
        handle.write(data)
    verify = hf(hub, "cache", "verify", REPO, "--revision", FIRST, "--cache-dir", str(cache), home=tmp_path)
    assert verify.returncode != 0 and "model.safetensors" in verify.stdout + verify.stderr


def test_hf_download_to_a_local_dir_and_an_unknown_revision(hub, tmp_path):
    local = tmp_path / "local"
    result = hf(hub, "download", REPO, "--revision", SECOND, "--local-dir", str(local), home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Commit 2" in (local / "README.md").read_text()
    verify = hf(hub, "cache", "verify", REPO, "--revision", SECOND, "--local-dir", str(local), home=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    missing = hf(hub, "download", REPO, "--revision", "0" * 40, "--cache-dir", str(tmp_path / "c"), home=tmp_path)
    assert missing.returncode != 0


def test_model_info_with_file_metadata_and_main(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_UPDATE_CHECK", "1")
    from huggingface_hub import HfApi
    api = HfApi(endpoint=hub["url"], token=False)
    info = api.model_info(REPO, revision="main", files_metadata=True)
    assert info.sha == SECOND
    sizes = {s.rfilename: s.size for s in info.siblings}
    assert sizes == {n: os.path.getsize(os.path.join(REPO_DIR, "2", n)) for n in os.listdir(os.path.join(REPO_DIR, "2"))}
    lfs = {s.rfilename: s.lfs.sha256 for s in info.siblings if s.lfs}
    assert lfs == {"model.safetensors": sha256(os.path.join(REPO_DIR, "2", "model.safetensors"))}


def test_the_storage_url_serves_ranges_as_a_resumed_download_asks(hub):
    import httpx
    head = httpx.head("%s/%s/resolve/%s/model.safetensors" % (hub["url"], REPO, FIRST))
    assert head.status_code == 302 and head.headers["X-Repo-Commit"] == FIRST
    assert head.headers["Location"].startswith("http://localhost:")
    whole = httpx.get(head.headers["Location"]).content
    part = httpx.get(head.headers["Location"], headers={"Range": "bytes=10-"})
    assert part.status_code == 206 and part.content == whole[10:]
    assert hashlib.sha256(whole).hexdigest() == head.headers["X-Linked-Etag"].strip('"')
    lines = [json.loads(line) for line in open(hub["log"], encoding="utf-8")]
    assert any(line["path"].startswith("/lfs/") for line in lines)


def test_a_commit_removed_and_made_again_with_other_files_is_read_anew(tmp_path):
    """A test adds an upstream commit (a copy of the last one, a file changed), removes it, and a
    later test adds another under the same number: a copy keeps its source directory's mtime, so
    the stand-in, caching on the directories' mtimes, served the first one's sizes and commit id
    (the lab's pin test then found the README 10 bytes longer than the manifest said)."""
    root = tmp_path / "repos"
    shutil.copytree(os.path.join(HUB_DIR, "repos", *REPO.split("/"), "1"), root / REPO / "1")
    store = hub_standin.Store(str(root))

    def add(text):
        new = root / REPO / "2"
        shutil.copytree(root / REPO / "1", new)
        with open(new / "README.md", "a", encoding="utf-8") as handle:
            handle.write(text)
        return store.repo(REPO)[-1]

    first = add("\nOne re-upload.\n")
    shutil.rmtree(root / REPO / "2")
    second = add("\nAnother re-upload, longer.\n")
    assert second.sha != first.sha
    assert second.files["README.md"]["size"] == os.path.getsize(root / REPO / "2" / "README.md")
