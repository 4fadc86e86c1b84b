# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gateway_env_text
author: inferops.serving contributors (@inferops)
short_description: The gateway's env file text (master key and engine API keys)
version_added: 0.1.0
description:
  - C(LITELLM_MASTER_KEY=<master key>) and one C(<VAR>=<value>) line per engine key of
    C(gateway_config)'s C(key_env), read by systemd's C(EnvironmentFile=) into the proxy's
    environment, where the configuration's C(os.environ/<VAR>) references find them.
  - Refuses a master key that does not begin with C(sk-) (as LiteLLM's keys do), a missing engine
    key, or a value systemd would not read literally, naming the variable and never the value.
  - Use it under C(no_log).
options:
  _input:
    description: C(gateway_config)'s C(key_env).
    type: dict
    required: true
  host_secrets:
    description: Each serving host's C(server_secrets) by inventory name.
    type: dict
    required: true
  master_key:
    description: C(gateway_master_key).
    type: str
    required: true
  check:
    description:
      - Return the list of problems (each naming the variable, never a value; empty when the keys
        are good) instead of the text, so a task can refuse bad keys without hiding its message.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Write the gateway's env file
  ansible.builtin.copy:
    dest: /etc/inferops-gateway/gateway.env
    content: "{{ gateway_plan.key_env | inferops.serving.gateway_env_text(secrets_by_host, gateway_master_key) }}"
    mode: "0600"
  no_log: true

- name: Refuse bad keys before anything changes (the messages carry no value)
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    problems: "{{ gateway_plan.key_env | inferops.serving.gateway_env_text(secrets_by_host, gateway_master_key, check=true) }}"
"""

RETURN = r"""
_value:
  description: The env file text; with O(check), the list of problems.
  type: raw
"""

from ansible.errors import AnsibleFilterError


def _gateway_env_text(key_env, host_secrets, master_key, check=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway import (
        GatewayError,
        gateway_env_problems,
        gateway_env_text,
    )
    if check:
        return gateway_env_problems(key_env, host_secrets, master_key)
    try:
        return gateway_env_text(key_env, host_secrets, master_key)
    except GatewayError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"gateway_env_text": _gateway_env_text}
