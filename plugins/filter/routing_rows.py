# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: routing_rows
author: inferops.serving contributors (@inferops)
short_description: The status rows with each host's routing on the gateways, then a row per gateway
version_added: 0.1.0
description:
  - Used by C(playbooks/status.yml) and the gateway's summary in C(site.yml). Each host row gets
    C(routing) (gateway to true, false or null when unknown) and C(details.routing) (in or out, on
    which gateway, why).
  - A host that serves (C(ok)) but is out of routing on a gateway (drained, or no deployment of
    its configuration), or is in routing but does not serve, is flagged, its C(ok) false and its
    C(state) saying which.
  - Each gateway then gets a row (for C(inferops.serving.summary_table)) with its URL, its state
    and the hosts in and out of routing.
options:
  _input:
    description: The status rows (C(inferops.serving.fleet_status)); may be empty.
    type: list
    elements: dict
    required: true
  gateways:
    description:
      - Each gateway's C(inferops.serving.gateway_routing) result; an empty list changes nothing.
      - With O(hostvars), the gateway hosts instead, usually from C(ansible_play_hosts_all).
    type: list
    elements: raw
    required: true
  hostvars:
    description:
      - C(hostvars) (or any mapping of host to its variables). Given, each host of O(gateways) is read
        for its C(gateway_status) (the gateway role's C(status) entry point sets it); a host without
        one (not a gateway, or not read in check mode) is left out.
    type: dict
"""

EXAMPLES = r"""
- name: Print the status table with the gateways
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | inferops.serving.fleet_status(hostvars)
             | inferops.serving.routing_rows(gateways) | inferops.serving.summary_table }}"
  vars:
    gateways: "{{ groups['gateway'] | default([]) | map('extract', hostvars, 'gateway_status') | select('defined') | list }}"

- name: Print each gateway's row, read from the gateway_status of the hosts of the play
  ansible.builtin.debug:
    msg: "{{ [] | inferops.serving.routing_rows(ansible_play_hosts_all, hostvars) | inferops.serving.summary_table }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The rows, each host's with C(routing) and C(details.routing), then one per gateway (C(gateway) true).
  type: list
  elements: dict
"""


def _routing_rows(rows, gateways, hostvars=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import routing_rows
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    if hostvars is not None:
        gateways = [(hostvars.get(str(host)) or {}).get("gateway_status") for host in gateways or []]
    return routing_rows(plain(rows) or [], plain(gateways) or [])


class FilterModule:
    def filters(self):
        return {"routing_rows": _routing_rows}
