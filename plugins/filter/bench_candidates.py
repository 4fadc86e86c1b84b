# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_candidates
author: inferops.serving contributors (@inferops)
short_description: The configurations playbooks/tune.yml deploys and sweeps
version_added: 0.1.0
description:
  - Every max-num-seqs value times every number of draft tokens k (k only for a profile with
    speculative decoding), each with the C(server_profile_overrides) that deploy it (the inventory's
    own overrides with the engine's flags laid over, vLLM C(max-num-seqs) and
    C(speculative_config.num_speculative_tokens), SGLang C(max-running-requests) and
    C(speculative-num-steps)/C(speculative-num-draft-tokens)) and the concurrency to measure it at
    (its own max-num-seqs).
options:
  _input:
    description: The deployment plan (C(server_deployment)).
    type: dict
    required: true
  max_num_seqs:
    description: The max-num-seqs values (a list or a comma-separated string). Default 4, 8, 16, 32 (seed 000's sweep).
    type: raw
  k:
    description: The k values (a list or a comma-separated string). Default 1, 2, 3 for a speculative profile.
    type: raw
  base_overrides:
    description: The inventory's own C(server_profile_overrides), kept under each candidate's.
    type: dict
"""

EXAMPLES = r"""
- name: The candidates
  ansible.builtin.set_fact:
    candidates: "{{ server_deployment | inferops.serving.bench_candidates([8, 16], [1, 2], server_profile_overrides) }}"
"""

RETURN = r"""
_value:
  description:
    - A list of C({config, concurrency, overrides, label, slug}); C(config) has C(max_num_seqs) and C(k);
      C(slug) names the candidate's sweep directory (C(max-num-seqs-8-k-2)).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError


def _bench_candidates(deployment, max_num_seqs=None, k=None, base_overrides=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import BenchError, candidates
    try:
        return candidates(deployment, max_num_seqs, k, base_overrides)
    except BenchError as exc:
        raise AnsibleFilterError("bench_candidates: %s" % exc)


class FilterModule:
    def filters(self):
        return {"bench_candidates": _bench_candidates}
