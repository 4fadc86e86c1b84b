# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: monitoring_plan
author: inferops.serving contributors (@inferops)
short_description: Prometheus targets, configuration and alert rules from the serving hosts' deployment plans
version_added: 0.1.0
description:
  - Derives what the monitoring role writes from the deployment plans (C(server_deployment)) of
    the serving hosts, so no target list or metric name is written by hand.
  - One engine target (the plan's port and C(/metrics) path, its API key from a file when the engine
    has one) and one node_exporter target per host, labelled with the host, profile and engine.
  - The alert rules map each engine's metric names to common series, turn the profiles' measured
    figures into objectives and alert on both.
  - Refuses a host without a plan and out-of-range thresholds, naming the role variable.
  - Refuses rules that read an engine metric the host's engine release (its plan's
    C(image.engine_version)) does not export, as the engine catalog lists them per release, naming
    the metric, the release, the hosts and the nearest names the release exports.
options:
  _input:
    description:
      - The serving hosts' inventory names.
      - Each host's C(server_deployment) is its plan; its C(monitoring_scrape_address) (else
        C(ansible_host), else its name) is where the monitoring host reaches it; its
        C(monitoring_node_exporter_port) overrides C(options.node_exporter_port).
      - The C(prometheus.prometheus) collection's node_exporter variables of a host are read too,
        C(node_exporter_web_listen_address) (its port, when C(monitoring_node_exporter_port) is not
        set for the host), C(node_exporter_web_telemetry_path) (the scrape path) and
        C(node_exporter_textfile_dir) (must be where the watchdog writes when
        C(options.node_exporter_install) is false).
    type: list
    elements: str
    required: true
  hostvars:
    description: The play's C(hostvars).
    type: dict
    required: true
  options:
    description:
      - Keys C(scrape_interval), C(evaluation_interval), C(node_exporter_port), C(rules_file),
        C(credentials_dir), C(alertmanager), C(decode_floor_fraction), C(acceptance_fraction),
        C(ttft_margin), C(kv_cache_full_ratio), C(unified_memfree_floor_ratio),
        C(restart_budget_low), C(watchdog_stale_seconds), C(node_exporter_install),
        C(extra_targets) (the role's C(monitoring_*) variables).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write prometheus.yml
  ansible.builtin.copy:
    dest: /etc/prometheus/prometheus.yml
    content: "{{ (groups['serving'] | inferops.serving.monitoring_plan(hostvars, options)).prometheus | to_nice_yaml }}"
    mode: "0644"
    validate: promtool check config %s
  vars:
    options:
      scrape_interval: 15s
"""

RETURN = r"""
_value:
  description:
    - C(targets) (one dict per scrape target), C(prometheus) (prometheus.yml), C(rules) (the rules
      file), C(credentials) (C(host), C(path), C(env), the API key files to write, by the secret's
      name, never its value), C(textfile_dirs) (host to the watchdog's textfile directory),
      C(node_exporters) (host to its node_exporter's C(listen_address), C(metrics_path) and
      C(textfile_dir)).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _monitoring_plan(names, hostvars, options=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._monitoring import (
        MonitoringError,
        monitoring_plan,
        node_exporter_settings,
    )
    hosts = []
    try:
        for name in names or ():
            facts = hostvars[name]
            node = node_exporter_settings(str(name), facts, options)
            hosts.append({"host": str(name),
                          "address": facts.get("monitoring_scrape_address") or facts.get("ansible_host") or str(name),
                          "deployment": facts.get("server_deployment"),
                          "node_exporter_port": node["port"],
                          "node_exporter_listen": node["listen_address"],
                          "node_exporter_path": node["metrics_path"],
                          "node_exporter_textfile_dir": facts.get("node_exporter_textfile_dir")})
        return monitoring_plan(hosts, options)
    except MonitoringError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"monitoring_plan": _monitoring_plan}
