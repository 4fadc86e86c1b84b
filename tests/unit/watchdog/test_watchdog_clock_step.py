# SPDX-License-Identifier: GPL-3.0-or-later
"""The restart budget after the wall clock was stepped back, on a state that has only wall-clock
stamps (one written before the last boot: load_state drops its monotonic ones): the restarts now
stamped in the future still count for up to an hour, so a step back cannot hand out a fresh
budget to an engine that keeps crashing."""
from __future__ import annotations

import pytest
from watchdog_program import base_config, load_program

NOW = 1_800_000_000.0
HOUR = 3600.0


@pytest.fixture(scope="module")
def wd():
    return load_program()


def restarts(*offsets):
    """Restart actions stamped ``offset`` seconds from NOW on the wall clock only."""
    return [{"kind": "restart", "t": NOW + offset} for offset in offsets]


def test_restarts_stamped_in_the_future_within_the_hour_still_count(wd):
    # The clock was stepped back 20 minutes after three restarts of the last 15 minutes.
    actions = restarts(300.0, 600.0, 1000.0)
    assert len(wd.restarts_in_last_hour(actions, NOW)) == 3
    assert wd.budget_left(actions, 3, NOW) == 0
    assert wd.budget_left(actions, 3, {"t": NOW}) == 0


def test_a_restart_stamped_more_than_an_hour_ahead_or_back_does_not_count(wd):
    actions = restarts(-HOUR - 1, HOUR + 1, 2 * HOUR, -30.0) + [{"kind": "stop", "t": NOW + 60}]
    assert [a["t"] - NOW for a in wd.restarts_in_last_hour(actions, NOW)] == [-30.0]
    assert wd.budget_left(actions, 3, NOW) == 2


def test_the_budget_is_spent_by_a_mix_of_past_and_future_stamps(wd):
    state = {"actions": restarts(-1200.0, 120.0, 900.0)}
    decision = wd.decide_action(state, {"outcome": "dead", "reason": "no answer"}, wd.load_config(base_config()), {"t": NOW})
    assert decision["action"] == "give_up", decision
    assert "restart budget (3 per hour) is spent" in decision["reason"]
