# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gateway_config
author: inferops.serving contributors (@inferops)
short_description: The LiteLLM proxy configuration of the serving fleet's deployment plans
version_added: 0.1.0
description:
  - One model group per served model name, one deployment per serving host (its C(api_base) from
    the host's address and its plan's port; its engine API key, where the engine has one, as an
    C(os.environ/<VAR>) reference to the gateway's env file), the extra served names and
    C(settings.aliases) as C(model_group_alias), the router's retries, cooldowns, timeouts and
    health-check routing, and the master key as C(os.environ/LITELLM_MASTER_KEY).
  - The result holds no secret value. Errors name the variable or the host and the fix.
options:
  _input:
    description:
      - The serving hosts, each C({host, address, deployment}) - the inventory name, the address
        the gateway reaches it at (C(gateway_backend_address)) and its plan (C(server_deployment)).
    type: list
    elements: dict
    required: true
  settings:
    description:
      - The C(gateway_*) settings without their prefix - C(num_retries), C(allowed_fails),
        C(cooldown_time), C(timeout), C(stream_timeout), C(health_check_interval),
        C(routing_strategy), C(aliases).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Derive the gateway's configuration
  ansible.builtin.set_fact:
    gateway_plan: >-
      {{ [{'host': 'spark-1', 'address': '10.0.0.11', 'deployment': hostvars['spark-1'].server_deployment}]
         | inferops.serving.gateway_config({'num_retries': 2}) }}
"""

RETURN = r"""
_value:
  description:
    - C(config) (LiteLLM's config.yaml as a mapping), C(groups) (model group -> hosts),
      C(aliases) (alias -> model group), C(key_env) (env file variable -> C({host, secret})).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _gateway_config(backends, settings=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway import GatewayError, gateway_config
    try:
        return gateway_config(backends, settings)
    except GatewayError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"gateway_config": _gateway_config}
