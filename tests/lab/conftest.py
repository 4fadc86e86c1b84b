# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's shared simulated DGX Sparks, built once per pytest session (tests/lab/labkit.py)."""
from __future__ import annotations

import os

import pytest

import labkit


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before the first test of each module of the lab fleet's group (its fixtures included): the
    module learns whether the module before it left inventories/lab's fleet as shipped
    (``labkit.shipped_fleet``), and the mark is taken away."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None or not mark.args or mark.args[0] != "lab_fleet":
        return
    if getattr(item.module, "FLEET_SHIPPED_AT_START", None) is None:
        item.module.FLEET_SHIPPED_AT_START = labkit.take_fleet_shipped_mark()


@pytest.fixture(scope="session")
def shared_sparks():
    """``labkit.SharedSparks``: each of ``labkit.SPARKS`` is made (tests/lab/fleet.yml) and
    converged (site.yml: the toolkit installed, the locked image pulled, the minutes a host costs)
    once, by the start of the first module needing it, whichever module that is
    (``labkit.module_fleet()``), and removed at the session's end, when the rolling tag is moved
    back to the digest it had at the session's start."""
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    labkit.run([os.path.join(labkit.LAB, "lab.sh"), "up"])
    original = labkit.tag_digest()
    shared = labkit.SharedSparks()
    try:
        yield shared
    finally:
        labkit.run([labkit.NIGHTLY, "move", labkit.TAG, original], check=False)
        shared.remove()


@pytest.fixture(scope="session")
def spark_3():
    """``labkit.SharedSparks`` for ``labkit.SPARK_3`` alone (the readiness and watchdog tests, one
    pytest-xdist group): made by the first module needing it, removed at the session's end. It never
    moves the registry's rolling tag, so it does not put it back either: the worker of the pin and
    rollout tests may be moving it at that moment."""
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    labkit.run([os.path.join(labkit.LAB, "lab.sh"), "up"])
    shared = labkit.SharedSparks()
    try:
        yield shared
    finally:
        shared.remove()
