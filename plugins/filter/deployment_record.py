# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: deployment_record
author: inferops.serving contributors (@inferops)
short_description: The state entry of a validated deployment
version_added: 0.1.0
description:
  - What a host records as its last known-good deployment once the proof passed - the plan's
    profile and options (from which C(inferops.serving.deployment) rebuilds it for a rollback),
    the container spec and its hashes, the engine version and the evidence.
options:
  _input:
    description: The deployment (C(server_deployment)).
    type: dict
    required: true
  observed:
    description: The backends backend_assert observed.
    type: dict
    default: {}
  smoke_answer:
    description: The smoke test's answer.
    type: str
    default: ""
  speculative:
    description: The speculative decoding evidence, if any.
    type: dict
  digest:
    description: The digest the host's daemon recorded, used when the profile pins none.
    type: str
  validated_at:
    description: When the proof passed (UTC, ISO 8601).
    type: str
  started_at:
    description: The proven container's C(State.StartedAt) (the start this proof is of).
    type: str
"""

EXAMPLES = r"""
- name: Record the deployment
  ansible.builtin.set_fact:
    entry: "{{ server_deployment | inferops.serving.deployment_record(observed=backends.observed) }}"
"""

RETURN = r"""
_value:
  description:
    - C(profile), C(options), C(spec), C(image), C(digest), C(argv_sha256), C(spec_sha256),
      C(engine_version), C(validated_at), C(started_at), C(evidence).
  type: dict
"""


def _deployment_record(deployment, observed=None, smoke_answer="", speculative=None, digest=None, validated_at=None,
                       started_at=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import record
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    return record(plain(deployment), observed=plain(observed or {}), smoke_answer=smoke_answer,
                  speculative=plain(speculative), digest=digest, validated_at=validated_at, started_at=started_at)


class FilterModule:
    def filters(self):
        return {"deployment_record": _deployment_record}
