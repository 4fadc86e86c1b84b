# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: host_status
author: inferops.serving contributors (@inferops)
short_description: A serving host's status, from what was read without changing anything
version_added: 0.1.0
description:
  - Compares the running container (image and spec label) with the host's deployment plan (the
    inventory's profile, overrides, options and lock) and reads the engine's health, one real
    completion and its live metrics (running and waiting requests, KV cache usage, speculative
    acceptance), plus the watchdog's state.
  - Used by C(playbooks/status.yml); a host whose container drifted from its plan, or that does
    not answer correctly, is not C(ok).
options:
  _input:
    description: The host's deployment plan (C(server_deployment)).
    type: dict
    required: true
  host:
    description: The host's inventory name.
    type: str
    required: true
  container:
    description:
      - The serving container as read by C(inferops.serving.deployment_state) with C(container)
        (or C(community.docker.docker_container_info)'s registered result), with C(exists) and
        C(container).
    type: dict
  recorded:
    description: The registered result of C(inferops.serving.deployment_state) (read).
    type: dict
  health:
    description: The registered C(ansible.builtin.uri) result of the health endpoint.
    type: dict
  completion:
    description: The registered C(ansible.builtin.uri) result of the probe completion.
    type: dict
  metrics:
    description: The C(/metrics) text.
    type: str
  watchdog:
    description: The watchdog's state file, parsed, if any.
    type: dict
  known_bad:
    description:
      - The inventory's known-bad list (C(inferops_known_bad_images)). A host whose plan
        C(playbooks/rollback.yml) left on its hardware group is C(ROLLED BACK:) (with the rollback and
        how to end it), not C(DRIFT:), and is OK when it serves.
    type: list
    elements: dict
  groups:
    description: The host's C(group_names), for its hardware group.
    type: list
    elements: str
  hardware_group:
    description: The host's C(inferops_hardware_group), if set.
    type: str
"""

EXAMPLES = r"""
- name: Decide the host's status
  ansible.builtin.set_fact:
    server_status: >-
      {{ server_deployment | inferops.serving.host_status(inventory_hostname, container=info,
         recorded=state, health=health, completion=answer, metrics=metrics.content | default('')) }}
"""

RETURN = r"""
_value:
  description:
    - C(host), C(ok), C(state) (V(serving), C(ROLLED BACK:), C(DRIFT:) or C(NOT SERVING:) with the reasons), C(drift),
      C(problems), C(profile), C(digest) (running), C(planned_digest), C(last_known_good),
      C(engine_version), C(smoke_answer), C(smoke_latency_seconds), C(details) (live figures).
  type: dict
"""


def _host_status(deployment, host, container=None, recorded=None, health=None, completion=None, metrics=None,
                 watchdog=None, known_bad=None, groups=None, hardware_group=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._status import host_status
    return host_status(host, plain(deployment), container=plain(container), recorded=plain(recorded),
                       health=plain(health), completion=plain(completion), metrics=metrics, watchdog=plain(watchdog),
                       known_bad=plain(known_bad), groups=plain(groups),
                       hardware_group=None if hardware_group is None else str(hardware_group))


class FilterModule:
    def filters(self):
        return {"host_status": _host_status}
