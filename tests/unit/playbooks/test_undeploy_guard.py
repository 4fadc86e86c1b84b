# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/undeploy.yml takes hosts out of service: without -e inferops_undeploy=true it stops
before it even connects (the host is an SSH host on a loopback port nothing listens on)."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_without_the_confirmation_nothing_is_touched(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("serving:\n  hosts:\n    spark-01:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                         "      server_profile: gb10-nvfp4-mtp-latency\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([playbook, "playbooks/undeploy.yml", "-i", str(inventory)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "This takes spark-01 out of service: run with -e inferops_undeploy=true" in result.stdout, result.stdout
    assert "UNREACHABLE" not in result.stdout
