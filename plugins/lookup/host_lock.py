# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: host_lock
author: inferops.serving contributors (@inferops)
short_description: The hash-locked requirements file a role installs on its hosts, checked against the role's pins
version_added: 0.1.0
description:
  - Returns C({file, problems}) for the role named by the term - C(file) the collection's
    hash-locked requirements file of that role (C(roles/<role>/files/*-requirements.txt), written by
    C(scripts/lock-host-packages) with pip-compile C(--generate-hashes)), which the role copies to the
    host and installs with C(pip install --require-hashes -r); C(problems) what keeps it from doing
    so - a pin of O(pins) the file does not pin, a requirement without a hash - each naming the
    variable and the fix.
  - V(gateway) - LiteLLM's proxy and prisma (C(gateway_litellm_version), C(gateway_prisma_version)).
  - V(model_cache) - the Hugging Face Hub client (C(model_cache_requirements)).
options:
  _terms:
    description: The role, V(gateway) or V(model_cache).
    type: list
    elements: str
    required: true
  pins:
    description: The role variables' requirements, each C(name==version) (extras allowed).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Find and check the gateway's lock file
  ansible.builtin.set_fact:
    lock: >-
      {{ lookup('inferops.serving.host_lock', 'gateway',
                pins=['litellm[proxy]==' ~ gateway_litellm_version, 'prisma==' ~ gateway_prisma_version]) }}
"""

RETURN = r"""
_raw:
  description: C(file) (the lock file's path on the controller) and C(problems) (a list of messages, empty when it fits).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils._host_locks import LockError, lock_plan


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError("host_lock: give one role, gateway or model_cache; got %d terms" % len(terms))
        try:
            return [lock_plan(str(terms[0]), [str(pin) for pin in self.get_option("pins") or []])]
        except LockError as exc:
            raise AnsibleLookupError(str(exc)) from None
