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
  - Derives, once, what the monitoring role writes from the deployment plans (C(server_deployment))
    of the serving hosts, so no target list or metric name is written by hand.
  - One engine target (the plan's port and C(/metrics) path, its API key from a file when the engine
    has one) and one node_exporter target per host, labelled with the host, profile and engine.
  - The alert rules map each engine's metric names to common series, turn the profiles' measured
    figures into objectives and alert on both.
  - Each host's variables are read from the play's C(hostvars) - its C(server_deployment) (its plan),
    its C(monitoring_scrape_address) (else C(ansible_host), else its name; where the monitoring host
    reaches it), its C(monitoring_node_exporter_port) (over C(options.node_exporter_port)), and the
    C(prometheus.prometheus) collection's node_exporter variables C(node_exporter_web_listen_address)
    (its port, when C(monitoring_node_exporter_port) is not set for the host),
    C(node_exporter_web_telemetry_path) (the scrape path) and C(node_exporter_textfile_dir) (must be
    where the watchdog writes when C(options.node_exporter_install) is false).
  - Refuses a host without a plan (unless O(unplanned=report)), a host not in the inventory and
    out-of-range thresholds, naming the role variable.
  - Refuses rules that read an engine metric the host's engine release (its plan's
    C(image.engine_version)) does not export, as the engine catalog lists them per release, naming
    the metric, the release, the hosts and the nearest names the release exports.
options:
  _terms:
    description: The serving hosts' inventory names (C(monitoring_serving_hosts)), as names or lists of names.
    type: list
    elements: raw
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
  unplanned:
    description:
      - What a host without a plan (C(server_deployment)) does. V(fail) fails naming it;
        V(report) returns only C(unplanned), the hosts without a plan, and plans nothing (a run
        limited to some serving hosts keeps the configuration Prometheus runs).
    type: str
    choices: [fail, report]
    default: fail
notes:
  - Runs on the controller. The result names the serving hosts' secrets (the engines' API key
    variables), never their values.
"""

EXAMPLES = r"""
- name: Plan the monitoring of every serving host, once
  ansible.builtin.set_fact:
    monitoring: >-
      {{ lookup('inferops.serving.monitoring_plan', groups['serving'], options={'scrape_interval': '30s'},
                unplanned='report') }}

- name: Write prometheus.yml
  ansible.builtin.copy:
    dest: /etc/prometheus/prometheus.yml
    content: "{{ monitoring.prometheus | to_nice_yaml }}"
    mode: "0644"
    validate: promtool check config %s
  when: monitoring.unplanned | length == 0
"""

RETURN = r"""
_raw:
  description:
    - One plan - C(targets) (one dict per scrape target), C(prometheus) (prometheus.yml), C(rules)
      (the rules file), C(credentials) (C(host), C(path), C(env), the API key files to write, by the
      secret's name, never its value), C(textfile_dirs) (host to the watchdog's textfile
      directory), C(node_exporters) (host to its node_exporter's C(listen_address),
      C(metrics_path) and C(textfile_dir)), and C(unplanned) (empty).
    - With O(unplanned=report) and a host without a plan, C(unplanned) (those hosts) alone.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils._monitoring import MonitoringError, play_plan
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import scrub


def _names(terms):
    """The host names of the terms, a list given as one term flattened."""
    names = []
    for term in terms or ():
        names.extend(term if isinstance(term, (list, tuple)) else [term])
    return [str(name) for name in names]


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        hostvars = (variables or {}).get("hostvars")
        if hostvars is None:
            raise AnsibleLookupError("inferops.serving.monitoring_plan needs the play's hostvars: call it in a task")
        try:
            return [play_plan(_names(terms), hostvars, plain(self.get_option("options") or {}),
                              unplanned=self.get_option("unplanned"))]
        except MonitoringError as exc:
            # from None: ansible-core appends a cause's own message to the error, unscrubbed.
            raise AnsibleLookupError(scrub(exc)) from None
