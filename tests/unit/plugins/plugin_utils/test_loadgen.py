# SPDX-License-Identifier: GPL-3.0-or-later
"""The load sweep's decisions (plugins/plugin_utils/_loadgen.py) on real generator output.

Fixtures (tests/unit/fixtures/loadgen, README.md there names each source): AIPerf 0.13.0's own
profile_export_aiperf.json of a 5 s chat 512/256 level at concurrency 4 against the lab engine
simulator (vllm personality) run as a local process on 127.0.0.1, written by scripts/run-loadgen, and
the simulator's /metrics text before and after that level (vLLM) and after a level (SGLang).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _loadgen as lg
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import acceptance_per_position
from ansible_collections.inferops.serving.plugins.plugin_utils._engines import METRICS

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "loadgen")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def report():
    return json.loads(fixture("aiperf-0.13.0-chat-c4-vllm-sim.json"))


def test_level_from_the_real_aiperf_report(report):
    level = lg.level_result(report, 4, source="fixture")
    # The figures AIPerf computed (its console table of the same run shows them), in the field reports' units.
    assert level == {
        "concurrency": 4,
        "output_tok_s": round(report["output_token_throughput"]["avg"], 3),
        "ttft_p50_s": round(report["time_to_first_token"]["p50"] / 1000, 4),
        "ttft_p99_s": round(report["time_to_first_token"]["p99"] / 1000, 4),
        "itl_p50_ms": round(report["inter_token_latency"]["p50"], 3),
        "itl_p99_ms": round(report["inter_token_latency"]["p99"], 3),
        "requests_per_s": round(report["request_throughput"]["avg"], 4),
        "requests": 157,
        "errors": 0,
    }
    assert level["output_tok_s"] == pytest.approx(1927.956)
    assert level["ttft_p50_s"] == pytest.approx(0.0893, abs=1e-4)
    assert level["requests_per_s"] == pytest.approx(31.2695, abs=1e-4)
    # output tok/s is output tokens over the level's duration (AIPerf's definition; the field reports' aggregate).
    assert level["output_tok_s"] == pytest.approx(
        report["total_output_tokens"]["avg"] / report["benchmark_duration"]["avg"], rel=0.02)


def test_report_without_a_completed_request_names_the_errors(report):
    failed = copy.deepcopy(report)
    failed["completed_request_count"] = {"unit": "requests", "avg": 0.0}
    failed["error_summary"] = [{"error_details": {"code": 500, "message": "EngineCore encountered an issue"},
                                "count": 12}]
    with pytest.raises(lg.LoadgenError, match=r"no request completed at concurrency 4 \(12 errors: .*EngineCore"):
        lg.level_result(failed, 4, source="r.json")


@pytest.mark.parametrize("metric", ["output_token_throughput", "time_to_first_token", "inter_token_latency",
                                    "request_throughput"])
def test_report_missing_a_metric_is_refused_by_name(report, metric):
    del report[metric]
    with pytest.raises(lg.LoadgenError, match="r.json has no %s" % metric):
        lg.level_result(report, 4, source="r.json")


def test_latency_in_other_units_is_refused(report):
    report["time_to_first_token"]["unit"] = "sec"
    with pytest.raises(lg.LoadgenError, match="time_to_first_token in sec, expected ms"):
        lg.level_result(report, 4, source="r.json")


def test_vllm_engine_figures_from_real_metrics():
    before, after = fixture("vllm-sim-metrics-before-c4.txt"), fixture("vllm-sim-metrics-after-c4.txt")
    figures = lg.engine_figures(METRICS["vllm"], before, after)
    # The GB10 field report read 0.67 / 0.36 at positions 0 / 1 (MTP k=2, temperature 1.0): the simulator's calibration.
    assert figures["acceptance_per_pos"] == pytest.approx([0.6739, 0.3624], abs=1e-4)
    assert figures["kv_cache_usage"] == 0.0  # idle after the level: the peak comes from samples taken during it
    assert "accept_length" not in figures
    during = after.replace('vllm:kv_cache_usage_perc{engine="0",model_name="RedHatAI/NVIDIA-Nemotron-3-Super-'
                           '120B-A12B-NVFP4"} 0.0', 'vllm:kv_cache_usage_perc{engine="0",model_name="x"} 0.043')
    assert during != after
    assert lg.engine_figures(METRICS["vllm"], before, after, [after, during])["kv_cache_usage"] == 0.043


def test_acceptance_is_the_delta_over_the_level_not_the_total():
    before, after = fixture("vllm-sim-metrics-before-c4.txt"), fixture("vllm-sim-metrics-after-c4.txt")
    since_start = acceptance_per_position(METRICS["vllm"], "", after)
    over_level = acceptance_per_position(METRICS["vllm"], before, after)
    assert since_start != over_level
    assert acceptance_per_position(METRICS["vllm"], after, after) is None  # no draft in the window


def test_sglang_has_accept_length_not_per_position():
    after = fixture("sglang-sim-metrics-after-c4.txt")
    figures = lg.engine_figures(METRICS["sglang"], "", after)
    assert figures == {"kv_cache_usage": 0.0, "accept_length": 2.909}


def test_sweep_plan_runs_whole_sweeps_in_order():
    plan = lg.sweep_plan("chat", levels=["1", "4"], runs=3, duration_s=20)
    assert plan["steps"] == [(1, 1), (1, 4), (2, 1), (2, 4), (3, 1), (3, 4)]
    assert (plan["isl"], plan["osl"], plan["duration_s"], plan["requests"], plan["seed"]) == (512, 256, 20, None, 1)


def test_sweep_plan_defaults_follow_the_seeds():
    assert lg.sweep_plan("chat")["levels"] == [1, 4, 8, 16, 32]
    assert lg.sweep_plan("chat")["duration_s"] == 180
    burst = lg.sweep_plan("burst")
    assert (burst["isl"], burst["osl"], burst["osl_stddev"], burst["requests"], burst["duration_s"],
            burst["levels"]) == (200, 96, 57, 500, None, [500])
    argv = lg.aiperf_argv("aiperf", burst, 500, "u", "m", "t", "d")
    assert argv[argv.index("--osl") + 1:argv.index("--osl") + 4] == ["96", "--osl-stddev", "57"]
    chat = lg.aiperf_argv("aiperf", lg.sweep_plan("chat"), 4, "u", "m", "t", "d")
    assert chat[chat.index("--osl-stddev") + 1] == "0"


@pytest.mark.parametrize("kwargs, message", [
    ({"runs": 2}, "runs is 2: a measurement takes at least 3 runs"),
    ({"levels": [4, 4]}, r"repeat a level"),
    ({"levels": [0]}, "each concurrency level must be a positive whole number, got 0"),
    ({"levels": ["x"]}, "each concurrency level must be a positive whole number, got 'x'"),
    ({"duration_s": 10, "requests": 5}, "either a duration per level or a number of requests"),
    ({"duration_s": "-5"}, r"duration per level \(seconds\) must be a positive whole number"),
    ({"workload": "sonnet"}, "workload 'sonnet' is not one of burst, chat, long"),
])
def test_sweep_plan_refusals(kwargs, message):
    with pytest.raises(lg.LoadgenError, match=message):
        lg.sweep_plan(**kwargs)


def test_fewer_runs_only_when_asked():
    assert lg.sweep_plan(runs=1, allow_fewer_runs=True)["steps"] == [(1, c) for c in (1, 4, 8, 16, 32)]


def test_warmup_fills_the_levels_batch():
    plan = lg.sweep_plan()
    assert [lg.warmup_for(plan, c) for c in (1, 4, 32)] == [3, 4, 32]
    assert lg.warmup_for(lg.sweep_plan(warmup_requests=2), 32) == 2
    assert lg.warmup_for(lg.sweep_plan("burst"), 500) == 3  # not a second burst of 500


def test_aiperf_argv():
    plan = lg.sweep_plan("chat", levels=[8], duration_s=30, seed=7)
    argv = lg.aiperf_argv("/venv/bin/aiperf", plan, 8, "http://10.0.0.5:8000", "m", "/tok", "/out/run1-c8")
    assert argv[:2] == ["/venv/bin/aiperf", "profile"]
    pairs = dict(zip(argv[2:], argv[3:]))
    assert {k: pairs[k] for k in ("--url", "--concurrency", "--isl", "--osl", "--random-seed", "--benchmark-duration",
                                  "--warmup-request-count", "--tokenizer", "--artifact-dir", "--extra-inputs")} == {
        "--url": "http://10.0.0.5:8000", "--concurrency": "8", "--isl": "512", "--osl": "256", "--random-seed": "7",
        "--benchmark-duration": "30", "--warmup-request-count": "8", "--tokenizer": "/tok",
        "--artifact-dir": "/out/run1-c8", "--extra-inputs": "ignore_eos:true"}
    assert "--use-server-token-count" in argv and "--streaming" in argv and "--api-key" not in argv
    burst = lg.aiperf_argv("aiperf", lg.sweep_plan("burst"), 500, "u", "m", "t", "d", ignore_eos=False)
    assert burst[burst.index("--request-count") + 1] == "500" and "--benchmark-duration" not in burst
    assert "--extra-inputs" not in burst


def test_aiperf_argv_with_an_api_key_names_its_variable_never_the_key():
    plan = lg.sweep_plan("chat", levels=[4], duration_s=5)
    plain = lg.aiperf_argv("/v/bin/aiperf", plan, 4, "u", "m", "t", "d")
    keyed = lg.aiperf_argv("/v/bin/aiperf", plan, 4, "u", "m", "t", "d", api_key_env="VLLM_API_KEY",
                           python="/v/bin/python")
    assert keyed[:4] == ["/v/bin/python", "-c", lg.AIPERF_LAUNCHER, "VLLM_API_KEY"]
    assert keyed[4:] == plain[1:] and "--api-key" not in keyed
    with pytest.raises(lg.LoadgenError, match="VLLM_API_KEY.*python"):
        lg.aiperf_argv("a", plan, 4, "u", "m", "t", "d", api_key_env="VLLM_API_KEY")


def _launch(tmp_path, env_name, env):
    """Run AIPERF_LAUNCHER with a stand-in ``aiperf`` package on its path (the real one is in
    .venv-loadgen; tests/bench runs it): its ``cli.app`` records the tokens, sys.argv and the
    environment AIPerf would see."""
    package = tmp_path / "aiperf"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(
        "import json, os, sys\n"
        "def app(tokens):\n"
        "    print(json.dumps({'tokens': tokens, 'argv': sys.argv, 'env': dict(os.environ)}))\n"
        "    return 0\n")
    plain = lg.aiperf_argv("aiperf", lg.sweep_plan("chat", levels=[4], duration_s=5), 4, "u", "m", "t", "d")
    argv = [sys.executable, "-c", lg.AIPERF_LAUNCHER, env_name] + plain[1:]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60,
                          env=dict(env, PYTHONPATH=str(tmp_path), PATH=os.environ.get("PATH", "")))


def test_the_launcher_hands_the_key_to_aiperf_in_the_process_only(tmp_path):
    secret = "sk-launch-test-5e1d"
    done = _launch(tmp_path, "VLLM_API_KEY", {"VLLM_API_KEY": secret})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["tokens"][-2:] == ["--api-key", secret] and seen["tokens"][0] == "profile"
    assert secret not in json.dumps(seen["argv"]) and seen["argv"][:2] == ["aiperf", "profile"]
    assert "VLLM_API_KEY" not in seen["env"]  # popped: no AIPerf subprocess inherits it
    missing = _launch(tmp_path, "VLLM_API_KEY", {})
    assert missing.returncode == 1 and "VLLM_API_KEY holds no API key" in missing.stderr
    assert missing.stdout == ""


def test_add_level_keeps_runs_in_order():
    results = {}
    for run, concurrency in [(1, 1), (1, 4), (2, 1)]:
        lg.add_level(results, run, {"concurrency": concurrency})
    assert results == {"runs": [{"run": 1, "levels": [{"concurrency": 1}, {"concurrency": 4}]},
                                {"run": 2, "levels": [{"concurrency": 1}]}]}


def test_measured_points_of_the_shipped_profiles():
    # profiles/gb10-nvfp4-mtp-throughput.yml measured (the GB10 field report) with its max-num-seqs 32.
    measured = {"single_stream_tok_s": 23.6, "saturated_tok_s": 131.3, "sustained_tok_s": 136,
                "ttft_at_saturation_s": 9.1, "source": "the GB10 field report", "draft_acceptance_by_position": [0.67, 0.36, 0.16]}
    assert lg.measured_points(measured, max_num_seqs=32) == {
        "output_tok_s": [{"concurrency": 1, "value": 23.6, "label": "single_stream_tok_s"},
                         {"concurrency": 32, "value": 131.3, "label": "saturated_tok_s"}],
        "ttft_s": [{"concurrency": 32, "value": 9.1, "label": "ttft_at_saturation_s"}]}
    # (sustained_tok_s, also at 32, is not drawn over saturated_tok_s: one point a level.)
    # gb10-nvfp4-fallback.yml: a range; without max-num-seqs only the single stream is placed.
    assert lg.measured_points({"single_stream_tok_s": "15-17", "aggregate_tok_s": 40}) == {
        "output_tok_s": [{"concurrency": 1, "value": 16.0, "label": "single_stream_tok_s"}], "ttft_s": []}
    assert lg.measured_points({"burst_output_tok_s": 3215}, burst_concurrency=500)["output_tok_s"] == [
        {"concurrency": 500, "value": 3215.0, "label": "burst_output_tok_s"}]


def test_first_request_error_from_real_records():
    records = fixture("aiperf-0.13.0-records-unknown-model.jsonl")
    assert lg.first_request_error(records) == "404 Not Found: The model `no-such-model` does not exist."
    assert lg.first_request_error("") is None
    assert lg.first_request_error('{"metadata": {}, "metrics": {"x": 1}}\nnot json\n') is None


def test_api_key_from_stdin_or_a_variable_refuses_an_empty_one_naming_its_source():
    secret = "sk-stdin-test-91c2"
    assert lg.api_key(secret + "\n") == secret  # the command module's stdin adds a newline
    assert lg.api_key(secret + "\nignored\n", {"VLLM_API_KEY": "other"}, "VLLM_API_KEY") == secret
    assert lg.api_key(None, {"VLLM_API_KEY": secret}, "VLLM_API_KEY") == secret
    assert lg.api_key(None, {"VLLM_API_KEY": secret}) is None  # no source asked for: no key
    for stdin, env, name, needle in (("\n", {}, None, "--api-key-stdin: the first line of standard input is empty"),
                                     ("", {}, None, "--api-key-stdin"),
                                     (None, {"VLLM_API_KEY": " "}, "VLLM_API_KEY",
                                      "--api-key-env VLLM_API_KEY names an empty or unset environment variable")):
        with pytest.raises(lg.LoadgenError, match=needle.replace("-", r"\-")):
            lg.api_key(stdin, env, name)


def test_aiperf_tmp_base_keeps_its_socket_paths_under_the_unix_limit():
    # AIPerf 0.x: <base>/tmpXXXXXXXX/aiperf/event_bus_proxy_backend.ipc, at most 107 characters.
    # run-loadgen names the run's directory aiperf-<pid>-XXXXXXXX; Linux's largest pid (pid_max) has 7 digits.
    socket_tail = "/aiperf-4194304-abcdefgh/tmpcezztt_7/aiperf/event_bus_proxy_backend.ipc"
    assert lg.aiperf_tmp_base("/tmp") == "/tmp"
    assert lg.aiperf_tmp_base("/" + "t" * 35) == "/" + "t" * 35
    assert lg.aiperf_tmp_base("/" + "t" * 36) == "/tmp"
    assert lg.aiperf_tmp_base("/tmp/pytest-of-root/pytest-3778/test_sweep_against_the_simulat0/tmp") == "/tmp"
    assert lg.aiperf_tmp_base("/var/long/tmp", fallback="/x") == "/var/long/tmp"
    assert len("/" + "t" * 35 + socket_tail) <= 107
