# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's shared simulated DGX Sparks, built once per pytest session (tests/lab/labkit.py)."""
from __future__ import annotations

import os

import pytest

import labkit


@pytest.fixture(scope="session")
def shared_sparks(tmp_path_factory):
    """``labkit.SharedSparks``: each of ``labkit.SPARKS`` is made by tests/lab/fleet.yml and
    converged with site.yml (the toolkit installed, the locked image pulled: the minutes a host
    costs) when the first module needing it starts, whichever module it is, and removed at the
    session's end, when the rolling tag is moved back to the digest it had at the session's start.
    Modules take the hosts with ``labkit.module_fleet()``."""
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    labkit.run([os.path.join(labkit.LAB, "lab.sh"), "up"])
    original = labkit.tag_digest()
    shared = labkit.SharedSparks(tmp_path_factory)
    try:
        yield shared
    finally:
        labkit.run([labkit.NIGHTLY, "move", labkit.TAG, original], check=False)
        shared.remove()
