# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: watchdog_config
author: inferops.serving contributors (@inferops)
short_description: The serving watchdog's configuration, from the deployment plan
version_added: 0.1.0
description:
  - Builds the JSON configuration of C(inferops-watchdog) (the program the server role installs
    on every serving host) from the deployment plan and the role's watchdog variables.
  - Refuses what argument specs cannot express, naming the variable, for example
    C(server_watchdog_interval) of 0, a negative C(server_watchdog_restart_budget), a probe
    deadline not shorter than the interval, or an engine whose metrics the watchdog does not know.
options:
  _input:
    description: The deployment plan (the server role's C(server_deployment) fact).
    type: dict
    required: true
  options:
    description:
      - The watchdog options, keys C(interval), C(probe_deadline), C(probe_max_tokens),
        C(probe_prompt), C(restart_budget), C(startup_grace), C(crash_loop_restarts),
        C(crash_loop_window), C(unified_memory), C(meminfo_path), C(memory_wait_timeout),
        C(slow_floor), C(slow_fraction), C(slow_window), C(docker_host), C(state_file),
        C(textfile), C(log_lines).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the watchdog's configuration
  ansible.builtin.copy:
    dest: /etc/inferops-serving/watchdog-inferops-serving.json
    mode: "0644"
    content: "{{ server_deployment | inferops.serving.watchdog_config(options) | to_nice_json }}"
  vars:
    options:
      interval: 30
      probe_deadline: 20
      probe_max_tokens: 4
      restart_budget: 3
      startup_grace: 1800
      crash_loop_restarts: 2
      crash_loop_window: 600
      unified_memory: true
      memory_wait_timeout: 300
      slow_fraction: 0.3
      log_lines: 50
      state_file: /var/lib/inferops-serving/watchdog-inferops-serving.json
      textfile: /var/lib/node_exporter/inferops_watchdog_inferops_serving.prom
"""

RETURN = r"""
_value:
  description: The configuration the watchdog program reads (container, URLs, metric names, intervals, budget, memory rule, files).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _watchdog_config(deployment, options):
    from ansible_collections.inferops.serving.plugins.plugin_utils._watchdog import WatchdogConfigError, watchdog_config
    try:
        return watchdog_config(deployment, options)
    except WatchdogConfigError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"watchdog_config": _watchdog_config}
