# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's start-up as the collection reads it: every phase in order, and a start that
stalls in one phase (ENGINE_SIM_STALL_IN_PHASE) for the lab's readiness tests."""
from __future__ import annotations

import time
import urllib.error

import pytest
from engine_sim_cases import GB10_ROWS, RTX_PRO_6000_ROWS, SEED000_ENV, SEED002_ARGS, SEED002_ENV, seed000_args
from test_engine_sim_process import Sim, free_port, request, wait_ready

from ansible_collections.inferops.serving.plugins.module_utils import _startup_phases as startup_phases


def phases_seen(text, engine):
    tracker = startup_phases.StartupPhases(engine)
    seen = []
    for line in [""] + text.splitlines():
        tracker.feed(line)
        if not seen or seen[-1] != tracker.phase:
            seen.append(tracker.phase)
    return seen


def start(tmp_path, sims, engine, env):
    port = free_port()
    if engine == "vllm":
        sim = Sim(tmp_path, "vllm", seed000_args() + ["--host", "127.0.0.1", "--port", str(port)], GB10_ROWS,
                  dict(SEED000_ENV, ENGINE_SIM_VERSION="0.19.2rc1.dev134", **env))
    else:
        args = [a if a != "8000" else str(port) for a in SEED002_ARGS]
        sim = Sim(tmp_path, "sglang", args + ["--host", "127.0.0.1"], RTX_PRO_6000_ROWS,
                  dict(SEED002_ENV, ENGINE_SIM_VERSION="0.5.13", **env))
    sims.append(sim)
    return sim, port


@pytest.mark.parametrize("engine, expected", [
    # vLLM's CUDA graph capture shows as progress bars on stderr (read separately below)
    ("vllm", ["process_start", "engine_init", "weight_loading", "compile", "kv_cache", "server_start", "ready"]),
    ("sglang", ["process_start", "engine_init", "weight_loading", "kv_cache", "cuda_graphs", "server_start",
                "ready"]),
])
def test_a_whole_start_goes_through_every_phase_in_order(tmp_path, sims, engine, expected):
    sim, port = start(tmp_path, sims, engine, {})
    wait_ready(sim, port)
    time.sleep(0.3)
    assert phases_seen(sim.stdout, engine) == expected
    if engine == "vllm":
        assert phases_seen(sim.stderr, engine) == ["process_start", "cuda_graphs"]


@pytest.mark.parametrize("engine, phase, last", [
    ("vllm", "weight_loading", "Starting to load model"),
    ("vllm", "compile", "Model loading took"),
    ("vllm", "server_start", "Graph capturing finished"),
    ("sglang", "weight_loading", "Load weight begin."),
    ("sglang", "cuda_graphs", "graph begin."),
])
def test_a_start_stalls_in_the_named_phase_until_stopped(tmp_path, sims, engine, phase, last):
    sim, port = start(tmp_path, sims, engine, {"ENGINE_SIM_STALL_IN_PHASE": phase})
    time.sleep(3)
    assert sim.proc.poll() is None, sim.stdout + sim.stderr
    log = (sim.stdout + sim.stderr).strip().splitlines()
    if engine == "vllm" and phase != "cuda_graphs":
        assert last in sim.stdout.strip().splitlines()[-1]
    assert startup_phases.startup_phase(sim.stdout.splitlines(), engine)["phase"] == phase, log[-3:]
    try:
        status = request(port, "/health", timeout=1)[0]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        status = None
    assert status != 200
    size = len(sim.stdout)
    time.sleep(1.5)
    assert len(sim.stdout) == size  # nothing more: a stall, not a slow start
    begin = time.time()
    assert sim.stop() == 0 and time.time() - begin < 5
