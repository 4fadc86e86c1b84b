# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench_plays: the sweep's URL, results folder, command line and timeout, tune's objective and its
overlay's variables (formerly Jinja in playbooks/tasks/bench_sweep.yml, benchmark.yml and tune.yml)."""
from __future__ import annotations

import pytest
from ansible_collections.inferops.serving.plugins.plugin_utils import _bench_plays
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

PLAN = plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101})
PY, SCRIPTS = "/venv/bin/python", "/c/scripts"


def argv_tail(argv):
    return argv[argv.index("--workload"):]


def test_the_defaults_sweep_the_workloads_levels_for_its_duration():
    out = _bench_plays.sweep(PLAN, "spark-1", PY, SCRIPTS, {"address": "10.0.0.5", "root": "/w/benchmark-results",
                                                            "stamp": "20261201T100000Z", "levels": [], "runs": 3,
                                                            "duration": 0, "requests": 0, "workload": "chat", "seed": 1})
    assert out["url"] == "http://10.0.0.5:8101"
    assert out["out"] == "/w/benchmark-results/20261201T100000Z/spark-1"
    assert out["argv"][:9] == [PY, "/c/scripts/run-loadgen", "sweep", "--url", "http://10.0.0.5:8101", "--engine",
                               "vllm", "--model", PLAN["served_model_name"]]
    assert argv_tail(out["argv"]) == ["--workload", "chat", "--runs", "3", "--seed", "1"]
    # five levels (the workload's) x 3 runs x (180 s + 240 s) + 300 s
    assert out["timeout"] == 5 * 3 * 420 + 300


def test_levels_duration_requests_and_a_smoke_run():
    out = _bench_plays.sweep(PLAN, "spark-1", PY, SCRIPTS, {"url": "http://lb.example:80/", "results_dir": "/tmp/b/{host}",
                                                            "levels": "1, 4", "runs": "2", "duration": "5",
                                                            "requests": "", "api_key": True})
    assert out["url"] == "http://lb.example:80" and out["out"] == "/tmp/b/spark-1" and out["levels"] == [1, 4]
    assert argv_tail(out["argv"]) == ["--workload", "chat", "--runs", "2", "--seed", "1", "--levels", "1,4",
                                      "--duration", "5", "--allow-fewer-runs", "--api-key-stdin"]
    assert out["timeout"] == 2 * 2 * (5 + 240) + 300


def test_requests_instead_of_a_duration_and_the_pin_prefix():
    out = _bench_plays.sweep(PLAN, "spark-1", PY, SCRIPTS, {"address": "h", "root": "/r", "stamp": "S", "prefix": "pin-",
                                                            "levels": ["8"], "requests": 500})
    assert out["out"] == "/r/pin-S/spark-1" and "--requests" in out["argv"] and "--duration" not in out["argv"]


def test_the_plot_names_the_profile_and_its_max_num_seqs():
    plot = _bench_plays.sweep(PLAN, "spark-1", PY, SCRIPTS, {"address": "h", "results_dir": "/o",
                                                             "profile_dirs": ["/p"]})["plot_argv"]
    assert plot[:8] == [PY, "/c/scripts/run-loadgen", "plot", "--summary", "/o/summary.json", "--out", "/o/plot.png",
                        "--profile"]
    assert "--max-num-seqs" in plot and plot[-1] == "--profile-dir=/p"


@pytest.mark.parametrize("levels", ["1,x", [0]])
def test_bad_levels_name_the_variable(levels):
    with pytest.raises(_bench_plays.BenchError, match="benchmark_levels: got"):
        _bench_plays.sweep(PLAN, "h", PY, SCRIPTS, {"levels": levels})


def test_the_objective_merges_the_single_bounds_over_the_mapping():
    bounds = {"ttft_p99_s": "8", "itl_p50_ms": None, "min_output_tok_s": ""}
    assert _bench_plays.objective({"ttft_p99_s": 4, "itl_p99_ms": 150}, bounds) == {"ttft_p99_s": 8.0, "itl_p99_ms": 150.0}


def test_no_objective_says_how_to_give_one():
    with pytest.raises(_bench_plays.BenchError, match="No latency objective: give at least one bound, e.g. "
                       "-e benchmark_tune_ttft_p99_s=8"):
        _bench_plays.objective({}, {"ttft_p99_s": None})
    with pytest.raises(_bench_plays.BenchError, match="objective ttft_p99_s: got 'soon'; expected a number"):
        _bench_plays.objective({"ttft_p99_s": "soon"})


def test_the_overlay_lays_the_chosen_flags_over_the_inventorys_at_every_depth():
    decision = {"overlay": {"server_profile_overrides": {"args": {"max-num-seqs": 16,
                                                                  "speculative_config": {"num_speculative_tokens": 2}}},
                            "server_profile_overrides_evidence": {"objective": {"ttft_p99_s": 8.0}}}}
    base = {"args": {"gpu-memory-utilization": 0.8, "speculative_config": {"method": "mtp"}}, "image": {"tag": "t"}}
    out = _bench_plays.overlay_vars(decision, base, [{"config": {"max_num_seqs": 32}, "error": "KV"}], "/r/tune-S/spark-1")
    assert out["server_profile_overrides"] == {
        "args": {"gpu-memory-utilization": 0.8, "max-num-seqs": 16,
                 "speculative_config": {"method": "mtp", "num_speculative_tokens": 2}}, "image": {"tag": "t"}}
    assert out["server_profile_overrides_evidence"] == {"objective": {"ttft_p99_s": 8.0}, "sweeps": "/r/tune-S/spark-1",
                                                        "failed": [{"config": {"max_num_seqs": 32}, "error": "KV"}]}
    assert base["args"]["speculative_config"] == {"method": "mtp"}


def test_results_dir_and_timeout_helpers():
    assert _bench_plays.results_dir("h", "/x/{host}/y") == "/x/h/y"
    assert _bench_plays.sweep_timeout([1], 1, None) == 1 * 1 * (180 + 240) + 300


def test_each_candidate_names_its_sweep_directory():
    found = _bench_plays.candidates(PLAN, "8", "2")
    assert [c["slug"] for c in found] == ["max-num-seqs-8-k-2"]
