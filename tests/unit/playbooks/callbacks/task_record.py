# SPDX-License-Identifier: GPL-3.0-or-later
"""A callback for the playbook tests (enabled by role_runs.py, never shipped): it appends one JSON
line per task result to the file named by INFEROPS_TASK_RECORD: the host, the action, the task's
arguments as the executor templated them, the status and ``changed``. A no_log task's arguments
are recorded too (the file is the test's own, in its temporary directory): a test can ask what a
secret-carrying task was told to do (a file's mode) without a value of the result."""
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_record
type: aggregate
short_description: Record each task result's action and templated arguments (tests only)
description: [Appends a JSON line per task result to the file named by INFEROPS_TASK_RECORD.]
"""


def _part(result, name):
    """The result's ``name`` (host, task, result): public since ansible-core 2.19, private before."""
    part = getattr(result, name, None)
    return part if part is not None else getattr(result, "_" + name)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_record"
    CALLBACK_NEEDS_ENABLED = True

    def _record(self, result, status):
        path = os.environ.get("INFEROPS_TASK_RECORD")
        if not path:
            return
        task = _part(result, "task")
        try:
            args = json.loads(json.dumps(dict(task.args), default=str))
        except (TypeError, ValueError):
            args = {}
        line = {"host": _part(result, "host").get_name(), "action": task.action, "args": args, "status": status,
                "changed": bool(_part(result, "result").get("changed")), "no_log": bool(task.no_log)}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_item_on_ok(self, result):
        self._record(result, "ok")
