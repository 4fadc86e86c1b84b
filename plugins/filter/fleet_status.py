# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_status
author: inferops.serving contributors (@inferops)
short_description: One row per host of the play from a fact the server role records, a stand-in row where a host recorded none
version_added: 0.1.0
description:
  - Each host's O(fact), in the order of the input, so one failed host never hides the others.
  - V(server_status) (the default; C(playbooks/status.yml)) - the host's status row; a host that
    has none (its status tasks failed) gets a row whose C(state) is C(NOT READ) and C(ok) false.
  - V(server_summary) (C(playbooks/serving.yml)'s serving summary) - what the server role recorded of
    the host's converge, with C(host) set to the host's name; a host that has none (it failed or was
    not reached before the server role recorded one) gets a row with only C(host), which
    C(inferops.serving.summary_table) shows as C(NOT SERVED).
options:
  _input:
    description: The hosts, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars) (or any mapping of host to its variables); only O(fact) is read.
    type: dict
    required: true
  fact:
    description: The fact each row comes from.
    type: str
    choices: [server_status, server_summary]
    default: server_status
"""

EXAMPLES = r"""
- name: Print the status table
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | inferops.serving.fleet_status(hostvars) | inferops.serving.summary_table }}"
  run_once: true

- name: Print the serving summary of every host of the play, once, from the controller
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | inferops.serving.fleet_status(hostvars, fact='server_summary') | inferops.serving.summary_table }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description:
    - One row per host, in the order of the input - an C(inferops.serving.host_status) row
      (V(server_status)), or the keys of its C(server_summary) and C(host) (V(server_summary)).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

FACTS = ("server_status", "server_summary")


def _fleet_status(hosts, hostvars, fact="server_status"):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._status import fleet_status, serving_rows
    if fact not in FACTS:
        raise AnsibleFilterError("fleet_status: fact got %r; expected one of %s" % (fact, ", ".join(FACTS)))
    hosts = [str(host) for host in hosts]
    rows = fleet_status if fact == "server_status" else serving_rows
    return rows(hosts, {host: plain((hostvars.get(host) or {}).get(fact)) for host in hosts})


class FilterModule:
    def filters(self):
        return {"fleet_status": _fleet_status}
