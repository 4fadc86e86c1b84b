# SPDX-License-Identifier: GPL-3.0-or-later
"""The action group ``inferops.serving.serving`` (meta/runtime.yml) holds exactly the modules whose
documentation says so (the ``ACTIONGROUP_SERVING`` doc fragment): ``module_defaults`` with the
group reaches every module that claims it (gateway_drain claimed it and was not in the group)."""
from __future__ import annotations

import glob
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_group_is_the_modules_that_claim_it():
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as handle:
        group = yaml.safe_load(handle)["action_groups"]["serving"]
    claiming = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        with open(path, encoding="utf-8") as handle:
            if "inferops.serving._attributes.ACTIONGROUP_SERVING" in handle.read():
                claiming.append(os.path.basename(path)[:-3])
    assert len(group) == len(set(group))
    assert sorted(group) == claiming
