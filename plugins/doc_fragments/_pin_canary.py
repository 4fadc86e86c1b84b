# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations


class ModuleDocFragment:
    """The options the pin workflow's filters share: which canary, when, and what it deployed."""

    # Every filter that records a pin canary's outcome (lock entries, known-bad entries).
    DOCUMENTATION = r"""
options:
  host:
    description: The canary's inventory name.
    type: str
    required: true
  now:
    description: The time to record (UTC, ISO 8601).
    type: str
    required: true
"""

    # The lock entries of an image or a model revision: the plan the canary ran and its summary.
    LOCK_ENTRY = r"""
options:
  deployment:
    description: The deployment plan (C(server_deployment)).
    type: dict
    required: true
  summary:
    description: The server role's C(server_summary).
    type: dict
"""
