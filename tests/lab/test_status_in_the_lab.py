# SPDX-License-Identifier: GPL-3.0-or-later
"""status.yml on the lab fleet with one host stopped (issue 26): the stopped host is in the table
with the reason it could not be reached, the running hosts keep their rows (each in routing on
lab-gateway, whose row lists them: issue 22), the run exits non-zero.

The stopped host is a target container created from the lab's target image and never started
(a machine that is powered off), added to a copy of inventories/lab; the lab fleet is not touched.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
STOPPED = "inferops-lab-status-stopped"


def run(args, timeout=1800):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def inventory(tmp_path):
    shipped = os.path.join(ROOT, "inventories", "lab")
    converged = run([os.path.join(BIN, "ansible-playbook"), "-i", shipped, "site.yml"])
    assert converged.returncode == 0, converged.stdout[-4000:]
    copy = str(tmp_path / "lab")
    shutil.copytree(shipped, copy)
    hosts_file = os.path.join(copy, "hosts.yml")
    with open(hosts_file, encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)
    hosts["all"]["children"]["serving"]["children"]["spark"]["hosts"][STOPPED] = {"server_port": 8199}
    with open(hosts_file, "w", encoding="utf-8") as handle:
        yaml.safe_dump(hosts, handle)
    created = run(["docker", "create", "--name", STOPPED, "--network", "none", "inferops-lab/target:bookworm",
                   "/lib/systemd/systemd"])
    assert created.returncode == 0, created.stderr
    yield copy
    run(["docker", "rm", "-f", STOPPED])


def test_a_stopped_host_is_in_the_table_with_its_reason_and_the_run_fails(inventory):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", inventory, "playbooks/status.yml"])
    out = result.stdout
    assert result.returncode != 0, out[-4000:]
    assert "censored due to no log" not in out
    # Through the docker connection a stopped container is no SSH time-out: its exec answers
    # nothing, so the row says NOT READ with that reason (an SSH host's says UNREACHABLE:
    # tests/unit/playbooks/test_status_unreachable.py).
    assert re.search(r"%s\s+\| gb10-nvfp4-mtp-throughput \|.*\| (UNREACHABLE|NOT READ): \S" % STOPPED, out), out[-4000:]
    for host in ("lab-spark", "lab-spark-2", "lab-g7e"):
        # Its row, then its details line with its routing.
        assert re.search(r"%s\s+\|.*\|\s+serving'?\n\W*\s+running=.*, routing=in on lab-gateway'?$" % host, out,
                         re.M), out[-4000:]
    # The gateway's row (issue 22): its URL, the three lab hosts in routing; the stopped host is no
    # deployment of it and does not serve, so its routing agrees (out, not serving): no flag.
    assert re.search(r"lab-gateway\s+\| gateway \(LiteLLM\)\s+\|.*\| http://127\.0\.0\.1:4000/v1\s+\| routes to 3 of 3 "
                     r"hosts'?$", out, re.M), out[-4000:]
    assert "in routing=lab-g7e lab-spark lab-spark-2, out of routing=none" in out, out[-4000:]
    assert "IN ROUTING" not in out and "OUT OF ROUTING" not in out, out[-4000:]
    assert re.search(r"fatal: \[%s\]: FAILED!" % STOPPED, out), out[-4000:]
    assert re.search(r"msg: '?%s: (UNREACHABLE|NOT READ): \S" % STOPPED, out), out[-4000:]
