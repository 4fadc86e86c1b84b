# SPDX-License-Identifier: GPL-3.0-or-later
"""Preflight refuses a host whose NVIDIA driver is older than the image's CUDA needs (issue 26):
lab-spark's driver double reports the R575 driver (CUDA 12.9) under the cu130 image of its
profile; the converge stops in preflight naming both versions, and the serving container is
not touched. The driver double is put back afterwards (set-hardware gb10).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
HOST = "lab-spark"
INVENTORY = os.path.join(ROOT, "inventories", "lab")


def run(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)


def started(host):
    return run(["docker", "exec", host, "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", "inferops-serving"])


def test_a_driver_older_than_the_images_cuda_is_refused_in_preflight():
    fleet = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "tests/lab/fleet.yml", "-l", HOST])
    assert fleet.returncode == 0, fleet.stdout[-4000:]
    # The target image has this tree's set-hardware (lab.sh rebuilds it when the file changes),
    # with its shebang set to the image's python3 (tests/lab/setup/target.Dockerfile).
    before = started(HOST)
    try:
        old = run(["docker", "exec", HOST, "/usr/local/sbin/set-hardware", "gb10", "--driver", "575.57.08/12.9"])
        assert old.returncode == 0, old.stderr
        result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "site.yml", "-l", HOST])
        assert result.returncode != 0
        assert ("is built for CUDA 13.0 (its tag cu130-nightly), which needs NVIDIA driver >= 580; nvidia-smi shows "
                "driver 575.57.08") in result.stdout, result.stdout[-4000:]
        assert "inferops.serving.container_toolkit" not in result.stdout
        assert started(HOST).stdout == before.stdout
    finally:
        run(["docker", "exec", HOST, "/usr/local/sbin/set-hardware", "gb10"])
