# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.inferops.serving`` importable from the working tree; Hypothesis profiles."""
from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import settings

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
