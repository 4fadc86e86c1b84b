# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_gate
author: inferops.serving contributors (@inferops)
short_description: Accept or refuse a candidate image on its throughput and speculative acceptance against the lock's figures
version_added: 0.1.0
description:
  - Refused when its output tok/s at the reference concurrency is below the baseline's by more than
    the threshold, or its accepted draft tokens per step fell below half the baseline's (seed 001,
    MTP silently off). Both figures are in the message.
  - With no baseline, or one measured at another concurrency, the candidate is accepted and the
    message says its figures become the baseline.
options:
  _input:
    description: The candidate's figures (C(inferops.serving.bench_level)).
    type: dict
    required: true
  baseline:
    description: The lock entry's C(evidence.bench) figures, or none.
    type: dict
  threshold:
    description: The share of throughput a candidate may lose.
    type: float
    default: 0.10
"""

EXAMPLES = r"""
- name: Gate the canary's figures
  ansible.builtin.set_fact:
    verdict: "{{ figures | inferops.serving.bench_gate(lock_entry.evidence.bench | default(none), 0.10) }}"
"""

RETURN = r"""
_value:
  description:
    - C(accepted), C(message), C(signature) (the known-bad signature of a refusal, C(slower_than_baseline)
      and/or C(speculative_acceptance_collapsed)), C(figures) (the candidate's, to record), C(baseline);
      with a comparison also C(reasons), C(change), C(baseline_tok_s), C(candidate_tok_s).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_gate(candidate, baseline=None, threshold=0.10):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, gate
    try:
        return gate(candidate, baseline, threshold)
    except BenchError as exc:
        raise AnsibleFilterError("bench_gate: %s" % exc)


class FilterModule:
    def filters(self):
        return {"bench_gate": _bench_gate}
