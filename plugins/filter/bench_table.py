# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_table
author: inferops.serving contributors (@inferops)
short_description: A load sweep's summary as a markdown table beside the profile's measured figures
version_added: 0.1.0
description:
  - One row per concurrency level (output tok/s, TTFT and ITL p50/p99, requests/s, KV cache usage, as
    mean +- std), and beside it the profile's C(measured) output tok/s and TTFT at that level with the
    relative difference (single stream at 1, the saturated figures at the plan's max-num-seqs).
options:
  _input:
    description: The summary (C(inferops.serving.bench_summary)).
    type: dict
    required: true
  deployment:
    description: The deployment plan (C(server_deployment)) whose profile's C(measured) section is drawn beside.
    type: dict
"""

EXAMPLES = r"""
- name: Write the table
  ansible.builtin.copy:
    dest: results/host/table.md
    content: "{{ summary | inferops.serving.bench_table(server_deployment) }}"
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The markdown text (a heading naming the profile, the table, a note on the runs used).
  type: str
"""

from ansible.errors import AnsibleFilterError


def _bench_table(summary, deployment=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, table
    try:
        return table(summary, deployment)
    except (BenchError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("bench_table: %s (expected bench_summary's output and server_deployment)" % exc)


class FilterModule:
    def filters(self):
        return {"bench_table": _bench_table}
