# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures for the lab's test doubles: the engine simulator is imported from its tree."""
from __future__ import annotations

import pytest

from engine_sim_cases import GB10_ROWS, RTX_PRO_6000_ROWS


@pytest.fixture
def gb10():
    from engine_sim.gpu import parse_query
    return parse_query(GB10_ROWS)[0]


@pytest.fixture
def rtx6000():
    from engine_sim.gpu import parse_query
    return parse_query(RTX_PRO_6000_ROWS)[0]


@pytest.fixture
def sims():
    """Simulator processes a test started (objects with ``proc``): killed if still running at the end."""
    started = []
    yield started
    for sim in started:
        if sim.proc.poll() is None:
            sim.proc.kill()
            sim.proc.wait()
