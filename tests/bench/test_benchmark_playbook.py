# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/benchmark.yml end to end on this machine: a one-host inventory whose host is the controller
(local connection), serving the lab's engine simulator as a local process on 127.0.0.1:8295-8299 (the
test double of vLLM serving the GB10 field report's latency profile: MTP k=2, max-num-seqs 4, the performance model
calibrated to the GB10 field report), the real load generator (AIPerf in .venv-loadgen, created once by
scripts/loadgen-env). A 2-level (1, 4), 2-run, 5 s sweep: results.json, summary.json, table.md beside
the profile's measured figures, plot.png, progress while it runs. The endpoint requires an API key
(VLLM_API_KEY, as `vllm serve` reads it): the inventory's server_secrets reaches the load generator
through its environment and is in no output, no file and no process's command line.

Not the shared lab: no Docker. Measured here: 240 s with the venv in place, on the 2-core machine shared
with a lab run (a level at concurrency 1 costs ~45 s: three 256-token warm-up requests at ~24 tok/s, then
AIPerf's start); 3-5 minutes more the first time, to create the venv.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest
import simkit
import yaml

pytestmark = pytest.mark.bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_SIM_DIR = os.path.join(ROOT, "tests", "lab", "engine_sim")
_spec = importlib.util.spec_from_file_location("lab_doubles", os.path.join(ROOT, "tests", "unit", "lab", "engine_sim_cases.py"))
lab_doubles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_doubles)
# A key of this run only: another run of this test on the machine (a CI run) has its own.
API_KEY = "sk-bench-test-" + uuid.uuid4().hex[:12]


def command_lines(secret):
    """(command line, whether it holds ``secret``) of every process /proc lists now."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        found.append((raw.replace(b"\0", b" ").decode("utf-8", "replace"), secret.encode() in raw))
    return found


@pytest.fixture(scope="module")
def loadgen_env():
    out = subprocess.run([os.path.join(ROOT, "scripts", "loadgen-env")], capture_output=True, text=True,
                         timeout=1800, check=False)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.fixture
def simulator(tmp_path):
    """The engine simulator serving the GB10 field report's latency profile (max-num-seqs 4) as vLLM would."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text("#!/bin/sh\ncat <<'ROWS'\n" + lab_doubles.GB10_ROWS + "ROWS\n")
    (bindir / "nvidia-smi").chmod(0o755)
    port = simkit.free_port()
    env = dict(lab_doubles.SEED000_ENV, PATH=f"{bindir}:/usr/bin:/bin", LANG="C.UTF-8",
               PYTHONPATH=f"{ENGINE_SIM_DIR}:{ENGINE_SIM_DIR}/shims/python", ENGINE_SIM_STARTUP_DELAY="0",
               ENGINE_SIM_VERSION="0.19.2rc1.dev134", VLLM_API_KEY=API_KEY)
    argv = lab_doubles.seed000_args("4") + ["--host", "127.0.0.1", "--port", str(port)]
    with simkit.running(["engine_sim", "vllm", "serve", *argv], env, tmp_path / "sim.log", port, ready_timeout=30):
        yield port


def test_benchmark_playbook_against_the_simulator(loadgen_env, simulator, tmp_path):
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"sim-spark": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (inv / "group_vars" / "serving.yml").write_text(yaml.safe_dump({
        "server_profile": "gb10-nvfp4-mtp-latency", "server_port": simulator, "inferops_become": False,
        "benchmark_address": "127.0.0.1", "server_secrets": {"VLLM_API_KEY": API_KEY}}))
    # No results directory given: the default is benchmark-results/<UTC time>/<host> in the directory the
    # playbook is started from (a shell's PWD), here tmp_path, never inside the collection.
    workdir = tmp_path / "work"
    workdir.mkdir()
    results = workdir / "benchmark-results"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", PWD=str(workdir))
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    started = time.time()
    # While it runs, every process's command line (what `ps` shows any user of the controller) is
    # read a few times a second: the key must be in none (AIPerf gets it in its own process).
    with open(tmp_path / "ansible.out", "w+", encoding="utf-8") as output:
        proc = subprocess.Popen([playbook, os.path.join(ROOT, "playbooks", "benchmark.yml"), "-i", str(inv / "hosts.yml"),
                                 "-e", "benchmark_levels=1,4", "-e", "benchmark_runs=2",
                                 "-e", "benchmark_duration=5"],
                                cwd=workdir, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
        argv_seen, key_in_argv = 0, []
        while proc.poll() is None:
            assert time.time() - started < 1200, "benchmark.yml still running after 1200 s"
            for command, has_key in command_lines(API_KEY):
                argv_seen += "aiperf" in command and "profile" in command and str(results) in command
                if has_key:
                    key_in_argv.append(command[:300])
            time.sleep(0.3)
        output.seek(0)
        out = output.read()
    run = subprocess.CompletedProcess(proc.args, proc.returncode)
    sys.stderr.write("benchmark.yml: %.0f s\n" % (time.time() - started))
    assert run.returncode == 0, out[-6000:]
    [host] = results.glob("*/sim-spark")
    assert re.fullmatch(r"\d{8}T\d{6}Z", host.parent.name), host
    data = json.loads((host / "results.json").read_text())
    assert data["endpoint"]["url"] == "http://127.0.0.1:%d" % simulator
    assert [[lv["concurrency"] for lv in r["levels"]] for r in data["runs"]] == [[1, 4], [1, 4]]
    summary = json.loads((host / "summary.json").read_text())
    assert summary["runs_used"] == [1, 2] and not summary["warmup_dropped"]
    assert [lv["concurrency"] for lv in summary["levels"]] == [1, 4]
    single, four = summary["levels"]
    assert four["output_tok_s"]["mean"] > single["output_tok_s"]["mean"] > 0
    assert len(four["acceptance_per_pos"]["mean"]) == 2  # MTP k=2: two draft positions
    table = (host / "table.md").read_text()
    assert table.startswith("Profile gb10-nvfp4-mtp-latency (max-num-seqs 4); measured: GB10 field report (DGX Spark)")
    # The profile's measured figures beside the sweep's: 24.2 single stream, 47.7 and 1.2 s TTFT at 4.
    row1 = next(line for line in table.splitlines() if line.startswith("| 1 |"))
    row4 = next(line for line in table.splitlines() if line.startswith("| 4 |"))
    assert "| 24.2 |" in row1 and "| 47.7 |" in row4 and row4.endswith("| 1.2 |")
    assert "no warm-up run dropped: fewer than 3 runs" in table
    assert (host / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "run 2/2 level 2/2 (concurrency 4" in (host / "progress.log").read_text()
    # The table printed, and progress while the sweep ran (the async task polled).
    assert row4 in out and "ASYNC POLL on sim-spark" in out
    # The key authenticated every request (errors 0 above) and was written nowhere.
    assert all(lv["errors"] == 0 for r in data["runs"] for lv in r["levels"])
    assert API_KEY not in out
    assert argv_seen and not key_in_argv, (argv_seen, key_in_argv)
    for directory, dummy, files in os.walk(results):
        for name in files:
            assert API_KEY.encode() not in open(os.path.join(directory, name), "rb").read(), name
