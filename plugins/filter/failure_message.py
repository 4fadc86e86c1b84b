# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: failure_message
author: inferops.serving contributors (@inferops)
short_description: What a rescue may keep of a failed task's message
version_added: 0.1.0
description:
  - The failed result's C(msg) (else its C(stderr)), with anything shaped like a Hugging Face
    token masked, cut to O(limit) characters.
  - For a task with C(no_log), a fixed text instead, since Ansible hands a rescue the uncensored result
    (C(ansible_failed_result)) even when the task's own output was hidden.
options:
  _input:
    description: The failed result (C(ansible_failed_result)).
    type: dict
    required: true
  task:
    description: The failed task (C(ansible_failed_task)); its C(no_log) decides.
    type: dict
  limit:
    description: The longest message kept, in characters.
    type: int
    default: 2000
"""

EXAMPLES = r"""
- name: Keep what failed
  ansible.builtin.set_fact:
    failed_message: "{{ ansible_failed_result | inferops.serving.failure_message(task=ansible_failed_task) }}"
"""

RETURN = r"""
_value:
  description: The message to keep.
  type: str
"""


def _failure_message(result, task=None, limit=2000):
    from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import failure_message
    return failure_message(result, task, int(limit))


class FilterModule:
    def filters(self):
        return {"failure_message": _failure_message}
