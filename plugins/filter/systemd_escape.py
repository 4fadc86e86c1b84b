# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: systemd_escape
author: inferops.serving contributors (@inferops)
short_description: A value escaped for a systemd unit file
version_added: 0.1.0
description:
  - Writes a value so that systemd reads back exactly that value, as one word of an C(Exec*=)
    command line (O(kind=exec)) or as a plain setting value (O(kind=text)).
  - C(%) becomes C(%%) (no specifier); on a command line C($) becomes C($$) (no variable
    expansion) and a word holding anything but plain characters is double-quoted, with C(\\) and
    C(") escaped.
  - A control character (a newline would start another setting) is refused, naming O(var).
options:
  _input:
    description: The value.
    type: str
    required: true
  var:
    description: The variable the value came from, for the error message.
    type: str
    default: value
  kind:
    description: Where the value goes.
    type: str
    choices: [exec, text]
    default: exec
"""

EXAMPLES = r"""
- name: Write the unit
  ansible.builtin.copy:
    dest: /etc/systemd/system/example.service
    content: |
      [Service]
      ExecStart=/usr/bin/env docker --host {{ docker_host | inferops.serving.systemd_escape(var='docker_host') }} start x
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The escaped value.
  type: str
"""

from ansible.errors import AnsibleFilterError


def _systemd_escape(value, var="value", kind="exec"):
    from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import SystemdValueError, systemd_escape
    try:
        return systemd_escape(value, var, kind)
    except SystemdValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"systemd_escape": _systemd_escape}
