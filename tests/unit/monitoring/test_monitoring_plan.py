# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What Prometheus scrapes, from the deployment plans (plugin_utils/_monitoring): targets,
prometheus.yml (checked by the real ``promtool check config``), the profiles' objectives, the
option checks, and the watchdog metric names the rules read against what the program writes."""
from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m
from ansible_collections.inferops.serving.tests.unit.watchdog.watchdog_program import base_config, load_program

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "textfile_dir": "/var/lib/node_exporter"}


def hosts(secret_env=()):
    return [
        {"host": "spark-1", "address": "10.0.0.1",
         "deployment": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101, secret_env=list(secret_env)))},
        {"host": "g7e-1", "deployment": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8000, secret_env=[]))},
    ]


def test_targets_come_from_the_plans():
    targets = m.scrape_targets(hosts())
    engines = {t["labels"]["host"]: t for t in targets if t["labels"]["inferops_role"] == "engine"}
    assert engines["spark-1"]["address"] == "10.0.0.1:8101"
    assert engines["spark-1"]["metrics_path"] == "/metrics"
    assert engines["spark-1"]["labels"] == {"host": "spark-1", "profile": "gb10-nvfp4-mtp-latency",
                                            "inference_engine": "vllm", "container": "inferops-serving",
                                            "inferops_role": "engine"}
    # No address: the inventory name is what the monitoring host resolves.
    assert engines["g7e-1"]["address"] == "g7e-1:8000"
    assert engines["g7e-1"]["labels"]["inference_engine"] == "sglang"
    nodes = {t["labels"]["host"]: t for t in targets if t["labels"]["inferops_role"] == "node"}
    assert nodes["spark-1"]["labels"]["unified_memory"] == "true"
    assert nodes["g7e-1"]["labels"]["unified_memory"] == "false"
    assert nodes["spark-1"]["address"] == "10.0.0.1:9100"
    assert all(t["credentials_file"] is None for t in targets)


def test_an_engine_with_an_api_key_is_scraped_with_it_from_a_file():
    targets = m.scrape_targets(hosts(secret_env=["VLLM_API_KEY"]), {"credentials_dir": "/etc/prometheus/keys"})
    spark = next(t for t in targets if t["job"] == "inferops-engine-spark-1")
    assert spark["api_key_env"] == "VLLM_API_KEY"
    assert spark["credentials_file"] == "/etc/prometheus/keys/spark-1.key"
    config = m.prometheus_config(targets)
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "inferops-engine-spark-1")
    assert job["authorization"] == {"type": "Bearer", "credentials_file": "/etc/prometheus/keys/spark-1.key"}
    # The key itself is nowhere in the configuration.
    assert "VLLM_API_KEY" not in yaml.safe_dump(config)


def test_a_host_without_a_plan_is_refused_naming_the_fix():
    with pytest.raises(m.MonitoringError, match="lab-x has no deployment plan.*resolve"):
        m.scrape_targets([{"host": "lab-x", "deployment": None}])


@pytest.mark.parametrize("options, message", [
    ({"decode_floor_fraction": 2}, "monitoring_decode_floor_fraction is 2"),
    ({"ttft_margin": 0.5}, "monitoring_ttft_margin is 0.5"),
    ({"scrape_interval": "15"}, "monitoring_scrape_interval is '15'"),
    ({"kv_cache_full_ratio": "full"}, "monitoring_kv_cache_full_ratio is 'full': it must be a number"),
])
def test_bad_options_name_the_variable(options, message):
    with pytest.raises(m.MonitoringError, match=message):
        m.settings(options)


def test_prometheus_config_passes_promtool(tmp_path):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is missing: install Debian's prometheus package (tests/lab/lab.sh up installs it)")
    key = tmp_path / "spark-1.key"
    key.write_text("not-a-real-key\n")
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(m.alert_rules(hosts(["VLLM_API_KEY"]))))
    options = {"credentials_dir": str(tmp_path), "rules_file": str(rules)}
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(m.prometheus_config(m.scrape_targets(hosts(["VLLM_API_KEY"]), options), options)))
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


def test_objectives_from_the_measured_figures():
    latency = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101))["profile"]
    found = m.objectives(latency)
    # 24.2 tok/s single stream x 0.5; (0.67 + 0.36 + 0.16) x 0.6; 1.2 s x 2.
    assert found["decode_floor"] == 12.1
    assert found["accepted_per_draft"] == 0.714
    assert found["ttft"] == 2.4
    eagle = d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8101))["profile"]
    assert m.objectives(eagle)["accepted_per_draft"] == 1.32  # (3.2 - 1) x 0.6
    sglang = d.plan("g7e-fp8-sglang", dict(OPTIONS, port=8101))["profile"]
    found = m.objectives(sglang)
    assert found["decode_floor"] == 25.0  # 1000 / 20 ms median ITL x 0.5
    assert found["ttft"] == 0.3 and found["sources"]["ttft"] == "measured.online_4rps_ttft_ms"
    assert m.objectives({"name": "bare"}) == {"decode_floor": None, "accepted_per_draft": None, "ttft": None,
                                              "sources": {}}


def test_a_profile_without_figures_gets_no_objective_series():
    rules = m.objective_rules([{"profile": {"name": "bare"}}])
    assert rules == []


def test_watchdog_metric_names_are_what_the_program_writes():
    wd = load_program()
    cfg = base_config()
    names = {f.name for f in text_string_to_metric_families(wd.render_textfile(wd.new_state(cfg), cfg, 1000.0))}
    # prometheus_client's parser names a counter family without its _total.
    written = names | {name + "_total" for name in names}
    assert set(m.WATCHDOG_METRICS.values()) <= written
