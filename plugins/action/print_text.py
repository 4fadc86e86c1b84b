# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops.serving.print_text: text on the controller's output as it is (see the module's docs).

A stdout callback prints a task's result as a JSON or YAML value, so a script in a ``debug``
message comes out quoted and escaped. This plugin writes the text through the display itself,
the way ``ansible.builtin.pause`` writes its prompt, and returns only a line count.
"""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("text",))
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        text = self._task.args.get("text")
        if not isinstance(text, str):
            raise AnsibleActionFail("print_text: text must be a string, got %s" % type(text).__name__)
        text = text[:-1] if text.endswith("\n") else text
        display.display(text)
        result.update(changed=False, lines=len(text.splitlines()))
        return result
