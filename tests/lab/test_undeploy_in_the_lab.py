# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/undeploy.yml on a lab host (issue 26): takes the host out of the gateway's routing
(lab-gateway's drained.json names it), removes the container, its systemd units, the watchdog, the
launch script, the watchdog's files and the last known-good record; keeps the model and engine
caches; a converge (site.yml) restores it, serving and proven, and back in the gateway's routing.

Uses lab-g7e of inventories/lab (converged first); the host is restored at the end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "lab")
HOST = "lab-g7e"
REMOVED = ["/usr/local/lib/inferops-serving/inferops-serving.sh", "/etc/inferops-serving/watchdog-inferops-serving.json",
           "/var/lib/inferops-serving/watchdog-inferops-serving.json", "/var/lib/inferops-serving/inferops-serving.json",
           "/etc/systemd/system/inferops-serving@.service", "/etc/systemd/system/inferops-watchdog@.service",
           "/usr/local/lib/inferops-serving/inferops_watchdog.py", "/usr/local/lib/inferops-serving/inferops_unified_memory.py",
           "/usr/local/lib/inferops-serving/inferops_docker_api.py", "/usr/local/lib/inferops-serving/inferops_prometheus.py",
           "/usr/local/lib/inferops-serving/inferops_bounded_http.py",
           "/usr/local/lib/inferops-serving/inferops_host_files.py"]


def run(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)


def playbook(*args):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, *args])
    assert result.returncode == 0, result.stdout[-4000:]
    return result.stdout


def on_host(command, host=HOST):
    return run(["docker", "exec", host, "bash", "-c", command])


def drained():
    """The hosts the lab's gateway keeps out of its routing (roles/gateway: gateway_state_dir)."""
    result = on_host("cat /var/lib/inferops-gateway/drained.json", host="lab-gateway")
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout)["hosts"])


def test_undeploy_removes_what_the_role_made_and_a_converge_restores_it():
    playbook("site.yml", "-l", HOST)
    assert all(on_host("test -e %s" % path).returncode == 0 for path in REMOVED)
    checked = playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true", "--check")
    assert on_host("docker inspect inferops-serving").returncode == 0, checked[-2000:]  # --check changed nothing
    try:
        playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true")
        assert on_host("docker inspect inferops-serving").returncode != 0
        assert on_host("systemctl is-active inferops-watchdog@inferops-serving.service").stdout.strip() != "active"
        left = [path for path in REMOVED if on_host("test -e %s" % path).returncode == 0]
        assert left == []
        # The weights and the compile cache stay.
        assert on_host("test -d /root/.cache/huggingface").returncode == 0
        # The gateway no longer routes to it (drained, not put back: the host serves nothing).
        assert HOST in drained()
        again = playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true")
        assert "changed=0" in again.split("PLAY RECAP")[-1]
    finally:
        restored = playbook("site.yml", "-l", HOST)
    assert "serving" in restored.split("Print the serving summary")[-1]
    assert on_host("systemctl is-active inferops-watchdog@inferops-serving.service").stdout.strip() == "active"
    assert HOST not in drained()  # proven again, so back in the gateway's routing
