# SPDX-License-Identifier: GPL-3.0-or-later
"""The hash-locked requirements the roles install on the hosts (pip install --require-hashes -r), offline:
each file in the repository is what scripts/lock-host-packages makes of the role defaults' pins
(its inputs are those pins, and it pins each of them), every requirement carries a sha256, no
index, find-links or local path rides in it, and the roles install from it with --require-hashes.
Regenerate with scripts/lock-host-packages after changing a pin (it needs PyPI; this test does not)."""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _host_locks as locks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def defaults(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def inputs(role):
    """The script's inputs (scripts/lock-host-packages gateway_inputs, model_cache_inputs)."""
    if role == "gateway":
        values = defaults("gateway")
        return ["litellm[proxy]==%s" % values["gateway_litellm_version"], "prisma==%s" % values["gateway_prisma_version"]]
    return list(defaults("model_cache")["model_cache_requirements"])


def text(role):
    with open(locks.lock_path(role), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("role", sorted(locks.LOCKS))
def test_the_lock_is_the_scripts_output_of_the_role_defaults_pins(role):
    parsed = locks.parse(text(role))
    assert parsed["inputs"] == inputs(role), "run scripts/lock-host-packages %s" % role
    assert locks.lock_plan(role, inputs(role)) == {"file": locks.lock_path(role), "problems": []}
    for pin in inputs(role):
        name, version = re.match(r"([^\[=]+)(?:\[[^\]]*\])?==(.+)", pin).groups()
        assert parsed["pins"][locks.normalize(name)] == version


@pytest.mark.parametrize("role", sorted(locks.LOCKS))
def test_every_requirement_has_a_hash_and_no_index_or_path_rides_in_it(role):
    content = text(role)
    parsed = locks.parse(content)
    assert parsed["pins"] and parsed["unhashed"] == [] and parsed["options"] == []
    assert "/tmp/" not in content and "file://" not in content and "--index-url" not in content
    # Each requirement line is followed by its hashes; none is a URL or a path.
    requirements = [line for line in content.splitlines() if line and not line.startswith((" ", "#"))]
    assert all(re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?==\S+ \\$", line) for line in requirements), requirements


def test_a_pin_the_lock_does_not_hold_is_refused_naming_the_variable():
    plan = locks.lock_plan("model_cache", ["huggingface_hub==0.0.1"])
    assert plan["problems"] == [
        "model_cache_requirements: huggingface_hub==0.0.1 is not what the collection's hash-locked "
        "model-cache-requirements.txt pins (huggingface_hub==%s); the hosts install only from it (pip "
        "--require-hashes): keep the role's default, or change the default and run scripts/lock-host-packages"
        % locks.parse(text("model_cache"))["pins"]["huggingface-hub"]]
    assert "gateway_litellm_version" in locks.lock_plan("gateway", ["litellm[proxy]==0.1"])["problems"][0]
    assert "not a name==version pin" in locks.lock_plan("model_cache", ["huggingface_hub>=1"])["problems"][0]
    unhashed = locks.lock_plan("model_cache", [], text="# input: a==1\na==1\n--index-url https://mirror\n")
    assert unhashed["problems"][0].endswith("without a hash: a; an option no host may use: --index-url https://mirror; "
                                            "run scripts/lock-host-packages")


@pytest.mark.parametrize("tasks, lookup", [("roles/gateway/tasks/install.yml", "roles/gateway/tasks/plan.yml"),
                                           ("roles/model_cache/tasks/stage.yml", "roles/model_cache/tasks/stage.yml")])
def test_the_roles_install_from_the_lock_with_require_hashes(tasks, lookup):
    with open(os.path.join(ROOT, tasks), encoding="utf-8") as handle:
        installs = [task for task in yaml.safe_load(handle) if "ansible.builtin.pip" in task]
    assert installs and all(set(task["ansible.builtin.pip"]) >= {"requirements", "extra_args"} and
                            "--require-hashes" in task["ansible.builtin.pip"]["extra_args"].split() and
                            "name" not in task["ansible.builtin.pip"] for task in installs)
    with open(os.path.join(ROOT, lookup), encoding="utf-8") as handle:
        assert "lookup('inferops.serving.host_lock'" in handle.read()


def test_the_lookup_as_a_task_finds_it_and_refuses_a_pin_it_does_not_hold():
    """ansible-core's lookup loader in a fresh interpreter (as a task's worker finds the plugin)."""
    import json
    import subprocess
    import sys

    program = """
import json, sys
from ansible.plugins.loader import init_plugin_loader, lookup_loader
init_plugin_loader([sys.argv[1]])
plugin = lookup_loader.get("inferops.serving.host_lock")
print(json.dumps([plugin.run(["model_cache"], variables={}, pins=pins)[0] for pins in json.loads(sys.argv[2])]))
"""
    ran = subprocess.run([sys.executable, "-c", program, os.path.join(ROOT, ".collections"),
                          json.dumps([inputs("model_cache"), ["huggingface_hub==0.0.1"]])],
                         capture_output=True, text=True, check=True, timeout=120)
    good, bad = json.loads(ran.stdout.splitlines()[-1])
    assert good["problems"] == [] and good["file"].endswith("roles/model_cache/files/model-cache-requirements.txt")
    assert os.path.exists(good["file"])
    assert bad["problems"] and bad["problems"][0].startswith("model_cache_requirements: huggingface_hub==0.0.1 is not")
