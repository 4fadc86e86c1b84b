# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_sweep
author: inferops.serving contributors (@inferops)
short_description: The load sweep of one host - its URL, results directory, command line and timeout
version_added: 0.1.0
description:
  - The endpoint's URL as the controller reaches it, the results directory, the C(scripts/run-loadgen
    sweep) command line (levels, runs, duration or requests, workload, seed; C(--allow-fewer-runs)
    below 3 runs; C(--api-key-stdin) when the endpoint has a key), the time Ansible waits for it, and
    the C(scripts/run-loadgen plot) command line.
options:
  _input:
    description: The deployment plan (C(server_deployment)).
    type: dict
    required: true
  host:
    description: The host's inventory name.
    type: str
    required: true
  python:
    description: The load generator's python (C(scripts/loadgen-env)).
    type: str
    required: true
  scripts:
    description: The collection's C(scripts) directory.
    type: path
    required: true
  options:
    description:
      - C(url), C(address), C(results_dir) ({host} replaced), C(root), C(stamp), C(prefix) (the default
        results directory is C(<root>/<prefix><stamp>/<host>)), C(levels), C(runs), C(duration), C(requests),
        C(workload), C(seed), C(api_key) (a bool), C(profile_dirs).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Plan the sweep
  ansible.builtin.set_fact:
    sweep: "{{ server_deployment | inferops.serving.bench_sweep(inventory_hostname, python, scripts, {'levels': '1,4'}) }}"
"""

RETURN = r"""
_value:
  description: C(url), C(out) (the results directory), C(levels), C(timeout) (seconds), C(argv), C(plot_argv).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_sweep(deployment, host, python, scripts, options=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, sweep
    try:
        return sweep(deployment, host, python, scripts, dict(options or {}))
    except BenchError as exc:
        raise AnsibleFilterError("bench_sweep: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"bench_sweep": _bench_sweep}
