# SPDX-License-Identifier: GPL-3.0-or-later
"""labkit's mark of inventories/lab's fleet as shipped (tests/lab/labkit.py): written only after a
converge of the whole fleet that no host failed, taken away by the next module of the lab fleet's
group, so a module starts without the shipped converge only right after one that ended with it.

The recaps are the PLAY RECAP lines ansible-playbook prints (ansible-core 2.21, the default
callback), copied from a no-op site.yml of the lab fleet on 2026-12-04."""
from __future__ import annotations

import importlib.util
import os
import types

import pytest

LAB_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab")
_SPEC = importlib.util.spec_from_file_location("labkit", os.path.join(LAB_DIR, "labkit.py"))
labkit = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(labkit)

RECAP = """PLAY RECAP *********************************************************************
lab-g7e                    : ok=29   changed=0    unreachable=0    failed=0    skipped=27   rescued=0    ignored=0
lab-gateway                : ok=24   changed=0    unreachable=0    failed=0    skipped=3    rescued=0    ignored=0
lab-spark                  : ok=41   changed=0    unreachable=0    failed=0    skipped=31   rescued=0    ignored=0
lab-spark-2                : ok=28   changed=0    unreachable=0    failed=0    skipped=28   rescued=0    ignored=0
"""


@pytest.fixture
def mark(tmp_path, monkeypatch):
    path = tmp_path / "state" / "fleet-shipped"
    monkeypatch.setattr(labkit, "FLEET_SHIPPED_MARK", str(path))
    return path


def test_the_fleet_hosts_are_read_from_the_lab_inventory():
    assert labkit.lab_fleet_hosts() == {"lab-spark", "lab-spark-2", "lab-g7e", "lab-gateway"}


def test_a_passing_converge_of_the_whole_fleet_marks_it_once(mark):
    labkit.mark_fleet_shipped(RECAP)
    assert mark.exists()
    assert labkit.take_fleet_shipped_mark() is True
    assert labkit.take_fleet_shipped_mark() is False


@pytest.mark.parametrize("output", [
    "\n".join(line for line in RECAP.splitlines() if not line.startswith("lab-g7e")),  # a --limit
    RECAP.replace("lab-gateway                : ok=24   changed=0    unreachable=0    failed=0",
                  "lab-gateway                : ok=20   changed=0    unreachable=0    failed=1"),
    RECAP.replace("lab-spark-2                : ok=28   changed=0    unreachable=0",
                  "lab-spark-2                : ok=2    changed=0    unreachable=1"),
    "",
], ids=["limited", "failed", "unreachable", "no-recap"])
def test_a_limited_or_failed_converge_leaves_no_mark(mark, output):
    labkit.mark_fleet_shipped(output)
    assert not mark.exists()
    assert labkit.take_fleet_shipped_mark() is False


def test_a_module_marked_shipped_at_its_start_runs_no_playbook(monkeypatch):
    ran = []
    monkeypatch.setattr(labkit, "playbook", lambda *args: ran.append(args) or types.SimpleNamespace(stdout="x"))
    assert labkit.shipped_fleet(types.SimpleNamespace(FLEET_SHIPPED_AT_START=True), "inv") is None
    assert not ran
    labkit.shipped_fleet(types.SimpleNamespace(FLEET_SHIPPED_AT_START=False), "inv")
    assert [args[1] for args in ran] == [os.path.join(labkit.LAB, "fleet.yml"), "site.yml"]
