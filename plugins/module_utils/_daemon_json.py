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
import math


class DaemonJsonError(ValueError):
    """The existing file (or the settings) cannot be a Docker daemon configuration; the message says why."""


# dockerd's configuration is a few levels deep (runtimes.<name>.args); anything this deep is not one.
MAX_DEPTH = 64


def _no_constant(name):
    raise DaemonJsonError("%s is not a JSON number (dockerd rejects it too)" % name)


def _finite(text):
    number = float(text)
    if math.isinf(number):
        raise DaemonJsonError("the number %s is out of range for a 64-bit float (dockerd rejects it too)" % text[:40])
    return number


def depth(value, limit=MAX_DEPTH):
    """How deeply ``value`` nests objects and arrays, counting up to ``limit`` + 1 (iterative)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > limit:
                return level
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def load(text):
    """The settings in ``text`` (str or bytes); an empty or missing file holds none.

    Refused with a DaemonJsonError: bytes that are not UTF-8, invalid JSON, NaN/Infinity and
    numbers out of float range (which would be written back as Infinity), nesting deeper than
    MAX_DEPTH, and a top level that is not an object.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DaemonJsonError("not UTF-8 text: byte 0x%02x at offset %d cannot be decoded"
                                  % (exc.object[exc.start], exc.start)) from None
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise DaemonJsonError("nested too deeply to be a daemon configuration (more than %d levels)"
                              % MAX_DEPTH) from None
    except DaemonJsonError:
        raise
    except ValueError as exc:
        raise DaemonJsonError("not valid JSON: %s" % exc) from exc
    if not isinstance(data, dict):
        raise DaemonJsonError("the top level is a %s, not a JSON object" % type(data).__name__)
    if depth(data) > MAX_DEPTH:
        raise DaemonJsonError("nested too deeply to be a daemon configuration (more than %d levels)" % MAX_DEPTH)
    return data


def dump(data):
    """The file text for ``data``: indented, keys in their existing order, trailing newline.

    Non-finite numbers are refused (DaemonJsonError): JSON has none and dockerd cannot read them.
    """
    if depth(data) > MAX_DEPTH:
        raise DaemonJsonError("the settings nest more than %d levels deep" % MAX_DEPTH)
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise DaemonJsonError("the settings hold a number JSON cannot write (%s)" % exc) from None


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
