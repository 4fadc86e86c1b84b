# SPDX-License-Identifier: GPL-3.0-or-later
"""The server role's proof (tasks/verify.yml) refuses what it exists to refuse, run by
ansible-playbook on this machine against:

* the engine simulator (tests/lab/engine_sim) started on loopback with the the GB10 field report command line,
  right, or with its ``wrong_answer`` fault (every number one more: "2+2" answered "5");
* the Docker Engine API double (docker_engine_double.py) serving the container ``engine`` and its
  log, a real vLLM 0.19 start on GB10 (tests/unit/fixtures/logs/vllm-0.19-gb10-nvfp4-mtp-ok.log:
  MARLIN/TRITON_ATTN/MTP, max_num_seqs 4).

The plan is the role's own (its resolve entry point); the host read as the role reads it
(inferops.serving.deployment_state, registered as the role's converge registers it) then the
role's verify entry point: backends from the log, warm-up, smoke test. A right engine whose log
matches passes; a wrong answer fails the host with the smoke test's message; a log whose
backends differ from the plan fails it naming the mismatch, before any request.
"""
from __future__ import annotations

import os
import sys

import pytest
from docker_engine_double import DockerEngine, container, serve
from role_runs import ROOT, run, server_host

LAB = os.path.join(ROOT, "tests", "unit", "lab")
if LAB not in sys.path:
    sys.path.insert(0, LAB)
from engine_sim_cases import GB10_ROWS, SEED000_ENV, seed000_args  # noqa: E402
from test_engine_sim_process import Sim, free_port, wait_ready  # noqa: E402

LOG = os.path.join(ROOT, "tests", "unit", "fixtures", "logs", "vllm-0.19-gb10-nvfp4-mtp-ok.log")


def engine(tmp_path_factory, fault=None):
    port = free_port()
    env = dict(SEED000_ENV, ENGINE_SIM_TOKEN_LATENCY="0.001")
    if fault:
        env.update(ENGINE_SIM_FAULT=fault, ENGINE_SIM_FAULT_AFTER_REQUESTS="0")
    sim = Sim(tmp_path_factory.mktemp("sim"), "vllm", seed000_args() + ["--host", "127.0.0.1", "--port", str(port)],
              GB10_ROWS, env)
    try:
        wait_ready(sim, port)
    except AssertionError:
        sim.proc.kill()
        raise
    return sim, port


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """{"right": port, "wrong": port}: two simulators, one of them with the wrong_answer fault."""
    started = {"right": engine(tmp_path_factory), "wrong": engine(tmp_path_factory, "wrong_answer")}
    yield {name: pair[1] for name, pair in started.items()}
    for pair in started.values():
        sim = pair[0]
        if sim.proc.poll() is None:
            sim.proc.kill()
            sim.proc.wait()


def verify(tmp_path, port, profile):
    """The role's plan of ``profile`` for the engine on ``port``, then its verify entry point."""
    with open(LOG, encoding="utf-8") as handle:
        log = handle.read().splitlines()
    # A container of an earlier deployment (no plan label): this converge started the engine.
    docker = DockerEngine({"engine": container("vllm/vllm-openai:earlier")}, {"engine": log})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    state_dir = tmp_path / "state"
    host = server_host(tmp_path, docker_host, profile, server_port=port, server_ready_wait_chunk=5,
                       server_profile_overrides={"args": {"host": "127.0.0.1"}})
    plays = [{"name": "Prove the server", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "Plan", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "resolve"}},
        {"name": "Read the host as the role's converge does", "inferops.serving.deployment_state": {
            "path": str(state_dir / "engine.json"), "container": "engine", "docker_host": docker_host},
         "register": "__server_current"},
        {"name": "Prove", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "verify"}},
        {"name": "Show the summary", "ansible.builtin.debug": {"var": "server_summary"}}]}]
    try:
        return run(tmp_path, {"serving": {"hosts": {"spark-1": host}}}, plays)
    finally:
        stop()


def test_a_right_engine_whose_log_matches_the_plan_is_proven(tmp_path, engines):
    result = verify(tmp_path, engines["right"], "gb10-nvfp4-mtp-latency")
    assert result.code == 0, result.output[-4000:]
    assert '"smoke_answer": "4"' in result.output and '"state": "serving"' in result.output, result.output[-3000:]


def test_a_wrong_smoke_answer_fails_the_host(tmp_path, engines):
    result = verify(tmp_path, engines["wrong"], "gb10-nvfp4-mtp-latency")
    assert result.code != 0, result.output[-4000:]
    assert ('spark-1 answered "What is 2+2? Answer with just the number." with "5"' in result.output
            and 'which does not contain "4"' in result.output), result.output[-4000:]
    assert '"smoke_answer"' not in result.output


def test_backends_that_differ_from_the_plan_fail_the_host_before_any_request(tmp_path, engines):
    # The throughput profile plans max_num_seqs 32; the log's engine runs with 4.
    result = verify(tmp_path, engines["right"], "gb10-nvfp4-mtp-throughput")
    assert result.code != 0, result.output[-4000:]
    assert "max_num_seqs: expected 32, observed 4, proven by log line" in result.output, result.output[-4000:]
    assert not [r for r in result.records if r["action"] == "ansible.builtin.uri"], result.records
