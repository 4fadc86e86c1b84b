# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Plain data from what Ansible passes a plugin (its lazy mappings and lists).

A module of its own, importing nothing of the collection: most filters call it, and a task's
worker that only needs a plain copy should not compile the profile code (``_profile``) for it.
"""
from __future__ import annotations

from collections.abc import Mapping


def plain(data):
    """A plain copy of ``data`` (dicts, lists, scalars), whatever mapping types it came in."""
    if isinstance(data, Mapping):
        return {key: plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(value) for value in data]
    return data
