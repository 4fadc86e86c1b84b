# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark playbooks' decisions (the bench_plan lookup over plugins/plugin_utils/_bench_plays.py)
on the field reports' own figures: the GB10 field report's max-num-seqs sweep and acceptance, the GB10 write-up's k=1 vs k=2,
the g7e field report's burst runs. Deployments are the real plans of the shipped profiles (_deployment.plan)."""
from __future__ import annotations

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.inferops.serving.plugins.lookup import bench_plan as lookup_plugin
from ansible_collections.inferops.serving.plugins.plugin_utils import _bench_plays
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import lint_profile
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import load_profile

# Seed 002, burst (500 prompts, 200/200, --seed 1): run, tok/s, mean TTFT, ITL p50, ITL p99, req/s.
SEED002_RUNS = [(1, 3267, 2.755, 61, 144, 32.2), (2, 3232, 2.876, 62, 146, 31.9), (3, 3198, 2.935, 61, 284, 31.5)]
# Seed 000 s.2: output tok/s and TTFT at max-num-seqs = client concurrency (MTP k=2).
SEED000_SWEEP = [(4, 47.7, 1.2), (8, 73.5, 6.6), (16, 99.6, 7.7), (32, 131.3, 9.1)]


def level(concurrency, tok_s, ttft=1.0, **extra):
    return dict({"concurrency": concurrency, "output_tok_s": tok_s, "ttft_p50_s": ttft, "ttft_p99_s": ttft,
                 "itl_p50_ms": 60.0, "itl_p99_ms": 150.0, "requests_per_s": 1.0}, **extra)


def results(levels_by_run, engine="vllm", workload="chat"):
    """run-loadgen's results.json shape (docs/benchmarking.md)."""
    return {"plan": {"workload": workload, "levels": sorted({lv["concurrency"] for lvs in levels_by_run for lv in lvs}),
                     "runs": len(levels_by_run), "seed": 1},
            "endpoint": {"url": "http://10.0.0.5:8000", "engine": engine, "model": "m"},
            "generator": {"name": "aiperf"},
            "runs": [{"run": index + 1, "levels": levels} for index, levels in enumerate(levels_by_run)]}


def seed002_results():
    return results([[level(500, tok_s, ttft, itl_p50_ms=i50, itl_p99_ms=i99, requests_per_s=rps)]
                    for dummy, tok_s, ttft, i50, i99, rps in SEED002_RUNS], engine="sglang", workload="burst")


# The lookup's options as ansible-core's plugin loader registers them from its DOCUMENTATION.
C.config.initialize_plugin_configuration_definitions(
    "lookup", "bench_plan", yaml.safe_load(lookup_plugin.DOCUMENTATION)["options"])


def bench_plan(step, **options):
    """What lookup('inferops.serving.bench_plan', step, **options) answers."""
    lookup = lookup_plugin.LookupModule()
    lookup._load_name = "bench_plan"
    return lookup.run([step], {}, **options)[0]


def _bench_summary(results_):
    return bench_plan("report", results=results_)["summary"]


def _bench_table(results_, deployment):
    return bench_plan("report", results=results_, deployment=deployment)["table"]


def _bench_level(summary, concurrency, results_=None):
    return bench_plan("level", summary=summary, concurrency=concurrency, results=results_)


def _bench_candidates(deployment, max_num_seqs=None, k=None, base_overrides=None):
    return bench_plan("tune", deployment=deployment, host="h", objective={"ttft_p99_s": 8}, max_num_seqs=max_num_seqs,
                      k=k, overrides=base_overrides or {})["candidates"]


def _bench_tune(entries, objective, deployment, host=None):
    return bench_plan("decision", entries=entries, objective=objective, deployment=deployment, host=host or "")["decision"]


_bench_gate = _bench_plays.gate


@pytest.fixture(scope="module")
def spark():
    return plan("gb10-nvfp4-mtp-throughput")


@pytest.fixture(scope="module")
def g7e():
    return plan("g7e-fp8-sglang-eagle")


def test_summary_keeps_the_plan_and_reports_r2_r3_as_seed002():
    summary = _bench_summary(seed002_results())
    assert summary["runs_used"] == [2, 3] and summary["warmup_run"] == 1
    assert summary["levels"][0]["output_tok_s"]["mean"] == pytest.approx(3215)
    assert round(summary["levels"][0]["output_tok_s"]["std"]) == 24
    assert summary["plan"]["seed"] == 1 and summary["endpoint"]["engine"] == "sglang"
    assert summary["title"] == "sglang m"
    # The runs list alone is accepted too (no plan then).
    assert _bench_summary(seed002_results()["runs"])["levels"][0]["runs"] == [2, 3]


def test_summary_names_what_is_wrong():
    with pytest.raises(AnsibleLookupError, match="no 'runs' key"):
        _bench_summary({"plan": {}})
    with pytest.raises(AnsibleLookupError, match="run 1, concurrency 1, ttft_p50_s: got None"):
        _bench_summary({"runs": [{"run": 1, "levels": [{"concurrency": 1, "output_tok_s": 1.0}]}]})


def test_table_puts_the_profiles_measured_figures_beside_the_sweep(spark):
    runs = [[level(1, 23.0), level(32, tok_s, 9.0)] for tok_s in (140.0, 128.0, 134.0)]
    text = _bench_table(results(runs), spark)
    assert text.startswith("Profile gb10-nvfp4-mtp-throughput (max-num-seqs 32); measured: GB10 field report (DGX Spark)")
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # Single stream 23.6 measured (single_stream_tok_s) vs 23.0 here; saturated 131.3 at 32 vs 131 +- 4.2.
    assert "| 23.6 | -2.5 % |" in rows["1"]
    assert "131.0 ± 4.2" in rows["32"] and "| 131.3 | -0.2 % | 9.1 |" in rows["32"]
    assert "runs 2, 3 (run 1 dropped as warm-up)" in text


def test_table_puts_seed002s_burst_figure_beside_a_burst_only():
    # profiles/g7e-fp8-sglang.yml measured burst_output_tok_s 3215 (the g7e field report, 500 prompts at once).
    g7e_baseline = plan("g7e-fp8-sglang")
    text = _bench_table(seed002_results(), g7e_baseline)
    assert text.startswith("Profile g7e-fp8-sglang (no max-num-seqs set); measured: g7e field report")
    [row] = [line for line in text.splitlines() if line.startswith("| 500 |")]
    assert row.endswith("| 3215.0 | +0.0 % | - |"), row
    # The same 500 streams in a chat sweep are not the burst the figure was measured with: nothing beside.
    chat = results([[level(500, 900.0)]] * 3, engine="sglang")
    text = _bench_table(chat, g7e_baseline)
    assert "measured tok/s" not in text and "3215" not in text


def test_level_gives_plain_means_and_sglang_accept_length(g7e):
    data = seed002_results()
    for run, length in zip(data["runs"], (2.1, 2.9, 3.1)):
        run["levels"][0]["accept_length"] = length
    figures = _bench_level(_bench_summary(data), 500, data)
    assert figures["output_tok_s"] == pytest.approx(3215) and figures["runs"] == [2, 3]
    assert figures["accept_length"] == pytest.approx(3.0)  # R2-R3 only, as the other figures
    with pytest.raises(AnsibleLookupError, match=r"no level at concurrency 32 \(levels: 500\)"):
        _bench_level(_bench_summary(data), 32)


def test_candidates_deploy_through_the_plan_with_derived_expectations(spark, g7e):
    base = {"args": {"host": "127.0.0.1"}}
    found = _bench_candidates(spark, "8,16", [1, 2], base)
    assert [c["label"] for c in found] == ["max-num-seqs 8, k=1", "max-num-seqs 8, k=2", "max-num-seqs 16, k=1",
                                           "max-num-seqs 16, k=2"]
    third = found[2]
    assert third["concurrency"] == 16 and third["config"] == {"max_num_seqs": 16, "k": 1}
    assert third["overrides"]["args"]["host"] == "127.0.0.1"  # the inventory's own overrides kept
    deployed = plan("gb10-nvfp4-mtp-throughput", overrides=third["overrides"])
    # The plan derives what the engine's log must prove from the final flags (vLLM's dotted JSON-arg key).
    assert deployed["expect"]["max_num_seqs"] == 16 and deployed["expect"]["num_speculative_tokens"] == 1
    assert "--speculative_config.num_speculative_tokens 1" in deployed["script"]
    # SGLang: max-running-requests and steps/draft tokens; defaults 4, 8, 16, 32 x k 1, 2, 3.
    sglang = _bench_candidates(g7e)
    assert len(sglang) == 12 and sglang[0]["overrides"]["args"] == {
        "max-running-requests": 4, "speculative-num-steps": 1, "speculative-num-draft-tokens": 2}
    assert plan("g7e-fp8-sglang-eagle", overrides=sglang[-1]["overrides"])["expect"]["max_num_seqs"] == 32


def test_candidates_without_speculative_decoding_do_not_sweep_k(spark):
    plain_plan = dict(spark, profile=dict(spark["profile"], args={
        k: v for k, v in spark["profile"]["args"].items() if k != "speculative_config"}))
    assert [c["config"] for c in _bench_candidates(plain_plan, [4, 8])] == [{"max_num_seqs": 4}, {"max_num_seqs": 8}]
    with pytest.raises(AnsibleLookupError, match="runs no speculative decoding.*leave benchmark_tune_k unset"):
        _bench_candidates(plain_plan, [4], [2])
    with pytest.raises(AnsibleLookupError, match="benchmark_tune_max_num_seqs: got 'four'"):
        _bench_candidates(spark, "four")


def seed000_entries(ks=(2,)):
    out = []
    for seqs, tok_s, ttft in SEED000_SWEEP:
        for k in ks:
            out.append({"config": {"max_num_seqs": seqs, "k": k},
                        "level": level(seqs, tok_s * (1.0 if k == 2 else 0.9), ttft,
                                       acceptance_per_pos=[0.67, 0.36, 0.16][:k])})
    return out


def test_tune_picks_16_for_seed000_with_ttft_8s_and_writes_a_lintable_overlay(spark):
    tuned = _bench_tune(seed000_entries(ks=(1, 2, 3)), {"ttft_p99_s": "8", "itl_p99_ms": None}, spark, "lab-spark")
    assert tuned["met"] and tuned["choice"] == {"max_num_seqs": 16, "k": 2}
    # k: measured 99.6 (k=2) vs 89.6 (k=1 and 3) at 16; by acceptance (k=3's 0.67/0.36/0.16) also 2.
    assert tuned["k_advice"]["measured"]["k"] == 2 and tuned["k_advice"]["acceptance"]["k"] == 2
    overrides = tuned["overlay"]["server_profile_overrides"]
    assert overrides == {"args": {"max-num-seqs": 16, "speculative_config.num_speculative_tokens": 2}}
    evidence = tuned["overlay"]["server_profile_overrides_evidence"]
    assert evidence["host"] == "lab-spark" and evidence["objective"] == {"ttft_p99_s": 8.0}
    assert [r["config"]["max_num_seqs"] for r in evidence["choose"]["rejected"]] == [32, 32, 32]
    profile = load_profile("gb10-nvfp4-mtp-throughput")
    assert [f for f in lint_profile(profile, overrides=overrides) if f["severity"] == "error"] == []
    assert plan("gb10-nvfp4-mtp-throughput", overrides=overrides)["expect"]["max_num_seqs"] == 16


def test_tune_takes_the_smaller_k_that_measured_faster_as_seed001(spark):
    # Seed 001 at 8 concurrent: k=1 14.5-14.9 tok/s, k=2 10.5 tok/s.
    entries = [{"config": {"max_num_seqs": 8, "k": 1}, "level": level(8, 14.7, 1.0, acceptance_per_pos=[0.7])},
               {"config": {"max_num_seqs": 8, "k": 2}, "level": level(8, 10.5, 1.0, acceptance_per_pos=[0.7, 0.4])}]
    tuned = _bench_tune(entries, {"ttft_p99_s": 4}, spark)
    assert tuned["choice"]["k"] == 1 and tuned["k_advice"]["measured"]["k"] == 1
    assert "k=1: 14.7 tok/s measured" in tuned["message"]


def test_tune_says_when_nothing_meets_the_objective(spark):
    tuned = _bench_tune(seed000_entries(), {"ttft_p99_s": 1}, spark)
    assert not tuned["met"] and tuned["overlay"] is None
    assert "no configuration meets ttft_p99_s <= 1" in tuned["message"]
    with pytest.raises(AnsibleLookupError, match="no latency objective: give at least one bound"):
        _bench_tune(seed000_entries(), {"ttft_p99_s": ""}, spark)


def test_gate_refuses_a_nightly_30_percent_slower_with_both_figures():
    baseline = {"concurrency": 32, "output_tok_s": 131.3, "acceptance_per_pos": [0.67, 0.36]}
    verdict = _bench_gate(level(32, 91.9, acceptance_per_pos=[0.67, 0.36]), baseline, "0.10")
    assert not verdict["accepted"] and verdict["signature"] == "slower_than_baseline"
    assert "91.9 tok/s at concurrency 32 vs the baseline's 131.3 tok/s (-30.0 %" in verdict["message"]
    within = _bench_gate(level(32, 125.0, acceptance_per_pos=[0.66, 0.35]), baseline)
    assert within["accepted"] and within["signature"] is None and within["figures"]["output_tok_s"] == 125.0


def test_gate_refuses_collapsed_acceptance_seed001_silently_off():
    baseline = {"concurrency": 8, "output_tok_s": 14.7, "acceptance_per_pos": [0.7]}
    verdict = _bench_gate(level(8, 14.0), baseline)
    assert not verdict["accepted"] and verdict["signature"] == "speculative_acceptance_collapsed"
    assert "none reported vs the baseline's 0.70" in verdict["message"]


def test_gate_without_a_comparable_baseline_records_and_accepts():
    first = _bench_gate(level(32, 130.0), None)
    assert first["accepted"] and first["baseline"] is None
    assert "the lock has no baseline figures" in first["message"] and "recorded 130.0 output tok/s" in first["message"]
    other = _bench_gate(level(32, 130.0), {"concurrency": 16, "output_tok_s": 99.6})
    assert other["accepted"] and "pin_bench_concurrency=16" in other["message"]
    with pytest.raises(_bench_plays.BenchError, match="pin_perf_threshold: got 'ten'"):
        _bench_gate(level(32, 1.0), None, "ten")


def test_tune_with_one_k_says_so_and_what_the_acceptance_rule_suggests(spark):
    # Only k=3 swept; its acceptance (the GB10 field report: 0.67 / 0.36 / 0.16) says position 3 does not pay: k=2.
    entries = [{"config": {"max_num_seqs": seqs, "k": 3},
                "level": level(seqs, tok_s, ttft, acceptance_per_pos=[0.67, 0.36, 0.16])}
               for seqs, tok_s, ttft in SEED000_SWEEP]
    tuned = _bench_tune(entries, {"ttft_p99_s": 8}, spark)
    assert tuned["choice"] == {"max_num_seqs": 16, "k": 3}
    assert tuned["k_advice"]["reason"].startswith("k=3: the only k measured meeting the objective at max-num-seqs 16; "
                                                  "the acceptance rule suggests k=2")


def test_tune_on_sglang_derives_k_advice_from_its_accept_lengths(g7e):
    # SGLang exports only sglang:spec_accept_length (tokens per verify step). Swept at k = 1, 2, 3 with the
    # simulator's g7e acceptance at temperature 1.0 (0.90 / 0.75 / 0.55: tests/lab/engine_sim perf.py),
    # its lengths are 1.90, 2.65, 3.20 (the g7e field report's EAGLE: 3.2 at 3 steps).
    entries = [{"config": {"max_num_seqs": 48, "k": k},
                "level": level(48, tok_s, 2.9, accept_length=length)}
               for k, tok_s, length in ((1, 2600.0, 1.90), (2, 3000.0, 2.65), (3, 3215.0, 3.20))]
    tuned = _bench_tune(entries, {"ttft_p99_s": 4}, g7e, "lab-g7e")
    advice = tuned["k_advice"]
    assert tuned["choice"] == {"max_num_seqs": 48, "k": 3} and advice["measured"]["k"] == 3
    by_length = advice["acceptance"]
    assert [round(rate, 2) for rate in (step["acceptance"] for step in by_length["positions"])] == [0.9, 0.75, 0.55]
    assert by_length["k"] == 3 and by_length["accept_length_by_k"] == {1: 1.90, 2: 2.65, 3: 3.20}
    assert tuned["overlay"]["server_profile_overrides"]["args"] == {
        "max-running-requests": 48, "speculative-num-steps": 3, "speculative-num-draft-tokens": 4}
    # One k only: its length is a sum of rates, not a rate per position; no acceptance advice is made up.
    alone = _bench_tune(entries[2:], {"ttft_p99_s": 4}, g7e)
    assert alone["k_advice"]["acceptance"] is None
    assert alone["k_advice"]["reason"] == "k=3: the only k measured meeting the objective at max-num-seqs 48"


def test_the_gate_names_its_state_and_reads_the_sweeps_level():
    # The pin role's benchmark at concurrency 32: a nightly 30 % slower than the lock's figures.
    baseline = {"concurrency": 32, "output_tok_s": 131.3}
    slow = results([[level(32, 91.9)]] * 3)
    summary = _bench_summary(slow)
    refused = bench_plan("gate", summary=summary, results=slow, concurrency="32", baseline=baseline, threshold="0.10")
    assert refused["state"] == "refused" and not refused["accepted"] and refused["signature"] == "slower_than_baseline"
    assert refused["message"].startswith("refused (throughput): output 91.9 tok/s at concurrency 32")
    accepted = bench_plan("gate", summary=_bench_summary(results([[level(32, 128.0)]] * 3)), concurrency=32,
                          baseline=baseline)
    assert accepted["state"] == "accepted" and accepted["accepted"]
    assert bench_plan("gate", summary=summary, concurrency=32, baseline=None)["state"] == "accepted"
    with pytest.raises(AnsibleLookupError, match="bench_plan gate: the sweep measured no level at concurrency 8"):
        bench_plan("gate", summary=summary, concurrency=8, baseline=baseline)


def test_the_tune_plan_is_decided_before_anything_is_deployed(spark):
    found = bench_plan("tune", deployment=spark, host="lab-spark", objective={"itl_p99_ms": 150},
                       bounds={"ttft_p99_s": "8", "ttft_p50_s": None}, max_num_seqs="8", k=[2],
                       options={"root": "/r", "stamp": "20261201T100000Z", "prefix": "tune-"})
    assert found["objective"] == {"itl_p99_ms": 150.0, "ttft_p99_s": 8.0}
    assert [c["label"] for c in found["candidates"]] == ["max-num-seqs 8, k=2"]
    assert found["dir"] == {"out": "/r/tune-20261201T100000Z/lab-spark"}
    given = bench_plan("tune", deployment=spark, host="lab-spark", bounds={"ttft_p99_s": 8},
                       options={"results_dir": "/tmp/{host}/x"})
    assert given["dir"]["out"] == "/tmp/lab-spark/x"
    with pytest.raises(AnsibleLookupError, match="No latency objective: give at least one bound"):
        bench_plan("tune", deployment=spark, host="lab-spark", bounds={"ttft_p99_s": None})


def test_a_step_it_does_not_know_is_refused():
    with pytest.raises(AnsibleLookupError, match="bench_plan: name one of sweep, report, level, gate, tune, decision"):
        bench_plan("summary")
