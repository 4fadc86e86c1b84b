# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's shared simulated DGX Sparks, built once per pytest session (tests/lab/labkit.py)."""
from __future__ import annotations

import os

import pytest

import labkit


@pytest.fixture(scope="session")
def shared_sparks(tmp_path_factory):
    """``labkit.SPARKS`` made by tests/lab/fleet.yml and converged with site.yml (the toolkit
    installed, the locked image pulled: the minutes a host costs), created by the first test that
    needs them, whichever module it is in, and removed at the session's end, when the rolling tag
    is moved back to the digest it had before. Modules take them with ``labkit.module_fleet()``."""
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    labkit.run([os.path.join(labkit.LAB, "lab.sh"), "up"])
    original = labkit.tag_digest()
    inventory = labkit.write_inventory(str(tmp_path_factory.mktemp("shared-sparks-inventory")), labkit.SPARKS,
                                       labkit.GROUP_VARS)
    for name in labkit.SPARKS:
        labkit.run([labkit.DOCKER, "rm", "-f", name], check=False)
    try:
        labkit.playbook(inventory, os.path.join(labkit.LAB, "fleet.yml"))
        labkit.playbook(inventory, "site.yml")
        yield labkit.SPARKS
    finally:
        labkit.run([labkit.NIGHTLY, "move", labkit.TAG, original], check=False)
        for name in labkit.SPARKS:
            labkit.run([labkit.DOCKER, "rm", "-f", name], check=False)
