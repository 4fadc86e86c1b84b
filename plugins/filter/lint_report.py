# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: lint_report
author: inferops.serving contributors (@inferops)
short_description: The profile lint's findings as the lines to print, split into failures and notes
version_added: 0.1.0
description:
  - >-
    Takes the findings of P(inferops.serving.profile_lint#filter) and returns them as text lines,
    each C(SEVERITY [rule] message (why: reason; source: source)), the one way the collection
    spells a finding (the preflight role and C(playbooks/show_launch.yml) print these lines).
  - C(failures) holds the findings that refuse the profile (the errors, and the warnings too with
    O(fail_on_warnings)); C(notes) the others.
positional: _input
options:
  _input:
    description: The findings, as P(inferops.serving.profile_lint#filter) returns them.
    type: list
    elements: dict
    required: true
  fail_on_warnings:
    description: Count the warnings as failures (the preflight role's C(preflight_fail_on_lint_warnings)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Lint the profile and keep the lines to print
  ansible.builtin.set_fact:
    lint_lines: >-
      {{ server_deployment.profile | inferops.serving.profile_lint(overrides=server_deployment.overrides)
         | inferops.serving.lint_report }}

- name: Show the warnings
  ansible.builtin.debug:
    msg: "{{ item }}"
  loop: "{{ lint_lines.notes }}"

- name: Refuse a profile with lint errors
  ansible.builtin.fail:
    msg: "{{ lint_lines.failures }}"
  when: lint_lines.failures | length > 0
"""

RETURN = r"""
_value:
  description: The lines to print.
  type: dict
  contains:
    failures:
      description: One line per finding that refuses the profile.
      type: list
      elements: str
    notes:
      description: One line per other finding (warnings).
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.validation import check_type_bool


def _lint_report(findings, fail_on_warnings=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import lint_report
    if not isinstance(findings, list) or not all(
            isinstance(f, dict) and {"rule", "severity", "message", "reason", "source"} <= set(f) for f in findings):
        raise AnsibleFilterError("lint_report takes the list of findings inferops.serving.profile_lint returns, "
                                 "not %r" % (findings,))
    return lint_report(findings, check_type_bool(fail_on_warnings))


class FilterModule:
    def filters(self):
        return {"lint_report": _lint_report}
