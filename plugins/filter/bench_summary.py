# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_summary
author: inferops.serving contributors (@inferops)
short_description: Mean and std per concurrency level of a load sweep's results
version_added: 0.1.0
description:
  - Summarises the C(results.json) of C(scripts/run-loadgen sweep) per concurrency level; with 3 or more
    runs the first is dropped as the warm-up (seed 002's R2-R3), and each figure is the mean and
    sample standard deviation over the others.
  - The sweep's C(plan), C(endpoint) and C(generator) are kept beside the levels.
options:
  _input:
    description: The parsed C(results.json) (C({plan, endpoint, runs})) or its C(runs) list.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Summarise a sweep
  ansible.builtin.set_fact:
    summary: "{{ lookup('ansible.builtin.file', 'results/host/results.json') | from_json | inferops.serving.bench_summary }}"
"""

RETURN = r"""
_value:
  description:
    - C(runs_used), C(warmup_dropped), C(warmup_run), C(levels) (per level C(concurrency), C(runs) and
      each figure as C({mean, std})), and C(plan), C(endpoint), C(generator), C(title) from the results.
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_summary(results):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, summary
    try:
        return summary(results)
    except BenchError as exc:
        raise AnsibleFilterError("bench_summary: %s" % exc)


class FilterModule:
    def filters(self):
        return {"bench_summary": _bench_summary}
