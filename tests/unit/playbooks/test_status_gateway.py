# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/status.yml with gateways (issue 22), no lab: each gateway has a row with its URL and
the hosts in and out of routing (its deployments, its drain file), a host in routing that does not
serve is flagged, a gateway that does not answer is named and failed; the master key is in no output.

Both gateways are this machine (local connection). gw-01's proxy is a test double: an HTTP server
on a loopback port standing for LiteLLM 1.106.12's ``GET /v1/model/info``, answering the master key
with the answer captured from lab-gateway (tests/unit/fixtures/gateway/, its source named there)
and 401 otherwise; its drain file drains lab-spark-2. Nothing listens on gw-02's port. The serving
host lab-spark is this machine too, whose Docker socket path does not exist: it is not read, so
it does not serve, while gw-01 routes to it.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "gateway", "litellm-1.106.12-model-info.json")
KEY = "sk-unit-status-gateway-Key-4d2c7a"
DRAINED = {"hosts": {"lab-spark-2": {"since": "2026-12-01T20:00:00Z", "by": "site.yml rolling swap"}}}


@pytest.fixture
def refused_port():
    """A loopback port held bound but not listening for the test: connections to it are refused,
    and no other process can take it meanwhile (a freed port can be: another test's server)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.fixture
def litellm():
    """The stand-in for LiteLLM's /v1/model/info on a loopback port (see the module docstring)."""
    with open(FIXTURE, encoding="utf-8") as handle:
        answer = json.load(handle)["answer"]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/v1/model/info" or self.headers.get("Authorization") != "Bearer " + KEY:
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_gateways_rows_routing_flags_and_a_silent_gateway(tmp_path, litellm, refused_port):
    state = tmp_path / "gw-01-state"
    state.mkdir()
    (state / "drained.json").write_text(json.dumps(DRAINED))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"inferops_become": False}, "children": {
        "serving": {"hosts": {"lab-spark": dict(local, server_profile="gb10-nvfp4-mtp-throughput",
                                                server_docker_host="unix://%s" % (tmp_path / "no-docker.sock"))}},
        "gateway": {"vars": dict(local, gateway_master_key=KEY), "hosts": {
            "gw-01": {"gateway_port": litellm, "gateway_state_dir": str(state)},
            "gw-02": {"gateway_port": refused_port, "gateway_state_dir": str(tmp_path / "gw-02-state")}}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "playbooks/status.yml",
                             "-i", str(inventory), "-v"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    out = result.stdout
    assert result.returncode != 0, out[-4000:]
    assert KEY not in out + result.stderr
    assert re.search(r'"gw-01 +\| gateway \(LiteLLM\) +\|[^"]*\| http://127\.0\.0\.1:%d/v1 +\| routes to 2 of 3 hosts"'
                     % litellm, out), out[-4000:]
    assert re.search(r'" +in routing=lab-g7e lab-spark, out of routing=lab-spark-2 \(drained since '
                     r'2026-12-01T20:00:00Z by site\.yml rolling swap\)"', out), out[-4000:]
    assert re.search(r'"gw-02 +\| gateway \(LiteLLM\) +\|[^"]*\| NOT READ: GET /v1/model/info answered nothing: ', out), \
        out[-4000:]
    assert re.search(r'"lab-spark +\| gb10-nvfp4-mtp-throughput +\|[^"]*\| NOT READ: [^"]*; IN ROUTING on gw-01 but not '
                     r'serving: the gateway sends it requests that fail over or fail"', out), out[-4000:]
    assert re.search(r"routing=in on gw-01; unknown on gw-02 \(NOT READ: ", out), out[-4000:]
    # The serving host and the silent gateway are failed; the gateway that answered is not.
    assert re.search(r"lab-spark +: .*failed=1", out) and re.search(r"gw-02 +: .*failed=1", out), out[-2000:]
    assert re.search(r"gw-01 +: .*failed=0", out), out[-2000:]
