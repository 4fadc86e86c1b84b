# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: container_action
author: inferops.serving contributors (@inferops)
short_description: What a converge does with the container it finds, against the deployment plan
version_added: 0.1.0
description:
  - A container runs the plan when it carries the plan's spec label and runs the plan's image (a
    container replaced by hand from the launch script keeps the label, so the label alone is not
    enough). The same function decides the server role's fast path and C(playbooks/status.yml)'s drift.
options:
  _input:
    description: The host's deployment plan (C(server_deployment)).
    type: dict
    required: true
  current:
    description:
      - The read of the plan's container, C(exists) and C(container), as
        C(inferops.serving.deployment_state) with C(container) and
        C(community.docker.docker_container_info) return them.
    type: dict
    required: true
  changes:
    description:
      - Also return C(changes), what the engine's restart would change (the plan against the
        container found and the launch spec the host recorded for it), for C(--check --diff).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Start the container unless it already runs the plan
  community.docker.docker_container:
    name: "{{ server_deployment.container }}"
    state: started
  when: (server_deployment | inferops.serving.container_action(current)).starting
"""

RETURN = r"""
_value:
  description:
    - C(exists), C(running); C(differs) (not this plan's container, or none); C(swapping) (one
      exists but differs, so create it staged and swap); C(replacing) (a running one that differs will
      be stopped); C(starting) (the engine will be started); C(drift) (why it differs, one line each).
    - "With O(changes=true), C(changes) too: one line per change the restart makes
      (C(--max-num-seqs 4 -> 16), C(image A -> B), C(env added: NAME), C(mount added: ...)), names
      only for the environment and secrets; empty when the engine is not started."
  type: dict
"""


def _container_action(deployment, current, changes=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action
    return container_action(deployment, current, changes=bool(changes))


class FilterModule:
    def filters(self):
        return {"container_action": _container_action}
