# SPDX-License-Identifier: GPL-3.0-or-later
"""Readiness decisions: stall budgets per phase, first deploy or restart, progress and verdict."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _readiness as r
from ansible_collections.inferops.serving.plugins.module_utils._startup_phases import STARTUP_PHASE_NAMES


def test_every_phase_but_ready_has_a_budget():
    for table in (r.RESTART_BUDGETS, r.FIRST_DEPLOY_BUDGETS):
        assert set(table) == set(STARTUP_PHASE_NAMES) - {"ready"}


def test_first_deploy_covers_seed_002s_45_minutes_of_weight_processing():
    # the g7e field report: first deploy ~45 min of FP8 ModelOpt processing; a restart loads weights in ~14 s
    assert r.budgets(True)["weight_loading"] > 45 * 60
    assert 14 < r.budgets(False)["weight_loading"] < 45 * 60
    assert all(r.budgets(True)[p] >= r.budgets(False)[p] for p in r.RESTART_BUDGETS)


def test_stall_timeout_replaces_every_budget_and_phase_budgets_win():
    table = r.budgets(False, stall_timeout=120, phase_budgets={"cuda_graphs": 30})
    assert table["cuda_graphs"] == 30
    assert set(v for k, v in table.items() if k != "cuda_graphs") == {120}
    assert r.budgets(True, stall_timeout=None, phase_budgets={}) == r.FIRST_DEPLOY_BUDGETS


@pytest.mark.parametrize("kwargs, text", [
    ({"phase_budgets": {"warmup": 10}}, "server_ready_phase_budgets has the unknown phase 'warmup'; the phases are "
                                        "process_start, engine_init, weight_loading"),
    ({"phase_budgets": {"compile": -5}}, "server_ready_phase_budgets.compile must be a whole number of seconds > 0"),
    ({"phase_budgets": {"compile": "soon"}}, "server_ready_phase_budgets.compile must be a whole number"),
    ({"phase_budgets": {"compile": 1.5}}, "server_ready_phase_budgets.compile must be a whole number"),
    ({"stall_timeout": True}, "server_ready_stall_timeout must be a whole number"),
])
def test_bad_budgets_name_the_variable(kwargs, text):
    with pytest.raises(r.BudgetError, match=None) as info:
        r.budgets(False, **kwargs)
    assert str(info.value).startswith(text)


MODEL = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"


@pytest.mark.parametrize("setting, model, history, expected", [
    ("auto", MODEL, [], True),
    ("auto", MODEL, [{"profile": {"model": "other/model"}}], True),
    ("auto", MODEL, [{"profile": {"model": "other/model"}}, {"profile": {"model": MODEL}}], False),
    ("auto", "/models/local-checkpoint", [], False),
    ("auto", MODEL, [None, {"profile": "broken"}], True),
    (True, MODEL, [{"profile": {"model": MODEL}}], True),
    ("false", MODEL, [], False),
])
def test_first_deploy(setting, model, history, expected):
    assert r.first_deploy(setting, model, history) is expected


def test_first_deploy_refuses_an_unknown_setting():
    with pytest.raises(r.BudgetError, match="server_ready_first_deploy must be auto, true or false"):
        r.first_deploy("maybe", MODEL, [])


START = "2026-11-30T17:00:00.000000000Z"


def test_track_first_record_starts_the_clock_at_the_last_bytes():
    assert r.track(None, START, "weight_loading", 100, now=1030.0, last_data_at=1000.0, container_id="c0ffee") == {
        "container_id": "c0ffee", "started_at": START, "phase": "weight_loading", "bytes": 100, "activity_at": 1000.0}
    assert r.track(None, START, "process_start", 0, now=1030.0)["activity_at"] == 1030.0


def test_track_new_bytes_or_phase_are_activity_silence_is_not():
    first = r.track(None, START, "weight_loading", 100, now=1030.0, last_data_at=1000.0)
    silent = r.track(first, START, "weight_loading", 100, now=1060.0, last_data_at=None)
    assert silent["activity_at"] == 1000.0
    moved = r.track(silent, START, "weight_loading", 180, now=1090.0, last_data_at=1075.0)
    assert moved["activity_at"] == 1075.0
    # a replay of the old log at the start of a wait is no activity (bytes unchanged)
    replayed = r.track(moved, START, "weight_loading", 180, now=1120.0, last_data_at=1091.0)
    assert replayed["activity_at"] == 1075.0


def test_track_ignores_the_record_of_another_container_start():
    other = {"started_at": "2026-11-30T16:00:00Z", "phase": "cuda_graphs", "bytes": 9999, "activity_at": 5.0}
    assert r.track(other, START, "engine_init", 10, now=1000.0, last_data_at=999.0)["activity_at"] == 999.0


@pytest.mark.parametrize("previous, container_id, started_at, expected", [
    ({"container_id": "c0ffee", "started_at": START}, "c0ffee", "2026-11-30T17:05:00Z", True),
    ({"container_id": "c0ffee", "started_at": START}, "c0ffee", START, False),
    # a rollback's new container, or a record without an id (another version): nothing to say
    ({"container_id": "c0ffee", "started_at": START}, "beef", "2026-11-30T17:05:00Z", False),
    ({"started_at": START}, "c0ffee", "2026-11-30T17:05:00Z", False),
    (None, "c0ffee", START, False),
])
def test_restarted_between_two_waits(previous, container_id, started_at, expected):
    assert r.restarted(previous, container_id, started_at) is expected


BUDGETS = r.budgets(False)


@pytest.mark.parametrize("args, verdict, text", [
    ((True, "ready", 95, 0), r.READY, "ready after 95 s"),
    ((False, "weight_loading", 95, 10), r.WAITING, "weight_loading, 95 s"),
    ((False, "weight_loading", 1000, 899), r.WAITING, "weight_loading, 1000 s"),
    ((False, "weight_loading", 1000, 900), r.STUCK,
     "the start is stuck in phase weight_loading (weight download and loading (a first deploy downloads and "
     "processes the checkpoint here)): no new log line for 900 s (its stall budget is 900 s), 1000 s after the "
     "container started; if this phase is slow but alive, raise server_ready_phase_budgets.weight_loading"),
    ((False, "cuda_graphs", 1800, 5), r.TIMEOUT,
     "the server was not ready after 1800 s (the cap, server_ready_timeout 1800 s), still in phase cuda_graphs"),
])
def test_verdict(args, verdict, text):
    got, message = r.verdict(*args, stall_budgets=BUDGETS, cap=1800)
    assert got == verdict
    assert message.startswith(text)


def test_a_phase_without_budget_is_never_stuck_before_the_cap():
    assert r.verdict(False, "ready", 100, 10 ** 6, {}, cap=1800)[0] == r.WAITING


SPEC = "a" * 64
STATE = {"last_known_good": {"spec_sha256": SPEC, "started_at": START, "profile": {"model": MODEL}},
         "history": [{"spec_sha256": SPEC, "started_at": START, "profile": {"model": MODEL}}]}


@pytest.mark.parametrize("state, spec, started_at, proven", [
    (STATE, SPEC, START, True),
    # the controller died during the wait: the running start was never recorded
    (STATE, SPEC, "2026-11-30T18:00:00.000000000Z", False),
    ({"last_known_good": {"spec_sha256": SPEC}}, SPEC, START, False),  # a record of an older version
    (STATE, "b" * 64, START, False),
    ({}, SPEC, START, False),
    (STATE, SPEC, None, False),
])
def test_start_proven(state, spec, started_at, proven):
    assert r.start_proven(state, spec, started_at) is proven


def test_plan_of_a_first_deploy_and_of_a_restart():
    deployment = {"model": MODEL, "spec_sha256": SPEC}
    first = r.plan(deployment, {}, None, restart_timeout=1800, first_deploy_timeout=5400, wait_chunk=30)
    assert first == {"first_deploy": True, "timeout": 5400, "budgets": r.FIRST_DEPLOY_BUDGETS, "wait_chunk": 30,
                     "retries": 181, "proven": False}
    again = r.plan(deployment, STATE, START, restart_timeout=1800, wait_chunk=30, stall_timeout=300)
    assert again["first_deploy"] is False and again["timeout"] == 1800 and again["retries"] == 61
    assert set(again["budgets"].values()) == {300} and again["proven"] is True


@pytest.mark.parametrize("kwargs, text", [
    ({"wait_chunk": 0}, "server_ready_wait_chunk must be a whole number of seconds > 0, not 0"),
    ({"restart_timeout": "1800s", "setting": False}, "server_ready_timeout must be a whole number"),
    ({"first_deploy_timeout": None}, "server_ready_first_deploy_timeout must be a whole number"),
])
def test_plan_refuses_bad_settings(kwargs, text):
    with pytest.raises(r.BudgetError) as info:
        r.plan({"model": MODEL, "spec_sha256": SPEC}, {}, None, **kwargs)
    assert str(info.value).startswith(text)
