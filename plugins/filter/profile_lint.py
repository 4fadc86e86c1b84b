# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: profile_lint
author: inferops.serving contributors (@inferops)
short_description: Check a profile against what the field reports learned the hard way
version_added: 0.1.0
description:
  - Runs the collection's profile lint on a profile, aware of the engine version of its image
    (C(image.engine_version)). It reports flags, flag values and env vars the engine does not have
    in that version, the known-bad engine combinations (NVFP4 MoE on sm_12x without Marlin, MTP with
    C(--moe-backend marlin) but no per-path C(speculative_config.moe_backend), FlashInfer attention
    with MTP on sm_121, prefix caching with MTP on NemotronH, SGLang EAGLE on SM120 without the
    Triton draft MoE runner or with the radix cache on, the C(extra_buffer) mamba strategy on
    NemotronH, reasoning parser names, C(--max-running-requests) on a burst profile), and the image
    pin (malformed digest, a digest on the known-bad list, a tag without a digest).
  - Each finding has a severity, a message naming the problem and the fix, the reason (the failure
    the rule prevents) and its source (the field report, or the engine source file and release).
  - The known-bad list is the collection's C(data/known_bad_images.yml) plus O(known_bad).
  - >-
    Used by the preflight role (errors stop the play) and by C(playbooks/show_launch.yml), with
    O(report), the findings as the lines to print, each C(SEVERITY [rule] message (why: reason;
    source: source)), the one way the collection spells a finding.
positional: _input
options:
  _input:
    description:
      - A resolved profile (see P(inferops.serving.profile#lookup)), or the name of one of the
        collection's profiles.
    type: raw
    required: true
  overrides:
    description:
      - Inventory overrides laid over the profile before the lint, a mapping with the keys C(args),
        C(env) and C(image) (each a mapping; a V(null) value deletes a key), as the server role takes them.
      - Findings about a flag or env var that came from here say so.
    type: dict
    default: {}
  known_bad:
    description:
      - Further known-bad images, in the shape of C(data/known_bad_images.yml) entries
        (C(repository), C(digest) or C(digest_prefix), C(signature), C(symptom), C(source)),
        for example the inventory's C(inferops_known_bad_images).
    type: list
    elements: dict
    default: []
  profile_dirs:
    description:
      - When O(_input) is a profile name, extra directories searched for C(<name>.yml) before the
        collection's own C(profiles/) (as the server role's C(server_profile_dirs)).
    type: list
    elements: path
    default: []
  report:
    description:
      - Return the lines to print instead of the findings, split into C(failures) (the findings that
        refuse the profile) and C(notes) (the others).
    type: bool
    default: false
  fail_on_warnings:
    description:
      - With O(report), count the warnings as failures (the preflight role's
        C(preflight_fail_on_lint_warnings)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Lint the profile chosen for this host, with its inventory overrides
  ansible.builtin.set_fact:
    __preflight_lint: >-
      {{ lookup('inferops.serving.profile', server_profile, dirs=server_profile_dirs)
         | inferops.serving.profile_lint(overrides=server_profile_overrides,
                                         known_bad=inferops_known_bad_images | default([])) }}

- name: Refuse a profile with lint errors
  ansible.builtin.assert:
    that: __preflight_lint | selectattr('severity', 'equalto', 'error') | list | length == 0
    fail_msg: >-
      {{ __preflight_lint | selectattr('severity', 'equalto', 'error')
         | map(attribute='message') | join('; ') }}

- name: Lint the profile and keep the lines to print, the warnings refusing it too
  ansible.builtin.set_fact:
    __lint_lines: >-
      {{ server_deployment.profile | inferops.serving.profile_lint(overrides=server_deployment.overrides,
                                                                  report=true, fail_on_warnings=true) }}

- name: Refuse a profile with lint failures
  ansible.builtin.fail:
    msg: "{{ __lint_lines.failures }}"
  when: __lint_lines.failures | length > 0

- name: Lint a collection profile by name
  ansible.builtin.debug:
    msg: "{{ 'g7e-fp8-sglang' | inferops.serving.profile_lint }}"
"""

RETURN = r"""
_value:
  description:
    - The findings, in rule order; an empty list when the profile is clean.
    - Each has C(rule) (the rule id), C(severity) (V(error) or V(warning)), C(message) (the
      problem and its fix), C(reason) (why the rule exists) and C(source) (the field report or the
      engine source file).
    - With O(report), the lines to print instead, C(failures) and C(notes) (lists of strings).
  type: raw
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.validation import check_type_bool


def _profile_lint(profile, overrides=None, known_bad=None, profile_dirs=None, report=False, fail_on_warnings=False):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import KNOWN_BAD_FILE, ProfileError
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import (
        lint_profile,
        lint_report,
        load_known_bad,
        validate_known_bad,
    )
    from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import secret_findings
    try:
        report, fail_on_warnings = check_type_bool(report), check_type_bool(fail_on_warnings)
    except TypeError as exc:
        raise AnsibleFilterError("profile_lint report and fail_on_warnings take true or false: %s" % exc) from None
    try:
        extra = validate_known_bad(list(known_bad) if isinstance(known_bad, (list, tuple)) else known_bad or [],
                                   "profile_lint known_bad")
        findings = lint_profile(profile, overrides=overrides or {}, known_bad=load_known_bad(KNOWN_BAD_FILE) + extra,
                                profile_dirs=profile_dirs)
        # Secrets belong in server_secrets (the 0600 env file), never in args or env.
        findings += secret_findings(profile, overrides=overrides or {}, profile_dirs=profile_dirs)
    except ProfileError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    return lint_report(findings, fail_on_warnings) if report else findings


class FilterModule:
    def filters(self):
        return {"profile_lint": _profile_lint}
