# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_objective
author: inferops.serving contributors (@inferops)
short_description: The latency objective of the benchmark role's tune entry point
version_added: 0.1.0
description:
  - C(benchmark_tune_objective) with the single bounds laid over, unset ones dropped, every value a
    number; refused, with how to give one, when no bound is given.
options:
  _input:
    description: C(benchmark_tune_objective), a mapping of figure to bound.
    type: dict
    required: true
  bounds:
    description: The single bounds (C(ttft_p99_s), C(ttft_p50_s), C(itl_p99_ms), C(itl_p50_ms), C(min_output_tok_s)).
    type: dict
"""

EXAMPLES = r"""
- name: The objective
  ansible.builtin.set_fact:
    objective: "{{ {} | inferops.serving.bench_objective({'ttft_p99_s': 8}) }}"
"""

RETURN = r"""
_value:
  description: The objective, figure to bound.
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_objective(given, bounds=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, objective
    try:
        return objective(given, bounds)
    except BenchError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"bench_objective": _bench_objective}
