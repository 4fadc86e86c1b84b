# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: profile
author: inferops.serving contributors (@inferops)
short_description: Resolve a tuned serving profile by name
version_added: 0.1.0
description:
  - Loads a profile from the collection's C(profiles/) directory (or from O(dirs) first),
    applies its C(extends) chain, pins its image from a lock file, and lays the inventory's
    overrides over it.
  - Fails with the list of available profiles when the name is unknown.
  - With no term, returns the names of every available profile.
options:
  _terms:
    description: Profile names. None to list the available profiles.
    type: list
    elements: str
    required: false
  dirs:
    description: Extra directories searched for C(<name>.yml) before the collection's own.
    type: list
    elements: path
    default: []
  lock:
    description:
      - Content of an image lock file (key C(images), a mapping of C(repository:tag) to its
        C(digest) and C(engine_version)), as written by C(playbooks/pin.yml). A matching entry
        replaces the profile's digest.
    type: dict
    default: {}
  overrides:
    description:
      - Overrides laid over the profile, a mapping with keys among C(args), C(env), C(image),
        C(expect) and C(model).
      - A null value removes a flag or variable. vLLM flags match with C(_) and C(-) alike.
    type: dict
    default: {}
notes:
  - Runs on the controller; profiles never need to be present on managed hosts.
"""

EXAMPLES = r"""
- name: Resolve the GB10 throughput profile with a smaller batch
  ansible.builtin.set_fact:
    serving_profile: >-
      {{ lookup('inferops.serving.profile', 'gb10-nvfp4-mtp-throughput',
                overrides={'args': {'max-num-seqs': 16}}) }}

- name: List the profiles
  ansible.builtin.debug:
    msg: "{{ query('inferops.serving.profile') }}"
"""

RETURN = r"""
_raw:
  description:
    - One resolved profile per term (engine, hardware, image, model, env, args, expect,
      measured, fallback), or the profile names when no term was given.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    ProfileError,
    profile_names,
    resolve_profile,
)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        dirs = self.get_option("dirs")
        if not terms:
            return profile_names(dirs)
        try:
            return [resolve_profile(str(name), dirs=dirs, lock=self.get_option("lock"),
                                    overrides=self.get_option("overrides")) for name in terms]
        except ProfileError as exc:
            raise AnsibleLookupError(str(exc)) from None
