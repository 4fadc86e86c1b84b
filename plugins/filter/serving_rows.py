# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: serving_rows
author: inferops.serving contributors (@inferops)
short_description: One serving summary row per host of the play, a host's name alone where it recorded none
version_added: 0.1.0
description:
  - Used by C(playbooks/site.yml) to print the fleet's serving summary with
    C(inferops.serving.summary_table). Each host's C(server_summary) (what the server role
    recorded of its converge), in the order of the input, with C(host) set to the host's name.
  - A host that has no C(server_summary) (it failed or was not reached before the server role
    recorded one) gets a row with only C(host), which the table shows as C(NOT SERVED), so one
    failed host never hides the others.
options:
  _input:
    description: The hosts, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars) (or any mapping of host to its variables); only C(server_summary) is read.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Print the serving summary of every host of the play, once, from the controller
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | inferops.serving.serving_rows(hostvars) | inferops.serving.summary_table }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description:
    - One mapping per host, in the order of the input, the keys of its C(server_summary) and C(host).
    - C(host) alone for a host without a C(server_summary).
  type: list
  elements: dict
"""


def _serving_rows(hosts, hostvars):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._status import serving_rows
    hosts = [str(host) for host in hosts]
    return serving_rows(hosts, {host: plain((hostvars.get(host) or {}).get("server_summary")) for host in hosts})


class FilterModule:
    def filters(self):
        return {"serving_rows": _serving_rows}
