# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: env_file_text
author: inferops.serving contributors (@inferops)
short_description: The Docker env file text of a mapping of secrets
version_added: 0.1.0
description:
  - One literal C(NAME=value) line per secret, sorted by name, as C(docker run --env-file) reads
    it (no quotes, no C($) expansion, no C(export)); empty values are left out.
  - Refuses a name that is not an env var name, or a value with a newline or another control
    character, naming the entry and never its value.
  - Use it under C(no_log).
options:
  _input:
    description: Env var names to secret values (C(server_secrets)).
    type: dict
    required: true
  exclude:
    description: Names checked but left out (secrets the container reads from files of their own).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Write the env file
  ansible.builtin.copy:
    dest: /etc/inferops-serving/inferops-serving.env
    content: "{{ {'HF_TOKEN': hf_token} | inferops.serving.env_file_text }}"
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: The env file text.
  type: str
"""

from ansible.errors import AnsibleFilterError


def _env_file_text(secrets, exclude=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
    from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import env_file_text
    try:
        return env_file_text(secrets, exclude=tuple(exclude or ()))
    except ProfileError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"env_file_text": _env_file_text}
