# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 38 items 3 and 6 against the real proxy: LiteLLM at the version the gateway role pins
(scripts/gateway-env: litellm[proxy] and prisma from PyPI in .venv-gateway), started on 127.0.0.1
with the configuration, keys file and hook files the gateway plan renders (plugins/plugin_utils/
_gateway.py, roles/gateway/files), in front of the lab's engine simulator (tests/lab/engine_sim,
SGLang personality, the g7e field report's launch command) run as a local process.

What it proves: a client key works for its model and is refused 403 for another model and another
route; an unknown key and an expired key get 401; both keys of a rotation work; rpm is enforced
(429); the master key still works for the operator; the usage of each key (requests, tokens) is
written and read by the status read's decision (gateway_status.usage); a key removed from the
inventory is refused once the config and keys file are rendered again and the proxy restarted;
with the group's only host drained, a request gets 503 with Retry-After = the plan's stop
timeout + readiness cap. What it does not prove: the role's tasks and systemd unit on a gateway
host (the lab's lab-gateway does), file ownership, anything about a real SGLang.

No skip: when the venv cannot be built the test fails with pip's output.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
import simkit
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import routing_from_reads

pytestmark = [pytest.mark.litellm, pytest.mark.xdist_group("litellm")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_SIM_DIR = os.path.join(ROOT, "tests", "lab", "engine_sim")
FILES = os.path.join(ROOT, "roles", "gateway", "files")
_spec = importlib.util.spec_from_file_location("lab_doubles", os.path.join(ROOT, "tests", "unit", "lab", "engine_sim_cases.py"))
lab_doubles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_doubles)

MASTER = "sk-real-litellm-test-master-0123456789"
KEY_FP8 = "sk-team-fp8-0123456789abcdef0123456789ab"
KEY_OLD = "sk-team-a-old-0123456789abcdef0123456789"
KEY_NEW = "sk-team-a-new-0123456789abcdef0123456789"
KEY_LIMITED = "sk-limited-0123456789abcdef0123456789abc"
KEY_EXPIRED = "sk-expired-0123456789abcdef0123456789abc"
READY_TIMEOUT = 600  # the g7e host's server_ready_timeout in this inventory


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def gateway_python():
    out = subprocess.run([os.path.join(ROOT, "scripts", "gateway-env")], capture_output=True, text=True,
                         timeout=1800, check=False)
    assert out.returncode == 0, "the pinned LiteLLM could not be installed:\n" + out.stderr[-4000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """The simulator as SGLang serving the g7e plan's model on a loopback port."""
    tmp = tmp_path_factory.mktemp("engine")
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text("#!/bin/sh\ncat <<'ROWS'\n" + lab_doubles.RTX_PRO_6000_ROWS + "ROWS\n")
    (bindir / "nvidia-smi").chmod(0o755)
    port = free_port()
    argv = lab_doubles.replace_value(lab_doubles.replace_value(lab_doubles.SEED002_ARGS, "--host", "127.0.0.1"),
                                     "--port", str(port))
    env = dict(lab_doubles.SEED002_ENV, PATH=f"{bindir}:/usr/bin:/bin", LANG="C.UTF-8",
               PYTHONPATH=f"{ENGINE_SIM_DIR}:{ENGINE_SIM_DIR}/shims/python", ENGINE_SIM_STARTUP_DELAY="0",
               ENGINE_SIM_VERSION="0.5.13")
    with simkit.running(["sglang.launch_server", *argv], env, tmp / "sim.log", port, ready_timeout=60):
        yield port


def inventory(engine_port, refused_port):
    """The serving hosts' variables as the gateway play sees them: g7e-1 the simulator, spark-1 a
    host whose engine does not answer (another model group, for the 403)."""
    def plan(profile, port):
        return d.plan(profile, {"name": "inferops-serving", "port": port, "network_mode": "host", "secret_env": []})
    return {"g7e-1": {"ansible_host": "127.0.0.1", "server_deployment": plan("g7e-fp8-sglang-eagle", engine_port),
                      "server_ready_timeout": READY_TIMEOUT},
            "spark-1": {"ansible_host": "127.0.0.1", "server_deployment": plan("gb10-nvfp4-mtp-throughput", refused_port)}}


HOSTS = ["g7e-1", "spark-1"]
SETTINGS = {"aliases": {"nemotron-fp8": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"}}


class Gateway:
    """The real proxy with the plan's files in one directory, restartable."""

    def __init__(self, python, directory, hostvars):
        self.python, self.dir, self.hostvars = python, directory, hostvars
        self.port = free_port()
        self.proc = None
        self.fp8 = hostvars["g7e-1"]["server_deployment"]["served_model_name"]
        self.nvfp4 = hostvars["spark-1"]["server_deployment"]["served_model_name"]

    def render(self, client_keys):
        """What the role writes: config.yaml, client_keys.json, the two hook files, an empty drain file."""
        plan = g.gateway_plan(HOSTS, self.hostvars, SETTINGS, "127.0.0.1", self.port, master_key=MASTER,
                              client_keys=client_keys)
        assert plan["key_problems"] == []
        (self.dir / "config.yaml").write_text(yaml.safe_dump(plan["config"], sort_keys=False))
        (self.dir / "client_keys.json").write_text(
            g.gateway_client_keys_file(HOSTS, self.hostvars, SETTINGS, MASTER, client_keys))
        for name in ("inferops_auth.py", "inferops_drain.py"):
            shutil.copy(os.path.join(FILES, name), self.dir / name)
        if not (self.dir / "drained.json").exists():
            self.drain([])
        return plan

    def drain(self, hosts):
        state = {"hosts": {host: {"since": "2026-12-05T00:00:00Z", "by": "test"} for host in hosts}}
        (self.dir / "drained.json").write_text(json.dumps(state))

    def start(self):
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(self.dir), "LITELLM_MASTER_KEY": MASTER,
               "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "INFEROPS_GATEWAY_DRAIN_FILE": str(self.dir / "drained.json"),
               "INFEROPS_GATEWAY_KEYS_FILE": str(self.dir / "client_keys.json"),
               "INFEROPS_GATEWAY_USAGE_FILE": str(self.dir / "usage.json")}
        litellm = os.path.join(os.path.dirname(self.python), "litellm")
        with open(self.dir / "proxy.log", "ab") as log:
            self.proc = subprocess.Popen([litellm, "--config", str(self.dir / "config.yaml"), "--host", "127.0.0.1",
                                          "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                         cwd=str(self.dir))
        deadline = time.time() + 180
        while True:
            assert self.proc.poll() is None, (self.dir / "proxy.log").read_text()[-4000:]
            if self.request("GET", "/health/readiness")[0] == 200:
                return
            assert time.time() < deadline, "the proxy was not ready:\n" + (self.dir / "proxy.log").read_text()[-4000:]
            time.sleep(0.5)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def request(self, method, path, key=None, body=None, timeout=60):
        """``(status, headers, body text)``; status None when nothing answered."""
        headers = {"content-type": "application/json"}
        if key is not None:
            headers["Authorization"] = "Bearer " + key
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, headers=headers,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read().decode()
        except (urllib.error.URLError, OSError):
            return None, {}, ""

    def chat(self, key, model, stream=False):
        return self.request("POST", "/v1/chat/completions", key,
                            {"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8,
                             "stream": stream})


def client_keys(fp8, nvfp4, with_old=True):
    keys = [{"name": "team-fp8", "key": KEY_FP8, "models": ["nemotron-fp8"]},
            {"name": "team-a-2026-12", "client": "team-a", "key": KEY_NEW, "models": [fp8]},
            {"name": "limited", "key": KEY_LIMITED, "models": [fp8], "rpm": 2},
            {"name": "expired", "key": KEY_EXPIRED, "models": [fp8, nvfp4], "expires": "2026-01-01"}]
    if with_old:
        keys.append({"name": "team-a-2026-11", "client": "team-a", "key": KEY_OLD, "models": [fp8]})
    return keys


@pytest.fixture(scope="module")
def gateway(gateway_python, engine, tmp_path_factory):
    with socket.socket() as held:  # bound, never listening: spark-1's engine refuses connections
        held.bind(("127.0.0.1", 0))
        hostvars = inventory(engine, held.getsockname()[1])
        gw = Gateway(gateway_python, tmp_path_factory.mktemp("gateway"), hostvars)
        gw.render(client_keys(gw.fp8, gw.nvfp4))
        gw.start()
        try:
            yield gw
        finally:
            gw.stop()


def error_of(body):
    return json.loads(body)["error"]["message"]


def test_a_client_key_works_for_its_model_and_an_alias_of_it(gateway):
    status, headers, body = gateway.chat(KEY_FP8, gateway.fp8)
    assert status == 200, body
    answer = json.loads(body)
    assert answer["object"] == "chat.completion" and answer["choices"][0]["message"]["content"]
    assert gateway.chat(KEY_FP8, "nemotron-fp8")[0] == 200
    status, _headers, body = gateway.request("GET", "/v1/models", KEY_FP8)
    assert status == 200 and sorted(m["id"] for m in json.loads(body)["data"]) == sorted([gateway.fp8, "nemotron-fp8"])


def test_another_model_or_route_is_403_unknown_and_expired_keys_401(gateway):
    status, _headers, body = gateway.chat(KEY_FP8, gateway.nvfp4)
    assert status == 403 and "may not use model " + gateway.nvfp4 in error_of(body)
    status, _headers, body = gateway.request("GET", "/v1/model/info", KEY_FP8)
    assert status == 403 and "may not call /v1/model/info" in error_of(body)
    status, _headers, body = gateway.chat("sk-nobody-0123456789abcdef0123456789abcd", gateway.fp8)
    assert status == 401 and "unknown key" in error_of(body)
    assert gateway.chat(None, gateway.fp8)[0] == 401
    status, _headers, body = gateway.chat(KEY_EXPIRED, gateway.fp8)
    assert status == 401 and "expired" in error_of(body)
    for text in (body, error_of(body)):
        assert KEY_EXPIRED not in text and MASTER not in text


def test_both_keys_of_a_rotation_work(gateway):
    assert gateway.chat(KEY_OLD, gateway.fp8)[0] == 200
    assert gateway.chat(KEY_NEW, gateway.fp8, stream=True)[0] == 200


def test_rpm_is_enforced_by_litellm(gateway):
    statuses = [gateway.chat(KEY_LIMITED, gateway.fp8)[0] for _attempt in range(3)]
    assert statuses == [200, 200, 429]


def test_the_master_key_stays_the_operators(gateway):
    assert gateway.chat(MASTER, gateway.fp8)[0] == 200
    status, _headers, body = gateway.request("GET", "/v1/model/info", MASTER)
    assert status == 200 and {m["model_info"]["inferops_host"] for m in json.loads(body)["data"]} == set(HOSTS)
    status, _headers, body = gateway.request("GET", "/v1/models", MASTER)
    assert status == 200 and gateway.nvfp4 in body


def test_usage_per_key_is_readable_by_the_operator(gateway):
    deadline = time.time() + 10
    while True:
        text = (gateway.dir / "usage.json").read_text() if (gateway.dir / "usage.json").exists() else None
        usage = json.loads(text)["keys"] if text else {}
        if usage.get("team-fp8", {}).get("requests", 0) >= 2 and "team-a-2026-12" in usage:
            break
        assert time.time() < deadline, text
        time.sleep(0.5)
    read = {"status": 200, "json": json.loads(gateway.request("GET", "/v1/model/info", MASTER)[2])}
    status = routing_from_reads(read, "gw-test", "http://127.0.0.1:%d/v1" % gateway.port, None, text)
    row = status["usage"]["keys"]["team-fp8"]
    assert row["client"] == "team-fp8" and row["requests"] >= 2 and row["total_tokens"] > 0 and row["completion_tokens"] > 0
    assert status["usage"]["keys"]["team-a-2026-12"]["client"] == "team-a"
    assert "expired" not in status["usage"]["keys"]  # refused before routing: never counted
    for secret in (KEY_FP8, KEY_NEW, MASTER):
        assert secret not in text


def test_a_removed_key_is_refused_after_the_next_converge(gateway):
    gateway.render(client_keys(gateway.fp8, gateway.nvfp4, with_old=False))
    gateway.stop()
    gateway.start()
    status, _headers, body = gateway.chat(KEY_OLD, gateway.fp8)
    assert status == 401 and "unknown key" in error_of(body)
    assert gateway.chat(KEY_NEW, gateway.fp8)[0] == 200


def test_a_group_with_no_host_in_routing_answers_503_with_retry_after(gateway):
    expected = (gateway.hostvars["g7e-1"]["server_deployment"]["spec"].get("stop_timeout") or 10) + READY_TIMEOUT
    gateway.drain(["g7e-1"])
    try:
        for stream in (False, True):
            status, headers, body = gateway.chat(KEY_FP8, gateway.fp8, stream=stream)
            assert status == 503, body
            assert {k.lower(): v for k, v in headers.items()}.get("retry-after") == str(expected)
            assert "has no host in the gateway's routing: g7e-1 drained" in error_of(body)
    finally:
        gateway.drain([])
    assert gateway.chat(KEY_FP8, gateway.fp8)[0] == 200
