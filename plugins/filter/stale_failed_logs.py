# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: stale_failed_logs
author: inferops.serving contributors (@inferops)
short_description: The saved failure logs of a container beyond the newest ones kept
version_added: 0.1.0
description:
  - Of the paths given, the C(failed-<container>-<YYYYmmddTHHMMSSZ>.log) files of O(container)
    (as the server role's rescue saves them) except the O(keep) newest; other files, and other
    containers' logs, are never chosen.
options:
  _input:
    description: Paths found in the state directory.
    type: list
    elements: str
    required: true
  container:
    description: The container whose logs are pruned.
    type: str
    required: true
  keep:
    description: How many of the newest logs stay (C(server_failed_logs_kept)).
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Delete the older failure logs
  ansible.builtin.file:
    path: "{{ item }}"
    state: absent
  loop: "{{ found.files | map(attribute='path') | inferops.serving.stale_failed_logs('inferops-serving', 10) }}"
"""

RETURN = r"""
_value:
  description: The paths to delete, oldest first.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def _stale_failed_logs(paths, container, keep):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import stale_failed_logs
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
    try:
        return stale_failed_logs(paths, container, int(keep) if str(keep).isdigit() else keep)
    except ProfileError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"stale_failed_logs": _stale_failed_logs}
