# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_model_target
author: inferops.serving contributors (@inferops)
short_description: What a pin canary does with a new revision of its model
version_added: 0.1.0
description:
  - The candidate commit (C(pin_model_revision)) of the canary's model, whether the lock's C(models)
    entry holds it already, whether this canary takes part (O(model)), and the
    C(server_profile_overrides) that stage, verify and deploy it.
  - A revision that is not a full 40-hex commit (a branch, a tag, an abbreviation) is refused.
options:
  _input:
    description: The deployment plan (C(server_deployment)).
    type: dict
    required: true
  revision:
    description: C(pin_model_revision), the 40-hex commit to prove.
    type: str
    required: true
  model:
    description: C(pin_model); only the canaries deploying it take part. Empty means the canary's own model.
    type: str
  lock:
    description: The inventory's lock, C(inferops_serving_image_lock).
    type: dict
  overrides:
    description: The host's C(server_profile_overrides).
    type: dict
"""

EXAMPLES = r"""
- name: Decide what to do with the revision
  ansible.builtin.set_fact:
    target: "{{ server_deployment | inferops.serving.pin_model_target('9f80cb76c26738e29c4d4d7a30fe882f938a25a6') }}"
"""

RETURN = r"""
_value:
  description:
    - C(model), C(revision), C(current) (the lock's C(models) entry, or {}), C(pinned) (the lock holds
      this commit), C(skip) (the canary deploys another model than O(model)), C(overrides).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _pin_model_target(deployment, revision, model=None, lock=None, overrides=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import PinError, model_target
    try:
        return model_target(deployment, revision, model, lock, overrides)
    except PinError as exc:
        raise AnsibleFilterError("pin_model_target: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"pin_model_target": _pin_model_target}
