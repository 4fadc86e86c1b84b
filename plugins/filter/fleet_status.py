# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_status
author: inferops.serving contributors (@inferops)
short_description: One status row per host of the play, a NOT READ row where a host recorded none
version_added: 0.1.0
description:
  - Used by C(playbooks/status.yml) to print the fleet's table. Each host's C(server_status), in
    the order of the input, and for a host that has none (its status tasks failed) a row whose
    C(state) is C(NOT READ) and C(ok) false, so one failed host never hides the others.
options:
  _input:
    description: The hosts, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars) (or any mapping of host to its variables); only C(server_status) is read.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Print the status table
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | inferops.serving.fleet_status(hostvars) | inferops.serving.summary_table }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: One C(inferops.serving.host_status) row per host.
  type: list
  elements: dict
"""


def _fleet_status(hosts, hostvars):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._status import fleet_status
    hosts = [str(host) for host in hosts]
    return fleet_status(hosts, {host: plain((hostvars.get(host) or {}).get("server_status")) for host in hosts})


class FilterModule:
    def filters(self):
        return {"fleet_status": _fleet_status}
