# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_overlay
author: inferops.serving contributors (@inferops)
short_description: The variables of the inventory overlay the tune entry point writes
version_added: 0.1.0
description:
  - C(server_profile_overrides), the inventory's own overrides with the chosen flags laid over
    (mappings merged at every depth), and C(server_profile_overrides_evidence) (the objective, every
    candidate's figures, the k advice, the failed candidates, where the sweeps are).
options:
  _input:
    description: The tune decision (P(inferops.serving.bench_tune#filter)) that met the objective.
    type: dict
    required: true
  base_overrides:
    description: The inventory's own overrides (C(server_deployment.overrides)).
    type: dict
  failed:
    description: The candidates that did not deploy, C({config, error}).
    type: list
    elements: dict
  sweeps:
    description: The directory of the sweeps.
    type: str
"""

EXAMPLES = r"""
- name: The overlay
  ansible.builtin.set_fact:
    overlay: "{{ decision | inferops.serving.bench_overlay(server_deployment.overrides, [], '/tmp/tune') }}"
"""

RETURN = r"""
_value:
  description: C(server_profile_overrides) and C(server_profile_overrides_evidence).
  type: dict
"""


def _bench_overlay(decision, base_overrides=None, failed=None, sweeps=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._bench_plays import overlay_vars
    return overlay_vars(decision, base_overrides, failed, sweeps)


class FilterModule:
    def filters(self):
        return {"bench_overlay": _bench_overlay}
