# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: readiness_plan
author: inferops.serving contributors (@inferops)
short_description: How the server role waits for an engine to become ready
version_added: 0.1.0
description:
  - Decides, for a deployment and the host's deployment state, whether the start is a first
    deploy of its model (weights not yet cached - longer budgets), the overall cap, the stall
    budget of every start-up phase, how many bounded waits make up the cap, and whether the
    running container's start was already proven (recorded with its C(StartedAt)).
  - Fails with the variable's name for a budget or timeout that is not a positive whole number
    of seconds, or an unknown phase.
options:
  _input:
    description: The deployment (C(server_deployment)).
    type: dict
    required: true
  state:
    description: The host's deployment state as C(inferops.serving.deployment_state) reads it.
    type: dict
    default: {}
  started_at:
    description: The running container's C(State.StartedAt), if one runs.
    type: str
  setting:
    description: C(server_ready_first_deploy) - V(auto), V(true) or V(false).
    type: raw
    default: auto
  restart_timeout:
    description: C(server_ready_timeout), the cap of a restart.
    type: int
    default: 1800
  first_deploy_timeout:
    description: C(server_ready_first_deploy_timeout), the cap of a first deploy.
    type: int
    default: 5400
  stall_timeout:
    description: C(server_ready_stall_timeout), one budget for every phase.
    type: int
  phase_budgets:
    description: C(server_ready_phase_budgets), budgets per phase.
    type: dict
    default: {}
  wait_chunk:
    description: C(server_ready_wait_chunk), seconds per bounded wait.
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Plan the readiness wait
  ansible.builtin.set_fact:
    readiness: "{{ server_deployment | inferops.serving.readiness_plan(state=state, started_at=started) }}"
"""

RETURN = r"""
_value:
  description:
    - C(first_deploy) (bool), C(timeout) (the cap, s), C(budgets) (phase to seconds), C(wait_chunk),
      C(retries) (bounded waits up to the cap, plus one) and C(proven) (the running start was recorded).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _readiness_plan(deployment, state=None, started_at=None, setting="auto", restart_timeout=1800,
                    first_deploy_timeout=5400, stall_timeout=None, phase_budgets=None, wait_chunk=30):
    from ansible_collections.inferops.serving.plugins.module_utils._readiness import BudgetError, plan
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    try:
        return plan(plain(deployment), plain(state or {}), started_at, setting, restart_timeout,
                    first_deploy_timeout, stall_timeout, plain(phase_budgets or {}), wait_chunk)
    except BudgetError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:
    def filters(self):
        return {"readiness_plan": _readiness_plan}
