# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: spec_decode_evidence
author: inferops.serving contributors (@inferops)
short_description: Whether speculative decoding made drafts and accepted tokens, from /metrics
version_added: 0.1.0
description:
  - Compares the engine's Prometheus metrics before and after a burst of requests, with the
    metric names of the deployment's engine (vLLM drafts and accepted tokens, as deltas; SGLang
    the accept length).
options:
  _input:
    description: The deployment (C(server_deployment)).
    type: dict
    required: true
  before:
    description: The C(/metrics) text before the burst.
    type: str
    required: true
  after:
    description: The C(/metrics) text after the burst.
    type: str
    required: true
  requests:
    description: How many requests the burst sent (reported back).
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: Check drafts were made and accepted
  ansible.builtin.assert:
    that: (server_deployment | inferops.serving.spec_decode_evidence(before.content, after.content, 8)).ok
"""

RETURN = r"""
_value:
  description:
    - C(engine), C(requests), C(ok); vLLM C(drafts) and C(accepted_tokens); SGLang C(accept_length).
  type: dict
"""


def _spec_decode_evidence(deployment, before, after, requests=0):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import spec_decode_evidence
    return spec_decode_evidence(deployment, before, after, requests)


class FilterModule:
    def filters(self):
        return {"spec_decode_evidence": _spec_decode_evidence}
