# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gateway_routing
author: inferops.serving contributors (@inferops)
short_description: Which serving hosts one gateway routes to, from its deployments and its drain file
version_added: 0.1.0
description:
  - Used by the gateway role's C(status) entry point (C(playbooks/status.yml), the gateway's summary
    in C(site.yml)). A host is in routing when it is a deployment of the running proxy (its
    C(model_info.inferops_host)) and not in the drain file; out of routing when it is drained, or
    no deployment of the gateway.
  - A gateway whose deployments could not be read, or whose drain file is malformed, is not OK and
    its hosts' routing is unknown.
options:
  _input:
    description:
      - The registered C(ansible.builtin.uri) result of the proxy's C(GET /v1/model/info) (the
        deployments it lists, each C(model_info.inferops_host) naming its serving host). Any
        answer but 200 makes the gateway C(NOT READ), with the status and the result's message.
      - >-
        Or, in a rescue, C(ansible_failed_result) (or an unreachable result); the gateway is then
        C(NOT READ) with its message.
    type: dict
    required: true
  gateway:
    description: The gateway host's inventory name.
    type: str
    required: true
  url:
    description: The URL clients use (C(client_url) of the C(inferops.serving.gateway_plan) lookup); null when not known.
    type: str
    required: true
  drained:
    description:
      - >-
        The drain file's text (C(<gateway_state_dir>/drained.json)),
        C({"hosts": {"<host>": {"since": "<ISO UTC>", "by": "<reason>"}}}); null when there is none.
        Text that is not such JSON makes the gateway not OK, its hosts' routing unknown.
    type: str
"""

EXAMPLES = r"""
- name: Decide the gateway's routing
  ansible.builtin.set_fact:
    gateway_status: >-
      {{ model_info_result | inferops.serving.gateway_routing(inventory_hostname, 'http://127.0.0.1:4000/v1',
         drained=(drain_file.content | b64decode) if drain_file.content is defined else none) }}
"""

RETURN = r"""
_value:
  description:
    - C(gateway), C(url), C(ok), C(state) (C(routes to N of M hosts), or what was not read),
      C(groups) (each model group's hosts), C(in_routing) (each deployment's host, true or false;
      empty when not OK), C(drained) (each drained host, since when and by what), C(problems).
  type: dict
"""


def _gateway_routing(result, gateway, url, drained=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import routing_from_reads
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    return routing_from_reads(plain(result), str(gateway), None if url is None else str(url),
                              None if drained is None else str(drained))


class FilterModule:
    def filters(self):
        return {"gateway_routing": _gateway_routing}
