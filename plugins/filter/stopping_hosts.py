# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: stopping_hosts
author: inferops.serving contributors (@inferops)
short_description: The hosts of a batch whose running engine this converge stops
version_added: 0.1.0
description:
  - For each host, C(container_action) of its deployment plan (C(server_deployment)) and of the
    container the server role found (its registered read of the host, C(deployment_state) with
    C(container)). The host is listed when a running container that differs from the plan will be stopped (C(replacing)).
  - The server role's outage check reads it for the whole batch from every host; a host that has
    no plan or no container read yet (it failed before, or is not in this play) is left out.
options:
  _input:
    description: The hosts of the batch (C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars); C(server_deployment) and the server role's container read are read.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The hosts of this batch whose engine stops
  ansible.builtin.debug:
    msg: "{{ ansible_play_batch | inferops.serving.stopping_hosts(hostvars) }}"
"""

RETURN = r"""
_value:
  description: The hosts of the input whose engine this converge stops, in the input's order.
  type: list
  elements: str
"""

# The server role's registered read of the container (roles/server/tasks/main.yml).
CURRENT = "__server_current"


def _stopping_hosts(hosts, hostvars):
    from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action

    # container_action reads a handful of fields of each (the container's name, image and spec
    # label; the read's image, labels and state): it gets Ansible's lazy mappings as they are,
    # not plain copies of every host's whole plan and container inspect (every host of the batch
    # asks for the whole batch, so that copying grew with the square of the batch).
    stopping = []
    for host in hosts or []:
        if host not in hostvars:
            continue
        variables = hostvars[host]
        if "server_deployment" not in variables or CURRENT not in variables:
            continue
        if container_action(variables["server_deployment"], variables[CURRENT])["replacing"]:
            stopping.append(host)
    return stopping


class FilterModule:
    def filters(self):
        return {"stopping_hosts": _stopping_hosts}
