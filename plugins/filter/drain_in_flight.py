# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: drain_in_flight
author: inferops.serving contributors (@inferops)
short_description: The requests an engine is running or has queued, from its /metrics text
version_added: 0.1.0
description:
  - Sums the engine's running and waiting request gauges over their label sets - the names are
    the deployment plan's (C(server_deployment.metrics), keys C(running) and C(waiting)), for
    example vLLM's C(vllm:num_requests_running) and C(vllm:num_requests_waiting).
  - What the gateway's drain waits to reach 0 before the engine stops.
options:
  _input:
    description: The engine's C(/metrics) text (Prometheus exposition format).
    type: str
    required: true
  names:
    description: The plan's metric names, C(server_deployment.metrics).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Count the engine's in-flight requests
  ansible.builtin.debug:
    msg: "{{ metrics.content | inferops.serving.drain_in_flight(server_deployment.metrics) }}"
"""

RETURN = r"""
_value:
  description: Running plus waiting requests; V(null) when the text has neither metric.
  type: int
"""

from ansible_collections.inferops.serving.plugins.module_utils._drain import in_flight


class FilterModule:
    def filters(self):
        return {"drain_in_flight": in_flight}
