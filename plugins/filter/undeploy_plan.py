# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: undeploy_plan
author: inferops.serving contributors (@inferops)
short_description: What removing a deployment from its host removes
version_added: 0.1.0
description:
  - Used by the server role's C(undeploy) entry point (C(playbooks/undeploy.yml)). From the
    deployment plan, the systemd instances to stop and disable (the watchdog and the
    start-with-Docker unit), the containers to remove (the container and its staged successor)
    and the files to remove (secret env file, launch script, watchdog configuration, state and
    textfile metrics, the last known-good record).
  - The files every deployment on the host shares (the template units and the watchdog program)
    are removed with the last deployment only, when O(scripts) holds no other deployment's
    launch script.
  - Kept are the model cache, the engine's compile cache, the image and the failure logs.
options:
  _input:
    description: The host's deployment plan (C(server_deployment)).
    type: dict
    required: true
  state_file:
    description: The host's last known-good record of this container.
    type: str
    required: true
  scripts:
    description: The launch scripts in the role's script directory (one per deployment on the host).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Decide what to remove
  ansible.builtin.set_fact:
    undeploy: "{{ server_deployment | inferops.serving.undeploy_plan('/var/lib/inferops-serving/inferops-serving.json') }}"
"""

RETURN = r"""
_value:
  description:
    - C(services) (systemd units to stop and disable), C(containers) (to remove), C(files)
      (C({path, state=absent}) entries for C(inferops.serving.host_files)), C(shared) (whether the
      shared files go too), C(others) (the other deployments' launch scripts).
  type: dict
"""


def _undeploy_plan(deployment, state_file, scripts=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._undeploy import undeploy_plan
    return undeploy_plan(plain(deployment), str(state_file), [str(path) for path in scripts or []])


class FilterModule:
    def filters(self):
        return {"undeploy_plan": _undeploy_plan}
