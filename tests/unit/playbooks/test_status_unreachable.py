# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/status.yml over a fleet where one host cannot be reached and another cannot be read
(issue 26): every host still has its row in the table, the unreachable one with its reason
(never ``<error censored due to no log>``), and the run exits non-zero.

No lab: the unreachable host is an SSH host on a loopback port nothing listens on; the unread
host is this machine (local connection) whose Docker socket path does not exist, so its first
read (the container inspect, not no_log: the module leaves the container's environment out) fails
and its row says why.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def status(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"serving": {
        "vars": {"server_profile": "gb10-nvfp4-mtp-throughput", "inferops_become": False},
        "hosts": {
            "gone-01": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                        "ansible_ssh_common_args": "-o ConnectTimeout=5"},
            "here-01": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                        "server_docker_host": "unix://%s" % (tmp_path / "no-docker.sock")},
        }}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "playbooks/status.yml", "-i", str(inv)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_every_host_has_a_row_with_its_reason_and_the_run_fails(tmp_path):
    result = status(tmp_path)
    out = result.stdout
    assert result.returncode != 0, out
    assert "Print the status table" in out and "has no attribute 'server_status'" not in out, out[-4000:]
    assert "censored due to no log" not in out, out[-4000:]
    gone = re.search(r'"gone-01 +\| gb10-nvfp4-mtp-throughput \|[^"]*\| UNREACHABLE: Failed to connect to the host '
                     r'via ssh: [^"]*Connection refused', out)
    assert gone, out[-4000:]
    here = re.search(r'"here-01 +\| gb10-nvfp4-mtp-throughput \|[^"]*\| NOT READ: \'Look at the serving container and its '
                     r'recorded deployments\' failed: cannot read the container inferops-serving: cannot reach the Docker '
                     r'daemon at unix://[^ ]*/no-docker.sock', out)
    assert here, out[-4000:]
    # Each host is failed with its state, so the recap shows both.
    assert re.search(r"gone-01 +: .*failed=1", out) and re.search(r"here-01 +: .*failed=1", out), out[-2000:]
