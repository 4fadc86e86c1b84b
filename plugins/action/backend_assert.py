# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller side of inferops.serving.backend_assert: bounded waits that show their progress.

With ``wait_chunk`` the module returns ``ready: false`` with the start-up phase and the elapsed
seconds after each bounded wait, and the task retries under ``until``. This plugin

* passes the previous attempt's ``progress`` (the registered result, which ansible-core puts in
  the task variables of every retry) to the next attempt, so the stall clock carries over;
* marks a not-yet-ready result ``_ansible_verbose_always``: the default callback (and every
  callback built on it, e.g. community.general.yaml) then prints the result on its
  ``FAILED - RETRYING`` line at any verbosity, so the operator sees ``msg: weight_loading, 95 s``
  every ``wait_chunk`` seconds. The module keeps that result small.
"""
from __future__ import annotations

from ansible.plugins.action import ActionBase


def carried_progress(args, task_vars, register, resolve=None):
    """The module arguments of this attempt: ``progress`` of the registered previous attempt added.

    ``resolve(name)`` returns the value of a registered variable that is still an expression
    (ansible-core 2.19+ injects the lazy ``_task.polymorphic_result`` for the task's own register).
    """
    args = dict(args)
    if not args.get("wait_chunk") or args.get("progress") is not None or not register:
        return args
    # ansible-core <= 2.18: the variable's name; 2.19+: {name: projection} (the whole result by default)
    names = [register] if isinstance(register, str) else list(register) if isinstance(register, dict) else []
    for name in names:
        previous = (task_vars or {}).get(name)
        if previous is not None and not isinstance(previous, dict) and resolve is not None:
            try:
                previous = resolve(name)
            except Exception:  # pylint: disable=broad-except
                previous = None  # no previous attempt of this task: nothing to carry
        if isinstance(previous, dict) and isinstance(previous.get("progress"), dict):
            args["progress"] = previous["progress"]
            break
    return args


def mark_progress(result):
    """Make a not-yet-ready bounded wait's result show on the retry line."""
    if not result.get("failed") and result.get("ready") is False and result.get("phase"):
        result["_ansible_verbose_always"] = True
    return result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def _resolver(self, task_vars):
        """``name -> value`` of a variable through the templar (ansible-core 2.19+), else None."""
        if not hasattr(self._templar, "resolve_variable_expression"):
            return None
        templar = self._templar.copy_with_new_env(available_variables=task_vars or {})
        return templar.resolve_variable_expression

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = carried_progress(self._task.args, task_vars, self._task.register, self._resolver(task_vars))
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result.update(self._execute_module(module_name="inferops.serving.backend_assert", module_args=args,
                                           task_vars=task_vars, wrap_async=wrap_async))
        return mark_progress(result)
