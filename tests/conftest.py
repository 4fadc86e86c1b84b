# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.inferops.serving`` importable from the working tree."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run([os.path.join(ROOT, "scripts", "link-collection")], check=True)
COLLECTIONS = os.path.join(ROOT, ".collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
