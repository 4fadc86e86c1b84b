# SPDX-License-Identifier: GPL-3.0-or-later
"""gateway_drain: the drain state file on a real temporary gateway state directory."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from ansible_collections.inferops.serving.plugins.modules import gateway_drain

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def configured(tmp_path, groups=None):
    default = {MODEL: ["spark-1", "spark-2"], "sglang-m": ["g7e-1"]}
    (tmp_path / "routing.json").write_text(json.dumps({"groups": groups or default}))
    return str(tmp_path)


def drained(tmp_path):
    return json.loads((tmp_path / "drained.json").read_text())["hosts"]


def test_drains_once_then_changes_nothing_and_puts_back(run_module, tmp_path):
    args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "by": "site.yml swap"}
    failed, result = run_module(gateway_drain, args, diff=True)
    assert not failed and result["changed"], result
    entry = drained(tmp_path)["spark-1"]
    assert entry["by"] == "site.yml swap" and entry["since"].endswith("Z")
    assert stat.S_IMODE(os.stat(tmp_path / "drained.json").st_mode) == 0o644
    assert result["diff"]["before"] == "" and "spark-1" in result["diff"]["after"]
    failed, result = run_module(gateway_drain, args)
    assert not failed and not result["changed"] and drained(tmp_path)["spark-1"] == entry
    assert result["previously_drained"] == {"spark-1": entry}
    failed, result = run_module(gateway_drain, dict(args, state="routed"))
    assert not failed and result["changed"] and drained(tmp_path) == {}
    failed, result = run_module(gateway_drain, dict(args, state="routed"))
    assert not failed and not result["changed"]


def test_the_last_host_of_a_group_is_refused_and_nothing_is_written(run_module, tmp_path):
    state_dir = configured(tmp_path)
    run_module(gateway_drain, {"hosts": ["spark-2"], "state_dir": state_dir})
    before = (tmp_path / "drained.json").read_text()
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "expected_seconds": 90})
    assert failed
    assert "model group %s has no other host in routing than spark-1" % MODEL in result["msg"]
    assert "expected up to 90 s" in result["msg"]
    assert (tmp_path / "drained.json").read_text() == before
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "allow_outage": True})
    assert not failed and set(drained(tmp_path)) == {"spark-1", "spark-2"}
    assert result["outages"] == [{"group": MODEL, "hosts": ["spark-1"]}]


def test_check_mode_asks_the_question_and_writes_nothing(run_module, tmp_path):
    state_dir = configured(tmp_path)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir}, check_mode=True)
    assert not failed and result["changed"] and not (tmp_path / "drained.json").exists()
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1", "spark-2"], "state_dir": state_dir},
                                check_mode=True)
    assert failed and result["outages"] == [{"group": MODEL, "hosts": ["spark-1", "spark-2"]}]
    assert not (tmp_path / "drained.json").exists()


def test_a_gateway_not_configured_yet_has_nothing_to_drain(run_module, tmp_path):
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": str(tmp_path)})
    assert not failed and not result["changed"] and "not configured yet" in result["msg"]
    assert not (tmp_path / "drained.json").exists()


def test_a_corrupt_state_file_fails_naming_it(run_module, tmp_path):
    state_dir = configured(tmp_path)
    (tmp_path / "drained.json").write_text("{half")
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and result["msg"].startswith(str(tmp_path / "drained.json") + ": not JSON")


def test_parallel_drains_are_all_recorded(tmp_path):
    """Two serving hosts of one batch drain at the same time (forks): the lock keeps both."""
    state_dir = configured(tmp_path, {"m%d" % i: ["h%d" % i, "x%d" % i] for i in range(8)})
    # ansible-core >= 2.19 has patch_module_args; 2.18 (the lowest the collection claims) reads
    # basic._ANSIBLE_ARGS
    code = ("import contextlib,json,sys\nfrom ansible.module_utils import basic\n"
            "try:\n    from ansible.module_utils.testing import patch_module_args\n"
            "except ImportError:\n    @contextlib.contextmanager\n    def patch_module_args(args):\n"
            "        basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()\n        yield\n"
            "from ansible_collections.inferops.serving.plugins.modules import gateway_drain\n"
            "with patch_module_args(json.loads(sys.argv[1])):\n    gateway_drain.main()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-c", code, json.dumps({"hosts": ["h%d" % i], "state_dir": state_dir})],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for i in range(8)]
    for proc in procs:
        proc.communicate(timeout=60)
    assert set(drained(tmp_path)) == {"h%d" % i for i in range(8)}


class Health:
    """A stand-in for LiteLLM's /health on loopback: the deployment ids it lists unhealthy, the keys it was sent."""

    def __init__(self, unhealthy=(), status=200):
        import http.server
        import threading

        self.unhealthy, self.status, self.keys = list(unhealthy), status, []
        health = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                health.keys.append(self.headers.get("authorization"))
                body = json.dumps({"healthy_endpoints": [], "unhealthy_endpoints": [
                    {"model": "hosted_vllm/" + MODEL, "model_id": host} for host in health.unhealthy]}).encode()
                self.send_response(health.status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/health" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()


def test_the_health_wait_sends_the_key_and_passes_when_another_host_is_healthy(run_module, tmp_path):
    health = Health()
    try:
        args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": health.url,
                "master_key": "sk-unit-drain-key-0123", "health_timeout": 4}
        failed, result = run_module(gateway_drain, args, check_mode=True)
    finally:
        health.close()
    assert not failed and result["waiting"] == [] and result["health_answered"] is True, result
    assert health.keys == ["Bearer sk-unit-drain-key-0123"]
    assert "sk-unit-drain-key-0123" not in json.dumps(result)
    assert not (tmp_path / "drained.json").exists()


def test_the_health_wait_names_the_groups_still_without_another_healthy_host(run_module, tmp_path):
    health = Health(unhealthy=["spark-2"])
    try:
        args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": health.url,
                "master_key": "sk-unit-drain-key-0123", "health_timeout": 1}
        failed, result = run_module(gateway_drain, args)
    finally:
        health.close()
    # Not failed: the task says why (the routing role names the host, the gateway and the seconds).
    assert not failed and result["waiting"] == [MODEL] and not result["changed"], result
    assert len(health.keys) >= 2  # read again until the time ran out
    assert not (tmp_path / "drained.json").exists()


def test_no_health_wait_for_a_host_out_of_routing_already_an_allowed_outage_or_an_outage(run_module, tmp_path):
    state_dir = configured(tmp_path)
    nowhere = "http://127.0.0.1:9/health"  # nothing answers: a read would say so
    run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "health_url": nowhere},
                                check_mode=True)
    assert not failed and result["health_answered"] is None and result["waiting"] == []
    failed, result = run_module(gateway_drain, {"hosts": ["g7e-1"], "state_dir": state_dir, "health_url": nowhere,
                                                "allow_outage": True}, check_mode=True)
    assert not failed and result["health_answered"] is None
    failed, result = run_module(gateway_drain, {"hosts": ["g7e-1"], "state_dir": state_dir, "health_url": nowhere},
                                check_mode=True)
    assert failed and "model group sglang-m has no other host in routing than g7e-1" in result["msg"]


def test_a_health_url_that_answers_nothing_is_reported_not_read(run_module, tmp_path):
    args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": "http://127.0.0.1:9/health",
            "master_key": "sk-unit-drain-key-0123", "health_timeout": 0}
    failed, result = run_module(gateway_drain, args, check_mode=True)
    assert not failed and result["health_answered"] is False and result["waiting"] == []
