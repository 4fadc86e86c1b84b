# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure, tune and gate on performance in the lab (issue 12).

One simulated DGX Spark (``bm-spark``, port 8151, the GB10 throughput profile: vLLM NVFP4 + MTP k=2,
max-num-seqs 32) made by tests/lab/fleet.yml from a temporary inventory (its lock, known-bad list
and tuned overlay live there, never in the repository's inventories), converged with site.yml, then:

* playbooks/benchmark.yml: a chat 512/256 sweep at concurrency 1 and 32, 3 runs (R2-R3 reported), the
  figures within 10 % of the GB10 field report's (23.6 single stream; 131.3 tok/s at 32, the simulator's
  calibration), KV-bound at 32, two draft positions, the table and plot;
* playbooks/tune.yml with a TTFT objective that the GB10 field report's data says fits 16 (mean TTFT 7.7 s at
  16, 9.1 s at 32; the simulator: 4.5 s and 9.3 s): candidates 8, 16, 32 at k=2, the overlay
  recommends 16, lints, then deploys with site.yml and is proven with the plan's derived
  expectations (max_num_seqs 16);
* playbooks/pin.yml -e pin_bench=true: a good nightly pinned with its figures (no baseline
  yet: recorded), a nightly 30 % slower (tests/lab/nightly.sh build VERSION slow_nightly 0.30)
  refused with both figures and on the known-bad list as slower_than_baseline, the canary back on
  the deployment before it; a nightly 5 % slower (within the 10 % threshold) pinned with its figures;
* and on a second host, a simulated g7e (``bm-g7e``, port 8152, g7e-fp8-sglang: SGLang FP8 TP8/EP8) from
  its own inventory: benchmark.yml with the g7e field report's burst (500 prompts at once), output tok/s within 10 %
  of the g7e field report's 3,215 (the simulator slowed 10 times: INFEROPS_LAB_BENCH_BURST_TIME_SCALE), the profile's
  burst figure beside it in the table.

Time compression, and how the figures are read. At the performance model's own speed a 256-token
request takes ~70 s at 32 concurrent and this file took an hour (estimated). The simulator's
ENGINE_SIM_TIME_SCALE (tests/lab/engine_sim/README.md; serving.py's engine loop sleeps each model
step's duration / SCALE, nothing else changes: the same steps, batch, acceptance, KV and tokens per
step) runs the model SCALE times faster; it is set in the inventory's profile env, so every container
this file deploys (site.yml, tune's candidates, pin's canary, the nightlies) runs compressed. What the
tools measure is then exactly SCALE times the model's rates and 1/SCALE of its latencies, and the
playbooks report (and record in summary.json, tune.json, the lock) those wall-clock figures as they
are. The test converts honestly at its assertions only: measured tok/s / SCALE is compared with
the GB10 field report's tok/s; the TTFT objective given to tune.yml is the GB10 field report's bound in model seconds / SCALE;
level durations are model seconds / SCALE (whole seconds). Relative figures (the pin gate's -30 %
and -5 %, KV cache usage, acceptance per position) do not depend on SCALE. The table's "measured"
column (the profile's prose figures) therefore reads SCALE times lower than the sweep's: expected.
The HTTP and load generator's own latencies are not scaled (milliseconds against TTFTs of ~0.5-1.2 s
at SCALE 8): they make the compressed figures very slightly worse, never better.

Checked outside the lab on this 2-core machine (a CI run beside it), with the simulator as a local
process (the GB10 field report's throughput launch, max-num-seqs 32, SCALE 8) and scripts/run-loadgen, one run a
level, figures in model time: 20 s levels (160 model s) gave 23.3 tok/s at 1 (the GB10 field report: 23.6), 94.1 at
16 (99.6), 130.5 at 32 (131.3), KV 67.2 % at 32, acceptance 0.67 / 0.36; median TTFT 4.86 s at 16 and
10.54 s at 32 (the tune bound 8.5 s between them); at concurrency 4 with 15 s levels 48.1 tok/s (47.1),
46.2 with the 5 % slower nightly's fault (-4.0 %: accepted), 31.3 with the 30 % one (-35 %: refused);
about 45 s a level with AIPerf's start.

Environment: INFEROPS_LAB_BENCH_TIME_SCALE (default 8; 1 runs the model at its real speed, about an
hour), INFEROPS_LAB_BENCH_SECONDS (model seconds per benchmark level, default 160). The load generator
(AIPerf, .venv-loadgen) is created by scripts/loadgen-env on first use (3-5 minutes; cached after).
Measured on the 2-core lab machine on 2026-12-01 (a mutation run niced beside it): the Spark's three
tests 16.5 minutes (fleet and converge 63 s, benchmark 254 s, tune 284 s, pin 366 s), the g7e's 5.4
minutes (fleet and converge 81 s, the burst 237 s). Figures in model time: 23.3 tok/s at 1 (the GB10 field report:
23.6), 129.4 at 32 (131.3), KV 63.5 % at 32, acceptance 0.67 / 0.36; tune chose 16; the pin's baseline
383.4 tok/s measured (47.9 in model time; the GB10 field report: 47.1), the 30 % slower nightly 268.8 (-29.9 %:
refused), the 5 % one 364.9 (-4.8 %: pinned); the g7e burst 3,108 tok/s (the g7e field report: 3,215, -3.3 %).
"""
from __future__ import annotations

import json
import os
import re

import pytest
import yaml

import labkit
from labkit import DOCKER, IMAGE, LAB, NIGHTLY, ROOT, TAG, exec_on, known_bad, lock, playbook, run, write_inventory

HOST, PORT = "bm-spark", 8151
# How many times faster than the performance model the simulator runs (the module docstring).
SCALE = float(os.environ.get("INFEROPS_LAB_BENCH_TIME_SCALE", "8"))
MODEL_SECONDS = float(os.environ.get("INFEROPS_LAB_BENCH_SECONDS", "160"))


def wall_seconds(model_seconds):
    """A duration in the model's seconds as the compressed simulator's wall-clock seconds (AIPerf
    takes whole seconds; at least 5)."""
    return str(max(5, int(round(model_seconds / SCALE))))


def model_tok_s(measured):
    """Output tok/s measured on the compressed simulator, in the model's (and the seed's) time."""
    return measured / SCALE


# Seed 000's per-level detail, maxseq=32 row (guidellm 0.6.0, chat 512/256, output tok/s by client
# concurrency): 23.6 at 1, 47.1 at 4, 131.3 at 32.
SEED000 = {1: 23.6, 4: 47.1, 32: 131.3}

# 22 minutes in the lab (time compressed): `make bench` runs it, `make test` does not (its short
# version is tests/bench/test_benchmark_playbook.py).
pytestmark = [pytest.mark.lab, pytest.mark.heavy]

# The lab's settings (labkit.GROUP_VARS: a copy, never changed) with this file's own.
GROUP_VARS = dict(
    labkit.GROUP_VARS,
    # ENGINE_SIM_TIME_SCALE: the simulator runs its performance model SCALE times faster (docstring).
    server_profile_overrides={"args": {"host": "127.0.0.1"}, "env": {"ENGINE_SIM_TIME_SCALE": "%g" % SCALE}},
    # The engines listen on this machine's loopback (host networking); the load generator runs here.
    benchmark_address="127.0.0.1",
)


def container_args(host):
    return exec_on(host, "docker inspect -f '{{json .Args}}' inferops-serving").stdout


def container_image(host):
    return exec_on(host, "docker inspect -f '{{.Config.Image}}' inferops-serving").stdout.strip()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    run([os.path.join(LAB, "lab.sh"), "up"])
    run([os.path.join(ROOT, "scripts", "loadgen-env")], timeout=1800)
    original = run([NIGHTLY, "digest", TAG]).stdout.strip()
    inventory = write_inventory(str(tmp_path_factory.mktemp("bench-inventory")), {HOST: PORT}, GROUP_VARS)
    run([DOCKER, "rm", "-f", "-v", HOST], check=False)
    try:
        playbook(inventory, os.path.join(LAB, "fleet.yml"))
        playbook(inventory, "site.yml")
        yield inventory
    finally:
        run([NIGHTLY, "move", TAG, original], check=False)
        run([DOCKER, "rm", "-f", "-v", HOST], check=False)


def test_benchmark_reproduces_seed000s_curve(fleet, tmp_path):
    """About 5 minutes at SCALE 8: 2 levels x 3 runs x (160 model seconds = 20 s + warm-up + the drain +
    AIPerf's start ~20 s)."""
    out = tmp_path / "results"
    result = playbook(fleet, "playbooks/benchmark.yml", "-e", "benchmark_levels=1,32",
                      "-e", "benchmark_runs=3", "-e", "benchmark_duration=" + wall_seconds(MODEL_SECONDS),
                      "-e", "benchmark_results_dir=%s/{host}" % out)
    host = out / HOST
    summary = json.loads((host / "summary.json").read_text())
    assert summary["runs_used"] == [2, 3] and summary["warmup_dropped"]
    # AIPerf's output tok/s on the compressed simulator, in the model's time (the module docstring).
    got = {level["concurrency"]: model_tok_s(level["output_tok_s"]["mean"]) for level in summary["levels"]}
    for concurrency, seed in ((1, SEED000[1]), (32, SEED000[32])):
        assert abs(got[concurrency] / seed - 1) <= 0.10, (
            "concurrency %d: %.1f tok/s in model time (measured / SCALE %g) vs the GB10 field report's %.1f; all: %s. Lower only "
            "under CPU starvation (the simulator drops a step's lost time after 50 ms): retry with "
            "INFEROPS_LAB_BENCH_TIME_SCALE=4" % (concurrency, got[concurrency], SCALE, seed, got))
    saturated = summary["levels"][-1]
    # Seed 000: KV-bound at 32 (68.9 % of the cache), MTP k=2 accepted 0.67 / 0.36 at temperature 1.0.
    assert 0.55 <= saturated["kv_cache_usage"]["mean"] <= 0.80
    assert len(saturated["acceptance_per_pos"]["mean"]) == 2
    table = (host / "table.md").read_text()
    assert table.startswith("Profile gb10-nvfp4-mtp-throughput (max-num-seqs 32)")
    assert "| 131.3 |" in table and "| 23.6 |" in table
    assert (host / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ASYNC POLL on %s" % HOST in result.stdout


# The tune objective: median TTFT <= 8.5 s in the model's time (the GB10 field report's scale).
TUNE_TTFT_P50_MODEL_S = 8.5


def test_tune_recommends_16_for_a_ttft_objective_and_the_overlay_deploys(fleet, tmp_path):
    """About 10 minutes at SCALE 8: 3 candidates (8, 16, 32 at k=2) deployed, each 1 run of 180 model
    seconds (22 s; one run: the level's own warm-up requests fill its batch first, and a candidate's
    choice needs no R2-R3 statistics), then site.yml twice.

    The objective: median TTFT <= 8.5 s of model time, i.e. 8.5 / SCALE s as measured. Seed 000 measured
    6.6 s at 8, 7.7 s at 16 and 9.1 s at 32 (means at saturation); the simulator's calibration gives
    medians of 2.3 s, 4.5 s and 9.3 s over 180 s (perf.closed_loop): 8 and 16 meet it, 32 does not, and
    16 has the more tok/s (the GB10 field report: 99.6 against 73.5). 32's margin is ~9 % (the HTTP and AIPerf
    latencies only add to it): if it passes, lower the bound towards 16's figure in tune.json."""
    overlay = os.path.join(fleet, "host_vars", HOST, "tuned.yml")
    objective = round(TUNE_TTFT_P50_MODEL_S / SCALE, 4)
    result = playbook(fleet, "playbooks/tune.yml", "-l", HOST, "-e", "benchmark_tune_ttft_p50_s=%s" % objective,
                      "-e", "benchmark_tune_max_num_seqs=8,16,32", "-e", "benchmark_tune_k=2",
                      "-e", "benchmark_tune_runs=1", "-e", "benchmark_tune_duration=" + wall_seconds(180),
                      "-e", "benchmark_tune_results_dir=%s/{host}" % tmp_path)
    assert "max_num_seqs=16" in result.stdout
    with open(overlay, encoding="utf-8") as handle:
        written = yaml.safe_load(handle)
    overrides = written["server_profile_overrides"]
    assert overrides["args"]["max-num-seqs"] == 16 and overrides["args"]["host"] == "127.0.0.1"
    assert overrides["env"] == GROUP_VARS["server_profile_overrides"]["env"]  # the inventory's own kept
    evidence = written["server_profile_overrides_evidence"]
    assert evidence["chosen"]["max_num_seqs"] == 16
    assert evidence["objective"] == {"ttft_p50_s": pytest.approx(objective)}
    assert [r["config"]["max_num_seqs"] for r in evidence["choose"]["rejected"]] == [32]
    decision = json.loads((tmp_path / HOST / "tune.json").read_text())
    assert len(decision["entries"]) == 3 and decision["failed"] == []
    # tune.yml returned the host to its inventory's deployment (max-num-seqs 32) ...
    assert '"--max-num-seqs","32"' in container_args(HOST).replace(" ", "")
    # ... and the overlay, read by the inventory now, deploys and is proven with the plan's expectations.
    # (site.yml's backend assertion checks the engine's log against expect.max_num_seqs = 16.)
    playbook(fleet, "site.yml", "-l", HOST)
    assert '"--max-num-seqs","16"' in container_args(HOST).replace(" ", "")
    os.remove(overlay)
    playbook(fleet, "site.yml", "-l", HOST)


def pin_bench(inventory, *extra, check=True):
    # The reference concurrency 4 (the GB10 field report, maxseq=32: 47.1 tok/s): a 256-token request takes ~22 s
    # of model time, so 120 model seconds (15 s at SCALE 8) complete ~20; 2 runs (the level's warm-up
    # requests first; both pins measured alike, so the gate compares like with like). About 3 minutes a pin.
    return playbook(inventory, "playbooks/pin.yml", "-e", "pin_image=" + IMAGE,
                    "-e", "pin_bench=true", "-e", "pin_bench_concurrency=4",
                    "-e", "pin_bench_runs=2", "-e", "pin_bench_duration=" + wall_seconds(120),
                    *extra, check=check)


def test_pin_refuses_a_nightly_30_percent_slower_and_pins_one_within_the_threshold(fleet):
    """About 9 minutes at SCALE 8: three pins with a benchmark (a baseline, a refusal, an acceptance)
    and three image builds. The lock's figures are the compressed simulator's (SCALE times the
    model's); the gate's comparison is relative, so SCALE cancels out."""
    good = run([NIGHTLY, "build", "0.19.3rc3.dev1"]).stdout.strip()
    run([NIGHTLY, "move", TAG, good])
    first = pin_bench(fleet)
    assert "the lock has no baseline figures for this image" in first.stdout
    baseline = lock(fleet)[IMAGE]["evidence"]["bench"]
    assert lock(fleet)[IMAGE]["digest"] == good
    assert baseline["concurrency"] == 4 and abs(model_tok_s(baseline["output_tok_s"]) / SEED000[4] - 1) <= 0.10

    slow = run([NIGHTLY, "build", "0.19.3rc3.dev2", "slow_nightly", "0.30"]).stdout.strip()
    run([NIGHTLY, "move", TAG, slow])
    before = container_image(HOST)
    refused = pin_bench(fleet, check=False)
    assert refused.returncode != 0
    message = re.search(r"refused \(throughput\): output ([\d.]+) tok/s at concurrency 4 vs the baseline's ([\d.]+) tok/s",
                        refused.stdout)
    assert message, refused.stdout[-4000:]
    assert float(message.group(2)) == pytest.approx(baseline["output_tok_s"], abs=0.05)
    assert float(message.group(1)) < 0.9 * float(message.group(2))
    entries = [e for e in known_bad(fleet) if e.get("digest") == slow]
    assert entries and entries[0]["signature"] == "slower_than_baseline", known_bad(fleet)
    assert "vs the baseline's" in entries[0]["symptom"]
    # The evidence is the benchmark's results on the controller (here), not a file on the canary.
    where, path = entries[0]["evidence_log"].split(":", 1)
    assert where == "controller" and os.path.isfile(path) and path.endswith("/results.json"), entries[0]
    assert lock(fleet)[IMAGE]["digest"] == good
    assert container_image(HOST) == before  # back on the deployment before the candidate

    close = run([NIGHTLY, "build", "0.19.3rc3.dev3", "slow_nightly", "0.05"]).stdout.strip()
    run([NIGHTLY, "move", TAG, close])
    pin_bench(fleet)
    entry = lock(fleet)[IMAGE]
    assert entry["digest"] == close
    assert entry["evidence"]["bench"]["verdict"].startswith("accepted: output")
    assert entry["evidence"]["bench"]["output_tok_s"] < baseline["output_tok_s"]


# Seed 002's burst on a Docker lab g7e (its SGLang FP8 TP8/EP8 profile, g7e-fp8-sglang): 500 prompts at once.
G7E_HOST, G7E_PORT = "bm-g7e", 8152
# The burst's 500 streams at the model's own speed are more chunks a second than this 2-core machine serves
# in Python (tests/bench/test_loadgen_burst.py): the simulator runs 10 times slower than the model here, and
# rates are multiplied back by 10 at the assertions.
G7E_SCALE = float(os.environ.get("INFEROPS_LAB_BENCH_BURST_TIME_SCALE", "0.1"))
# Seed 002, R2-R3 of 3 runs, `--seed 1`: 3,215 output tok/s.
SEED002_BURST_TOK_S = 3215


@pytest.fixture(scope="module")
def g7e_fleet(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    run([os.path.join(LAB, "lab.sh"), "up"])
    group_vars = dict(GROUP_VARS, lab_hardware="rtx-pro-6000-x8", server_profile="g7e-fp8-sglang",
                      server_profile_overrides={"args": {"host": "127.0.0.1"},
                                                "env": {"ENGINE_SIM_TIME_SCALE": "%g" % G7E_SCALE}})
    inventory = write_inventory(str(tmp_path_factory.mktemp("bench-g7e-inventory")), {G7E_HOST: G7E_PORT},
                                group_vars, group="g7e")
    run([DOCKER, "rm", "-f", "-v", G7E_HOST], check=False)
    try:
        playbook(inventory, os.path.join(LAB, "fleet.yml"))
        playbook(inventory, "site.yml")
        yield inventory
    finally:
        run([DOCKER, "rm", "-f", "-v", G7E_HOST], check=False)


def test_benchmark_reproduces_seed002s_burst_on_a_g7e(g7e_fleet, tmp_path):
    """About 6 minutes: the g7e's deployment, then one burst of 500 requests at time scale 0.1 (~15 model
    seconds, ~2.5 minutes, plus AIPerf's start). One run: a burst's warm-up is its own three requests, and
    3 runs of it would triple the time for R2-R3 statistics the figure check does not need."""
    out = tmp_path / "results"
    playbook(g7e_fleet, "playbooks/benchmark.yml", "-e", "benchmark_workload=burst",
             "-e", "benchmark_runs=1", "-e", "benchmark_results_dir=%s/{host}" % out)
    host = out / G7E_HOST
    summary = json.loads((host / "summary.json").read_text())
    [level] = summary["levels"]
    assert level["concurrency"] == 500
    # Seed 002's burst shape, in the model's time: output tok/s within 10 % of 3,215.
    got = level["output_tok_s"]["mean"] / G7E_SCALE
    assert abs(got / SEED002_BURST_TOK_S - 1) <= 0.10, (
        "burst of 500: %.0f output tok/s in model time (measured / %g) vs the g7e field report's %d"
        % (got, G7E_SCALE, SEED002_BURST_TOK_S))
    table = (host / "table.md").read_text()
    assert table.startswith("Profile g7e-fp8-sglang (no max-num-seqs set); measured: g7e field report"), table
    assert "| 3215.0 |" in table, table
    assert (host / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
