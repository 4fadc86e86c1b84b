# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gateway_plan
author: inferops.serving contributors (@inferops)
short_description: The gateway's plan from the serving hosts' plans, or the routing plan of the gateway hosts
version_added: 0.1.0
description:
  - V(gateway) (the default) - the LiteLLM proxy's configuration of the serving hosts
    O(hosts), from the plans they published (C(server_deployment)) and the addresses the
    gateway reaches them at (C(gateway_backend_address), else C(ansible_host), else the inventory
    name) - one model group per served model name, one deployment per host, the aliases, the
    router's settings O(settings). Also the env file's variable of each engine key, the URL
    clients use, the hosts this run proved, and what is wrong with the keys (naming the variable,
    never a value). The C(inferops.serving.gateway) role computes it once and reads it.
  - V(routing) - what the C(inferops.serving.routing) role needs of each host of the C(gateway)
    group (O(gateways)), read from that gateway host's own variables (C(gateway_state_dir),
    C(gateway_listen_address), C(gateway_port), C(gateway_service_name), C(gateway_drain),
    C(gateway_drain_timeout), C(gateway_allow_outage); the gateway role's defaults where it has
    none).
  - V(address) - the gateway's own addresses from O(listen_address), O(port) and O(host_address)
    alone (no serving host needed) - C(client_url), the URL clients use, and C(local_url), where
    the gateway host's own requests reach the proxy. The gateway role's C(status) reads it.
  - With O(secrets), the secret counterpart instead - for V(gateway) the env file's text (the
    master key and each engine key from the hosts' C(server_secrets)), for V(routing) each
    gateway host's C(gateway_master_key). Use it only in a task with C(no_log).
options:
  _terms:
    description: V(gateway), V(routing) or V(address); V(gateway) when none is given.
    type: list
    elements: str
    required: false
  hosts:
    description: The serving hosts the gateway fronts (V(gateway)), C(gateway_serving_hosts) expanded.
    type: list
    elements: str
    default: []
  settings:
    description:
      - The router's C(gateway_*) settings without their prefix (V(gateway)) - C(num_retries),
        C(allowed_fails), C(cooldown_time), C(timeout), C(stream_timeout),
        C(health_check_interval), C(routing_strategy), C(aliases).
    type: dict
    default: {}
  listen_address:
    description: The proxy's listen address (V(gateway), V(address)), C(gateway_listen_address).
    type: str
    default: 127.0.0.1
  port:
    description: The proxy's port (V(gateway), V(address)), C(gateway_port).
    type: int
    default: 4000
  host_address:
    description:
      - The gateway host's address (V(gateway), V(address)) for the clients' URL when it listens on
        every interface (its C(ansible_host), else its inventory name).
    type: str
  master_key:
    description: C(gateway_master_key) (V(gateway)), checked for the plan's C(key_problems); never in the plan.
    type: str
  gateways:
    description: The gateway hosts (V(routing)), usually C(groups['gateway']).
    type: list
    elements: str
    default: []
  secrets:
    description: Return the secret counterpart (see the description). Only under C(no_log).
    type: bool
    default: false
notes:
  - Runs on the controller and reads the hosts' variables (C(hostvars)) of the play. Errors name
    the variable or the host and the fix, never a secret value.
"""

EXAMPLES = r"""
- name: Plan the gateway once
  ansible.builtin.set_fact:
    gateway: >-
      {{ lookup('inferops.serving.gateway_plan', hosts=query('ansible.builtin.inventory_hostnames', 'serving'),
                settings={'num_retries': 2}, port=4000, master_key=gateway_master_key) }}

- name: Write the env file
  ansible.builtin.copy:
    content: "{{ lookup('inferops.serving.gateway_plan', hosts=gateway.hosts, master_key=gateway_master_key, secrets=true) }}"
    dest: /etc/inferops-gateway/gateway.env
    mode: "0600"
  no_log: true

- name: Read where each gateway host keeps its drain state
  ansible.builtin.debug:
    msg: "{{ lookup('inferops.serving.gateway_plan', 'routing', gateways=groups['gateway']).gateways }}"
"""

RETURN = r"""
_raw:
  description:
    - V(gateway) - C(config) (LiteLLM's config.yaml as a mapping, no secret value), C(groups)
      (model group -> hosts), C(aliases) (alias -> model group), C(key_env) (env file variable ->
      C({host, secret})), C(backends) (each host's C(host), C(address), C(group), C(api_base)),
      C(expect) (the groups and aliases the proof must see), C(client_url), C(local_url),
      C(hosts), C(proven) (the hosts this run proved and did not fail after) and C(key_problems).
    - V(routing) - C(gateways) (each C(host), C(state_dir), C(health_url), C(service), C(drain),
      C(drain_timeout), C(allow_outage)), C(draining) (the gateway hosts whose drain is on) and
      C(drain_timeout) (the longest of theirs).
    - V(address) - C(client_url) and C(local_url).
    - With O(secrets), the env file's text (V(gateway)), or each gateway host's master key by its name (V(routing)).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import scrub
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway import (
    GatewayError,
    gateway_address,
    gateway_env_file,
    gateway_plan,
    routing_master_keys,
    routing_plan,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain

KINDS = ("gateway", "routing", "address")


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        kind = str(terms[0]) if terms else "gateway"
        hostvars = (variables or {}).get("hostvars") or {}
        secrets = self.get_option("secrets")
        try:
            if len(terms) > 1 or kind not in KINDS:
                raise GatewayError("gateway_plan: got %s; expected one of %s" % (", ".join(map(str, terms)), ", ".join(KINDS)))
            if kind == "address":
                return [gateway_address(self.get_option("listen_address"), self.get_option("port"),
                                        self.get_option("host_address"))]
            if kind == "routing":
                gateways = [str(host) for host in self.get_option("gateways") or []]
                return [routing_master_keys(gateways, hostvars) if secrets else routing_plan(gateways, hostvars)]
            hosts = [str(host) for host in self.get_option("hosts") or []]
            settings = plain(self.get_option("settings") or {})
            if secrets:
                return [gateway_env_file(hosts, hostvars, settings, self.get_option("master_key"))]
            return [plain(gateway_plan(hosts, hostvars, settings, self.get_option("listen_address"),
                                       self.get_option("port"), self.get_option("host_address"),
                                       self.get_option("master_key")))]
        except GatewayError as exc:
            raise AnsibleLookupError(scrub(exc)) from None
