# SPDX-License-Identifier: GPL-3.0-or-later
"""A model's staged files against its revision's manifest: real files in a real cache layout.

The cache is laid out as huggingface_hub lays it (blobs named by sha256 / git blob sha1, snapshot
entries as relative symlinks to them), from the lab's small real repository (tests/lab/hub/repos).
"""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _model_cache as mc

REPO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lab", "hub", "repos",
                        "inferops-lab", "tiny-chat", "1")
MODEL = "inferops-lab/tiny-chat"
COMMIT = "45291e135b1f7baf20b0369dffb1548912a0c868"


def hub_info():
    """What the Hub's /api/models/<repo>/revision/<commit>?blobs=true answers for the lab repository."""
    siblings = []
    for name in sorted(os.listdir(REPO_DIR)):
        data = open(os.path.join(REPO_DIR, name), "rb").read()
        sibling = {"rfilename": name, "size": len(data),
                   "blobId": hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()}
        if name.endswith(".safetensors"):
            sibling["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        siblings.append(sibling)
    return {"id": MODEL, "sha": COMMIT, "siblings": siblings}


@pytest.fixture
def manifest():
    return mc.manifest_from_info(hub_info(), COMMIT)


def stage(hub_cache, manifest):
    """The cache as `hf download --revision <commit> --cache-dir` leaves it."""
    folder = mc.repo_folder(str(hub_cache), MODEL)
    os.makedirs(os.path.join(folder, "blobs"))
    snapshot = os.path.join(folder, "snapshots", COMMIT)
    os.makedirs(snapshot)
    for path, entry in manifest["files"].items():
        shutil.copy(os.path.join(REPO_DIR, path), os.path.join(folder, "blobs", mc.blob_name(entry)))
        os.symlink(os.path.join("..", "..", "blobs", mc.blob_name(entry)), os.path.join(snapshot, path))
    return folder, snapshot


def test_the_manifest_has_the_lfs_sha256_and_the_git_sha1(manifest):
    assert set(manifest["files"]) == set(os.listdir(REPO_DIR))
    assert set(manifest["files"]["model.safetensors"]) == {"size", "sha256"}
    assert set(manifest["files"]["config.json"]) == {"size", "git_sha1"}
    assert mc.manifest_sha256(manifest) == mc.manifest_sha256(mc.manifest_from_info(hub_info(), COMMIT))


def test_an_answer_for_another_commit_is_refused():
    with pytest.raises(mc.ModelCacheError, match="answered for commit 'x', not the pinned " + COMMIT):
        mc.manifest_from_info(dict(hub_info(), sha="x"), COMMIT)


def test_a_staged_snapshot_verifies_and_the_fingerprint_is_stat_only(tmp_path, manifest):
    folder, snapshot = stage(tmp_path, manifest)
    problems, fingerprint = mc.verify_snapshot(snapshot, manifest, folder)
    assert problems == []
    assert [row[0] for row in fingerprint] == sorted(manifest["files"])
    assert mc.marker_vouches(mc.marker_record(manifest, fingerprint), manifest, fingerprint)


def flip_byte(path, offset=100):
    data = bytearray(open(path, "rb").read())
    data[offset] ^= 1
    with open(path, "wb") as handle:
        handle.write(data)


@pytest.mark.parametrize("damage, path, fragment", [
    (lambda folder, snap: os.unlink(os.path.join(snap, "config.json")), "config.json", "missing"),
    (lambda folder, snap: os.unlink(os.path.realpath(os.path.join(snap, "model.safetensors"))), "model.safetensors",
     "a dangling symlink (-> ../../blobs/"),
    (lambda folder, snap: flip_byte(os.path.realpath(os.path.join(snap, "model.safetensors"))), "model.safetensors",
     "sha256 "),
    (lambda folder, snap: flip_byte(os.path.realpath(os.path.join(snap, "config.json")), 5), "config.json",
     "git_sha1 "),
    (lambda folder, snap: open(os.path.realpath(os.path.join(snap, "model.safetensors")), "r+b").truncate(100),
     "model.safetensors", "100 bytes, the revision has 456"),
])
def test_each_damage_is_refused_naming_the_file(tmp_path, manifest, damage, path, fragment):
    folder, snapshot = stage(tmp_path, manifest)
    damage(folder, snapshot)
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder)
    assert [p["path"] for p in problems] == [path]
    assert fragment in problems[0]["problem"]


def test_a_copy_made_of_symlinks_to_another_tree_is_refused(tmp_path, manifest):
    """EU PR 408: a copy whose entries link to the source host's tree (intact here, so every hash would
    match) is not a copy; it breaks when the source goes."""
    source_folder, source_snapshot = stage(tmp_path / "source", manifest)
    folder = mc.repo_folder(str(tmp_path / "peer"), MODEL)
    snapshot = os.path.join(folder, "snapshots", COMMIT)
    os.makedirs(snapshot)
    for path in manifest["files"]:
        os.symlink(os.path.realpath(os.path.join(source_snapshot, path)), os.path.join(snapshot, path))
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder)
    assert sorted(p["path"] for p in problems) == sorted(manifest["files"])
    assert all("outside %s" % folder in p["problem"] for p in problems)
    assert "model.safetensors: a symlink to %s" % source_folder in mc.format_problems(problems, "x")


def test_a_rewritten_file_voids_the_marker(tmp_path, manifest):
    folder, snapshot = stage(tmp_path, manifest)
    _problems, fingerprint = mc.verify_snapshot(snapshot, manifest, folder)
    marker = mc.marker_record(manifest, fingerprint)
    blob = os.path.realpath(os.path.join(snapshot, "model.safetensors"))
    stat = os.stat(blob)
    os.utime(blob, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    _problems, later = mc.verify_snapshot(snapshot, manifest, folder, fingerprint_only=True)
    assert not mc.marker_vouches(marker, manifest, later)
    other = dict(manifest, files=dict(manifest["files"], extra={"size": 1, "git_sha1": "0" * 40}))
    assert not mc.marker_vouches(marker, other, fingerprint)


def test_the_space_verdict_uses_the_real_size_and_what_is_there(manifest):
    total = mc.total_bytes(manifest)
    weights = manifest["files"]["model.safetensors"]
    assert mc.space_verdict(manifest, {}, total)["ok"]
    short = mc.space_verdict(manifest, {}, total - 1)
    assert not short["ok"] and "free 1 B on the cache's filesystem" in short["message"]
    # A complete blob and a partial download both count (hf download resumes the .incomplete file).
    partial = mc.space_verdict(manifest, {weights["sha256"] + ".incomplete": 56}, total - 56)
    assert partial["ok"] and partial["present"] == 56 and partial["needed"] == total - 56
    done = mc.space_verdict(manifest, {mc.blob_name(e): e["size"] for e in manifest["files"].values()}, 0)
    assert done["ok"] and done["needed"] == 0
    assert not mc.space_verdict(manifest, {}, total, reserve_bytes=1)["ok"]


@pytest.mark.parametrize("manifest, fragment", [
    ({"revision": "main", "files": {}}, "40-hex commit"),
    ({"revision": COMMIT, "files": {}}, "expected a mapping of paths"),
    ({"revision": COMMIT, "files": {"../x": {"size": 1, "git_sha1": "0" * 40}}}, "relative path"),
    ({"revision": COMMIT, "files": {"x": {"size": -1, "git_sha1": "0" * 40}}}, "whole number"),
    ({"revision": COMMIT, "files": {"x": {"size": 1, "sha256": "abc"}}}, "sha256 (64 hex)"),
])
def test_a_malformed_manifest_is_refused(manifest, fragment):
    with pytest.raises(mc.ModelCacheError) as err:
        mc.check_manifest(manifest, "lock manifest")
    assert fragment in str(err.value) and str(err.value).startswith("lock manifest")
