# SPDX-License-Identifier: GPL-3.0-or-later
"""The watchdog's configuration from the deployment plan: validation of the role's variables,
the slow floor from the profile's measured figures, and a result the program itself accepts."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils._engines import METRICS as ENGINE_METRICS
from ansible_collections.inferops.serving.plugins.plugin_utils._watchdog import (
    WatchdogConfigError, measured_single_stream, watchdog_config)
from ansible_collections.inferops.serving.tests.unit.watchdog.watchdog_program import load_program


# server_deployment as the plan (PLAN_CONTRACT) gives it for the lab's GB10 host.
DEPLOYMENT = {
    "engine": "vllm",
    "container": "inferops-serving",
    "served_model_name": "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
    "port": 8101,
    "urls": {"base": "http://127.0.0.1:8101", "chat": "http://127.0.0.1:8101/v1/chat/completions",
             "completions": "http://127.0.0.1:8101/v1/completions", "metrics": "http://127.0.0.1:8101/metrics",
             "health": "http://127.0.0.1:8101/health"},
    "memory": {"fraction": 0.9},
    "metrics": {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting",
                "generation_tokens": "vllm:generation_tokens_total", "kv_usage": "vllm:kv_cache_usage_perc",
                "spec_drafts": "vllm:spec_decode_num_drafts_total"},
    "profile": {"name": "gb10-nvfp4-mtp-throughput", "measured": {"single_stream_tok_s": 23.6}},
}
OPTIONS = {"interval": 30, "probe_deadline": 20, "probe_max_tokens": 4, "restart_budget": 3, "startup_grace": 1800,
           "crash_loop_restarts": 2, "crash_loop_window": 600, "unified_memory": True,
           "meminfo_path": "/etc/inferops-lab/meminfo", "memory_wait_timeout": 300, "slow_floor": None,
           "slow_fraction": 0.3, "slow_window": None, "docker_host": "unix:///var/run/docker.sock",
           "drop_caches_file": "/proc/sys/vm/drop_caches", "probe_prompt": "What is 2+2? Answer with just the number.",
           "state_file": "/var/lib/inferops-serving/watchdog-inferops-serving.json",
           "textfile": "/var/lib/node_exporter/inferops_watchdog_inferops_serving.prom", "log_lines": 50}


def program():
    return load_program()


def test_drop_caches_reaches_the_program_on_unified_memory_only():
    deployment = dict(DEPLOYMENT, memory={"fraction": 0.85, "unified": True, "reads": "MemFree"})
    config = watchdog_config(deployment, dict(OPTIONS, drop_caches_before_start=True, drop_caches_file="/etc/inferops-lab/dc"))
    assert (config["drop_caches_before_start"], config["memory_reads"], config["memory_fraction"]) == (True, "MemFree", 0.85)
    assert config["drop_caches_file"] == "/etc/inferops-lab/dc"
    assert program().load_config(config)["drop_caches_before_start"] is True
    assert watchdog_config(deployment, dict(OPTIONS, drop_caches_before_start=True, unified_memory=False))["drop_caches_before_start"] is False


def test_config_from_the_plan_is_what_the_program_reads():
    config = watchdog_config(DEPLOYMENT, OPTIONS)
    assert config["metrics"] == {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting",
                                 "generation_tokens": "vllm:generation_tokens_total", "tokens_counted": "step"}
    assert config["slow_floor"] == 7.08
    assert config["slow_floor_source"] == "0.3 x the profile's measured single_stream_tok_s 23.6"
    assert config["slow_window"] == 30 and config["memory_fraction"] == 0.9 and config["unified_memory"] is True
    assert config["memory_reads"] == "MemAvailable" and config["drop_caches_before_start"] is False
    loaded = program().load_config(config)
    assert loaded["restart_budget"] == 3 and loaded["urls"]["chat"].endswith("/v1/chat/completions")


@pytest.mark.parametrize("changes, message", [
    ({"interval": 0}, "watchdog_interval must be > 0 (seconds), got 0"),
    ({"restart_budget": -1}, "watchdog_restart_budget must be >= 0 (restarts per hour), got -1"),
    ({"restart_budget": 1.5}, "watchdog_restart_budget must be a whole number"),
    ({"probe_deadline": 30}, "watchdog_probe_deadline (30 s) must be shorter than watchdog_interval (30 s)"),
    ({"interval": "often"}, "watchdog_interval must be a number (seconds), got 'often'"),
    ({"slow_floor": -2}, "watchdog_slow_floor must be > 0 (tokens/s), got -2"),
    ({"memory_wait_timeout": None}, "server_memory_wait_timeout must be a number"),
])
def test_bad_options_are_refused_with_the_variable(changes, message):
    with pytest.raises(WatchdogConfigError) as caught:
        watchdog_config(DEPLOYMENT, dict(OPTIONS, **changes))
    assert str(caught.value).startswith("the watchdog cannot be configured: ")
    assert message in str(caught.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(WatchdogConfigError) as caught:
        watchdog_config(dict(DEPLOYMENT, engine="tgi"), dict(OPTIONS, interval=0, restart_budget=-3))
    text = str(caught.value)
    assert "watchdog_interval" in text and "watchdog_restart_budget" in text
    assert "the deployment's engine 'tgi' is not one the watchdog knows (sglang, vllm)" in text


def test_numbers_from_extra_vars_arrive_as_strings():
    config = watchdog_config(DEPLOYMENT, dict(OPTIONS, interval="10", probe_deadline="4.5", restart_budget="2"))
    assert (config["interval"], config["probe_deadline"], config["restart_budget"]) == (10, 4.5, 2)


def test_sglang_plan_without_metric_names_uses_the_engine_table():
    deployment = dict(DEPLOYMENT, engine="sglang", metrics={}, profile={"measured": {"burst_output_tok_s": 977}})
    config = watchdog_config(deployment, OPTIONS)
    assert config["metrics"]["generation_tokens"] == "sglang:generation_tokens_total"
    assert config["metrics"]["tokens_counted"] == "finish"
    assert config["slow_floor"] is None and config["slow_floor_source"].startswith("off (no watchdog_slow_floor")


@pytest.mark.parametrize("measured, rate", [({"single_stream_tok_s": 24.2}, 24.2),
                                            ({"single_stream_tok_s": "15-17"}, 15.0), ({}, None), (None, None)])
def test_measured_single_stream(measured, rate):
    assert measured_single_stream({"measured": measured}) == rate


def test_explicit_floor_and_disabled_fraction():
    assert watchdog_config(DEPLOYMENT, dict(OPTIONS, slow_floor=100))["slow_floor"] == 100.0
    assert watchdog_config(DEPLOYMENT, dict(OPTIONS, slow_fraction=0))["slow_floor"] is None


def test_engine_metrics_table():
    assert set(ENGINE_METRICS) == {"vllm", "sglang"}
    assert ENGINE_METRICS["sglang"]["running"] == "sglang:num_running_reqs"
    assert ENGINE_METRICS["vllm"]["tokens_counted"] == "step" and ENGINE_METRICS["sglang"]["tokens_counted"] == "finish"


def test_one_spelling_from_inventory_to_program():
    """Every watchdog option is its role variable without the ``watchdog_``/``server_``
    prefix, and the program reads that same key (issue 21: restart_budget was max_restarts_per_hour)."""
    import os
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(root, "roles", "server", "vars", "main.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["__server_watchdog_options"]
    defaults = {}
    for role in ("server", "watchdog"):
        with open(os.path.join(root, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
            defaults.update(yaml.safe_load(handle))
    renamed = {"probe_prompt": "server_smoke_prompt"}
    # unified_memory is the plan's own (server_deployment.memory.unified), not a setting.
    assert "unified_memory" not in options
    options = dict(options, unified_memory=None)
    for key, value in options.items():
        if key == "unified_memory":
            continue
        if key == "startup_grace":  # null: the server role's readiness cap
            assert value == "{{ server_ready_timeout if watchdog_startup_grace is none else watchdog_startup_grace }}"
            continue
        variable = renamed.get(key) or next(v for v in ("watchdog_" + key, "server_" + key) if v in defaults)
        assert value.replace(" | bool", "") == "{{ %s }}" % variable
    config = watchdog_config(DEPLOYMENT, OPTIONS)
    loaded = program().load_config(config)
    for key in set(options) - {"slow_fraction"}:
        assert key in config and key in loaded
    assert "restart_budget" in program().NOT_NEGATIVE
    assert not set(program().DEFAULTS) & set(options)


def test_the_restart_waits_as_long_as_the_plans_graceful_stop():
    """Issue 22: the watchdog's restart gives the engine the plan's stop timeout (longer than vLLM's
    --shutdown-timeout), not its own 30 s, so a restart finishes the requests in flight too."""
    program = load_program()
    default = program.DEFAULTS["stop_timeout"]
    assert "stop_timeout" not in watchdog_config(DEPLOYMENT, OPTIONS)  # the program's own default
    graceful = dict(DEPLOYMENT, shutdown={"graceful": True, "timeout": 60, "stop_timeout": 90})
    config = watchdog_config(graceful, OPTIONS)
    assert config["stop_timeout"] == 90 > default
    assert program.load_config(config)["stop_timeout"] == 90  # what the program on the host reads
    cut = dict(DEPLOYMENT, shutdown={"graceful": False, "timeout": 0, "stop_timeout": None})
    assert "stop_timeout" not in watchdog_config(cut, OPTIONS)
