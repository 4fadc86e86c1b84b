# SPDX-License-Identifier: GPL-3.0-or-later
"""container_swap against the lab's real Docker engine (marked ``lab``): the Engine API calls the
unit tests' fake answers as Docker does, here answered by dockerd itself - a swap, its second run,
check mode, and a start Docker refuses (the old container is started again, the staged one removed).

The containers are throwaway ``sleep`` containers of the lab's base image, named per test run.
"""
from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
IMAGE = "inferops-lab/base:bookworm"

pytestmark = pytest.mark.lab


def docker(*args, check=True):
    result = subprocess.run([DOCKER, *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError("docker %s failed: %s" % (" ".join(args), result.stderr))
    return result


def swap(name, staged, check_mode=False):
    """Run the module on localhost; returns (failed, result)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ["PATH"])
    args = [os.path.join(ROOT, ".venv", "bin", "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-o",
            "-e", "ansible_python_interpreter=" + os.path.join(ROOT, ".venv", "bin", "python"),
            "-m", "inferops.serving.container_swap", "-a",
            json.dumps({"name": name, "staged": staged, "stop_timeout": 1})]
    if check_mode:
        args.append("--check")
    result = subprocess.run(args, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    head, _sep, body = result.stdout.partition(" => ")
    assert body, result.stdout + result.stderr
    return "FAILED" in head, json.loads(body)


def state(name):
    """(Id, Running) of ``name``, or None."""
    found = docker("inspect", "-f", "{{.Id}} {{.State.Running}}", name, check=False)
    if found.returncode != 0:
        return None
    cid, running = found.stdout.split()
    return cid, running == "true"


@pytest.fixture
def names():
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.skip("the lab is not up (tests/lab/lab.sh up)")
    prefix = "inferops-swaptest-%s" % uuid.uuid4().hex[:8]
    made = {"old": prefix, "staged": prefix + "-next", "helper": prefix + "-helper"}
    yield made
    docker("rm", "-f", *made.values(), check=False)


def test_swap_with_dockerd(names):
    old = docker("run", "-d", "--name", names["old"], IMAGE, "sleep", "infinity").stdout.strip()
    new = docker("create", "--name", names["staged"], IMAGE, "sleep", "infinity").stdout.strip()

    failed, planned = swap(names["old"], names["staged"], check_mode=True)
    assert not failed and planned["changed"]
    assert state(names["old"]) == (old, True) and state(names["staged"]) == (new, False)

    failed, result = swap(names["old"], names["staged"])
    assert not failed and result["changed"], result
    assert result["actions"] == planned["actions"] == [
        "stop %s" % names["old"], "start %s" % names["staged"], "remove %s" % names["old"],
        "rename %s to %s" % (names["staged"], names["old"])]
    assert state(names["old"]) == (new, True)
    assert state(names["staged"]) is None
    assert docker("inspect", old, check=False).returncode != 0, "the replaced container was not removed"
    assert result["replaced"]["id"] == old and result["container"] == new

    failed, again = swap(names["old"], names["staged"])
    assert not failed and not again["changed"] and again["actions"] == []


def test_start_refused_by_dockerd_puts_the_old_container_back(names):
    old = docker("run", "-d", "--name", names["old"], IMAGE, "sleep", "infinity").stdout.strip()
    docker("run", "-d", "--name", names["helper"], IMAGE, "sleep", "infinity")
    # Joins the helper's network namespace: Docker refuses to start it once the helper is stopped.
    docker("create", "--name", names["staged"], "--network", "container:" + names["helper"],
           IMAGE, "sleep", "infinity")
    docker("stop", "-t", "1", names["helper"])

    failed, result = swap(names["old"], names["staged"])
    assert failed
    assert "start %s: Docker answered" % names["staged"] in result["msg"]
    assert "the replacement %s was removed" % names["staged"] in result["msg"]
    assert "%s was started again" % names["old"] in result["msg"]
    assert state(names["old"]) == (old, True)
    assert state(names["staged"]) is None
