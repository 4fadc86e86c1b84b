# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark decisions (plugins/plugin_utils/_bench.py) on the field reports' own figures."""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _bench as b
from ansible_collections.inferops.serving.plugins.plugin_utils import _loadgen as loadgen
from ansible_collections.inferops.serving.plugins.plugin_utils._engines import METRICS
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import apply_overrides, load_profile

# Seed 002, burst (500 prompts, 200/200, --seed 1): R1 cold, R2-R3 warm.
SEED002_RUNS = [(1, 3267, 2.755, 61, 144, 32.2), (2, 3232, 2.876, 62, 146, 31.9), (3, 3198, 2.935, 61, 284, 31.5)]
# Seed 000 s.2: saturated output tok/s and TTFT at max-num-seqs = client concurrency (MTP k=2).
SEED000_SWEEP = [(4, 47.7, 1.2), (8, 73.5, 6.6), (16, 99.6, 7.7), (32, 131.3, 9.1)]


def level(concurrency, tok_s, ttft=1.0, itl50=60.0, itl99=150.0, rps=1.0, **extra):
    return dict({"concurrency": concurrency, "output_tok_s": tok_s, "ttft_p50_s": ttft, "ttft_p99_s": ttft * 1.5,
                 "itl_p50_ms": itl50, "itl_p99_ms": itl99, "requests_per_s": rps}, **extra)


def seed002_runs():
    return [{"run": run, "levels": [level(500, tok_s, ttft, itl50, itl99, rps)]}
            for run, tok_s, ttft, itl50, itl99, rps in SEED002_RUNS]


def test_summarise_drops_the_warm_up_run_as_seed002_reports():
    summary = b.summarise(list(reversed(seed002_runs())))  # order of the list does not matter
    assert summary["runs_used"] == [2, 3] and summary["warmup_dropped"] and summary["warmup_run"] == 1
    tok_s = summary["levels"][0]["output_tok_s"]
    assert tok_s["mean"] == pytest.approx(3215) and round(tok_s["std"]) == 24  # the g7e field report: 3,215 +- 24
    assert summary["levels"][0]["itl_p99_ms"]["mean"] == pytest.approx(215)  # the g7e field report: R2-R3 P99 ITL 215
    assert summary["levels"][0]["runs"] == [2, 3]


def test_summarise_with_two_runs_keeps_both_and_says_so():
    summary = b.summarise(seed002_runs()[:2])
    assert summary["runs_used"] == [1, 2] and not summary["warmup_dropped"]
    assert summary["levels"][0]["output_tok_s"]["mean"] == pytest.approx(3249.5)
    assert "no warm-up run dropped" in b.markdown_table(summary)


def test_summarise_optional_figures_and_acceptance_per_position():
    runs = [{"run": run, "levels": [level(1, 24.0 + run, kv_cache_usage=0.02,
                                          acceptance_per_pos=[0.66 + run / 100, 0.36, 0.16])]}
            for run in (1, 2, 3, 4)]
    runs[3]["levels"].append(level(4, 47.7))  # a level only run 4 has
    summary = b.summarise(runs)
    first = summary["levels"][0]
    assert first["acceptance_per_pos"]["mean"] == pytest.approx([0.69, 0.36, 0.16])
    assert first["kv_cache_usage"]["mean"] == pytest.approx(0.02) and first["output_tok_s"]["mean"] == 27.0
    assert summary["levels"][1]["runs"] == [4] and "kv_cache_usage" not in summary["levels"][1]


def _loadgen_fixture(name):
    path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "loadgen", name)
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_summarise_reads_sglang_accept_length_from_its_real_gauge():
    # SGLang 0.5.4's gauge as its scheduler exports it (fixture: its own definitions and labels), and
    # the lab simulator's after a level: the deployment plan's metric name reads both.
    assert METRICS["sglang"]["spec_accept_length"] == "sglang:spec_accept_length"
    real = loadgen.engine_figures(METRICS["sglang"], "", _loadgen_fixture("sglang-0.5.4-spec-gauges.txt"))
    assert real == {"kv_cache_usage": 0.0123, "accept_length": 3.2} and "acceptance_per_pos" not in real
    simulated = loadgen.engine_figures(METRICS["sglang"], "", _loadgen_fixture("sglang-sim-metrics-after-c4.txt"))
    runs = [{"run": 1, "levels": [level(500, 3267, **simulated)]},  # R1, the warm-up: 2.909
            {"run": 2, "levels": [level(500, 3232, **real)]},
            {"run": 3, "levels": [level(500, 3198, kv_cache_usage=0.0125, accept_length=3.1)]}]
    summary = b.summarise(runs)
    length = summary["levels"][0]["accept_length"]
    assert length["mean"] == pytest.approx(3.15) and length["std"] == pytest.approx(0.0707, abs=1e-4)
    row = b.markdown_table(summary).splitlines()[2]
    assert "| spec acceptance |" in b.markdown_table(summary).splitlines()[0]
    assert row.endswith("| 1.2 % | 3.15 ± 0.07 tokens/step |")
    # The gate reads the summary's figure: accepted draft tokens per step 2.15 vs a baseline's 3.2 - 1.
    verdict = b.gate({"concurrency": 500, "output_tok_s": 3215, "accept_length": 3.2},
                     {"concurrency": 500, "output_tok_s": summary["levels"][0]["output_tok_s"],
                      "accept_length": length})
    assert verdict["accepted"] and verdict["candidate_accepted_per_step"] == pytest.approx(2.15)
    # A run without the gauge (speculative decoding off): no accept length is made up for the level.
    del runs[2]["levels"][0]["accept_length"]
    assert "accept_length" not in b.summarise(runs)["levels"][0]
    assert "spec acceptance" not in b.markdown_table(b.summarise(runs))


def test_markdown_table_shows_vllm_acceptance_per_position():
    runs = [{"run": run, "levels": [level(32, 131.0 + run, acceptance_per_pos=[0.67, 0.36])]} for run in (1, 2, 3)]
    row = b.markdown_table(b.summarise(runs)).splitlines()[2]
    assert row.endswith("| - | 0.67 / 0.36 |")


@pytest.mark.parametrize("runs, needle", [
    ([], "runs: got []"),
    ([{"levels": []}], "runs[0]: expected {run"),
    ([{"run": 1, "levels": [level(4, "fast")]}], "run 1, concurrency 4, output_tok_s: got 'fast'"),
    ([{"run": 1, "levels": [{"output_tok_s": 3}]}], "a level without concurrency"),
])
def test_summarise_refuses_bad_input_naming_the_field(runs, needle):
    with pytest.raises(b.BenchError) as error:
        b.summarise(runs)
    assert needle in str(error.value)


def test_markdown_table_puts_the_profile_measured_figures_beside():
    profile = load_profile("gb10-nvfp4-mtp-throughput")
    measured = b.measured_levels(profile["measured"], max_num_seqs=32)
    assert measured == {1: {"output_tok_s": 23.6},
                        32: {"output_tok_s": 131.3, "ttft_s": 9.1, "kv_cache_usage": 0.689}}
    runs = [{"run": run, "levels": [level(1, 23.7 + run / 10, ttft=0.28), level(32, 135.0 + run, ttft=9.3,
                                                                                kv_cache_usage=0.688)]}
            for run in (1, 2, 3)]
    table = b.markdown_table(b.summarise(runs), measured)
    lines = table.splitlines()
    assert lines[0].startswith("| concurrency | output tok/s |") and "| measured tok/s | vs measured |" in lines[0]
    assert lines[2].startswith("| 1 | 23.9 ± 0.1 | 0.28 |") and lines[2].endswith("| 23.6 | +1.5 % | - |")
    assert lines[3].startswith("| 32 | 137.5 ± 0.7 |") and lines[3].endswith("| 68.8 % | 131.3 | +4.7 % | 9.1 |")
    assert "runs 2, 3 (run 1 dropped as warm-up)" in table
    assert b.measured_levels({"single_stream_tok_s": "15-17"}) == {1: {"output_tok_s": 16.0}}
    # aggregate_tok_s before saturated_tok_s before sustained_tok_s at one level; prose is left out.
    assert b.measured_levels({"sustained_tok_s": 90, "saturated_tok_s": 100, "aggregate_tok_s": 110,
                              "ttft_at_saturation_s": "n/a"}, max_num_seqs=8) == {8: {"output_tok_s": 110.0}}
    assert b.measured_levels({"sustained_tok_s": 90}, max_num_seqs=8) == {8: {"output_tok_s": 90.0}}
    # A burst figure only at a burst's size; a levels mapping is taken as it is, named figures over it.
    assert b.measured_levels({"burst_output_tok_s": 3215}) == {}
    assert b.measured_levels({"burst_output_tok_s": 3215, "levels": {4: {"output_tok_s": 47.0}, 500: {"ttft_s": 2.9}}},
                             burst_requests=500) == {4: {"output_tok_s": 47.0},
                                                     500: {"ttft_s": 2.9, "output_tok_s": 3215.0}}


def test_burst_size_is_the_sweeps_size_for_a_burst_only():
    burst = {"plan": {"workload": "burst"}, "levels": [{"concurrency": 500}]}
    assert b.burst_size(burst) == 500
    assert b.burst_size(dict(burst, plan={"workload": "chat"})) is None
    assert b.burst_size({"levels": [{"concurrency": 500}]}) is None
    assert b.burst_size({"plan": {"workload": "burst"}, "levels": []}) is None


def test_measured_number_reads_figures_and_ranges_only():
    assert b.measured_number(24.2) == 24.2 and b.measured_number(3) == 3.0
    assert b.measured_number("15-17") == 16.0 and b.measured_number("15\u201317") == 16.0
    assert b.measured_number("24.2") == 24.2
    for prose in (True, False, "n/a", "1-2-3", "", None, "fast"):
        assert b.measured_number(prose) is None, prose


def test_advise_k_from_seed000_acceptance_is_two():
    advice = b.advise_k([0.67, 0.36, 0.16])
    assert advice["k"] == 2 and advice["rule"] == "acceptance"
    assert advice["expected_tokens_per_step"] == pytest.approx(2.03)
    assert [step["kept"] for step in advice["positions"]] == [True, True, False]
    # Greedy/code workloads accept more: the third position pays (the GB10 field report: "higher k wins").
    assert b.advise_k([0.90, 0.72, 0.48])["k"] == 3
    assert b.advise_k([0.05, 0.01])["k"] == 0  # a draft that is never accepted costs a step share


def test_advise_k_measured_tok_s_wins_over_acceptance():
    # Seed 001: k=1 14.5-14.9 vs k=2 10.5 tok/s at 8 concurrent, although the acceptance says 2.
    advice = b.advise_k([0.67, 0.36, 0.16], tok_s_by_k={1: 14.7, 2: 10.5})
    assert advice["k"] == 1 and advice["rule"] == "measured" and "k=1 14.7, k=2 10.5" in advice["reason"]
    # Seed 000 single stream: k=2 24.2, k=3 23.5; within 2 % the cheaper k.
    assert b.advise_k(None, tok_s_by_k={"2": 24.2, "3": 23.5})["k"] == 2
    assert b.advise_k(None, tok_s_by_k={2: 24.2, 3: 24.4})["k"] == 2
    with pytest.raises(b.BenchError, match="acceptance_per_pos: got None"):
        b.advise_k(None)


def seed000_sweep(ttft_key="ttft_p99_s"):
    # The seed reports TTFT at saturation; it stands for the TTFT figure the objective bounds.
    return [{"config": {"max_num_seqs": seqs, "k": 2}, "output_tok_s": tok_s, ttft_key: ttft, "itl_p99_ms": 100}
            for seqs, tok_s, ttft in SEED000_SWEEP]


def test_choose_seed000_with_a_ttft_objective_that_fits_16():
    result = b.choose(seed000_sweep(), {"ttft_p99_s": 8.0, "itl_p99_ms": 150})
    assert result["met"] and result["choice"] == {"max_num_seqs": 16, "k": 2}
    evidence = result["evidence"]
    assert evidence["chosen"]["figures"] == {"output_tok_s": 99.6, "ttft_p99_s": 7.7, "itl_p99_ms": 100.0}
    assert [record["config"]["max_num_seqs"] for record in evidence["met"]] == [4, 8, 16]
    assert evidence["rejected"][0]["broken"] == ["ttft_p99_s 9.1 > 8"]
    assert result["message"] == ("k=2, max_num_seqs=16: 99.6 tok/s, the most of the 3 configurations meeting "
                                 "itl_p99_ms <= 150, ttft_p99_s <= 8")
    # Seed 000's latency profile (TTFT 1.2 s): a 4 s objective keeps max-num-seqs 4.
    assert b.choose(seed000_sweep(), {"ttft_p99_s": 4.0})["choice"]["max_num_seqs"] == 4


def test_choose_with_k_and_summaries_and_lower_bounds():
    sweep = [{"config": {"max_num_seqs": 8, "k": k}, "output_tok_s": {"mean": tok_s, "std": 0.3},
              "ttft_p99_s": {"mean": 2.0, "std": 0.1}} for k, tok_s in ((1, 14.7), (2, 10.5), (3, 14.7))]
    result = b.choose(sweep, {"ttft_p99_s": 3, "min_output_tok_s": 12})
    assert result["choice"] == {"max_num_seqs": 8, "k": 1}  # tie with k=3: fewer drafts
    assert result["evidence"]["rejected"][0]["broken"] == ["output_tok_s 10.5 < 12"]


def test_choose_when_nothing_meets_the_objective():
    result = b.choose(seed000_sweep(), {"ttft_p99_s": 0.5})
    assert result["choice"] is None and not result["met"]
    assert result["message"] == ("no configuration meets ttft_p99_s <= 0.5; the closest, k=2, max_num_seqs=4, "
                                 "breaks ttft_p99_s 1.2 > 0.5: relax the objective or sweep smaller max_num_seqs")
    with pytest.raises(b.BenchError, match="objective.ttft_p90_s: unknown figure"):
        b.choose(seed000_sweep(), {"ttft_p90_s": 1})
    with pytest.raises(b.BenchError, match=r"sweep\[0\].itl_p99_ms: got None"):
        b.choose([{"config": {"max_num_seqs": 4}, "output_tok_s": 1}], {"itl_p99_ms": 100})


def test_overlay_is_what_the_profile_takes():
    result = b.choose(seed000_sweep(), {"ttft_p99_s": 8.0})
    written = b.overlay(dict(result["choice"], k=1), result["evidence"])
    overrides = written["server_profile_overrides"]
    assert overrides == {"args": {"max-num-seqs": 16, "speculative_config.num_speculative_tokens": 1}}
    assert written["server_profile_overrides_evidence"]["chosen"]["config"] == {"max_num_seqs": 16, "k": 2}
    profile = apply_overrides(load_profile("gb10-nvfp4-mtp-throughput"), overrides)
    assert profile["args"]["max-num-seqs"] == 16
    assert profile["args"]["speculative_config.num_speculative_tokens"] == 1
    # Deployed and proven with the derived expectations of the deployment plan.
    options = {"name": "inferops-serving", "port": 8101, "network_mode": "host", "secret_env": [],
               "engine_cache_dir": "/var/cache/inferops-serving/inferops-serving",
               "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 1024}}
    deployment = plan("gb10-nvfp4-mtp-throughput", options, overrides=overrides)
    assert deployment["expect"]["max_num_seqs"] == 16 and deployment["expect"]["num_speculative_tokens"] == 1
    eagle = b.overlay({"max_num_seqs": 48, "k": 2}, {}, engine="sglang")["server_profile_overrides"]
    expect = plan("g7e-fp8-sglang-eagle", options, overrides=eagle)["expect"]
    assert expect["max_num_seqs"] == 48 and expect["num_speculative_tokens"] == 2
    sglang = b.overlay({"max_num_seqs": 64, "k": 2, "max_num_batched_tokens": 16384}, {}, engine="sglang")
    assert sglang["server_profile_overrides"]["args"] == {
        "max-running-requests": 64, "chunked-prefill-size": 16384, "speculative-num-steps": 2,
        "speculative-num-draft-tokens": 3}
    with pytest.raises(b.BenchError, match="nothing to write"):
        b.overlay(None, result["evidence"])


def test_gate_refuses_a_nightly_thirty_percent_slower_naming_both_figures():
    baseline = {"concurrency": 32, "output_tok_s": 131.3, "acceptance_per_pos": [0.67, 0.36]}
    slow = {"concurrency": 32, "output_tok_s": 91.9, "acceptance_per_pos": [0.66, 0.37]}
    verdict = b.gate(baseline, slow)
    assert not verdict["accepted"] and verdict["reasons"] == ["throughput"]
    assert verdict["message"] == ("refused (throughput): output 91.9 tok/s at concurrency 32 vs the baseline's "
                                  "131.3 tok/s (-30.0 %, threshold -10 %); accepted draft tokens per step "
                                  "1.03 vs the baseline's 1.03")
    within = b.gate(baseline, {"concurrency": 32, "output_tok_s": {"mean": 125.0, "std": 1.0},
                               "acceptance_per_pos": {"mean": [0.67, 0.35], "std": [0, 0]}})
    assert within["accepted"] and within["message"].startswith("accepted: output 125.0 tok/s")
    assert b.gate(baseline, dict(slow, output_tok_s=118.2))["accepted"]  # -9.98 %


def test_gate_refuses_collapsed_acceptance_even_at_full_speed():
    # Seed 001: MTP configured and "on" while silently off.
    baseline = {"concurrency": 1, "output_tok_s": 24.2, "acceptance_per_pos": [0.67, 0.36]}
    off = b.gate(baseline, {"concurrency": 1, "output_tok_s": 24.0})
    assert not off["accepted"] and off["reasons"] == ["speculative acceptance"]
    assert "accepted draft tokens per step none reported vs the baseline's 1.03" in off["message"]
    low = b.gate(baseline, {"concurrency": 1, "output_tok_s": 9.5, "acceptance_per_pos": [0.3, 0.1]})
    assert low["reasons"] == ["throughput", "speculative acceptance"]
    # SGLang reports the accept length (the g7e field report: 3.2 tokens per step).
    assert b.gate({"concurrency": 4, "output_tok_s": 376, "accept_length": 3.2},
                  {"concurrency": 4, "output_tok_s": 370, "accept_length": 2.0})["accepted"] is False
    assert b.gate({"concurrency": 4, "output_tok_s": 376}, {"concurrency": 4, "output_tok_s": 370})["accepted"]
    with pytest.raises(b.BenchError, match="candidate measured at concurrency 8, baseline at 32"):
        b.gate({"concurrency": 32, "output_tok_s": 1}, {"concurrency": 8, "output_tok_s": 1})
    with pytest.raises(b.BenchError, match="threshold: got 10"):
        b.gate(baseline, baseline, threshold=10)


# /metrics as vLLM 0.19 exposes them (names: vllm/v1/spec_decode/metrics.py; the per-position
# counter's position label), before and after a level of 100 drafts with k=2.
VLLM_METRICS_BEFORE = """# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1000.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.0
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 400.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 260.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 150.0
"""
VLLM_METRICS_AFTER = """vllm:generation_tokens_total{engine="0",model_name="m"} 1203.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.689
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 500.0
vllm:spec_decode_num_drafts_total_created{engine="0",model_name="m"} 1764000000.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 327.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 186.0
"""


def test_level_metrics_reads_acceptance_per_position_and_kv_usage():
    from ansible_collections.inferops.serving.plugins.plugin_utils._engines import METRICS
    figures = b.level_metrics(VLLM_METRICS_BEFORE, VLLM_METRICS_AFTER, METRICS["vllm"])
    assert figures["acceptance_per_pos"] == pytest.approx([0.67, 0.36])
    assert figures["kv_cache_usage"] == 0.689 and figures["generation_tokens"] == 203.0
    assert figures["accept_length"] is None
    assert b.advise_k(figures["acceptance_per_pos"])["k"] == 2
    sglang = b.level_metrics("", 'sglang:spec_accept_length{model_name="m",tp_rank="0"} 3.2\n'
                                 'sglang:token_usage{model_name="m",tp_rank="0"} 0.01\n', METRICS["sglang"])
    assert sglang == {"acceptance_per_pos": None, "accept_length": 3.2, "kv_cache_usage": 0.01,
                      "generation_tokens": None}
    # No drafts over the level (speculation off): no acceptance to read.
    assert b.level_metrics(VLLM_METRICS_AFTER, VLLM_METRICS_AFTER, METRICS["vllm"])["acceptance_per_pos"] is None


def test_acceptance_from_accept_lengths_needs_every_k_from_one():
    assert b.acceptance_from_accept_lengths({1: 1.9, 2: 2.65, 3: 3.2}) == pytest.approx([0.9, 0.75, 0.55])
    assert b.acceptance_from_accept_lengths({"2": 2.65, "1": 1.9}) == pytest.approx([0.9, 0.75])
    # A later length below an earlier one (two sweeps' noise) is a rate of 0, never negative.
    assert b.acceptance_from_accept_lengths({1: 1.9, 2: 1.85}) == pytest.approx([0.9, 0.0])
    assert b.acceptance_from_accept_lengths({2: 2.65, 3: 3.2}) is None  # no k=1: position 0 unknown
    assert b.acceptance_from_accept_lengths({1: 1.9, 3: 3.2}) is None
    assert b.acceptance_from_accept_lengths({}) is None
    with pytest.raises(b.BenchError, match="accept length at k=1: got 'long'"):
        b.acceptance_from_accept_lengths({1: "long"})
