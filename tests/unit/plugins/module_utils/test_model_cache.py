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
    ({"revision": COMMIT, "files": {"a\nblobs/x": {"size": 1, "git_sha1": "0" * 40}}}, "relative path"),
    ({"revision": COMMIT, "files": {"x": {"size": -1, "git_sha1": "0" * 40}}}, "whole number"),
    ({"revision": COMMIT, "files": {"x": {"size": 1, "sha256": "abc"}}}, "sha256 (64 hex)"),
])
def test_a_malformed_manifest_is_refused(manifest, fragment):
    with pytest.raises(mc.ModelCacheError) as err:
        mc.check_manifest(manifest, "lock manifest")
    assert fragment in str(err.value) and str(err.value).startswith("lock manifest")


# --- issue 39: blobs named by hashes, a snapshot that is exactly its manifest, the marker ---------


class HostileMirror(object):
    """The lab's Hub stand-in (tests/lab/hub/hub_standin.py, which stands for https://huggingface.co
    as the real huggingface_hub calls it) with one change a hostile or broken mirror makes: the ETag
    (and X-Linked-Etag) of the files in ``etags`` is the given value instead of the file's hash.
    Every other route and header is the stand-in's own."""

    def __init__(self, root, etags):
        import importlib.util
        import threading
        from http.server import ThreadingHTTPServer
        spec = importlib.util.spec_from_file_location("hub_standin", os.path.join(REPO_DIR, "..", "..", "..", "..",
                                                                                  "hub_standin.py"))
        standin = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(standin)

        class Handler(standin.Handler):
            def _resolve(self, repo_id, revision, path):
                self._etag = etags.get(path)
                return standin.Handler._resolve(self, repo_id, revision, path)

            def _send(self, status, body, headers=None, **kwargs):
                headers = dict(headers or {})
                if getattr(self, "_etag", None):
                    for name in ("ETag", "X-Linked-Etag"):
                        if name in headers:
                            headers[name] = '"%s"' % self._etag
                return standin.Handler._send(self, status, body, headers, **kwargs)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.store = standin.Store(root)
        self.server.request_log = None
        self.server.storage_host = "localhost"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]


def test_a_blob_named_by_the_mirrors_etag_is_refused_naming_it(tmp_path, manifest):
    """The real huggingface_hub, downloading from a mirror whose ETags are not hashes: it writes
    blobs/<etag> (and, for an ETag with ../, outside the cache: what the role's README documents),
    and the verification refuses both files by name before anything uses them."""
    from huggingface_hub import hf_hub_download
    root = os.path.abspath(os.path.join(REPO_DIR, "..", "..", ".."))
    mirror = HostileMirror(root, {"config.json": "../../../planted-by-etag", "README.md": "mirror-etag-1",
                                  "tokenizer_config.json": "sub/etag"})
    try:
        hub = tmp_path / "hub"
        for path in manifest["files"]:
            hf_hub_download(MODEL, path, revision=COMMIT, cache_dir=str(hub), endpoint=mirror.url)
    finally:
        mirror.server.shutdown()
    folder = mc.repo_folder(str(hub), MODEL)
    snapshot = os.path.join(folder, "snapshots", COMMIT)
    # huggingface_hub 1.33.0 (file_download.py): blob_path = os.path.join(storage_folder, "blobs", etag).
    assert (tmp_path / "planted-by-etag").is_file()
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    by_path = {p["path"]: p["problem"] for p in problems}
    assert "not named by a hash" in by_path["blobs/mirror-etag-1"]
    assert "not named by a hash" in by_path["blobs/sub"]  # an ETag with a slash made a directory
    assert "outside %s" % folder in by_path["config.json"]
    assert "not to its blob blobs/%s" % manifest["files"]["README.md"]["git_sha1"] in by_path["README.md"]
    assert "not to its blob blobs/" in by_path["tokenizer_config.json"]
    assert set(by_path) == {"blobs/mirror-etag-1", "blobs/sub", "config.json", "README.md", "tokenizer_config.json"}


@pytest.mark.parametrize("name", ["etc", "abc.incomplete", "A" * 64, "0" * 63])
def test_an_entry_of_blobs_not_named_by_a_hash_is_refused(tmp_path, manifest, name):
    folder, snapshot = stage(tmp_path, manifest)
    os.mkdir(os.path.join(folder, "blobs", name)) if name == "etc" else open(os.path.join(folder, "blobs", name), "w").close()
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    assert [p["path"] for p in problems] == ["blobs/" + name]
    assert "not named by a hash" in problems[0]["problem"]


def test_a_hash_named_blob_that_is_not_a_regular_file_is_refused(tmp_path, manifest):
    folder, snapshot = stage(tmp_path, manifest)
    os.mkfifo(os.path.join(folder, "blobs", "f" * 64))
    os.symlink("/etc/passwd", os.path.join(folder, "blobs", "e" * 40 + ".incomplete"))
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    assert sorted(p["path"] for p in problems) == ["blobs/" + "e" * 40 + ".incomplete", "blobs/" + "f" * 64]
    assert all("not a regular file" in p["problem"] for p in problems)
    # A resumable partial download of a hash is not a problem.
    os.unlink(os.path.join(folder, "blobs", "f" * 64))
    os.unlink(os.path.join(folder, "blobs", "e" * 40 + ".incomplete"))
    open(os.path.join(folder, "blobs", "d" * 64 + ".incomplete"), "w").close()
    assert mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)[0] == []


def test_a_snapshot_is_exactly_its_manifest(tmp_path, manifest):
    folder, snapshot = stage(tmp_path, manifest)
    weights = manifest["files"]["model.safetensors"]["sha256"]
    with open(os.path.join(snapshot, "chat_template.jinja"), "w") as handle:
        handle.write("{{ messages }}")
    os.symlink(os.path.join("..", "..", "blobs", weights), os.path.join(snapshot, "model-00002.safetensors"))
    os.mkdir(os.path.join(snapshot, "extra"))
    with open(os.path.join(snapshot, "extra", "generation_config.json"), "w") as handle:
        handle.write("{}")
    os.symlink("/etc", os.path.join(snapshot, "linked-dir"))
    os.mkfifo(os.path.join(snapshot, "fifo"))
    problems, _fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    assert sorted(p["path"] for p in problems) == ["chat_template.jinja", "extra", "fifo", "linked-dir", "model-00002.safetensors"]
    assert all("not in the pinned revision's manifest" in p["problem"] for p in problems)
    # A manifest file in a subdirectory: its directory belongs to the manifest.
    nested = dict(manifest, files=dict(manifest["files"], **{"extra/generation_config.json": {
        "size": 2, "git_sha1": hashlib.sha1(b"blob 2\x00{}").hexdigest()}}))
    problems, _fingerprint = mc.verify_snapshot(snapshot, nested, folder)
    assert sorted(p["path"] for p in problems) == ["chat_template.jinja", "fifo", "linked-dir", "model-00002.safetensors"]


def test_a_local_dir_keeps_huggingface_hubs_metadata_but_nothing_else(tmp_path, manifest):
    _folder, snapshot = stage(tmp_path / "cache", manifest)
    local = tmp_path / "local"
    shutil.copytree(snapshot, local)
    (local / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (local / ".cache" / "huggingface" / "download" / "config.json.metadata").write_text("x")
    (local / ".cache" / "other").mkdir()
    problems, _fingerprint = mc.verify_snapshot(str(local), manifest, str(local), ignore=(mc.LOCAL_DIR_METADATA,))
    assert [p["path"] for p in problems] == [".cache/other"]


def test_a_rewrite_that_restores_the_mtime_voids_the_marker(tmp_path, manifest):
    """touch -r after a flipped byte kept size and mtime, which the marker used to vouch for; the
    ctime (set by the kernel only) and the inode bind it now."""
    folder, snapshot = stage(tmp_path, manifest)
    _problems, fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    marker = mc.marker_record(manifest, fingerprint)
    blob = os.path.realpath(os.path.join(snapshot, "config.json"))
    before = os.stat(blob)
    import time
    time.sleep(0.01)
    flip_byte(blob, 5)
    os.utime(blob, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(blob)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    _problems, later = mc.verify_snapshot(snapshot, manifest, folder, fingerprint_only=True, hub_folder=folder)
    assert not mc.marker_vouches(marker, manifest, later)


def test_a_file_swapped_for_another_of_the_same_size_and_mtime_voids_the_marker(tmp_path, manifest):
    folder, snapshot = stage(tmp_path, manifest)
    _problems, fingerprint = mc.verify_snapshot(snapshot, manifest, folder, hub_folder=folder)
    marker = mc.marker_record(manifest, fingerprint)
    blob = os.path.realpath(os.path.join(snapshot, "config.json"))
    before = os.stat(blob)
    other = blob + ".new"
    shutil.copy(blob, other)
    flip_byte(other, 5)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, blob)
    _problems, later = mc.verify_snapshot(snapshot, manifest, folder, fingerprint_only=True, hub_folder=folder)
    assert [row[0] for row in later] == [row[0] for row in fingerprint]
    assert not mc.marker_vouches(marker, manifest, later)


def test_the_marker_is_written_atomically_and_never_through_a_link(tmp_path, manifest):
    state = tmp_path / "state" / "model-cache"
    path = mc.marker_path(str(state), MODEL)
    assert path == str(state / "models--inferops-lab--tiny-chat.verified.json")
    mc.write_marker(path, COMMIT, {"revision": COMMIT})
    assert os.stat(state).st_mode & 0o777 == 0o700 and os.stat(path).st_mode & 0o777 == 0o600
    assert mc.read_marker(path, COMMIT) == {"revision": COMMIT}
    assert os.listdir(state) == [os.path.basename(path)]  # no temporary file left
    # A link planted at the marker's path: the write replaces the link, its target is untouched.
    target = tmp_path / "victim"
    target.write_text("root's file")
    os.unlink(path)
    os.symlink(target, path)
    assert mc.read_marker(path, COMMIT) is None
    mc.write_marker(path, COMMIT, {"revision": COMMIT})
    assert target.read_text() == "root's file" and not os.path.islink(path)
    assert mc.read_marker(path, COMMIT) == {"revision": COMMIT}


def test_a_link_to_a_valid_marker_vouches_for_nothing(tmp_path):
    real = tmp_path / "elsewhere.json"
    mc.write_marker(str(real), COMMIT, {"revision": COMMIT})
    link = tmp_path / "marker.json"
    os.symlink(real, link)
    assert mc.read_marker(str(real), COMMIT) == {"revision": COMMIT}
    assert mc.read_marker(str(link), COMMIT) is None


def test_a_fifo_at_the_markers_path_neither_hangs_the_read_nor_the_write(tmp_path):
    import threading
    path = str(tmp_path / "marker.json")
    os.mkfifo(path)
    found = []
    reader = threading.Thread(target=lambda: found.append(mc.read_marker(path, COMMIT)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive() and found == [None]
    writer = threading.Thread(target=mc.write_marker, args=(path, COMMIT, {"revision": COMMIT}), daemon=True)
    writer.start()
    writer.join(5)
    assert not writer.is_alive() and mc.read_marker(path, COMMIT) == {"revision": COMMIT}


def test_the_markers_may_not_live_in_a_tree_the_engine_mounts(tmp_path):
    hf_home = tmp_path / "hf"
    problem = mc.state_dir_problem(str(hf_home / "hub" / "state"), [str(hf_home / "hub"), str(hf_home)])
    assert problem.startswith("state_dir: %s is inside %s, which the engine mounts" % (hf_home / "hub" / "state",
                                                                                       hf_home / "hub"))
    assert "model_cache_state_dir" in problem
    assert mc.state_dir_problem(str(hf_home), [str(hf_home / "hub"), str(hf_home)])
    assert mc.state_dir_problem(str(tmp_path / "state"), [str(hf_home / "hub"), str(hf_home)]) is None


@pytest.mark.parametrize("endpoint, allow, fragment", [
    ("http://mirror.internal:8080", False, "model_cache_endpoint (endpoint): http://mirror.internal:8080 is plain http"),
    ("http://user:secret@mirror.internal", False, "http://mirror.internal is plain http"),
    ("ftp://mirror", True, "expected the https:// URL"),
    ("huggingface.co", False, "expected the https:// URL"),
])
def test_an_endpoint_that_is_not_https_is_refused_naming_the_variable_and_the_fix(endpoint, allow, fragment):
    problem = mc.endpoint_problem(endpoint, allow)
    assert fragment in problem and "secret" not in problem
    if "plain http" in fragment:
        assert "set model_cache_allow_plain_http: true" in problem and "ETag" in problem


def test_an_https_endpoint_or_an_allowed_http_one_passes():
    assert mc.endpoint_problem("https://huggingface.co") is None
    assert mc.endpoint_problem("http://127.0.0.1:8080", allow_plain_http=True) is None


def test_the_copy_list_is_each_files_blob_and_snapshot_link(manifest):
    listed = mc.copy_list(manifest)
    assert listed == sorted(set(listed))
    assert len(listed) == 2 * len(manifest["files"])
    assert "blobs/%s" % manifest["files"]["model.safetensors"]["sha256"] in listed
    assert "snapshots/%s/config.json" % COMMIT in listed
    assert not [p for p in listed if ".." in p.split("/") or p.startswith("/")]
