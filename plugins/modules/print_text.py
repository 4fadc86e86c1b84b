#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: print_text
short_description: Print text on the controller's output as it is, to copy and paste
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Writes O(text) to the output of C(ansible-playbook) line by line, unquoted and unescaped,
    whatever the stdout callback and its result format (C(debug) prints a message as a JSON or
    YAML value, so a launch script shows C(\\t) and doubled backslashes and cannot be pasted).
  - Runs on the controller only (an action plugin); it never connects to the host and changes
    nothing. C(playbooks/show_launch.yml) prints launch scripts and the profile list with it.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
options:
  text:
    description: The text, printed as it is (a trailing newline is not doubled).
    type: str
    required: true
notes:
  - Do not print secrets with it; nothing it prints is subject to C(no_log).
"""

EXAMPLES = r"""
- name: Print the launch script to copy and paste
  inferops.serving.print_text:
    text: "{{ server_deployment.script }}"
"""

RETURN = r"""
lines:
  description: How many lines were printed.
  returned: success
  type: int
  sample: 24
"""
