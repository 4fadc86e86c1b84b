# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the Hugging Face Hub's HTTP API, on loopback, for the lab and the tests.

It stands for https://huggingface.co as the real ``huggingface_hub`` client (pinned in
requirements-hub.txt, 1.33.0) calls it with ``HF_ENDPOINT=http://127.0.0.1:<port>``: ``hf download``
(snapshot_download), ``hf cache verify`` (verify_repo_checksums) and ``HfApi.model_info``. Every
route and header below is the one that client reads (huggingface_hub/hf_api.py model_info and
list_repo_tree, file_download.py get_hf_file_metadata and http_get, utils/_http.py
hf_raise_for_status):

* ``GET /api/models/{repo}/revision/{rev}[?blobs=true]``: ``{id, sha, siblings}``; with
  ``blobs`` each sibling has ``size``, ``blobId`` and, for an LFS file, ``lfs {sha256, size,
  pointerSize}``.
* ``GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=true``: ``[{type, oid, size, path,
  lfs {oid, size, pointerSize}}]``.
* ``HEAD|GET /{repo}/resolve/{rev}/{path}``: a regular file answers 200 with ``ETag`` (its git
  blob sha1), ``Content-Length`` and ``X-Repo-Commit``; an LFS file answers 302 to an absolute
  storage URL (``http://localhost:<port>/lfs/{sha256}``: another host name, as the Hub redirects
  to its CDN) with ``X-Linked-Etag`` (the
  sha256), ``X-Linked-Size`` and ``X-Repo-Commit``. The storage URL honours ``Range`` (resumed
  downloads get 206).
* Errors as the Hub sends them: 404 with ``X-Error-Code`` ``RepoNotFound``, ``RevisionNotFound``
  or ``EntryNotFound``.

The repositories are real files with real hashes: ``<root>/<org>/<name>/<n>/`` is the tree of the
n-th commit (commits in numeric order; ``main`` is the last). Git ids are computed as git does: a
blob is ``sha1("blob <size>\\0" + content)``; an LFS file is stored in git as its pointer
(``version https://git-lfs.github.com/spec/v1``, ``oid sha256:...``, ``size ...``), which is what
its tree ``oid`` hashes; a commit id is the sha1 of a real commit object over the real tree with
a fixed author and date, so the same files always give the same commit. Adding a directory
``<n+1>`` is a new upstream commit (read on each request). Each request is appended as one JSON
line to ``--log`` (so a test can prove a host made none).

Not served: writes, auth (any token is accepted), xet storage, datasets and spaces.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

# What the Hub's default .gitattributes stores in LFS (the templates of new model repositories).
LFS_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.gguf", "*.h5", "*.msgpack", "*.onnx",
                "*.model", "*.npy", "*.tflite")
AUTHOR = b"inferops lab <lab@inferops.invalid> 1764547200 +0000"


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def lfs_pointer(sha256, size):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha256, size)).encode()


def is_lfs(path):
    return any(fnmatch.fnmatch(os.path.basename(path), pattern) for pattern in LFS_PATTERNS)


class Commit:
    """One commit: its files (path -> metadata and where the bytes are) and its git id."""

    def __init__(self, directory, parent):
        self.directory = directory
        self.files = {}
        for base, dirs, names in os.walk(directory):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(base, name)
                path = os.path.relpath(full, directory).replace(os.sep, "/")
                with open(full, "rb") as handle:
                    data = handle.read()
                entry = {"path": path, "size": len(data), "full": full}
                if is_lfs(path):
                    sha256 = hashlib.sha256(data).hexdigest()
                    pointer = lfs_pointer(sha256, len(data))
                    lfs = {"oid": sha256, "size": len(data), "pointerSize": len(pointer)}
                    entry.update(oid=git_blob_sha1(pointer), lfs=lfs)
                else:
                    entry.update(oid=git_blob_sha1(data), lfs=None)
                self.files[path] = entry
        tree = self._tree("")
        body = b"tree %s\n" % tree.encode()
        if parent:
            body += b"parent %s\n" % parent.encode()
        body += b"author %s\ncommitter %s\n\n%s\n" % (AUTHOR, AUTHOR, os.path.basename(directory).encode())
        self.sha = hashlib.sha1(b"commit %d\x00" % len(body) + body).hexdigest()

    def _tree(self, prefix):
        """The git tree id of the folder ``prefix`` (entries sorted as git sorts them)."""
        entries = {}
        for path, entry in self.files.items():
            if not path.startswith(prefix):
                continue
            head, sep, _rest = path[len(prefix):].partition("/")
            if sep:
                entries[head] = (b"40000", self._tree(prefix + head + "/"), head + "/")
            else:
                entries[head] = (b"100644", entry["oid"], head)
        body = b"".join(mode + b" " + name.encode() + b"\x00" + bytes.fromhex(sha)
                        for name, (mode, sha, _key) in sorted(entries.items(), key=lambda kv: kv[1][2]))
        return hashlib.sha1(b"tree %d\x00" % len(body) + body).hexdigest()

    def folders(self):
        found = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            found.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        return sorted(found)


class Store:
    """The repositories under ``root``, re-read when a commit directory is added, removed or changed."""

    def __init__(self, root):
        self.root = root
        self._cache = {}
        self._lock = threading.Lock()

    def repo(self, repo_id):
        """``[Commit, ...]`` oldest first, or None when there is no such repository."""
        directory = os.path.join(self.root, *repo_id.split("/"))
        if repo_id.count("/") != 1 or ".." in repo_id.split("/") or not os.path.isdir(directory):
            return None
        names = sorted((n for n in os.listdir(directory) if n.isdigit()), key=int)
        # Every file's path, size and mtime: a commit directory removed and another made under the
        # same number (a copy keeps its source directory's mtime) is read anew, never served stale.
        key = (directory, tuple(names), tuple(self._files_stat(os.path.join(directory, n)) for n in names))
        with self._lock:
            if key not in self._cache:
                commits, parent = [], None
                for name in names:
                    commit = Commit(os.path.join(directory, name), parent)
                    commits.append(commit)
                    parent = commit.sha
                self._cache[key] = commits
            return self._cache[key]

    @staticmethod
    def _files_stat(commit_dir):
        found = []
        for folder, _dirs, files in os.walk(commit_dir):
            for name in files:
                stat = os.stat(os.path.join(folder, name))
                found.append((os.path.relpath(os.path.join(folder, name), commit_dir), stat.st_size, stat.st_mtime_ns))
        return tuple(sorted(found))

    def all_repos(self):
        """Every repository's commits."""
        for org in sorted(os.listdir(self.root)):
            if os.path.isdir(os.path.join(self.root, org)):
                for name in sorted(os.listdir(os.path.join(self.root, org))):
                    commits = self.repo("%s/%s" % (org, name))
                    if commits:
                        yield commits

    def resolve(self, repo_id, revision):
        commits = self.repo(repo_id)
        if not commits:
            return None, "RepoNotFound"
        if revision == "main":
            return commits[-1], None
        for commit in commits:
            if commit.sha == revision:
                return commit, None
        return None, "RevisionNotFound"


class Handler(BaseHTTPRequestHandler):
    server_version = "inferops-hub-standin/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        """Requests go to --log as JSON lines, not to stderr."""

    def _record(self, status):
        if self.server.request_log:
            with open(self.server.request_log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"time": time.time(), "method": self.command, "path": self.path,
                                         "status": status, "client": self.client_address[0]}) + "\n")

    def _send(self, status, body=b"", headers=None, content_type="application/json"):
        self._record(status)
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        if body or content_type != "application/json":
            headers.setdefault("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _error(self, code, message, status=404):
        body = json.dumps({"error": message}).encode()
        self._send(status, body, {"X-Error-Code": code, "X-Error-Message": message})

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        query = parse_qs(url.query)
        try:
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
                return self._api(parts[2] + "/" + parts[3], parts[4], parts[5], "/".join(parts[6:]), query)
            if len(parts) >= 5 and parts[2] == "resolve":
                return self._resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
            if len(parts) == 2 and parts[0] == "lfs":
                return self._lfs(parts[1])
        except BrokenPipeError:
            return None
        return self._error("RepoNotFound", "Repository not found")

    def _api(self, repo_id, kind, revision, path, query):
        commit, error = self.server.store.resolve(repo_id, revision)
        if error:
            return self._error(error, "%s: %s@%s" % (error, repo_id, revision))
        if kind == "revision":
            blobs = query.get("blobs", ["false"])[0].lower() == "true"
            siblings = []
            for entry in commit.files.values():
                sibling = {"rfilename": entry["path"]}
                if blobs:
                    sibling.update(size=entry["size"], blobId=entry["oid"])
                    if entry["lfs"]:
                        sibling["lfs"] = {"sha256": entry["lfs"]["oid"], "size": entry["lfs"]["size"],
                                          "pointerSize": entry["lfs"]["pointerSize"]}
                siblings.append(sibling)
            body = {"_id": commit.sha[:24], "id": repo_id, "modelId": repo_id, "sha": commit.sha, "private": False,
                    "disabled": False, "gated": False, "tags": [], "downloads": 0, "likes": 0,
                    "siblings": siblings, "usedStorage": sum(e["size"] for e in commit.files.values())}
            return self._send(200, json.dumps(body).encode(), {"X-Repo-Commit": commit.sha})
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        if prefix and prefix[:-1] not in commit.folders():
            return self._error("EntryNotFound", "%s does not exist on %s" % (path, revision))
        items = []
        for folder in commit.folders():
            if folder.startswith(prefix) and (recursive or "/" not in folder[len(prefix):]):
                items.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": folder})
        for entry in commit.files.values():
            rest = entry["path"][len(prefix):]
            if entry["path"].startswith(prefix) and (recursive or "/" not in rest):
                item = {"type": "file", "oid": entry["oid"], "size": entry["size"], "path": entry["path"]}
                if entry["lfs"]:
                    item["lfs"] = dict(entry["lfs"])
                items.append(item)
        return self._send(200, json.dumps(items).encode())

    def _resolve(self, repo_id, revision, path):
        commit, error = self.server.store.resolve(repo_id, revision)
        if error:
            return self._error(error, "%s: %s@%s" % (error, repo_id, revision))
        entry = commit.files.get(path)
        if entry is None:
            return self._error("EntryNotFound", "%s does not exist on %s" % (path, revision))
        headers = {"X-Repo-Commit": commit.sha, "Accept-Ranges": "bytes"}
        if entry["lfs"]:
            sha256 = entry["lfs"]["oid"]
            # The Hub redirects to its storage host (a CDN); the client follows a redirect on HEAD only to
            # the same host, so the storage URL names this loopback server by another name.
            location = "http://%s:%d/lfs/%s" % (self.server.storage_host, self.server.server_address[1], quote(sha256))
            headers.update({"Location": location, "X-Linked-Etag": '"%s"' % sha256,
                            "X-Linked-Size": str(entry["size"]), "ETag": '"%s"' % entry["oid"]})
            return self._send(302, b"", headers)
        with open(entry["full"], "rb") as handle:
            data = handle.read()
        headers["ETag"] = '"%s"' % entry["oid"]
        return self._send(200, data, headers, content_type="application/octet-stream")

    def _lfs(self, sha256):
        for commits in self.server.store.all_repos():
            for commit in commits:
                for entry in commit.files.values():
                    if entry["lfs"] and entry["lfs"]["oid"] == sha256:
                        return self._range(entry)
        return self._error("EntryNotFound", "no such object", status=404)

    def _range(self, entry):
        with open(entry["full"], "rb") as handle:
            data = handle.read()
        headers = {"ETag": '"%s"' % entry["lfs"]["oid"], "Accept-Ranges": "bytes"}
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes="):
            start, _dash, end = wanted[6:].partition("-")
            start = int(start or 0)
            end = int(end) if end else len(data) - 1
            if start >= len(data):
                return self._send(416, b"", {"Content-Range": "bytes */%d" % len(data)})
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
            return self._send(206, data[start:end + 1], headers, content_type="application/octet-stream")
        return self._send(200, data, headers, content_type="application/octet-stream")


def serve(root, port=0, host="127.0.0.1", request_log=None, storage_host="localhost"):
    """A started server (in a thread); ``server.server_address`` has the port."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.store = Store(root)
    server.request_log = request_log
    server.storage_host = storage_host
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


def lock_models(root):
    """The lab lock's ``models`` entries (inferops_serving_image_lock.models, as playbooks/pin.yml
    writes them for a real fleet): ``{"<org>/<name>": {"revision": <first commit>}}`` for every
    repository under ``root``. tests/lab/lab.sh up writes them, so each lab profile's model is
    staged at a commit this stand-in serves, whatever server_profile_overrides an operator passes."""
    store = Store(root)
    return {"%s/%s" % tuple(os.path.relpath(commits[0].directory, root).split(os.sep)[:2]): {"revision": commits[0].sha}
            for commits in store.all_repos()}


def pins_yaml(models):
    """``models`` as the lab lock's YAML lines, indented under ``inferops_serving_image_lock:``."""
    lines = ["  models:"] + ['    "%s":\n      revision: "%s"' % (model, entry["revision"])
                             for model, entry in sorted(models.items())]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "repos"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1"], help="loopback only")
    parser.add_argument("--storage-host", default="localhost",
                        help="the host name of LFS downloads (another name of this loopback server)")
    parser.add_argument("--log", default=None, help="append each request as a JSON line to this file")
    parser.add_argument("--list", action="store_true", help="print each repository's commits and exit")
    parser.add_argument("--pins", action="store_true",
                        help="print the lab lock's models entries (each repository's first commit) as YAML and exit")
    args = parser.parse_args(argv)
    if args.pins:
        sys.stdout.write(pins_yaml(lock_models(args.root)))
        return 0
    if args.list:
        store = Store(args.root)
        for commits in store.all_repos():
            print(json.dumps({"commits": [c.sha for c in commits], "dir": os.path.dirname(commits[0].directory)}))
        return 0
    server = serve(args.root, args.port, args.host, args.log, args.storage_host)
    print("hub stand-in on http://%s:%d (root %s)" % (server.server_address[0], server.server_address[1], args.root),
          flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
