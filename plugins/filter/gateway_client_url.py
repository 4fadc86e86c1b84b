# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gateway_client_url
author: inferops.serving contributors (@inferops)
short_description: The OpenAI base URL clients use to reach a gateway
version_added: 0.1.0
description:
  - C(http://<address>:<port>/v1), the address being the gateway's listen address, or the gateway
    host's own address when it listens on every interface (C(0.0.0.0), C(::)). An IPv6 address is bracketed.
options:
  _input:
    description: The gateway's listen address (C(gateway_listen_address)).
    type: str
    required: true
  port:
    description: The gateway's port (C(gateway_port)).
    type: int
    required: true
  host_address:
    description: The gateway host's address (its C(ansible_host), else its inventory name).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Show the gateway's URL
  ansible.builtin.debug:
    msg: "{{ gateway_listen_address | inferops.serving.gateway_client_url(gateway_port, ansible_host | default(inventory_hostname)) }}"
"""

RETURN = r"""
_value:
  description: The base URL, e.g. C(http://gateway-01.example.com:4000/v1).
  type: str
"""


def _gateway_client_url(listen_address, port, host_address):
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import client_url
    return client_url(str(listen_address), int(port), str(host_address))


class FilterModule:
    def filters(self):
        return {"gateway_client_url": _gateway_client_url}
