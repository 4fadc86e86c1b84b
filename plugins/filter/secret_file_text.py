# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: secret_file_text
author: inferops.serving contributors (@inferops)
short_description: The text of a file holding one secret
version_added: 0.1.0
description:
  - The value of one entry of a mapping of secrets, checked as P(inferops.serving.env_file_text#filter)
    checks it (a single line of valid UTF-8; the message names the entry, never its value), with
    no trailing newline. The server role writes the Hugging Face token this way (C(HF_TOKEN_PATH)).
  - Use it under C(no_log).
options:
  _input:
    description: Env var names to secret values (C(server_secrets)).
    type: dict
    required: true
  name:
    description: The entry whose value the file holds.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Write the Hugging Face token file
  ansible.builtin.copy:
    dest: /etc/inferops-serving/inferops-serving.hf_token
    content: "{{ {'HF_TOKEN': hf_token} | inferops.serving.secret_file_text('HF_TOKEN') }}"
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: The secret's value.
  type: str
"""

from ansible.errors import AnsibleFilterError


def _secret_file_text(secrets, name):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
    from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import secret_file_text
    try:
        return secret_file_text(secrets, name)
    except ProfileError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"secret_file_text": _secret_file_text}
