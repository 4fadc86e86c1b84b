# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: drain_progress
author: inferops.serving contributors (@inferops)
short_description: Whether the gateway's drain may stop waiting for a host's in-flight requests
version_added: 0.1.0
description:
  - Reads the engine's running and waiting request gauges (the plan's names, C(server_deployment.metrics))
    from its C(/metrics) text.
  - The drain is done when nothing is in flight, or when the engine is wedged - requests in flight,
    O(waited) at least O(stall_after) seconds, and the generation counter unmoved since the first read
    (O(first)), for engines that count tokens at every step (vLLM). A wedged engine's requests never
    finish, so waiting for them would only delay its replacement.
options:
  _input:
    description: The engine's C(/metrics) text now (Prometheus exposition format).
    type: str
    required: true
  names:
    description: The plan's metric names, C(server_deployment.metrics).
    type: dict
    required: true
  first:
    description: The C(/metrics) text read when the wait began; without it no stall is seen.
    type: str
  waited:
    description: Seconds waited so far.
    type: int
    default: 0
  stall_after:
    description: Seconds without a generated token, with requests in flight, that mean a wedged engine.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Wait for the host's in-flight requests to finish
  ansible.builtin.uri:
    url: "{{ server_deployment.urls.metrics }}"
    return_content: true
  register: metrics
  until: >-
    (metrics.content | inferops.serving.drain_progress(server_deployment.metrics, first.content,
     metrics.attempts | default(1) * 2)).done
  retries: 300
  delay: 2
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    in_flight:
      description: Running plus waiting requests; V(null) when the text has neither metric.
      type: int
    stalled:
      description: Whether the engine generated nothing for O(stall_after) seconds with requests in flight.
      type: bool
    done:
      description: Whether the drain may stop waiting.
      type: bool
"""

from ansible.errors import AnsibleFilterError


def _drain_progress(metrics_text, names, first=None, waited=0, stall_after=None):
    from ansible_collections.inferops.serving.plugins.module_utils._drain import STALL_AFTER, drain_progress
    if stall_after is None:
        stall_after = STALL_AFTER
    try:
        return drain_progress(metrics_text, names, first, int(waited), int(stall_after))
    except (TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError("drain_progress: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"drain_progress": _drain_progress}
