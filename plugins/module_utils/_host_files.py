# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The files a role keeps on a host, as one set: what differs (pure), and an atomic write.

``plan_files(wanted, observed)`` decides, for each wanted entry, what a converge must do, from what
was observed of the path (``observe`` reads it); the module acts. One module call for all of a
role's small files costs one round trip where a copy/template/file task per file costs two or three.
``atomic_write`` is also the watchdog's (roles/watchdog/files/inferops_watchdog.py), which the watchdog
role installs this file beside as ``inferops_host_files.py`` (the ``host_library`` lookup): standard
library only, Python 3.8+.
"""
from __future__ import annotations

import os
import stat
import tempfile

STATES = ("file", "directory", "absent")


class FilesError(ValueError):
    """A wanted entry is unusable (the message names it)."""


def normalise(entries):
    """The wanted entries, checked: ``[{path, state, content, mode, owner, group, keep_existing}]``;
    FilesError otherwise. ``keep_existing`` (directories only, default true): an existing directory's
    mode and owner are left as found (a shared directory, e.g. node_exporter's textfile directory,
    keeps its other writers); false makes them the entry's (a directory the role alone owns)."""
    out = []
    seen = set()
    for index, entry in enumerate(entries or []):
        where = "files[%d]" % index
        if not isinstance(entry, dict):
            raise FilesError("%s: expected a mapping with path, state, content, mode; got %s" % (where, type(entry).__name__))
        unknown = sorted(set(entry) - {"path", "state", "content", "mode", "owner", "group", "keep_existing"})
        if unknown:
            raise FilesError("%s: unknown keys %s (allowed: path, state, content, mode, owner, group, keep_existing)"
                             % (where, ", ".join(unknown)))
        path = entry.get("path")
        if not isinstance(path, str) or not path.startswith("/") or ".." in path.split("/"):
            raise FilesError("%s.path: got %r; expected an absolute path without '..'" % (where, path))
        path = path.rstrip("/") or "/"
        if path in seen:
            raise FilesError("%s.path: %s is listed twice" % (where, path))
        seen.add(path)
        state = entry.get("state") or "file"
        if state not in STATES:
            raise FilesError("%s.state: got %r; expected one of %s" % (where, state, ", ".join(STATES)))
        content = entry.get("content")
        if state == "file" and not isinstance(content, str):
            raise FilesError("%s.content: a file needs its content as a string (%s)" % (where, path))
        if state != "file" and content is not None:
            raise FilesError("%s.content: only a file has content (%s is %s)" % (where, path, state))
        mode = entry.get("mode")
        if state != "absent":
            if mode is None:
                raise FilesError("%s.mode: %s needs an explicit mode, e.g. '0644'" % (where, path))
            try:
                mode = int(str(mode), 8)
            except ValueError:
                raise FilesError("%s.mode: got %r; expected an octal string like '0644'" % (where, mode))
            if not 0 <= mode <= 0o7777:
                raise FilesError("%s.mode: got %r; expected at most 07777" % (where, entry.get("mode")))
        keep = entry.get("keep_existing")
        if keep is not None and (state != "directory" or not isinstance(keep, bool)):
            raise FilesError("%s.keep_existing: got %r for a %s; expected true or false, for a directory only"
                             % (where, keep, state))
        out.append({"path": path, "state": state, "content": content, "mode": mode,
                    "owner": entry.get("owner") or "root", "group": entry.get("group") or "root",
                    "keep_existing": state == "directory" and keep is not False})
    return out


def observe(path, read_content=True):
    """What is at ``path``: ``{kind: missing|file|directory|other, mode, uid, gid, content}``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "missing"}
    if stat.S_ISDIR(st.st_mode):
        kind = "directory"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        kind = "other"
    seen = {"kind": kind, "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}
    if kind == "file" and read_content:
        with open(path, "rb") as handle:
            seen["content"] = handle.read()
    return seen


def plan_files(wanted, observed, ids):
    """``[{path, action, reasons}]`` for each wanted entry (in order).

    ``observed`` maps path -> observe()'s result, ``ids`` maps (owner, group) -> (uid, gid).
    Actions: ``none``; ``write`` (a file's content, created or replaced); ``mkdir``; ``remove``;
    ``attributes`` (only mode/owner differ; never for an existing directory kept as found). A path of the wrong kind (a directory where a file is
    wanted, a symlink, a device) is refused: FilesError naming it, nothing is replaced blindly.
    """
    steps = []
    for entry in wanted:
        path, state = entry["path"], entry["state"]
        seen = observed.get(path) or {"kind": "missing"}
        reasons = []
        if state == "absent":
            if seen["kind"] == "missing":
                action = "none"
            elif seen["kind"] == "file":
                action, reasons = "remove", ["present"]
            else:
                raise FilesError("%s should be absent but is a %s; remove it by hand" % (path, seen["kind"]))
            steps.append({"path": path, "action": action, "reasons": reasons})
            continue
        if seen["kind"] not in ("missing", state):
            raise FilesError("%s should be a %s but is a %s; move it aside and run again" % (path, state, seen["kind"]))
        uid, gid = ids[(entry["owner"], entry["group"])]
        if seen["kind"] == "missing":
            action, reasons = ("write" if state == "file" else "mkdir"), ["missing"]
        elif entry["keep_existing"]:
            action = "none"
        else:
            if state == "file" and seen.get("content") != entry["content"].encode("utf-8"):
                reasons.append("content")
            if seen["mode"] != entry["mode"]:
                reasons.append("mode %04o -> %04o" % (seen["mode"], entry["mode"]))
            if (seen["uid"], seen["gid"]) != (uid, gid):
                reasons.append("owner %d:%d -> %d:%d" % (seen["uid"], seen["gid"], uid, gid))
            action = "none" if not reasons else ("write" if "content" in reasons else "attributes")
        steps.append({"path": path, "action": action, "reasons": reasons})
    return steps


def atomic_write(path, data, mode, uid=None, gid=None):
    """Replace ``path`` with ``data`` (bytes) atomically: a temporary file in the same directory,
    fsynced, given its mode and owner, then renamed over the path."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if uid is not None and gid is not None:
            os.chown(tmp, uid, gid)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
