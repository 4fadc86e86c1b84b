# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The host's deployment state (``/var/lib/inferops-serving/<name>.json``): parse, heal, record.

The file holds ``{schema_version: 1, last_known_good: <entry>, history: [<entry>, ...]}``, newest
first. A missing, empty or unparseable file means "no last known-good" (never a raw error); the
caller keeps a corrupt file aside and rewrites it at the next record. Pure functions; the module
does the I/O.

``schema_version`` is the file's layout: a file without one was written before the layout had a
version (collection 0.1.0 before its release) and is read as layout 1, whose keys it has; the
next record writes the version. A file of a later layout than this code knows is refused
(``StateVersionError``), never kept aside nor rewritten: a rollback must not start from a state
it cannot read, and an older controller must not throw away a newer one's history.
"""
from __future__ import annotations

import copy
import json

HIDDEN = "<hidden>"
DEFAULT_HISTORY = 5
# The layout this code reads and writes; raise it (and read the older ones) when the layout changes.
SCHEMA_VERSION = 1
VERSION_KEY = "schema_version"


class StateError(ValueError):
    """An entry to record is not usable (it names what is wrong)."""


class StateVersionError(ValueError):
    """The file's layout is not one this code can read (a later version wrote it)."""

    def __init__(self, version):
        self.version = version
        super().__init__("its %s is %s; this inferops.serving reads layouts up to %d"
                         % (VERSION_KEY, json.dumps(version), SCHEMA_VERSION))


def schema_version(state):
    """The layout of a parsed file: its ``schema_version``, or 1 for a file written before the
    layout had one (the same keys). Raises StateVersionError for one this code cannot read."""
    version = state.get(VERSION_KEY, SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise StateVersionError(version)
    return version


def empty_state():
    return {"last_known_good": {}, "history": []}


def parse(data):
    """``(state, problem)`` for the file's bytes (or None when missing).

    ``problem`` is None for a usable file and for a missing or empty one (both mean no state);
    otherwise it says why the file is unusable, and ``state`` is empty. A file of a layout this
    code does not know raises StateVersionError (checked before its shape: a later layout may
    have another).
    """
    if data is None or not data.strip():
        return empty_state(), None
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        return empty_state(), "not UTF-8 text (%s)" % exc.reason
    try:
        state = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return empty_state(), "not valid JSON (%s)" % (exc if isinstance(exc, ValueError) else "nested too deeply")
    if not isinstance(state, dict):
        return empty_state(), "the top level is a %s, not a JSON object" % type(state).__name__
    schema_version(state)
    lkg = state.get("last_known_good")
    lkg = {} if lkg is None else lkg
    history = state.get("history")
    history = [] if history is None else history
    if not isinstance(lkg, dict):
        return empty_state(), "last_known_good is a %s, not an object" % type(lkg).__name__
    if not isinstance(history, list) or not all(isinstance(item, dict) for item in history):
        return empty_state(), "history is not a list of objects"
    if lkg and not isinstance(lkg.get("spec_sha256"), str):
        return empty_state(), "last_known_good has no spec_sha256"
    return dict(state, last_known_good=lkg, history=history), None


def record(state, entry, history=DEFAULT_HISTORY):
    """``(new_state, changed)``: ``entry`` as the last known-good, prepended to a bounded history.

    ``changed`` only when the entry's ``spec_sha256`` differs from the current last known-good's
    (a converge that deployed nothing new leaves the file, and its times, as they are), or when
    the same deployment was proven for a new container start (``started_at``): then the last
    known-good and the newest history entry are replaced, the history does not grow.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("spec_sha256"), str) or not entry["spec_sha256"]:
        raise StateError("entry needs a spec_sha256 (the launch spec's digest, a string); got %s"
                         % ("keys %s" % ", ".join(sorted(map(str, entry))) if isinstance(entry, dict)
                            else "a %s" % type(entry).__name__))
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise StateError("history must be a whole number >= 1 (how many deployments to keep); got %r" % (history,))
    current = (state or {}).get("last_known_good") or {}
    if current.get("spec_sha256") == entry["spec_sha256"]:
        if not entry.get("started_at") or current.get("started_at") == entry["started_at"]:
            return state, False
        # The same deployment, proven again after a new start (a resumed wait, a watchdog restart):
        # the record of the proven start moves on; the history does not grow.
        new = dict(state, **{VERSION_KEY: SCHEMA_VERSION})
        new["last_known_good"] = copy.deepcopy(entry)
        history = list(state.get("history") or [])
        new["history"] = [copy.deepcopy(entry)] + history[1:] if history else [copy.deepcopy(entry)]
        return new, True
    new = dict(state or {}, **{VERSION_KEY: SCHEMA_VERSION})
    new["last_known_good"] = copy.deepcopy(entry)
    new["history"] = ([copy.deepcopy(entry)] + list((state or {}).get("history") or []))[:history]
    return new, True


def hide_env(data):
    """``data`` with the values of every ``env`` mapping replaced by ``<hidden>`` (names kept)."""
    if isinstance(data, dict):
        return {key: ({name: HIDDEN for name in value} if key == "env" and isinstance(value, dict)
                      else hide_env(value)) for key, value in data.items()}
    if isinstance(data, list):
        return [hide_env(item) for item in data]
    return data


def dump(state):
    """The file text in this code's layout (``schema_version`` set): indented JSON, keys sorted,
    trailing newline."""
    return json.dumps(dict(state, **{VERSION_KEY: SCHEMA_VERSION}), indent=2, sort_keys=True) + "\n"


def corrupt_path(path, now):
    """Where a corrupt file is kept aside: ``<path>.corrupt-<UTC time>`` (``now`` a UTC datetime)."""
    return "%s.corrupt-%s" % (path, now.strftime("%Y%m%dT%H%M%SZ"))
