# SPDX-License-Identifier: GPL-3.0-or-later
"""gateway_info against a stand-in for LiteLLM 1.106.12's proxy on a loopback port.

The stand-in serves what the real proxy answered on lab-gateway (tests/unit/fixtures/gateway/,
each file naming its source): ``/health/readiness`` (``{"status": "healthy", "db": "Not
connected"}``, a proxy without a database), ``GET /v1/models`` and ``GET /v1/model/info`` with
the master key, LiteLLM's 401 answer without a key and its 400 "No connected db." to another key
(or, for the open-proxy case, the list to anyone). A proxy still starting does not listen yet, as LiteLLM's uvicorn binds its port only once
the app has loaded: the stand-in binds its port a moment after the module starts.
"""
from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import time

import pytest

from ansible_collections.inferops.serving.plugins.modules import gateway_info

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures", "gateway")
KEY = "sk-unit-gateway-read-Key-7f3e1b"
NVFP4, FP8 = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)["answer"]


class Proxy:
    """The stand-in's settings and the requests it got."""

    def __init__(self):
        self.open_to_all, self.requests, self.url = False, [], None


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def proxy():
    """The stand-in, listening on a free loopback port ``bind_after`` s after the test calls ``start()``."""
    state = Proxy()
    answers = {"/v1/models": fixture("litellm-1.106.12-models.json"),
               "/v1/model/info": fixture("litellm-1.106.12-model-info.json")}
    unauthorized = fixture("litellm-1.106.12-401.json")
    wrong_key = fixture("litellm-1.106.12-wrong-key.json")

    class Handler(http.server.BaseHTTPRequestHandler):
        def send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            state.requests.append((self.path, self.headers.get("Authorization")))
            if self.path == "/health/readiness":
                self.send(200, {"status": "healthy", "db": "Not connected"})
            elif self.path in answers and (state.open_to_all or self.headers.get("Authorization") == "Bearer " + KEY):
                self.send(200, answers[self.path])
            elif self.path in answers and self.headers.get("Authorization"):
                self.send(400, wrong_key)
            else:
                self.send(401, unauthorized)

        def log_message(self, *args):
            pass

    port = free_port()
    state.url = "http://127.0.0.1:%d" % port
    servers = []

    def serve():
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        servers.append(server)
        server.serve_forever()

    def start(bind_after=0.0):
        timer = threading.Timer(bind_after, serve)
        timer.daemon = True
        timer.start()
        if not bind_after:
            while not servers:
                time.sleep(0.01)

    state.start = start
    yield state
    for server in servers:
        server.shutdown()
        server.server_close()


def args(proxy_url, tmp_path, **extra):
    return dict({"url": proxy_url, "master_key": KEY, "drain_file": str(tmp_path / "drained.json")}, **extra)


def test_a_proven_proxy_returns_its_groups_deployments_and_drain_file_never_a_key(run_module, proxy, tmp_path):
    proxy.start()
    (tmp_path / "drained.json").write_text('{"hosts": {}}')
    failed, result = run_module(gateway_info, args(proxy.url, tmp_path, prove=True, expect=[NVFP4, FP8]))
    assert not failed and result["ready"] and not result["changed"], result
    assert result["listed"] == [NVFP4, FP8]
    assert result["msg"] == "%s/v1 serves %s, %s" % (proxy.url, NVFP4, FP8)
    assert [d["model_info"]["inferops_host"] for d in result["model_info"]["json"]["data"]] == ["lab-spark", "lab-spark-2", "lab-g7e"]
    assert result["drained"] == '{"hosts": {}}'
    assert KEY not in json.dumps(result) and "litellm_params" not in json.dumps(result)
    # the refusal was asked without any key
    assert ("/v1/models", None) in proxy.requests and ("/v1/models", "Bearer " + KEY) in proxy.requests


def test_a_proxy_still_starting_is_not_ready_yet_and_not_a_failure(run_module, proxy, tmp_path):
    failed, result = run_module(gateway_info, args(proxy.url, tmp_path, prove=True, expect=[NVFP4], wait=1))
    assert not failed and result["ready"] is False and result["model_info"] == {}
    assert result["msg"].startswith("The gateway on %s did not answer /health/readiness with 200 within 1 s "
                                    "(last: ConnectionRefusedError: [Errno 111] Connection refused); "
                                    "see journalctl -u inferops-gateway." % proxy.url), result["msg"]


def test_a_proxy_that_binds_its_port_within_the_wait_is_proven(run_module, proxy, tmp_path):
    proxy.start(bind_after=1.0)
    failed, result = run_module(gateway_info, args(proxy.url, tmp_path, prove=True, expect=[NVFP4], wait=8))
    assert not failed and result["ready"] and result["listed"] == [NVFP4, FP8], result
    assert [path for path, _key in proxy.requests].count("/health/readiness") == 1


def test_a_group_not_listed_fails_naming_it(run_module, proxy, tmp_path):
    proxy.start()
    failed, result = run_module(gateway_info, args(proxy.url, tmp_path, prove=True, expect=[NVFP4, "nemotron"],
                                                   service="gw-unit"))
    assert failed
    assert result["msg"] == "The gateway on %s does not list nemotron (it lists %s, %s); see journalctl -u gw-unit." % (
        proxy.url, NVFP4, FP8)


def test_a_proxy_open_to_anyone_fails(run_module, proxy, tmp_path):
    proxy.start()
    proxy.open_to_all = True
    failed, result = run_module(gateway_info, args(proxy.url, tmp_path, prove=True, expect=[NVFP4]))
    assert failed and "without a key answered 200, not 401" in result["msg"]


def test_a_wrong_master_key_fails_the_proof_and_is_not_read_for_the_status(run_module, proxy, tmp_path):
    proxy.start()
    failed, result = run_module(gateway_info, dict(args(proxy.url, tmp_path, prove=True, expect=[NVFP4]),
                                                   master_key="sk-wrong"))
    assert failed and ("answered 400 (No connected db.), not 200: the proxy does not take the key it was "
                       "converged with") in result["msg"]
    failed, result = run_module(gateway_info, dict(args(proxy.url, tmp_path), master_key="sk-wrong"))
    assert not failed and result["model_info"] == {"status": 400, "msg": "HTTP Error 400: No connected db."}


def test_the_status_read_of_a_proxy_that_does_not_answer_is_no_failure(run_module, tmp_path):
    # A port held bound but not listening: refused, and no other test's server can take it meanwhile.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        failed, result = run_module(gateway_info, args("http://127.0.0.1:%d" % held.getsockname()[1], tmp_path),
                                    check_mode=True)
    assert not failed and result["ready"] and result["model_info"]["status"] == -1
    assert "ConnectionRefusedError" in result["model_info"]["msg"] and result["drained"] is None


@pytest.mark.parametrize("bad, message", [
    ({"url": "https://127.0.0.1:4000"}, "url: 'https://127.0.0.1:4000' is not an http:// URL"),
    ({"wait": 0}, "wait: 0 is not a number of seconds; give 1 or more"),
    ({"timeout": -1}, "timeout: -1 is not a number of seconds; give 1 or more"),
])
def test_bad_arguments_are_refused_before_any_request(run_module, proxy, tmp_path, bad, message):
    proxy.start()
    failed, result = run_module(gateway_info, dict(args(proxy.url, tmp_path, prove=True), **bad))
    assert failed and result["msg"].startswith(message) and proxy.requests == []
