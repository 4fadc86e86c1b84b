# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_tune
author: inferops.serving contributors (@inferops)
short_description: The configuration meeting a latency objective with the most tok/s, as an inventory overlay
version_added: 0.1.0
description:
  - Of the configurations swept, the one with the highest output tok/s whose figures meet every
    bound of the objective (seed 000 - pick max-num-seqs to the latency target, not the max); the
    number of draft tokens k then from the measured tok/s of the k values at that max-num-seqs (a
    smaller k within 2 % wins; seed 001) and from the per-position acceptance (seed 000, 0.67 / 0.36
    / 0.16 gives k=2), reported side by side.
  - The overlay is C(server_profile_overrides) (the engine's flags) with
    C(server_profile_overrides_evidence) (the objective, every configuration met or rejected, the k
    advice) beside it.
options:
  _input:
    description: One C({config, level}) per configuration swept (C(level) from C(inferops.serving.bench_level)).
    type: list
    elements: dict
    required: true
  objective:
    description:
      - Upper bounds by figure name (C(ttft_p99_s), C(itl_p99_ms), C(ttft_p50_s), ...); C(min_<figure>) for
        a lower bound. Empty values are ignored; at least one bound is needed.
    type: dict
    required: true
  deployment:
    description: The deployment plan (C(server_deployment)), for its engine and profile.
    type: dict
    required: true
  host:
    description: The host the sweeps ran on (recorded in the evidence).
    type: str
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    tuned: "{{ entries | inferops.serving.bench_tune({'ttft_p99_s': 8}, server_deployment, inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description:
    - C(met) (bool), C(message), C(choice) (C(max_num_seqs), C(k)), C(k_advice) (C(measured), C(acceptance),
      C(k), C(reason)), C(overlay) (C(server_profile_overrides), C(server_profile_overrides_evidence); None
      when nothing met the objective).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_tune(entries, objective, deployment, host=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, tune
    try:
        return tune(entries, objective, deployment, host)
    except BenchError as exc:
        raise AnsibleFilterError("bench_tune: %s" % exc)


class FilterModule:
    def filters(self):
        return {"bench_tune": _bench_tune}
