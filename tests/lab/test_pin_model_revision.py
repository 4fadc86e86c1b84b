# SPDX-License-Identifier: GPL-3.0-or-later
"""Pinning a new model revision through the canary (issue 24): ``playbooks/pin.yml -e
pin_model_revision=<commit>`` changes the lock's ``models`` entry only after the canary staged,
verified, deployed and proved that commit.

shared-spark-3 (``labkit.SPARK_3``, the spark_3 group's host) is converged from an inventory of this
module's own with its weights staged from the lab's Hub stand-in, pinned to the first commit of the
lab's GB10 model by the lab's lock (its ``models``, which tests/lab/lab.sh up writes and labkit copies
into the module's inventory, as inventories/lab's). Then upstream moves on (a new commit on the
stand-in, removed at the end) and pin.yml proves it on the canary twice:

1. with the simulator's start-up fault (``crash_on_cuda_graph_capture``: the engine dies capturing
   CUDA graphs, as the bad nightly does) in the candidate's deployment: the canary fails, is rolled
   back to the first commit's engine, and the lock is byte for byte what it was;
2. without it: the canary serves the new commit (``--revision``) and only then does the lock's
   ``models`` entry name it, with the manifest the canary verified and the proof's evidence.
"""
from __future__ import annotations

import json
import os
import shutil
import urllib.request

import pytest
import yaml

import labkit

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("spark_3")]  # one pytest-xdist worker: labkit.SPARK_3

HOST, PORT = labkit.SPARK_3, labkit.ALL_SPARKS[labkit.SPARK_3]
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
FIRST = "894b15f2f291691297cc850aa8371c89c18f33b5"  # its first commit on the stand-in (hub_standin.py --list)
HUB = "http://127.0.0.1:5090"
# The stand-in's repositories (tests/lab/lab.sh: a copy of tests/lab/hub/repos, laid anew at each up).
HUB_ROOT = os.path.join(os.environ.get("LAB_DIR", os.path.join(labkit.ROOT, ".lab")), "hub", "repos")
# The model_cache settings of inventories/lab/group_vars/serving.yml, on top of the shared Sparks'.
GROUP_VARS = dict(labkit.GROUP_VARS, model_cache_enabled=True, model_cache_endpoint=HUB,
                  model_cache_reserve_bytes=0, model_cache_progress_interval=2,
                  model_cache_pip_environment={"PIP_CERT": "/etc/ssl/certs/inferops-lab-pip-ca.crt"},
                  server_profile_overrides={"args": {"host": "127.0.0.1"}})


def hub_head(model):
    with urllib.request.urlopen("%s/api/models/%s/revision/main" % (HUB, model), timeout=10) as answer:
        return json.loads(answer.read())["sha"]


def lock_text(inventory):
    with open(os.path.join(inventory, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        return handle.read()


def served_revision():
    argv = json.loads(labkit.exec_on(HOST, "docker inspect -f '{{json .Config.Cmd}}' inferops-serving").stdout)
    return argv[argv.index("--revision") + 1]


@pytest.fixture(scope="module")
def fleet(spark_3, tmp_path_factory):
    with labkit.module_fleet(spark_3, tmp_path_factory, "pin-model", {HOST: PORT}, GROUP_VARS,
                             restore_tag=False) as inventory:
        yield inventory


@pytest.fixture
def upstream(fleet):
    """A new commit of MODEL on the stand-in (its README changed), as a re-upload upstream makes."""
    repo = os.path.join(HUB_ROOT, MODEL)
    last = max(int(name) for name in os.listdir(repo) if name.isdigit())
    new = os.path.join(repo, str(last + 1))
    shutil.copytree(os.path.join(repo, str(last)), new)
    try:
        with open(os.path.join(new, "README.md"), "a", encoding="utf-8") as handle:
            handle.write("\nRe-uploaded upstream (tests/lab/test_pin_model_revision.py).\n")
        commit = hub_head(MODEL)
        assert commit != FIRST, "the stand-in's head did not move"
        yield commit
    finally:
        shutil.rmtree(new)


def test_a_new_revision_enters_the_lock_only_after_the_canary_proved_it(fleet, upstream):
    assert served_revision() == FIRST
    before = lock_text(fleet)
    assert yaml.safe_load(before)["inferops_serving_image_lock"]["models"][MODEL]["revision"] == FIRST

    faulty = json.dumps({"server_profile_overrides": dict(GROUP_VARS["server_profile_overrides"],
                                                          env={"ENGINE_SIM_FAULT": "crash_on_cuda_graph_capture"})})
    failed = labkit.playbook(fleet, "playbooks/pin.yml", "-e", "pin_model_revision=" + upstream, "-e", faulty,
                             check=False)
    text = labkit.folded(failed.stdout)
    assert failed.returncode != 0, text[-3000:]
    assert "%s@%s failed on canary %s" % (MODEL, upstream, HOST) in text and "The lock is unchanged." in text, text[-3000:]
    assert "Rolled back to the last known-good" in text, text[-3000:]
    assert lock_text(fleet) == before
    assert served_revision() == FIRST and labkit.serving(PORT, timeout=60)

    proven = labkit.playbook(fleet, "playbooks/pin.yml", "-e", "pin_model_revision=" + upstream)
    text = labkit.folded(proven.stdout)
    assert served_revision() == upstream
    entry = yaml.safe_load(lock_text(fleet))["inferops_serving_image_lock"]["models"][MODEL]
    assert entry["revision"] == upstream and entry["manifest"]["revision"] == upstream
    # The lock pinned FIRST before: the commit the canary moved on from.
    assert entry["previous_revision"] == FIRST
    assert entry["evidence"]["canary"] == HOST and entry["evidence"]["smoke_answer"] == "4"
    assert entry["manifest"]["files"]["README.md"]["size"] > 0
    # The lock was written after the canary's proof, never before it.
    assert text.index("Record the revision in the inventory's lock") > text.index("Assert the backends the engine selected")
