# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_plan
author: inferops.serving contributors (@inferops)
short_description: How site.yml rolls the serving fleet - its waves, when it holds a host, its summary rows
version_added: 0.1.0
description:
  - V(plan) (the default) - the serving play's waves over O(hosts), from the model group of each
    host's plan (C(server_deployment.served_model_name), published by the server role's
    C(resolve) entry point). A wave holds at most O(max_unavailable) changing hosts of one model
    group (a count, or a percentage of the group's hosts, rounded down, at least 1); the groups
    roll side by side; the hosts that do not change (O(read)) are in the first wave. With O(serial)
    (C(inferops_serial)), Ansible's own batches of the hosts' order instead. A host whose
    C(inferops_serving_failure) is set (its plan failed) is left out of the waves and counted as
    failed.
  - V(hold) - why O(host) must not converge now, or an empty string - a host of its model group
    failed in an earlier wave of O(plan), or more of the run's hosts failed (their
    C(inferops_serving_failure)) than O(plan)'s C(max_fail_percentage) allows.
  - V(rows) - the summary table's rows of O(hosts) - each host's C(server_summary), its state
    C(NOT SERVED) with the reason of a failed host (C(inferops_serving_failure)), C(NOT CONVERGED)
    with the reason of a held one (C(inferops_serving_held)).
options:
  _terms:
    description: V(plan), V(hold) or V(rows); V(plan) when none is given.
    type: list
    elements: str
    required: false
  hosts:
    description: The run's serving hosts in the play's order (V(plan), V(rows)), usually C(ansible_play_hosts_all).
    type: list
    elements: str
    default: []
  max_unavailable:
    description: C(inferops_max_unavailable) (V(plan)) - a count, or a percentage of each model group.
    type: raw
    default: 1
  serial:
    description: C(inferops_serial) (V(plan)) - Ansible's batches instead of the waves; empty for the waves.
    type: raw
  max_fail_percentage:
    description: C(inferops_max_fail_percentage) (V(plan)) - the share of the run's hosts that may fail before the rollout holds the rest.
    type: raw
    default: 34
  read:
    description:
      - (V(plan)) Count as changing only the hosts whose running engine this converge stops - the
        C(container_action) of each host's plan and of its container read, which the server role's
        C(rollout) entry point registers as C(server_rollout_read) (a host not read counts as not
        changing; the server role's outage check still guards each wave). Without it every host
        counts as changing.
    type: bool
    default: true
  plan:
    description: The V(plan) (V(hold)).
    type: dict
    default: {}
  host:
    description: The host to ask about (V(hold)), usually C(inventory_hostname).
    type: str
notes:
  - Runs on the controller and reads the hosts' variables (C(hostvars)). Errors name the variable and the fix.
"""

EXAMPLES = r"""
- name: Plan the rollout once, on the controller
  ansible.builtin.set_fact:
    inferops_rollout: >-
      {{ lookup('inferops.serving.rollout_plan', hosts=ansible_play_hosts_all,
                max_unavailable=inferops_max_unavailable | default(1), serial=inferops_serial | default(none)) }}
  run_once: true
  delegate_to: localhost
  delegate_facts: true

- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ lookup('inferops.serving.rollout_plan', 'rows', hosts=ansible_play_hosts_all) | inferops.serving.summary_table }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description:
    - V(plan) - C(hosts) (the serving play's host order), C(serial) (the size of each batch, the
      play's C(serial)), C(waves), C(groups) (host -> model group), C(wave_of) (host -> wave from 0),
      C(run) and C(total) (the run's serving hosts), C(max_fail_percentage), C(by)
      (C(inferops_max_unavailable) or C(inferops_serial)).
    - V(hold) - the reason, or an empty string.
    - V(rows) - one summary row per host.
  type: list
  elements: raw
"""

from collections.abc import Mapping

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._rollout import (
    RolloutError,
    changing_hosts,
    halt_reason,
    rollout_plan,
    summary_rows,
)

KINDS = ("plan", "hold", "rows")
# What the server role's rollout entry point registers on each host: its container read (deployment_state).
READ = "server_rollout_read"


def _vars(hostvars, host):
    try:
        found = hostvars[host]
    except (KeyError, TypeError):
        return {}
    return found if isinstance(found, Mapping) else {}


def _facts(hostvars, hosts, name):
    """``{host: value}`` of the hosts that have the variable ``name`` set to something."""
    found = {}
    for host in hosts:
        value = _vars(hostvars, host).get(name)
        if value not in (None, "", False):
            found[str(host)] = str(value)
    return found


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        kind = str(terms[0]) if terms else "plan"
        hostvars = (variables or {}).get("hostvars") or {}
        try:
            if len(terms) > 1 or kind not in KINDS:
                raise RolloutError("rollout_plan: got %s; expected one of %s" % (", ".join(map(str, terms)), ", ".join(KINDS)))
            if kind == "hold":
                plan = plain(self.get_option("plan") or {})
                if not plan.get("wave_of") and not plan.get("run"):
                    raise RolloutError("rollout_plan hold: give plan=<the rollout plan> (site.yml plans it on localhost)")
                failed = _facts(hostvars, plan.get("run") or plan.get("hosts") or [], "inferops_serving_failure")
                return [halt_reason(plan, str(self.get_option("host")), failed) or ""]
            hosts = [str(host) for host in self.get_option("hosts") or []]
            if kind == "rows":
                summaries = {host: _vars(hostvars, host).get("server_summary") for host in hosts}
                return [plain(summary_rows(hosts, summaries, _facts(hostvars, hosts, "inferops_serving_failure"),
                                           _facts(hostvars, hosts, "inferops_serving_held")))]
            groups, deployments, reads = {}, {}, {}
            for host in hosts:
                deployment = _vars(hostvars, host).get("server_deployment")
                if isinstance(deployment, Mapping):
                    groups[host] = deployment.get("served_model_name")
                    deployments[host] = deployment
                reads[host] = _vars(hostvars, host).get(READ)
            changing = changing_hosts(hosts, deployments, reads) if self.get_option("read") else None
            return [plain(rollout_plan(hosts, groups, self.get_option("max_unavailable"), self.get_option("serial"),
                                       self.get_option("max_fail_percentage"), changing=changing,
                                       failed=_facts(hostvars, hosts, "inferops_serving_failure")))]
        except RolloutError as exc:
            raise AnsibleLookupError(str(exc)) from None
