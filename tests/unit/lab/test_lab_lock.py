# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab pins its models' revisions where playbooks/pin.yml pins a fleet's: in the lock's ``models``
(inventories/lab/group_vars/all/image_lock.yml, which tests/lab/lab.sh up writes from the Hub
stand-in's ``--pins``), not in server_profile_overrides. An operator's ``-e
server_profile_overrides=...`` replaces the inventory's overrides whole; were the stand-in's commit
one of them, the converge would stage the profile's real commit, which the stand-in answers with a 404.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import yaml
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HUB_DIR = os.path.join(ROOT, "tests", "lab", "hub")
REPOS = os.path.join(HUB_DIR, "repos")
_SPEC = importlib.util.spec_from_file_location("hub_standin", os.path.join(HUB_DIR, "hub_standin.py"))
hub_standin = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hub_standin)
GROUP_VARS = os.path.join(ROOT, "inventories", "lab", "group_vars")
# What an operator passes on the command line (tests/lab/test_drain_in_the_lab.py's, for one).
OPERATOR = {"args": {"host": "127.0.0.1", "max-num-seqs": 16}}


def group_vars(group):
    with open(os.path.join(GROUP_VARS, group + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def lab_lock():
    """The lock lab.sh writes: its models section, from the stand-in's --pins as lab.sh runs it."""
    pins = subprocess.run([sys.executable, os.path.join(HUB_DIR, "hub_standin.py"), "--root", REPOS, "--pins"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    return yaml.safe_load("inferops_serving_image_lock:\n  images: {}\n" + pins)["inferops_serving_image_lock"]


def test_the_pins_are_each_repositorys_first_commit():
    store = hub_standin.Store(REPOS)
    assert lab_lock()["models"] == {"/".join(os.path.relpath(commits[0].directory, REPOS).split(os.sep)[:2]):
                                    {"revision": commits[0].sha} for commits in store.all_repos()}
    assert lab_lock()["models"]["RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"] == {
        "revision": "894b15f2f291691297cc850aa8371c89c18f33b5"}


def test_an_operators_overrides_keep_the_stand_ins_revision_on_every_lab_host():
    lock, store = lab_lock(), hub_standin.Store(REPOS)
    for group in ("spark", "g7e"):
        variables = group_vars(group)
        assert "revision" not in variables["server_profile_overrides"], group
        for overrides in (variables["server_profile_overrides"], OPERATOR):
            weights = plan(variables["server_profile"], {"name": "inferops-serving", "port": 8101},
                           lock=lock, overrides=overrides)["weights"]
            commit, missing = store.resolve(weights["model"], weights["revision"])
            # model_cache stages a commit the stand-in serves (no RevisionNotFound, the Hub's 404).
            assert missing is None and commit.sha == lock["models"][weights["model"]]["revision"], (group, weights)
