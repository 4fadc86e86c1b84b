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
of symlinks to elsewhere), a blob not named by a hash, a file, link or directory the manifest does
not list, a wrong size or one flipped byte is a problem naming the file.

The verification marker lives outside the tree the engine mounts (the role's state directory); it
binds the contents to each file's device, inode, ctime, size and mtime, is written atomically
without following a link, and is read without blocking on a FIFO (read_marker, write_marker).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat as stat_module
from urllib.parse import urlsplit

COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# The only names a blob may have: the sha256 of an LFS file, the git blob sha1 of any other.
HASH_NAME_RE = re.compile(r"^(?:[0-9a-f]{64}|[0-9a-f]{40})$")
INCOMPLETE = ".incomplete"
# What huggingface_hub keeps in a --local-dir copy besides the files (its download metadata).
LOCAL_DIR_METADATA = ".cache/huggingface"
MARKER_SUFFIX = ".verified.json"
# A marker is a few lines per file; anything larger is not one (and is not read into memory).
MARKER_MAX_BYTES = 16 << 20
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
        if (path.startswith("/") or ".." in path.split("/") or not isinstance(entry, dict)
                or any(ord(char) < 32 or char == "\x7f" for char in path)):
            raise ModelCacheError("%s.files[%r]: expected a relative path inside the repository" % (var, path))
        if not isinstance(entry.get("size"), int) or entry["size"] < 0:
            raise ModelCacheError("%s.files[%r].size: expected a whole number of bytes" % (var, path))
        if not (SHA256_RE.match(str(entry.get("sha256") or "")) or COMMIT_RE.match(str(entry.get("git_sha1") or ""))):
            raise ModelCacheError("%s.files[%r]: expected sha256 (64 hex) or git_sha1 (40 hex)" % (var, path))
    return manifest


def endpoint_problem(endpoint, allow_plain_http=False):
    """Why the Hub endpoint may not be used, or None: not an http(s) URL, or plain http without the
    operator's explicit consent (anyone on the path answers for the Hub, and huggingface_hub names
    each blob after the ETag it is sent)."""
    parts = urlsplit(str(endpoint or ""))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ("model_cache_endpoint (endpoint): got %r; expected the https:// URL of the Hub or of a mirror of it"
                % (endpoint,))
    if parts.scheme == "http" and not allow_plain_http:
        return ("model_cache_endpoint (endpoint): %s is plain http: anyone on the path can answer for the Hub, and "
                "huggingface_hub names each blob after the ETag it is sent (an ETag ../../../../etc/cron.d/x writes "
                "there). Use the https:// URL of the Hub or the mirror, or set model_cache_allow_plain_http: true "
                "(allow_plain_http) for a mirror on a network you trust" % urlsplit(endpoint)._replace(
                    netloc=parts.hostname + (":%d" % parts.port if parts.port else "")).geturl())
    return None


def blob_name(entry):
    """The name huggingface_hub gives the file's blob: its sha256 (LFS) or git blob sha1."""
    return entry.get("sha256") or entry["git_sha1"]


def copy_list(manifest):
    """What a copy from a peer takes, relative to the repository's folder: each file's blob and its
    snapshot link, nothing else (``rsync --files-from``); sorted, one path each."""
    paths = set()
    for path, entry in manifest["files"].items():
        paths.add("blobs/" + blob_name(entry))
        paths.add("snapshots/%s/%s" % (manifest["revision"], path))
    return sorted(paths)


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


def is_hash_name(name):
    """Whether ``name`` is a blob name huggingface_hub may have written: a sha256 or a git sha1."""
    return isinstance(name, str) and bool(HASH_NAME_RE.match(name))


def blob_problems(folder):
    """``[{path, problem}]`` for each entry of ``<folder>/blobs`` that is not a blob of a hash.

    huggingface_hub names a blob after the ETag the server sent (``blobs/<etag>``, unchecked): an
    entry named otherwise (a mirror's own ETags, a directory an ETag with a slash made) is refused,
    and so is anything but a regular file (a link, a FIFO, a device). ``<hash>.incomplete`` is a
    download a later ``hf download`` resumes.
    """
    blobs = os.path.join(folder, "blobs")
    try:
        names = sorted(os.listdir(blobs))
    except FileNotFoundError:
        return []
    problems = []
    for name in names:
        base = name[:-len(INCOMPLETE)] if name.endswith(INCOMPLETE) else name
        if not is_hash_name(base):
            problems.append({"path": "blobs/" + name, "problem": (
                "a blob not named by a hash (sha256 or git sha1): huggingface_hub names a blob after the "
                "server's ETag; remove it and stage from an endpoint that sends the Hub's ETags")})
        elif not stat_module.S_ISREG(os.lstat(os.path.join(blobs, name)).st_mode):
            problems.append({"path": "blobs/" + name, "problem": "not a regular file; remove it and re-stage"})
    return problems


def snapshot_extras(snapshot, manifest, ignore=()):
    """``[{path, problem}]`` for each file, link or directory under ``snapshot`` the manifest does not
    list (a chat_template.jinja, an extra .safetensors, a generation_config.json that an engine would
    load). Directories that hold listed files are the manifest's; a link to a directory is an extra.
    ``ignore``: relative directories left alone (huggingface_hub's metadata in a --local-dir copy).
    """
    listed = set(manifest["files"])
    parents = set()
    for path in list(listed) + [path + "/" for path in ignore]:
        parent = os.path.dirname(path)
        while parent:
            parents.add(parent)
            parent = os.path.dirname(parent)
    extras = []
    for root, dirnames, filenames in os.walk(snapshot):
        base = os.path.relpath(root, snapshot)
        keep = []
        for name in sorted(dirnames):
            rel = name if base == "." else base + "/" + name
            if rel in ignore and not os.path.islink(os.path.join(root, name)):
                continue
            if rel in parents and not os.path.islink(os.path.join(root, name)):
                keep.append(name)
            else:
                extras.append({"path": rel, "problem": "not in the pinned revision's manifest (refused: the engine "
                                                       "would load it); remove it and re-stage"})
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = name if base == "." else base + "/" + name
            if rel not in listed:
                extras.append({"path": rel, "problem": "not in the pinned revision's manifest (refused: the engine "
                                                       "would load it); remove it and re-stage"})
    return extras


def locate(snapshot, path, allowed_root, blob=None):
    """``(real path, problem)`` of one manifest file in a snapshot directory, without reading it.

    ``blob``: ``(blobs directory, the blob's name)`` in a hub cache, where a link must resolve to
    exactly that blob (a link to another name, one an ETag chose, is refused naming its target).
    """
    full = os.path.join(snapshot, path)
    if not os.path.lexists(full):
        return None, "missing"
    if os.path.islink(full) and not os.path.exists(full):
        return None, "a dangling symlink (-> %s)" % os.readlink(full)
    real = os.path.realpath(full)
    if allowed_root is not None and not _inside(real, allowed_root):
        return None, ("a symlink to %s, outside %s: a copy made of links to another tree is refused (copy the "
                      "files, e.g. rsync -L, or stage with hf download)" % (real, allowed_root))
    if blob is not None and os.path.islink(full):
        blobs, name = blob
        if real != os.path.join(os.path.realpath(blobs), name):
            return None, ("a symlink to %s, not to its blob blobs/%s: a blob is named by the file's hash; "
                          "re-stage it" % (real, name))
    if not os.path.isfile(real):
        return None, "not a regular file"
    return real, None


def stat_fingerprint(path, st):
    """What the marker binds a file to: ``[path, size, mtime_ns, ctime_ns, dev, ino]``.

    The ctime cannot be set from user space: a rewrite that restores the mtime (touch -r), a file
    replaced by another, or a chmod changes it.
    """
    return [path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino]


def verify_snapshot(snapshot, manifest, allowed_root=None, fingerprint_only=False, hub_folder=None, ignore=()):
    """``(problems, fingerprint)``: each problem ``{path, problem}`` names the file; the fingerprint
    ``[[path, size, mtime_ns, ctime_ns, dev, ino], ...]`` is what the marker records (stat only, no read).

    ``allowed_root``: where every file must really live (the repository's cache folder, or the
    local dir itself); a link out of it is refused. ``hub_folder``: the repository's folder in a hub
    cache, whose blobs must be named by hashes and whose snapshot links must point each to its own
    blob. Anything under the snapshot the manifest does not list is refused (``ignore``: relative
    directories left alone). With ``fingerprint_only`` the contents are not hashed (the marker
    already vouches for them).
    """
    problems, fingerprint = [], []
    if not os.path.isdir(snapshot):
        return [{"path": ".", "problem": "the snapshot directory %s does not exist" % snapshot}], []
    if hub_folder is not None:
        problems.extend(blob_problems(hub_folder))
    problems.extend(snapshot_extras(snapshot, manifest, ignore))
    blobs = os.path.join(hub_folder, "blobs") if hub_folder is not None else None
    for path, entry in sorted(manifest["files"].items()):
        real, problem = locate(snapshot, path, allowed_root, (blobs, blob_name(entry)) if blobs else None)
        if problem:
            problems.append({"path": path, "problem": problem})
            continue
        stat = os.stat(real)
        fingerprint.append(stat_fingerprint(path, stat))
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
    changed size, mtime, ctime or inode since (any rewrite, or a file swapped for another, changes one)."""
    return (isinstance(marker, dict) and marker.get("revision") == manifest["revision"]
            and marker.get("manifest_sha256") == manifest_sha256(manifest)
            and marker.get("fingerprint") == fingerprint)


def marker_path(state_dir, repo_id):
    """``<state_dir>/models--<org>--<name>.verified.json``: the host's markers of one model."""
    return os.path.join(state_dir, os.path.basename(repo_folder("", repo_id)) + MARKER_SUFFIX)


def state_dir_problem(state_dir, mounted, var="state_dir"):
    """Why the markers may not live in ``state_dir`` (inside a tree the engine mounts), or None."""
    for tree in mounted:
        if tree and (os.path.realpath(state_dir) == os.path.realpath(tree) or _inside(state_dir, tree)):
            return ("%s: %s is inside %s, which the engine mounts: whoever can write there could forge the "
                    "verification marker. Give a directory of the host outside it (the role's "
                    "model_cache_state_dir, e.g. /var/lib/inferops-serving/model-cache)" % (var, state_dir, tree))
    return None


def read_all_markers(path):
    """The markers in ``path`` (``{revision: record}``), or ``{}``: a missing, unreadable, oversized
    or malformed marker, or anything but a regular file (O_NOFOLLOW: a link is not followed;
    O_NONBLOCK: a FIFO does not block the open, and fstat refuses it before any read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode) or st.st_size > MARKER_MAX_BYTES:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            markers = json.loads(handle.read(MARKER_MAX_BYTES + 1).decode("utf-8"))
        return markers if isinstance(markers, dict) else {}
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)


def read_marker(path, revision):
    """The marker's record of ``revision``, or None (read_all_markers)."""
    return read_all_markers(path).get(revision)


def write_marker(path, revision, record):
    """Record ``revision``'s marker in ``path`` atomically: a new 0600 temporary file beside it
    (O_EXCL|O_NOFOLLOW: never a planted link), then a rename over whatever the path was (a link, a
    FIFO, an older marker: the rename replaces the name, it does not follow it). The directory is
    created 0700 when missing."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    markers = read_all_markers(path)
    markers[revision] = record
    data = json.dumps(markers, indent=1, sort_keys=True).encode("utf-8")
    for dummy in range(100):
        temporary = os.path.join(directory, ".%s.%s.tmp" % (os.path.basename(path), os.urandom(6).hex()))
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o600)
            break
        except FileExistsError:
            continue
    else:
        raise OSError("no free temporary name beside %s" % path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def format_problems(problems, where):
    """One line per file for an operator: ``<where>: <path>: <problem>; ...``."""
    return "%s: %s" % (where, "; ".join("%s: %s" % (p["path"], p["problem"]) for p in problems))
