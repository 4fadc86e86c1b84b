# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: unread_status
author: inferops.serving contributors (@inferops)
short_description: The status row of a host that could not be read, with a boolean saying whether it was
version_added: 0.1.0
description:
  - Used by C(playbooks/status.yml) (the server role's C(status) entry point) so that a host that
    cannot be reached, or whose read fails, still has a row in the fleet's table, with the reason.
  - >-
    The input is the reach probe's registered result (C(ansible.builtin.ping) with
    C(ignore_unreachable)); when it answered C(pong) the result is C({host, unread: false}). With
    O(task), the input is the failed task's result in a rescue (C(ansible_failed_result)) and the
    row is always an unread one.
  - An unread row has C(unread) true and the keys of C(inferops.serving.host_status); C(ok) is
    false and C(state) starts with C(UNREACHABLE:) or C(NOT READ:). Always a mapping, never null,
    so a playbook sets it once and tests C(unread).
options:
  _input:
    description: A registered task result.
    type: dict
    required: true
  host:
    description: The host's inventory name.
    type: str
    required: true
  deployment:
    description: The host's deployment plan (C(server_deployment)), for the row's profile and planned digest.
    type: dict
  task:
    description: The name of the task that failed (in a rescue, C(ansible_failed_task.name)).
    type: str
  censored:
    description:
      - The failed task is C(no_log) (C(ansible_failed_task.no_log)). Its message is then left
        out of the row, since it may quote what the task hid.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Reach the host
  ansible.builtin.ping:
  ignore_unreachable: true
  failed_when: false
  register: reach

- name: Decide whether the host answered
  ansible.builtin.set_fact:
    reached: "{{ reach | inferops.serving.unread_status(inventory_hostname, deployment=server_deployment) }}"

- name: Record a host that did not answer
  ansible.builtin.set_fact:
    server_status: "{{ reached }}"
  when: reached.unread
"""

RETURN = r"""
_value:
  description:
    - >-
      C({host, unread: false}) when the host answered; else C(host), C(unread) (true), C(ok)
      (false), C(state) (C(UNREACHABLE:) or C(NOT READ:) with the reason), C(problems), C(profile),
      C(planned_digest), and the other keys of C(inferops.serving.host_status) empty.
  type: dict
"""


def _unread_status(result, host, deployment=None, task=None, censored=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
    from ansible_collections.inferops.serving.plugins.plugin_utils._status import unread_status
    return unread_status(plain(result), host, deployment=plain(deployment), task=task, censored=bool(censored))


class FilterModule:
    def filters(self):
        return {"unread_status": _unread_status}
