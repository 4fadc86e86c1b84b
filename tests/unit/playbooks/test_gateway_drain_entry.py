# SPDX-License-Identifier: GPL-3.0-or-later
"""The routing role's outage, drain and undrain entry points (internal: the server and gateway
roles include them), run by ansible-playbook on this machine (a serving host and a gateway host, both local connections, the gateway's state in a
temporary directory), against two HTTP test doubles on loopback:

* LiteLLM's ``/health`` (stands for the proxy with ``background_health_checks``: its last
  results, ``unhealthy_endpoints`` keyed by ``model_id``, litellm/proxy/health_check.py 1.106);
* the engine's ``/metrics`` (stands for vLLM's, the ``vllm:num_requests_running`` and
  ``vllm:num_requests_waiting`` gauges of vllm/v1/metrics/loggers.py).
"""
from __future__ import annotations

import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
KEY = "sk-unit-drain-master-key-0123"


class Doubles:
    """What the two doubles answer; changed by the test while they serve."""

    def __init__(self):
        self.unhealthy = []
        self.running = 0
        self.seen_keys = []


def serve(doubles):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            kind = "text/plain; version=0.0.4"
            if self.path == "/health":
                kind = "application/json"
                self.server.doubles.seen_keys.append(self.headers.get("authorization"))
                body = json.dumps({"healthy_endpoints": [], "unhealthy_endpoints": [
                    {"model": "hosted_vllm/" + MODEL, "model_id": host} for host in self.server.doubles.unhealthy]})
            else:
                body = ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} %d.0\n"
                        "vllm:num_requests_waiting{engine=\"0\"} 0.0\n" % self.server.doubles.running)
            data = body.encode()
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.doubles = doubles
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def gateway(tmp_path):
    doubles = Doubles()
    server = serve(doubles)
    port = server.server_address[1]
    state = tmp_path / "gateway-state"
    state.mkdir()
    (state / "routing.json").write_text(json.dumps({"groups": {MODEL: ["spark-1", "spark-2"], "other": ["g7e-1"]}}))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {
        "serving": {"hosts": {"spark-1": dict(local), "g7e-1": dict(local)}},
        "gateway": {"hosts": {"gw-01": dict(local, gateway_state_dir=str(state), gateway_port=port,
                                            gateway_master_key=KEY)}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    deployment = {"urls": {"metrics": "http://127.0.0.1:%d/metrics" % port},
                  "metrics": {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting"}}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "{{ target }}", "gather_facts": False, "vars": {"server_deployment": deployment},
        "tasks": [{"name": "Entry point", "ansible.builtin.include_role": {
            "name": "inferops.serving.routing", "tasks_from": "{{ entry }}"}}]}]))

    def run(host, entry, *extra):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        result = subprocess.run([playbook, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                                 "-e", "target=%s" % host, "-e", "entry=%s" % entry, "-e", "gateway_drain_timeout=4",
                                 *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)
        return result.returncode, " ".join((result.stdout + result.stderr).split())

    def drained():
        path = state / "drained.json"
        return json.loads(path.read_text())["hosts"] if path.exists() else {}

    yield run, drained, doubles
    server.shutdown()


def test_drain_marks_the_host_and_undrain_puts_it_back(gateway):
    run, drained, doubles = gateway
    code, output = run("spark-1", "drain", "-e", json.dumps({"routing_by": "site.yml swap"}))
    assert code == 0, output
    assert drained()["spark-1"]["by"] == "site.yml swap"
    assert doubles.seen_keys == ["Bearer " + KEY]  # the gateway's own key, read from its host's variables
    assert KEY not in output
    code, output = run("spark-1", "undrain")
    assert code == 0 and drained() == {}, output


def test_a_groups_only_host_is_refused_before_anything_changes(gateway):
    run, drained, _doubles = gateway
    code, output = run("g7e-1", "outage", "-e", "routing_expected_seconds=1830")
    assert code != 0
    assert "model group other has no other host in routing than g7e-1" in output and "up to 1830 s" in output
    assert drained() == {}
    code, output = run("g7e-1", "drain", "-e", "gateway_allow_outage=true")
    assert code == 0 and "g7e-1" in drained(), output


def test_no_drain_while_the_gateway_sees_the_other_host_unhealthy(gateway):
    run, drained, doubles = gateway
    doubles.unhealthy = ["spark-2"]
    code, output = run("spark-1", "drain")
    assert code != 0
    assert ("spark-1: after 4 s the gateway gw-01 still sees no other healthy host in routing for %s" % MODEL) in output
    assert drained() == {} and KEY not in output


def test_requests_still_in_flight_fail_naming_host_count_and_seconds(gateway):
    run, drained, doubles = gateway
    doubles.running = 3
    code, output = run("spark-1", "drain")
    assert code != 0
    assert ("spark-1: 3 request(s) still running or queued after 4 s of draining (vllm:num_requests_running + "
            "vllm:num_requests_waiting on http://127.0.0.1:") in output
    assert "The engine was not stopped" in output
    assert "spark-1" in drained()  # out of routing until it is proven again


def test_check_mode_drains_nothing(gateway):
    run, drained, _doubles = gateway
    code, output = run("spark-1", "undrain", "--check")
    assert code == 0, output
    code, output = run("spark-1", "outage", "--check")
    assert code == 0 and drained() == {}, output
