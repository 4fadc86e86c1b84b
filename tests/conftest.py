# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.inferops.serving`` importable from the working tree; Hypothesis profiles."""
from __future__ import annotations

import os
import subprocess
import sys

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
XDIST_GROUP_ORDER = ("lab_fleet", "shared_sparks", "molecule", "spark_3", "drain")


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
