# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: drain_without_other_host
author: inferops.serving contributors (@inferops)
short_description: The model groups a drain would leave without a host the gateway sees healthy
version_added: 0.1.0
description:
  - The model groups of O(host) whose other hosts in the gateway's routing its last background
    health check lists all as unhealthy (LiteLLM's C(/health), C(unhealthy_endpoints) by
    C(model_id)). The drain waits for this list to be empty before it takes O(host) out, so a host
    just back from its own restart counts only once the gateway routes to it again.
options:
  _input:
    description: The gateway's C(/health) answer (JSON).
    type: dict
    required: true
  groups:
    description: The gateway's model groups and their hosts (C(gateway_drain)'s C(groups)).
    type: dict
    required: true
  drained:
    description: The hosts out of routing (C(gateway_drain)'s C(drained)).
    type: dict
    required: true
  host:
    description: The host about to be drained.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The groups left without another healthy host
  ansible.builtin.debug:
    msg: "{{ health.json | inferops.serving.drain_without_other_host(routing.groups, routing.drained, inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: The model groups' names, sorted; empty when every group has another healthy host.
  type: list
  elements: str
"""


def _drain_without_other_host(health, groups, drained, host):
    from ansible_collections.inferops.serving.plugins.module_utils._drain import without_other_host
    return without_other_host(groups or {}, drained or {}, host, health)


class FilterModule:
    def filters(self):
        return {"drain_without_other_host": _drain_without_other_host}
