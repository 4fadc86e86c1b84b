# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_failure
author: inferops.serving contributors (@inferops)
short_description: A failed pin canary's failure, its known-bad entry and its message
version_added: 0.1.0
description:
  - The failure is the soak's, else the benchmark's refusal, else the server role's C(server_failure).
  - Only a failure of the running image gives a known-bad entry (a refused host or a registry that
    did not answer says nothing about it).
options:
  _input:
    description: The canary's target (P(inferops.serving.pin_target#filter)).
    type: dict
    required: true
  known_bad_file:
    description: The known-bad list's file, named in the message.
    type: str
    required: true
  message:
    description: The failed task's message.
    type: str
    default: unknown failure
  server_failure:
    description: The server role's C(server_failure).
    type: dict
  soak:
    description: The registered result of M(inferops.serving.soak).
    type: dict
  bench:
    description: The benchmark's verdict (P(inferops.serving.bench_gate#filter)).
    type: dict
  bench_dir:
    description: The benchmark's results directory.
    type: str
extends_documentation_fragment:
  - inferops.serving._pin_canary
"""

EXAMPLES = r"""
- name: Keep the canary's failure
  ansible.builtin.set_fact:
    failed: "{{ target | inferops.serving.pin_failure(host=inventory_hostname, now='2026-12-01T10:00:00Z',
                known_bad_file='known_bad_images.yml', server_failure=server_failure) }}"
"""

RETURN = r"""
_value:
  description:
    - C(failure) (C(kind), C(failed_task), C(line), C(message), C(log)), C(known_bad_entry) (or none),
      C(message) (the canary's final message).
  type: dict
"""


def _pin_failure(target, host, now, known_bad_file, message="unknown failure", server_failure=None, soak=None,
                 bench=None, bench_dir=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._pin import failure, known_bad_entry, verdict
    found = failure(server_failure, soak, bench, bench_dir)
    message = message or "unknown failure"
    return {"failure": found, "known_bad_entry": known_bad_entry(found, target, host, now, message),
            "message": verdict(target, found, host, known_bad_file, message)}


class FilterModule:
    def filters(self):
        return {"pin_failure": _pin_failure}
