# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Merging settings into Docker's ``daemon.json`` without losing anyone else's keys."""
from __future__ import annotations

import copy
import json


class DaemonJsonError(ValueError):
    """The existing file is not a JSON object."""


def load(text):
    """The settings in ``text``; an empty or missing file holds none."""
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DaemonJsonError("not valid JSON: %s" % exc) from exc
    if not isinstance(data, dict):
        raise DaemonJsonError("the top level is a %s, not a JSON object" % type(data).__name__)
    return data


def dump(data):
    """The file text for ``data``: indented, keys in their existing order, trailing newline."""
    return json.dumps(data, indent=2) + "\n"


def deep_merge(current, settings):
    """``settings`` laid over ``current``: objects merge key by key at every depth.

    Any other value replaces the current one; a null value removes the key. Keys only in
    ``current`` are always kept. Neither input is modified.
    """
    merged = copy.deepcopy(current)
    for key, value in settings.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(_without_nulls(value))
    return merged


def _without_nulls(value):
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def merge_text(text, settings):
    """``(before, after, changed)`` for merging ``settings`` into the file text ``text``.

    ``changed`` compares the parsed settings, so reformatting alone never counts as a change.
    """
    before = load(text)
    after = deep_merge(before, settings)
    return before, after, after != before
