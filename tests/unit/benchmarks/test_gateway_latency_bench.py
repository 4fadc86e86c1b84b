# SPDX-License-Identifier: GPL-3.0-or-later
"""benchmarks/gateway_latency_bench.py's argument handling and figures (the run itself is by hand, make bench)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPEC = importlib.util.spec_from_file_location("gateway_latency_bench",
                                              os.path.join(ROOT, "benchmarks", "gateway_latency_bench.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_defaults_are_the_lab_g7e_engine_and_the_lab_gateway():
    args = bench.parse_args([])
    assert (args.engine, args.gateway, args.requests, args.warmup, args.max_tokens) == (
        "http://127.0.0.1:8102/v1", "http://127.0.0.1:4000/v1", 200, 10, 1)


def test_a_trailing_slash_is_dropped():
    assert bench.parse_args(["--gateway", "http://gw:4000/v1/"]).gateway == "http://gw:4000/v1"


@pytest.mark.parametrize("argv, message", [
    (["--requests", "1"], "--requests: got 1; expected 2 or more"),
    (["--engine", "127.0.0.1:8102"], "--engine: got '127.0.0.1:8102'; expected an http(s):// base URL"),
    (["--engine-key-env", "INFEROPS_TEST_UNSET_KEY"], "INFEROPS_TEST_UNSET_KEY is not set"),
])
def test_bad_arguments_are_refused_with_the_fix(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("INFEROPS_TEST_UNSET_KEY", raising=False)
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_master_key_comes_from_the_environment_or_the_lab_inventory(tmp_path):
    assert bench.master_key({"INFEROPS_GATEWAY_KEY": "sk-from-env-0123"}) == "sk-from-env-0123"
    assert bench.master_key({}).startswith("sk-")  # inventories/lab/group_vars/gateway.yml's lab key
    with pytest.raises(SystemExit, match="set INFEROPS_GATEWAY_KEY"):
        bench.master_key({}, lab_vars=str(tmp_path / "absent.yml"))


def test_figures_are_measured_differences_and_ratio():
    direct = [10.0] * 98 + [20.0, 30.0]
    gateway = [13.0] * 98 + [25.0, 40.0]
    result = bench.figures(direct, gateway)
    assert result["direct"] == {"requests": 100, "p50_ms": 10.0, "p99_ms": 20.0}
    assert result["gateway"] == {"requests": 100, "p50_ms": 13.0, "p99_ms": 25.0}
    assert (result["added_p50_ms"], result["added_p99_ms"], result["ratio_p50"]) == (3.0, 5.0, 1.3)


@pytest.mark.parametrize("json_output", [False, True], ids=["table", "json"])
def test_a_run_prints_both_paths_and_the_difference(monkeypatch, capsys, json_output):
    # No engine or gateway: the requests are stubbed, the gateway 3 ms slower than the engine.
    monkeypatch.setattr(bench, "_request", lambda url, body, key, timeout: {"data": [{"id": "m"}]})
    monkeypatch.setattr(bench, "timed", lambda url, body, key, timeout: 13.0 if url.endswith(":4000/v1") else 10.0)
    monkeypatch.setenv("INFEROPS_GATEWAY_KEY", "sk-unit-bench-key-0123")
    assert bench.main(["--requests", "3", "--warmup", "1"] + (["--json"] if json_output else [])) == 0
    out = capsys.readouterr().out
    if json_output:
        result = json.loads(out)
        assert result["gateway"]["p50_ms"] == 13.0 and result["direct"]["p50_ms"] == 10.0
        assert result["gateway_url"] == "http://127.0.0.1:4000/v1" and result["added_p50_ms"] == 3.0
    else:
        assert "direct   http://127.0.0.1:8102/v1" in out and "gateway  http://127.0.0.1:4000/v1" in out
        assert "gateway adds 3.00 ms at p50 (x1.3), 3.00 ms at p99" in out
    assert "sk-unit-bench-key-0123" not in out
