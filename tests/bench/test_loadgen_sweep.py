# SPDX-License-Identifier: GPL-3.0-or-later
"""A real load sweep, end to end on this machine: scripts/loadgen-env (AIPerf in .venv-loadgen, created
once, then reused), the lab's engine simulator as a local process on 127.0.0.1 (the GB10 field report's latency
profile: vLLM personality, MTP k=2), scripts/run-loadgen sweep over two concurrency levels, then the plot.

Not the shared lab: no Docker, a port in 8280-8289. Short levels by default (2 levels x 1 run x 5 s:
about 1 minute here, 2 min 20 s with 3 runs, plus 3-5 minutes the first time for the venv); `make bench`
runs longer ones through INFEROPS_BENCH_LEVELS / INFEROPS_BENCH_RUNS / INFEROPS_BENCH_SECONDS.
"""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest
import simkit

pytestmark = pytest.mark.bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_SIM_DIR = os.path.join(ROOT, "tests", "lab", "engine_sim")
_spec = importlib.util.spec_from_file_location("lab_doubles", os.path.join(ROOT, "tests", "unit", "lab", "engine_sim_cases.py"))
lab_doubles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_doubles)

LEVELS = os.environ.get("INFEROPS_BENCH_LEVELS", "1,4")
RUNS = os.environ.get("INFEROPS_BENCH_RUNS", "1")
SECONDS = os.environ.get("INFEROPS_BENCH_SECONDS", "5")
KEYS = {"concurrency", "output_tok_s", "ttft_p50_s", "ttft_p99_s", "itl_p50_ms", "itl_p99_ms", "requests_per_s",
        "requests", "errors", "kv_cache_usage", "acceptance_per_pos"}


@pytest.fixture(scope="module")
def loadgen_python():
    started = time.time()
    out = subprocess.run([os.path.join(ROOT, "scripts", "loadgen-env")], capture_output=True, text=True,
                         timeout=1800, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    sys.stderr.write("loadgen-env: %.0f s\n" % (time.time() - started))
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture
def simulator(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text("#!/bin/sh\ncat <<'ROWS'\n" + lab_doubles.GB10_ROWS + "ROWS\n")
    (bindir / "nvidia-smi").chmod(0o755)
    port = simkit.free_port()
    env = dict(lab_doubles.SEED000_ENV, PATH=f"{bindir}:/usr/bin:/bin", LANG="C.UTF-8",
               PYTHONPATH=f"{ENGINE_SIM_DIR}:{ENGINE_SIM_DIR}/shims/python", ENGINE_SIM_STARTUP_DELAY="0",
               ENGINE_SIM_VERSION="0.19.2rc1.dev134")
    argv = lab_doubles.seed000_args("8") + ["--host", "127.0.0.1", "--port", str(port)]
    with simkit.running(["engine_sim", "vllm", "serve", *argv], env, tmp_path / "sim.log", port, ready_timeout=30):
        yield f"http://127.0.0.1:{port}"


def test_sweep_against_the_simulator(loadgen_python, simulator, tmp_path):
    out = tmp_path / "results"
    # AIPerf's own default puts an aiperf_mmap_<id> directory in the temporary directory and leaves it there;
    # and a temporary directory this long (pytest's) makes its socket paths too long for Unix sockets: run-loadgen
    # gives each AIPerf run a short directory of its own and removes it.
    tmpdir = tmp_path / "a-temporary-directory-longer-than-aiperf-sockets-allow"
    tmpdir.mkdir()
    assert len(str(tmpdir)) > 40
    leftovers = ("aiperf-*", "aiperf_mmap_*", "tmp*")
    before = {path for pattern in leftovers for path in glob.glob(os.path.join("/tmp", pattern))}
    started = time.time()
    with subprocess.Popen(
            [loadgen_python, os.path.join(ROOT, "scripts", "run-loadgen"), "sweep", "--url", simulator, "--engine",
             "vllm", "--model", lab_doubles.SEED000_MODEL, "--out", str(out), "--levels", LEVELS, "--runs", RUNS,
             "--duration", SECONDS] + (["--allow-fewer-runs"] if int(RUNS) < 3 else []),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=str(tmpdir))) as proc:
        stdout, stderr = proc.communicate(timeout=3600)
    run = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    sys.stderr.write("sweep: %.0f s\n%s" % (time.time() - started, run.stderr))
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip() == str(out / "results.json")
    results = json.loads((out / "results.json").read_text())
    levels = [int(level) for level in LEVELS.split(",")]
    assert [entry["run"] for entry in results["runs"]] == list(range(1, int(RUNS) + 1))
    for entry in results["runs"]:
        assert [level["concurrency"] for level in entry["levels"]] == levels
        for level in entry["levels"]:
            assert set(level) == KEYS, level
            assert level["output_tok_s"] > 0 and level["requests_per_s"] > 0 and level["requests"] > 0
            assert level["errors"] == 0
            assert 0 < level["ttft_p50_s"] <= level["ttft_p99_s"]
            assert 0 <= level["itl_p50_ms"] <= level["itl_p99_ms"]
            # MTP k=2 at temperature 1.0: two positions, the first accepted more often (the GB10 field report: 0.67 / 0.36).
            assert len(level["acceptance_per_pos"]) == 2
            assert 1 > level["acceptance_per_pos"][0] > level["acceptance_per_pos"][1] > 0
            assert 0 <= level["kv_cache_usage"] <= 1
    # More streams, more aggregate throughput (the simulator has 8 slots).
    first = results["runs"][0]["levels"]
    assert first[-1]["output_tok_s"] > first[0]["output_tok_s"]
    # Nothing left behind: no dataset files in the temporary directory, none beside the results.
    assert not list(tmpdir.iterdir())
    after = {path for pattern in leftovers for path in glob.glob(os.path.join("/tmp", pattern))}
    # Other sweeps may run beside this one (pytest-xdist): their step directories are named by their own process id.
    ours = os.path.join("/tmp", "aiperf-%d-" % proc.pid)
    assert not [path for path in after - before
                if path.startswith(ours) or "aiperf_mmap_" in path or os.path.isdir(os.path.join(path, "aiperf"))]
    progress = [line for line in run.stderr.splitlines() if "level" in line and "elapsed" in line]
    assert len(progress) >= 2 * len(levels) * int(RUNS)

    # The plot, from a summary whose figures are this run's numbers.
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"title": "simulator", "levels": first}))
    plot = subprocess.run([loadgen_python, os.path.join(ROOT, "scripts", "run-loadgen"), "plot", "--summary",
                           str(summary), "--profile", "gb10-nvfp4-mtp-latency", "--out", str(tmp_path / "plot.png")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
