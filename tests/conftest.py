# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.inferops.serving`` importable from the working tree; Hypothesis profiles."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import settings
from xdist.scheduler import LoadGroupScheduling

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run([os.path.join(ROOT, "scripts", "link-collection")], check=True)
COLLECTIONS = os.path.join(ROOT, ".collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

# benchmarks/mutation.sh runs the covering unit tests once per mutant and sets
# HYPOTHESIS_PROFILE=mutation: each property test then runs 10 examples, the same ones for every
# mutant (derandomized, no example database). Without it Hypothesis' default profile applies
# (100 examples, random), as in every normal test run.
settings.register_profile("mutation", max_examples=10, derandomize=True, database=None)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


# The lab's pytest-xdist groups (tests/lab: xdist_group marks), longest first by the last measured
# clean-clone run (docs/dev/testing.md). With --dist loadgroup each group runs on one worker, and
# xdist hands out work in the order of its queue: by default the scopes with the most tests first,
# which started the molecule scenarios (then four tests, ~28 min in CI; two since issue 21 made
# bad_input and engine_faults gb10_vllm's side effect) only after a whole other group had ended.
# This order starts the long chains at once; the unit tests (one scope each) and the shorter groups
# fill in behind them.
XDIST_GROUP_ORDER = ("lab_fleet", "shared_sparks", "spark_3", "drain", "molecule")


class LongestGroupsFirst(LoadGroupScheduling):
    """``--dist loadgroup`` whose next work unit is the first group of XDIST_GROUP_ORDER still queued."""

    def _assign_work_unit(self, node):
        for group in XDIST_GROUP_ORDER:
            if group in self.workqueue:
                self.workqueue.move_to_end(group, last=False)
                break
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", None) != "loadgroup":
        return None
    return LongestGroupsFirst(config, log)


# The lab fleet's group is the critical path (docs/dev/testing.md): alone it keeps 1.4 of the two
# cores busy, and when every worker had the same CPU priority it ran at half its speed beside the
# others (34 min alone, ~70 in the full run). Each worker runs at the priority of its current test's
# group: the critical group, and shared-spark-3's, whose tests time the watchdog and the readiness
# wait's progress lines from this side, at nice 0; every other test (and the processes it starts:
# ansible-playbook, molecule) at INFEROPS_TEST_NICE (10 by default), so they take the CPU the
# critical chain leaves (its waits on timers and engines). Only where the process may lower its nice
# again (root, as the lab runs); elsewhere it is left alone.
FIRST_PRIORITY_GROUPS = ("lab_fleet", "spark_3")


def xdist_group(item):
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return mark.args[0] if mark.args else mark.kwargs.get("name")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not os.environ.get("PYTEST_XDIST_WORKER") or os.geteuid() != 0:
        return
    want = 0 if xdist_group(item) in FIRST_PRIORITY_GROUPS else int(os.environ.get("INFEROPS_TEST_NICE", "10"))
    if os.getpriority(os.PRIO_PROCESS, 0) != want:
        os.setpriority(os.PRIO_PROCESS, 0, want)
