# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: preflight_checks
author: inferops.serving contributors (@inferops)
short_description: Whether a host can serve its deployment, from gpu_info's facts
version_added: 0.1.0
description:
  - One check per fact the profile's hardware names (GPU model, count, compute capability,
    per-GPU memory), unified memory free for the engine's share (unless the serving container,
    whose memory a replacement frees, runs) and disk for the model cache; each C({name, ok,
    message}), the message naming what was found and the fix.
options:
  _input:
    description: The host's deployment plan (C(server_deployment)).
    type: dict
    required: true
  gpu:
    description: The registered result of C(inferops.serving.gpu_info) (with C(memory_fraction), C(cache_dir), C(model), C(container)).
    type: dict
    required: true
  options:
    description:
      - C(meminfo_path), C(disk_free_gib), C(disk_free_gib_cached).
      - C(known_bad) (the inventory's known-bad list), C(groups) and C(hardware_group) (the host's
        C(group_names) and C(inferops_hardware_group)) - a plan C(playbooks/rollback.yml) left on
        a host of the same hardware group is refused (check C(not rolled back)).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Refuse a host that cannot serve its profile
  ansible.builtin.assert:
    that: failed | length == 0
    fail_msg: "{{ failed | map(attribute='message') | list }}"
  vars:
    failed: "{{ server_deployment | inferops.serving.preflight_checks(gpu) | rejectattr('ok') | list }}"
"""

RETURN = r"""
_value:
  description: The checks, each C(name), C(ok) and C(message) (V(null) when ok).
  type: list
  elements: dict
"""


def _preflight_checks(deployment, gpu, options=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._preflight import host_checks
    return host_checks(deployment, gpu, options)


class FilterModule:
    def filters(self):
        return {"preflight_checks": _preflight_checks}
