# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller side of backend_assert: the stall clock carried across retries, the retry line."""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.action import backend_assert as action

PROGRESS = {"started_at": "2026-11-30T17:00:00Z", "phase": "compile", "bytes": 10, "activity_at": 1.0}


def test_the_previous_attempts_progress_is_passed_on():
    args = action.carried_progress({"container": "c", "wait_chunk": 30}, {"__server_backends": {
        "ready": False, "progress": PROGRESS}}, "__server_backends")
    assert args == {"container": "c", "wait_chunk": 30, "progress": PROGRESS}


def test_the_register_of_ansible_core_2_19_and_later_is_a_projection():
    args = action.carried_progress({"wait_chunk": 30}, {"backends": {"progress": PROGRESS}},
                                   {"backends": "_task.polymorphic_result"})
    assert args["progress"] == PROGRESS


def test_a_lazy_registered_value_is_resolved_by_name():
    # ansible-core 2.19+: the task's own register is an expression object until resolved
    lazy = object()
    args = action.carried_progress({"wait_chunk": 30}, {"backends": lazy}, {"backends": "_task.polymorphic_result"},
                                   resolve={"backends": {"progress": PROGRESS}}.get)
    assert args["progress"] == PROGRESS

    def unavailable(name):
        raise RuntimeError("The _task.polymorphic_result property is unavailable.")
    args = action.carried_progress({"wait_chunk": 30}, {"backends": lazy}, {"backends": "x"}, resolve=unavailable)
    assert "progress" not in args


def test_nothing_to_carry_without_a_chunk_a_register_or_a_previous_result():
    assert "progress" not in action.carried_progress({"container": "c"}, {"r": {"progress": PROGRESS}}, "r")
    assert "progress" not in action.carried_progress({"container": "c", "wait_chunk": 30}, {}, "r")
    assert "progress" not in action.carried_progress({"container": "c", "wait_chunk": 30},
                                                     {"r": {"progress": PROGRESS}}, None)
    explicit = {"started_at": "x"}
    assert action.carried_progress({"wait_chunk": 30, "progress": explicit}, {"r": {"progress": PROGRESS}},
                                   "r")["progress"] is explicit


def test_only_a_moving_unfinished_start_is_printed_on_the_retry_line():
    assert action.mark_progress({"ready": False, "phase": "compile", "msg": "compile, 95 s"})[
        "_ansible_verbose_always"] is True
    for result in ({"ready": True, "phase": "ready"}, {"failed": True, "ready": False, "phase": "compile"},
                   {"ready": False, "observed": {}}):
        assert "_ansible_verbose_always" not in action.mark_progress(dict(result))


def test_the_default_callback_prints_a_marked_result_on_its_retry_line():
    # ansible-core's own rule (CallbackBase._run_is_verbose) for the FAILED - RETRYING line
    from ansible.plugins.callback import CallbackBase

    class Result(object):
        def __init__(self, result):
            # TaskResult: ._result on ansible-core <= 2.18, .result from 2.19
            self.result = self._result = result

    class Display(object):
        verbosity = 0

    callback = CallbackBase.__new__(CallbackBase)
    callback._display = Display()
    marked = action.mark_progress({"ready": False, "phase": "compile", "msg": "compile, 95 s"})
    assert callback._run_is_verbose(Result(marked), verbosity=2)
    assert not callback._run_is_verbose(Result({"ready": False}), verbosity=2)
