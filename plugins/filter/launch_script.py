# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: launch_script
author: inferops.serving contributors (@inferops)
short_description: A bash script whose one docker run starts a profile's container
version_added: 0.1.0
description:
  - Renders the output of P(inferops.serving.launch_spec#filter) as a human-readable bash
    script, in the field reports' form (C(docker run -d), no C(--rm), one flag per line).
  - Every value is single-line and shell-quoted; a value with a newline or another control
    character is refused with an error naming the field, so running the script executes that one
    C(docker run) and nothing else.
  - Secrets reach the container only through C(--env-file) (the spec's C(env_file), a Docker env
    file read literally by Docker and never sourced by the script); C(secret_env) names are not
    rendered.
options:
  _input:
    description: A launch spec.
    type: dict
    required: true
  profile:
    description: The resolved profile, for the script's header (provenance, engine version).
    type: dict
"""

EXAMPLES = r"""
- name: Write the launch script of a profile
  ansible.builtin.copy:
    dest: /tmp/launch.sh
    mode: "0755"
    content: "{{ spec | inferops.serving.launch_script(profile) }}"
"""

RETURN = r"""
_value:
  description: The script text.
  type: str
"""


def _launch_script(*args, **kwargs):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import launch_script
    return launch_script(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"launch_script": _launch_script}
