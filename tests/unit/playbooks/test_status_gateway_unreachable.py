# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/status.yml with a gateway that cannot be reached, no lab: the gateway's row names it
UNREACHABLE with the connection's reason (not a template error such as "object of type 'dict'
has no attribute 'model_info'"), and every serving host keeps its row, its routing on that
gateway "unknown" with the same reason.

The gateway gw-01 is an SSH host on a loopback port nothing listens on (port 1, connections
refused); the serving host lab-spark is this machine (local connection) whose Docker socket path
does not exist, so it is not read and says why.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KEY = "sk-unit-status-gateway-gone-Key-81b3e0"


def test_an_unreachable_gateway_is_named_and_every_host_keeps_its_row(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"inferops_become": False}, "children": {
        "serving": {"hosts": {"lab-spark": dict(local, server_profile="gb10-nvfp4-mtp-throughput",
                                                server_docker_host="unix://%s" % (tmp_path / "no-docker.sock"))}},
        "gateway": {"vars": {"gateway_master_key": KEY}, "hosts": {
            "gw-01": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                      "ansible_ssh_common_args": "-o ConnectTimeout=5"}}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "playbooks/status.yml",
                             "-i", str(inventory)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    out = result.stdout
    assert result.returncode != 0, out[-4000:]
    assert KEY not in out + result.stderr
    assert "model_info" not in out, out[-4000:]
    assert "Print the status table" in out, out[-4000:]
    assert re.search(r'"gw-01 +\| gateway \(LiteLLM\) +\|[^"]*\| NOT READ: UNREACHABLE: Failed to connect to the host '
                     r'via ssh: [^"]*Connection refused', out), out[-4000:]
    assert re.search(r'"lab-spark +\| gb10-nvfp4-mtp-throughput +\|[^"]*\| NOT READ: ', out), out[-4000:]
    assert re.search(r"routing=unknown on gw-01 \(NOT READ: UNREACHABLE: Failed to connect", out), out[-4000:]
    assert re.search(r"lab-spark +: .*failed=1", out) and re.search(r"gw-01 +: .*(unreachable|failed)=1", out), \
        out[-2000:]
