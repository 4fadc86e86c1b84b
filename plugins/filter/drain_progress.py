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
  - Reads the engine's running and waiting request gauges (the plan's names, C(server_deployment.metrics),
    from the engine catalog) from its C(/metrics) read - its text, or the C(ansible.builtin.uri) result.
  - Fails closed - a read that is not a 200 (a 404 from SGLang without C(--enable-metrics), a 401, a
    timeout - status -1), or a text without both gauges (renamed by an engine upgrade), is unreadable
    (RV(_value.readable) false, RV(_value.reason) says why), never "nothing in flight". The drain is then
    done only once it has waited O(unread_after) seconds, or, without it, the seconds
    the plan's stop timeout O(stop_timeout) gives, at most O(drain_timeout) (the whole O(drain_timeout)
    for an engine without a graceful stop).
  - The drain is done when nothing is in flight, or when the engine is wedged - requests in flight,
    O(waited) at least O(stall_after) seconds, and the generation counter unmoved since the first read
    (O(first)), for engines that count tokens at every step (vLLM). A wedged engine's requests never
    finish, so waiting for them would only delay its replacement.
options:
  _input:
    description:
      - The engine's C(/metrics) read now - its text (Prometheus exposition format, an answer with status
        200), or the registered result of C(ansible.builtin.uri) (C(status), C(content), C(msg)).
    type: raw
    required: true
  names:
    description: The plan's metric names, C(server_deployment.metrics).
    type: dict
    required: true
  first:
    description: The C(/metrics) read when the wait began (text or uri result); without it no stall is seen.
    type: raw
  waited:
    description: Seconds waited so far.
    type: int
    default: 0
  stall_after:
    description: Seconds without a generated token, with requests in flight, that mean a wedged engine.
    type: int
    default: 60
  unread_after:
    description: Seconds an unreadable C(/metrics) is waited for before the drain is done; overrides O(stop_timeout).
    type: int
  stop_timeout:
    description: The plan's stop timeout, C(server_deployment.shutdown.stop_timeout) (null - no graceful stop).
    type: int
  drain_timeout:
    description: The gateway's drain timeout, the most an unreadable C(/metrics) is waited for.
    type: int
"""

EXAMPLES = r"""
- name: Wait for the host's in-flight requests to finish
  ansible.builtin.uri:
    url: "{{ server_deployment.urls.metrics }}"
    return_content: true
  register: metrics
  failed_when: false
  until: >-
    (metrics | inferops.serving.drain_progress(server_deployment.metrics, first,
     metrics.attempts | default(1) * 2, stop_timeout=server_deployment.shutdown.stop_timeout,
     drain_timeout=600)).done
  retries: 300
  delay: 2
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    in_flight:
      description: Running plus waiting requests; V(null) when the gauges could not be read.
      type: int
    readable:
      description: Whether the read answered 200 with both gauges.
      type: bool
    reason:
      description: Why the gauges could not be read (the HTTP status, no answer, the gauge missing); V(null) when readable.
      type: str
    message:
      description: What the run prints when the gauges cannot be read - the gauges, why, and how long the drain waited; absent when readable.
      type: str
    waited:
      description: O(waited), as a whole number of seconds.
      type: int
    unread_after:
      description: Seconds an unreadable C(/metrics) is waited for (null - no bound here, the caller's retries end it).
      type: int
    stalled:
      description: Whether the engine generated nothing for O(stall_after) seconds with requests in flight.
      type: bool
    done:
      description:
        - Whether the drain may stop waiting - nothing in flight, a wedged engine, or gauges unreadable for the
          whole unread wait.
      type: bool
"""

from ansible.errors import AnsibleFilterError


def _drain_progress(metrics_text, names, first=None, waited=0, stall_after=None, unread_after=None, stop_timeout=None,
                    drain_timeout=None):
    from ansible_collections.inferops.serving.plugins.module_utils._drain import STALL_AFTER, drain_progress, unread_wait
    if stall_after is None:
        stall_after = STALL_AFTER
    try:
        if unread_after is None and (stop_timeout is not None or drain_timeout is not None):
            unread_after = unread_wait(stop_timeout, drain_timeout)
        return drain_progress(dict(metrics_text) if hasattr(metrics_text, "keys") else metrics_text, names,
                              dict(first) if hasattr(first, "keys") else first, int(float(waited)), int(stall_after),
                              None if unread_after is None else int(unread_after))
    except (TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError("drain_progress: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"drain_progress": _drain_progress}
