# SPDX-License-Identifier: GPL-3.0-or-later
"""The soak's verdict: what the load saw and what Docker's inspect says of the container before and after.

The inspect fragments have the Docker Engine API's shape (GET /containers/{id}/json: RestartCount,
State.Running/StartedAt/ExitCode/OOMKilled).
"""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.module_utils._soak import soak_verdict


def inspect(started="2026-11-30T17:00:00.1Z", restarts=0, running=True, exit_code=0, oom=False):
    return {"RestartCount": restarts, "State": {"Running": running, "StartedAt": started, "ExitCode": exit_code,
                                                "OOMKilled": oom}}


GOOD = {"requests": 400, "ok": 400, "errors": 0, "timeouts": 0, "tokens": 25600, "first_error": None}


def test_a_healthy_engine_survives():
    verdict = soak_verdict(GOOD, inspect(), inspect(), {"status": "healthy"})
    assert verdict["ok"] and verdict["kind"] is None
    assert verdict["message"] == "survived sustained load: 400 requests, 400 ok, 0 failed, 0 timed out, 25600 tokens"


def test_a_restart_by_the_restart_policy_is_a_crash_even_when_it_serves_again():
    stats = dict(GOOD, ok=390, errors=10, first_error="HTTP 500: EngineDeadError")
    verdict = soak_verdict(stats, inspect(), inspect(started="2026-11-30T17:03:10.2Z", restarts=1))
    assert verdict["kind"] == "crash_under_soak"
    assert "restarts 0 -> 1" in verdict["message"] and "10 failed" in verdict["message"]


def test_a_stopped_engine_is_a_crash_naming_its_exit():
    verdict = soak_verdict(dict(GOOD, errors=5), inspect(), inspect(running=False, exit_code=137, oom=True))
    assert verdict["kind"] == "crash_under_soak" and "exit code 137, OOM-killed" in verdict["message"]


def test_hung_requests_with_the_container_up_are_a_wedge_with_the_watchdogs_word():
    stats = dict(GOOD, ok=120, timeouts=32, first_error="no answer within 60.0s")
    verdict = soak_verdict(stats, inspect(), inspect(), {"status": "wedged", "reason": "tokens frozen for 60 s"})
    assert verdict["kind"] == "wedge_under_soak"
    assert verdict["message"].endswith("the watchdog says wedged (tokens frozen for 60 s)")
    assert verdict["evidence"]["watchdog"] == {"status": "wedged", "reason": "tokens frozen for 60 s"}


def test_errors_and_no_progress():
    assert soak_verdict(dict(GOOD, errors=3, first_error="HTTP 500"), inspect(), inspect())["kind"] == "errors_under_soak"
    assert soak_verdict({"requests": 0, "ok": 0}, inspect(), inspect())["kind"] == "no_progress"
