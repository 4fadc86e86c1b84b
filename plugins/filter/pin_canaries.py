# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_canaries
author: inferops.serving contributors (@inferops)
short_description: One canary per hardware group and image for the pin role
version_added: 0.1.0
description:
  - In the hosts' order, the host marked C(canary) (the inventory's C(inferops_canary)), else the
    first host of each hardware group (C(inferops_hardware_group), else the host's first group other
    than C(serving)) and image.
  - With O(image), only hosts deploying it; an image no host deploys is refused with the images in use.
options:
  _input:
    description: One entry per host, C({host, image, groups, hardware_group, canary}).
    type: list
    elements: dict
    required: true
  image:
    description: The C(repository:tag) to pin (C(pin_image)); empty for every image in use.
    type: str
  pattern:
    description: The play's host pattern (C(inferops_serving_hosts)), named when O(image) is deployed by no host.
    type: str
    default: serving
"""

EXAMPLES = r"""
- name: Choose the canaries
  ansible.builtin.set_fact:
    canaries: "{{ ansible_play_hosts | map('extract', hostvars, 'pin_host') | inferops.serving.pin_canaries(pin_image) }}"
"""

RETURN = r"""
_value:
  description: The canaries' inventory names.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def _pin_canaries(hosts, image=None, pattern="serving"):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import PinError, canaries
    try:
        return canaries(list(hosts), image or None, pattern=pattern)
    except PinError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"pin_canaries": _pin_canaries}
