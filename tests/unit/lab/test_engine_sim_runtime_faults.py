# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's runtime faults (wedge, crash, slow decode after N requests) as a process, and
the watchdog program's probe against them: the watchdog's own HTTP code meets the symptoms the
lab tests rely on. No Docker: the container's state is given (the watchdog's Host.inspect)."""
from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error

import pytest
from ansible_collections.inferops.serving.tests.unit.watchdog.watchdog_program import base_config
from engine_sim_cases import (GB10_ROWS, RTX_PRO_6000_ROWS, SEED000_ENV, SEED000_MODEL, SEED002_ARGS, SEED002_ENV,
                              replace_value, seed000_args)
from test_engine_sim_process import Sim, chat, free_port, request, wait_ready

SGLANG_MODEL = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"


def test_runtime_fault_from_the_environment():
    from engine_sim.serving import RuntimeFault, runtime_fault
    assert runtime_fault({"ENGINE_SIM_FAULT": "wedge_after_requests", "ENGINE_SIM_FAULT_AFTER_REQUESTS": "3"}) \
        == RuntimeFault("wedge_after_requests", 3, 5.0)
    assert runtime_fault({"ENGINE_SIM_FAULT": "slow_decode", "ENGINE_SIM_SLOW_FACTOR": "10"}) \
        == RuntimeFault("slow_decode", 20, 10.0)
    assert runtime_fault({"ENGINE_SIM_FAULT": "wrong_answer", "ENGINE_SIM_FAULT_AFTER_REQUESTS": "0"}) \
        == RuntimeFault("wrong_answer", 0, 5.0)
    assert runtime_fault({"ENGINE_SIM_FAULT": "illegal_memory_access_on_first_spec"}) is None
    assert runtime_fault({}) is None


def vllm_sim(tmp_path, sims, fault, after, spec=True, **env):
    port = free_port()
    argv = seed000_args(**({} if spec else {"spec": None})) + ["--host", "127.0.0.1", "--port", str(port)]
    sim = Sim(tmp_path, "vllm", argv, GB10_ROWS, dict(SEED000_ENV, ENGINE_SIM_FAULT=fault,
                                                      ENGINE_SIM_FAULT_AFTER_REQUESTS=str(after), **env))
    sims.append(sim)
    wait_ready(sim, port)
    return sim, port


def hang(port):
    """A client whose request the wedged engine never answers."""
    try:
        chat(port, SEED000_MODEL, "Hello")
    except (urllib.error.URLError, OSError):
        pass


def metric(port, name):
    text = request(port, "/metrics")[1]
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


@pytest.fixture
def watchdog_probe(wd_program):
    """``probe(port, **config) -> verdict``: the watchdog's observe + classify against an engine on
    ``port``, its container reported running for an hour (no Docker here)."""
    def probe(port, records=(), **changes):
        base = "http://127.0.0.1:%d" % port
        config = base_config(served_model_name=SEED000_MODEL, unified_memory=False, slow_floor=None,
                             urls={"chat": base + "/v1/chat/completions", "health": base + "/health",
                                   "metrics": base + "/metrics"},
                             interval=5, probe_deadline=2, state_file="/nonexistent/state.json")
        config.update(changes)
        config = wd_program.load_config(config)

        class Host(wd_program.Host):
            def inspect(self):
                return {"exists": True, "running": True, "started_at": time.time() - 3600, "restart_count": 0}

        sample, seen = wd_program.observe(Host(config), config)
        return wd_program.classify(list(records), sample, config), sample, seen
    return probe


@pytest.fixture(scope="module")
def wd_program():
    from ansible_collections.inferops.serving.tests.unit.watchdog.watchdog_program import load_program
    return load_program()


def test_vllm_wedge_after_requests(tmp_path, sims, watchdog_probe):
    sim, port = vllm_sim(tmp_path, sims, "wedge_after_requests", 2)
    verdict, dummy, dummy2 = watchdog_probe(port)
    assert verdict["outcome"] == "healthy"  # the watchdog's probe is request 1
    assert chat(port, SEED000_MODEL, "What is 2+2?")[0] == 200  # request 2
    tokens = metric(port, "vllm:generation_tokens_total")
    # Request 3 wedges the engine: it never answers.
    threading.Thread(target=hang, args=(port,), daemon=True).start()
    time.sleep(0.3)
    assert request(port, "/health")[0] == 200
    assert metric(port, "vllm:num_requests_running") >= 1
    verdict, sample, seen = watchdog_probe(port)
    assert verdict["outcome"] == "wedged", verdict
    assert sample["probe"]["timed_out"] and sample["probe"]["latency_s"] >= 2
    assert seen["vllm:generation_tokens_total"] == tokens and seen["vllm:num_requests_running"] >= 2
    assert metric(port, "vllm:generation_tokens_total") == tokens
    assert sim.stop() == 0  # a stop still ends the wedged engine (what the watchdog's restart does)


def test_vllm_crash_after_requests_prints_50934s_record(tmp_path, sims, watchdog_probe):
    sim, port = vllm_sim(tmp_path, sims, "crash_after_requests", 1)
    assert chat(port, SEED000_MODEL, "What is 2+2?")[0] == 200
    verdict, sample, dummy = watchdog_probe(port)
    assert verdict["outcome"] == "dead" and sample["probe"]["status"] == 500
    assert "EngineCore encountered an issue" in verdict["reason"]
    assert sim.wait_exit() == 1
    out = sim.stdout
    for line in ("[dump_input.py:79] Dumping scheduler output for model execution: SchedulerOutput(",
                 "EngineCore encountered a fatal error.", "torch.AcceleratorError: CUDA error: misaligned address",
                 "Search for `cudaErrorMisalignedAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/",
                 "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
                 "Engine is dead. Shutting down the server."):
        assert line in out, line


def test_vllm_slow_decode_after_requests(tmp_path, sims, watchdog_probe):
    sim, port = vllm_sim(tmp_path, sims, "slow_decode", 2, spec=False, ENGINE_SIM_TOKEN_LATENCY="0.01")

    def timed():
        started = time.monotonic()
        body = {"model": SEED000_MODEL, "prompt": "Once upon a time", "max_tokens": 30}
        assert request(port, "/v1/completions", body)[0] == 200
        return time.monotonic() - started

    fast = min(timed(), timed())
    slow = timed()
    assert 3.5 < slow / fast < 7, (fast, slow)
    sim.stop()


def test_sglang_crash_after_requests_kills_the_tree(tmp_path, sims):
    port = free_port()
    argv = replace_value(replace_value(SEED002_ARGS, "--host", "127.0.0.1"), "--port", str(port))
    sim = Sim(tmp_path, "sglang", argv, RTX_PRO_6000_ROWS,
              dict(SEED002_ENV, ENGINE_SIM_FAULT="crash_after_requests", ENGINE_SIM_FAULT_AFTER_REQUESTS="1"))
    sims.append(sim)
    wait_ready(sim, port)
    assert chat(port, SGLANG_MODEL, "What is 2+2?")[0] == 200
    try:
        chat(port, SGLANG_MODEL, "What is 3+3?")
    except (urllib.error.URLError, ConnectionError):
        pass  # the server went down with the tree
    assert sim.wait_exit() in (-signal.SIGKILL, 128 + signal.SIGKILL)
    out = sim.stdout
    assert "Scheduler hit an exception: Traceback (most recent call last):" in out
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in out
    assert "Received sigquit from a child process. It usually means the child failed." in out


def test_sglang_wedge_keeps_health_and_freezes_tokens(tmp_path, sims, watchdog_probe):
    port = free_port()
    argv = replace_value(replace_value(SEED002_ARGS, "--host", "127.0.0.1"), "--port", str(port))
    sim = Sim(tmp_path, "sglang", argv, RTX_PRO_6000_ROWS,
              dict(SEED002_ENV, ENGINE_SIM_FAULT="wedge_after_requests", ENGINE_SIM_FAULT_AFTER_REQUESTS="0"))
    sims.append(sim)
    wait_ready(sim, port)
    config = {"engine": "sglang", "served_model_name": SGLANG_MODEL,
              "metrics": {"running": "sglang:num_running_reqs", "generation_tokens": "sglang:generation_tokens_total",
                          "tokens_counted": "finish"}}
    first, dummy, seen = watchdog_probe(port, **config)
    assert first["outcome"] == "suspect" and seen["sglang:num_running_reqs"] >= 1
    records = [{"t": time.time(), "outcome": "suspect", "points": [], "container": {"exists": True}}]
    second, dummy, dummy2 = watchdog_probe(port, records, **config)
    assert second["outcome"] == "wedged"
    assert request(port, "/health")[0] == 200
    assert sim.stop() == 0


def test_wrong_answer_makes_every_number_one_more():
    from engine_sim.serving import wrong_answer
    assert wrong_answer("4") == "5"
    assert wrong_answer("-1 and 2.5, then 10") == "0 and 3.5, then 11"
    assert wrong_answer("The model serves tokens.") == "The model serves tokens."


def test_vllm_wrong_answer_after_requests_answers_fast_and_wrong(tmp_path, sims, watchdog_probe):
    sim, port = vllm_sim(tmp_path, sims, "wrong_answer", 1, spec=False, ENGINE_SIM_TOKEN_LATENCY="0.001")
    first = json.loads(chat(port, SEED000_MODEL, "What is 2+2? Answer with just the number.")[1])
    assert first["choices"][0]["message"]["content"] == "4"
    status, body = chat(port, SEED000_MODEL, "What is 2+2? Answer with just the number.")
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "5"
    body = {"model": SEED000_MODEL, "prompt": "3*7=", "max_tokens": 4, "temperature": 0}
    assert json.loads(request(port, "/v1/completions", body)[1])["choices"][0]["text"] == "22"
    # Every health signal the watchdog reads is fine: only a correctness check sees it.
    verdict, dummy, dummy2 = watchdog_probe(port)
    assert verdict["outcome"] == "healthy", verdict
    assert request(port, "/health")[0] == 200
    assert sim.stop() == 0
