# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""A model's weights in the host's Hugging Face cache: the manifest, the space check, the verdict.

The cache is huggingface_hub's layout (``<hub cache>/models--<org>--<name>/``): ``blobs/<etag>``
holds each file once, named by its sha256 for an LFS file and by its git blob sha1 otherwise (the
ETag the Hub sends), and ``snapshots/<commit>/<path>`` links to it. A *manifest* is what the Hub
says a commit holds: ``{revision, files: {path: {size, sha256 | git_sha1}}}``; its sha256 (of the
canonical JSON) is what the lock records and what the verification marker is keyed by.

Every decision is a pure function here (the modules model_cache_info and model_verify act on
them): what is still to download and whether it fits, and whether a staged snapshot is exactly
the manifest - a missing file, a dangling link, a link out of the repository's blobs (a copy made
of symlinks to elsewhere), a wrong size or one flipped byte is a problem naming the file.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
MARKER_NAME = ".inferops-verified.json"
_CHUNK = 8 * 1024 * 1024


class ModelCacheError(ValueError):
    """Input that cannot describe a model or its manifest; the message names it and the fix."""


def repo_folder(hub_cache, repo_id):
    """``<hub cache>/models--<org>--<name>`` (huggingface_hub's repo_folder_name)."""
    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or any(p in ("", ".", "..") for p in repo_id.split("/")):
        raise ModelCacheError("model: got %r; expected a Hub model id <org>/<name>" % (repo_id,))
    return os.path.join(hub_cache, "models--" + repo_id.replace("/", "--"))


def manifest_from_info(info, revision):
    """The manifest of a commit from the Hub's ``/api/models/<repo>/revision/<commit>?blobs=true``.

    Refuses an answer for another commit (a branch that moved) or a sibling without the size or
    hash the verification needs.
    """
    if not isinstance(info, dict) or info.get("sha") != revision:
        raise ModelCacheError("the Hub answered for commit %r, not the pinned %s; pin a 40-hex commit id"
                              % ((info or {}).get("sha") if isinstance(info, dict) else info, revision))
    files = {}
    for sibling in info.get("siblings") or []:
        path, size = sibling.get("rfilename"), sibling.get("size")
        lfs = sibling.get("lfs") or None
        if not path or not isinstance(size, int):
            raise ModelCacheError("the Hub's file list has no size for %r; ask it with blobs=true" % (path,))
        if lfs:
            files[path] = {"size": size, "sha256": str(lfs["sha256"]).lower()}
        elif sibling.get("blobId"):
            files[path] = {"size": size, "git_sha1": str(sibling["blobId"]).lower()}
        else:
            raise ModelCacheError("the Hub's file list has no hash for %r" % path)
    return {"revision": revision, "files": dict(sorted(files.items()))}


def manifest_sha256(manifest):
    """sha256 of the manifest's canonical JSON: the lock's record of what the commit holds."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_manifest(manifest, var="manifest"):
    """The manifest, checked: a commit, and per file a size and one well-formed hash."""
    if not isinstance(manifest, dict) or not COMMIT_RE.match(str(manifest.get("revision") or "")):
        raise ModelCacheError("%s: expected {revision: <40-hex commit>, files: {...}}" % var)
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ModelCacheError("%s.files: expected a mapping of paths to {size, sha256 | git_sha1}" % var)
    for path, entry in files.items():
        if path.startswith("/") or ".." in path.split("/") or not isinstance(entry, dict):
            raise ModelCacheError("%s.files[%r]: expected a relative path inside the repository" % (var, path))
        if not isinstance(entry.get("size"), int) or entry["size"] < 0:
            raise ModelCacheError("%s.files[%r].size: expected a whole number of bytes" % (var, path))
        if not (SHA256_RE.match(str(entry.get("sha256") or "")) or COMMIT_RE.match(str(entry.get("git_sha1") or ""))):
            raise ModelCacheError("%s.files[%r]: expected sha256 (64 hex) or git_sha1 (40 hex)" % (var, path))
    return manifest


def blob_name(entry):
    """The name huggingface_hub gives the file's blob: its sha256 (LFS) or git blob sha1."""
    return entry.get("sha256") or entry["git_sha1"]


def total_bytes(manifest):
    return sum(entry["size"] for entry in manifest["files"].values())


def present_bytes(manifest, blob_sizes):
    """Bytes of the manifest already in the cache: complete blobs, and resumable partial downloads.

    ``blob_sizes``: ``{file name in blobs/: size}`` (``<blob>.incomplete`` for a partial one).
    """
    present = 0
    for entry in manifest["files"].values():
        name = blob_name(entry)
        if blob_sizes.get(name) == entry["size"]:
            present += entry["size"]
        else:
            present += min(blob_sizes.get(name + ".incomplete", 0), entry["size"])
    return present


def space_verdict(manifest, blob_sizes, free_bytes, reserve_bytes=0):
    """``{ok, total, present, needed, free, reserve, message}``: whether what is left to download fits.

    ``needed`` is the repository's size at this commit (from the Hub's file sizes) less what the
    cache holds already; ``reserve_bytes`` is kept free on top of it.
    """
    total = total_bytes(manifest)
    present = present_bytes(manifest, blob_sizes)
    needed = total - present
    ok = needed + reserve_bytes <= free_bytes
    message = ("%s at %s is %s; the cache holds %s of it, %s to download%s, %s free"
               % ("the model", manifest["revision"][:12], human(total), human(present), human(needed),
                  (" + %s kept free" % human(reserve_bytes)) if reserve_bytes else "", human(free_bytes)))
    if not ok:
        message += ("; free %s on the cache's filesystem or set model_cache_reserve_bytes lower"
                    % human(needed + reserve_bytes - free_bytes))
    return {"ok": ok, "total": total, "present": present, "needed": needed, "free": free_bytes,
            "reserve": reserve_bytes, "message": message}


def human(size):
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1024
    return "%d B" % size


def file_digest(path, algorithm):
    """sha256 or git blob sha1 (``sha1("blob <size>\\0" + content)``) of a file, read in chunks."""
    if algorithm == "sha256":
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()
        digest.update(b"blob %d\x00" % os.path.getsize(path))
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _inside(path, root):
    root = os.path.realpath(root)
    return os.path.commonpath([os.path.realpath(path), root]) == root


def locate(snapshot, path, allowed_root):
    """``(real path, problem)`` of one manifest file in a snapshot directory, without reading it."""
    full = os.path.join(snapshot, path)
    if not os.path.lexists(full):
        return None, "missing"
    if os.path.islink(full) and not os.path.exists(full):
        return None, "a dangling symlink (-> %s)" % os.readlink(full)
    real = os.path.realpath(full)
    if allowed_root is not None and not _inside(real, allowed_root):
        return None, ("a symlink to %s, outside %s: a copy made of links to another tree is refused (copy the "
                      "files, e.g. rsync -L, or stage with hf download)" % (real, allowed_root))
    if not os.path.isfile(real):
        return None, "not a regular file"
    return real, None


def verify_snapshot(snapshot, manifest, allowed_root=None, fingerprint_only=False):
    """``(problems, fingerprint)``: each problem ``{path, problem}`` names the file; the fingerprint
    ``[[path, size, mtime_ns], ...]`` is what the marker records (stat only, no read).

    ``allowed_root``: where every file must really live (the repository's cache folder, or the
    local dir itself); a link out of it is refused. With ``fingerprint_only`` the contents are not
    hashed (the marker already vouches for them).
    """
    problems, fingerprint = [], []
    if not os.path.isdir(snapshot):
        return [{"path": ".", "problem": "the snapshot directory %s does not exist" % snapshot}], []
    for path, entry in sorted(manifest["files"].items()):
        real, problem = locate(snapshot, path, allowed_root)
        if problem:
            problems.append({"path": path, "problem": problem})
            continue
        stat = os.stat(real)
        fingerprint.append([path, stat.st_size, stat.st_mtime_ns])
        if stat.st_size != entry["size"]:
            problems.append({"path": path, "problem": "%d bytes, the revision has %d (truncated or another file)"
                                                      % (stat.st_size, entry["size"])})
            continue
        if fingerprint_only:
            continue
        algorithm = "sha256" if entry.get("sha256") else "git_sha1"
        actual = file_digest(real, algorithm)
        if actual != entry[algorithm]:
            problems.append({"path": path, "problem": "%s %s, the revision has %s (the content differs)"
                                                      % (algorithm, actual, entry[algorithm])})
    return problems, fingerprint


def marker_record(manifest, fingerprint):
    """What the verification marker holds: the commit, the manifest's sha256, the fingerprint."""
    return {"revision": manifest["revision"], "manifest_sha256": manifest_sha256(manifest),
            "fingerprint": fingerprint}


def marker_vouches(marker, manifest, fingerprint):
    """Whether a marker proves this snapshot verified: same commit, same manifest, and no file
    changed size or mtime since (a rewrite in place, a flipped byte written, changes the mtime)."""
    return (isinstance(marker, dict) and marker.get("revision") == manifest["revision"]
            and marker.get("manifest_sha256") == manifest_sha256(manifest)
            and marker.get("fingerprint") == fingerprint)


def format_problems(problems, where):
    """One line per file for an operator: ``<where>: <path>: <problem>; ...``."""
    return "%s: %s" % (where, "; ".join("%s: %s" % (p["path"], p["problem"]) for p in problems))
