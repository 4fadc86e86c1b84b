# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_model_lock_entry
author: inferops.serving contributors (@inferops)
short_description: The lock's entry for a model revision proven on a pin canary
version_added: 0.1.0
description:
  - The commit, the manifest the canary staged and verified (each file's size and hash, what an
    offline host verifies against) with its sha256, when it was pinned, the commit before it, and
    the evidence (canary, profile, image, readiness, smoke answer).
  - Refuses a staging of another commit than the candidate's, or none. A file of the previous
    revision's manifest that this one lacks is V(null) (the deep merge of M(inferops.serving.inventory_entry)
    removes it); so is a figure this run did not measure.
options:
  _input:
    description: The canary's target (P(inferops.serving.pin_model_target#filter)).
    type: dict
    required: true
  cache_info:
    description: The canary's registered M(inferops.serving.model_cache_info) result (C(model_cache_info)).
    type: dict
extends_documentation_fragment:
  - inferops.serving._pin_canary
  - inferops.serving._pin_canary.lock_entry
"""

EXAMPLES = r"""
- name: The lock entry
  ansible.builtin.set_fact:
    entry: >-
      {{ target | inferops.serving.pin_model_lock_entry(server_deployment, inventory_hostname,
         '2026-12-01T10:00:00Z', cache_info=model_cache_info) }}
"""

RETURN = r"""
_value:
  description: The entry of C(inferops_serving_image_lock.models[<model id>]).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _pin_model_lock_entry(target, deployment, host, now, cache_info=None, summary=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import PinError, model_lock_entry
    try:
        return model_lock_entry(target, deployment, host, now, cache_info, summary)
    except PinError as exc:
        raise AnsibleFilterError("pin_model_lock_entry: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"pin_model_lock_entry": _pin_model_lock_entry}
