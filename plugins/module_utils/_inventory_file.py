# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""One entry merged into an inventory variables file (the image lock, the known-bad list).

Pure functions: the module ``inventory_entry`` holds a lock, reads the file, calls ``merge`` and
writes ``render``'s text atomically, so two canaries writing in one run both keep their entry.
"""
from __future__ import annotations

import copy

HEADER_PREFIX = "#"


class InventoryFileError(ValueError):
    """The file or the request does not fit (it names the variable and what it holds)."""


def deep_merge(current, update):
    """``update`` laid over ``current``: mappings merge key by key, a null removes the key."""
    merged = copy.deepcopy(current) if isinstance(current, dict) else {}
    for key, value in update.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        elif isinstance(value, dict):
            merged[key] = deep_merge({}, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _describe(value):
    return "a %s" % {dict: "mapping", list: "list", str: "string"}.get(type(value), type(value).__name__)


def merge(data, variable, entry, key=None, section=None, match=None):
    """``(new_data, merged_entry)``: ``entry`` merged into the file's variables ``data``.

    With ``key``: ``data[variable][section][key]`` (``section`` optional) is deep-merged with
    ``entry``. With ``match``: ``data[variable][section]`` is a list, and the item whose
    ``match`` field equals the entry's replaces that item (else the entry is appended).
    Everything else in the file is kept. ``data`` is not modified.
    """
    if (key is None) == (match is None):
        raise InventoryFileError("give exactly one of key (a mapping entry) or match (a list item field)")
    if not isinstance(entry, dict):
        raise InventoryFileError("entry must be a mapping, not %s" % _describe(entry))
    data = copy.deepcopy(data) if data is not None else {}
    if not isinstance(data, dict):
        raise InventoryFileError("the file holds %s at the top level; expected a mapping of variables" % _describe(data))
    where = variable + ("." + section if section else "")
    if key is not None:
        top = data.get(variable)
        top = {} if top is None else top
        if not isinstance(top, dict):
            raise InventoryFileError("%s is %s; expected a mapping" % (variable, _describe(top)))
        container = top
        if section:
            container = top.get(section)
            container = {} if container is None else container
            if not isinstance(container, dict):
                raise InventoryFileError("%s is %s; expected a mapping" % (where, _describe(container)))
        old = container.get(key)
        if old is not None and not isinstance(old, dict):
            raise InventoryFileError("%s[%r] is %s; expected a mapping" % (where, key, _describe(old)))
        merged = deep_merge(old or {}, entry)
        container = dict(container)
        container[key] = merged
        if section:
            top = dict(top)
            top[section] = container
        else:
            top = container
        data[variable] = top
        return data, merged
    if match not in entry:
        raise InventoryFileError("entry has no %r field to match the items of %s on" % (match, where))
    top = data.get(variable)
    items = top.get(section) if section and isinstance(top, dict) else top
    if section and top is not None and not isinstance(top, dict):
        raise InventoryFileError("%s is %s; expected a mapping" % (variable, _describe(top)))
    items = [] if items is None else items
    if not isinstance(items, list):
        raise InventoryFileError("%s is %s; expected a list" % (where, _describe(items)))
    merged = deep_merge({}, entry)
    kept = [item for item in items if not (isinstance(item, dict) and item.get(match) == entry[match])]
    items = kept + [merged]
    if section:
        top = dict(top or {})
        top[section] = items
        data[variable] = top
    else:
        data[variable] = items
    return data, merged


def header_of(text):
    """The leading comment lines of a YAML file (after an optional ``---``), as one string."""
    lines = []
    for line in (text or "").splitlines():
        if not lines and line.strip() == "---":
            continue
        if line.startswith(HEADER_PREFIX):
            lines.append(line)
        else:
            break
    return "\n".join(lines)


def comment(header):
    """``header`` as comment lines (each prefixed with ``# `` unless it already is a comment)."""
    lines = []
    for line in (header or "").splitlines():
        lines.append(line if line.startswith(HEADER_PREFIX) else ("# " + line).rstrip())
    return "\n".join(lines)


def render(data, header, dump):
    """The file text: ``---``, the header comment, then ``data`` dumped by ``dump`` (yaml.safe_dump)."""
    body = dump(data, default_flow_style=False, sort_keys=False, indent=2, width=120, allow_unicode=True)
    head = comment(header)
    return "---\n" + (head + "\n" if head else "") + body
