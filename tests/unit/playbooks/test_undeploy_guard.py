# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/undeploy.yml takes hosts out of service: without -e inferops_undeploy=true, or without a
-l naming the hosts (every serving host would go), it stops before it even connects (the hosts are
SSH hosts on a loopback port nothing listens on); with both it goes on to the hosts."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def undeploy(tmp_path, *args):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("serving:\n  hosts:\n"
                         + "".join("    spark-0%d:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                                   "      server_profile: gb10-nvfp4-mtp-latency\n" % n for n in (1, 2)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_RETRY_FILES_ENABLED="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "playbooks/undeploy.yml", "-i", str(inventory), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_without_the_confirmation_nothing_is_touched(tmp_path):
    result = undeploy(tmp_path, "-l", "spark-01")
    assert result.returncode != 0
    assert "This takes spark-01 out of service: run with -e inferops_undeploy=true" in result.stdout, result.stdout
    assert "UNREACHABLE" not in result.stdout


def test_without_a_limit_every_host_is_refused_before_anything_is_touched(tmp_path):
    result = undeploy(tmp_path, "-e", "inferops_undeploy=true")
    assert result.returncode != 0
    assert "No -l: this would take every serving host (2) out of service" in result.stdout, result.stdout
    assert "UNREACHABLE" not in result.stdout


def test_a_limit_and_the_confirmation_go_on_to_the_named_hosts_only(tmp_path):
    # A pattern is a limit too. The hosts are not reachable: the run gets as far as connecting.
    result = undeploy(tmp_path, "-e", "inferops_undeploy=true", "-l", "spark-0*:!spark-02")
    assert "No -l: this would" not in result.stdout and "This takes spark-01 out of service" not in result.stdout
    assert "UNREACHABLE" in result.stdout and "spark-01" in result.stdout and "spark-02" not in result.stdout
