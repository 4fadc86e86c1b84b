# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_target
author: inferops.serving contributors (@inferops)
short_description: What a pin canary does with its tag's current digest
version_added: 0.1.0
description:
  - The digest the rolling tag resolves to now (from the pull's RepoDigests, or in check mode from
    the registry's manifest API), whether the lock already holds it, the known-bad findings refusing
    it (the collection's C(data/known_bad_images.yml) and O(known_bad)), where its archive goes, and
    the C(server_profile_overrides) that deploy it.
options:
  _input:
    description: The deployment plan (C(server_deployment)).
    type: dict
    required: true
  pull:
    description: The registered result of C(community.docker.docker_image_pull) (a real run).
    type: dict
  remote:
    description: The registered result of M(inferops.serving.image_digest_info) (check mode).
    type: dict
  lock:
    description: The inventory's lock, C(inferops_serving_image_lock).
    type: dict
  known_bad:
    description: The inventory's C(inferops_known_bad_images).
    type: list
    elements: dict
  prefix:
    description: C(server_registry_prefix), the registry the tag is pulled through.
    type: str
  archive_dir:
    description: C(pin_archive_dir), where the pinned image is saved on the canary.
    type: str
  overrides:
    description: The host's C(server_profile_overrides).
    type: dict
  check_mode:
    description: Whether the digest comes from O(remote) (check mode) or O(pull).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Decide what to do with the digest
  ansible.builtin.set_fact:
    target: "{{ server_deployment | inferops.serving.pin_target(pull=pulled, lock=inferops_serving_image_lock) }}"
"""

RETURN = r"""
_value:
  description:
    - C(image) (repository:tag), C(name) (as pulled), C(repository), C(tag), C(digest), C(image_id),
      C(platform) (os/architecture), C(current) (the lock's entry, or {}), C(pinned) (the lock holds this
      digest), C(known_bad) (the findings refusing it), C(archive) (path or none), C(overrides).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _pin_target(deployment, pull=None, remote=None, lock=None, known_bad=None, prefix="", archive_dir="",
                overrides=None, check_mode=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import PinError, target
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
    try:
        return target(deployment, pull, remote, lock, known_bad, prefix, archive_dir, overrides, check_mode)
    except (PinError, ProfileError) as exc:
        raise AnsibleFilterError("pin_target: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"pin_target": _pin_target}
