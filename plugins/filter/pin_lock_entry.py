# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_lock_entry
author: inferops.serving contributors (@inferops)
short_description: The image lock's entry for a digest proven on a pin canary
version_added: 0.1.0
description:
  - The digest, its engine version and image ID, when it was pinned, the digest before it, the
    platforms it was validated on, and the evidence (canary, profile, backends, readiness, smoke
    answer, speculative burst, soak, benchmark figures), with its mirror and archive references.
  - Without a benchmark in this run, the previous entry's figures are kept; a null value is left out.
options:
  _input:
    description: The canary's target (P(inferops.serving.pin_target#filter)).
    type: dict
    required: true
  version:
    description: The engine's C(/version) answer.
    type: str
  spec_evidence:
    description: The server role's C(server_spec_evidence).
    type: dict
  soak:
    description: The registered result of M(inferops.serving.soak).
    type: dict
  soak_minutes:
    description: C(pin_soak_minutes).
    type: float
    default: 0
  bench:
    description: The benchmark's verdict (P(inferops.serving.bench_gate#filter)), none without a benchmark.
    type: dict
  bench_run:
    description: The benchmark's C(workload), C(runs) and C(duration).
    type: dict
  mirror:
    description: C(pin_mirror), the registry prefix the digest was pushed to.
    type: str
  pushed:
    description: The registered result of the push to the mirror.
    type: dict
extends_documentation_fragment:
  - inferops.serving._pin_canary
  - inferops.serving._pin_canary.lock_entry
"""

EXAMPLES = r"""
- name: The lock entry
  ansible.builtin.set_fact:
    entry: "{{ target | inferops.serving.pin_lock_entry(server_deployment, inventory_hostname, '2026-12-01T10:00:00Z') }}"
"""

RETURN = r"""
_value:
  description: The entry of C(inferops_serving_image_lock.images[repository:tag]).
  type: dict
"""


def _pin_lock_entry(target, deployment, host, now, summary=None, version=None, spec_evidence=None, soak=None,
                    soak_minutes=0, bench=None, bench_run=None, mirror=None, pushed=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import (
        bench_evidence,
        lock_entry,
        mirror_reference,
    )
    run = bench_run or {}
    evidence = bench_evidence(bench, run.get("workload", "chat"), run.get("runs", 3), run.get("duration", 60), now) \
        if bench else None
    return lock_entry(target, deployment, host, now, summary, version, spec_evidence, soak, soak_minutes, evidence,
                      mirror_reference(mirror, target["repository"], target["digest"], pushed))


class FilterModule:
    def filters(self):
        return {"pin_lock_entry": _pin_lock_entry}
