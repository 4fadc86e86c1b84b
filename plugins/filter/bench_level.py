# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_level
author: inferops.serving contributors (@inferops)
short_description: One concurrency level's mean figures from a load sweep's summary
version_added: 0.1.0
description:
  - The figures of one level as plain numbers (the means over the runs used), the shape the tune
    decision and the pin gate compare; SGLang's mean accept length from the results when given.
  - Fails, naming the levels measured, when the summary has no level at that concurrency.
options:
  _input:
    description: The summary (C(inferops.serving.bench_summary)).
    type: dict
    required: true
  concurrency:
    description: The level's concurrency.
    type: int
    required: true
  results:
    description: The sweep's C(results.json), for SGLang's C(accept_length).
    type: dict
"""

EXAMPLES = r"""
- name: The figures at the plan's max-num-seqs
  ansible.builtin.set_fact:
    figures: "{{ summary | inferops.serving.bench_level(server_deployment.expect.max_num_seqs, results) }}"
"""

RETURN = r"""
_value:
  description:
    - C(concurrency), C(runs), C(output_tok_s), C(ttft_p50_s), C(ttft_p99_s), C(itl_p50_ms), C(itl_p99_ms),
      C(requests_per_s), and when measured C(kv_cache_usage), C(acceptance_per_pos) (a list), C(accept_length).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_level(summary, concurrency, results=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, level
    try:
        return level(summary, concurrency, results)
    except BenchError as exc:
        raise AnsibleFilterError("bench_level: %s" % exc)


class FilterModule:
    def filters(self):
        return {"bench_level": _bench_level}
