# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The alert rules (plugin_utils/_monitoring.alert_rules) run by the real Prometheus: ``promtool
check rules`` and ``promtool test rules`` with one scenario per fault, each checked against every
alert: the fault's alert fires naming the host, every other alert stays quiet, and a busy,
generating fleet fires nothing.

The input series are written with the engines' own metric names as the released engines expose
them (vLLM 0.17-0.33 vllm/v1/metrics/loggers.py, SGLang 0.5.5-0.5.23 srt/metrics/collector.py;
the engine catalog's metrics per release), node_exporter's and the watchdog's textfile
names, not read from _engines.METRICS: a metric renamed in the plan's table and not in the
engine is caught here. promtool comes from Debian's ``prometheus`` package; tests/lab/lab.sh up
installs it (``make test`` runs it first), and its absence fails these tests.
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _dashboards as dash
from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "secret_env": [],
           "textfile_dir": "/var/lib/node_exporter"}
# The lab's two hosts (inventories/lab): GB10 with vLLM + MTP, g7e with SGLang + EAGLE.
HOSTS = [
    {"host": "lab-spark", "address": "10.0.0.1", "deployment": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101))},
    {"host": "lab-g7e", "address": "10.0.0.2", "deployment": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102))},
]
SPARK = {"container": "inferops-serving", "host": "lab-spark", "inference_engine": "vllm",
         "instance": "10.0.0.1:8101", "profile": "gb10-nvfp4-mtp-latency"}
G7E = {"container": "inferops-serving", "host": "lab-g7e", "inference_engine": "sglang",
       "instance": "10.0.0.2:8102", "profile": "g7e-fp8-sglang-eagle"}
SPARK_NODE = {"host": "lab-spark", "instance": "10.0.0.1:9100", "job": "inferops-node-lab-spark",
              "inferops_role": "node", "unified_memory": "true"}
G7E_NODE = {"host": "lab-g7e", "instance": "10.0.0.2:9100", "job": "inferops-node-lab-g7e",
            "inferops_role": "node", "unified_memory": "false"}
SAMPLES = 200  # 15 s apart: 50 minutes
BUCKETS = ("0.5", "1", "2.5", "5", "10", "+Inf")


def promtool():
    path = shutil.which("promtool")
    if not path:
        pytest.fail("promtool is missing: install Debian's prometheus package (apt-get install prometheus); "
                    "tests/lab/lab.sh up installs it for make test")
    return path


def target(labels, role="engine"):
    return dict(labels, job="inferops-%s-%s" % (role, labels["host"]), inferops_role=role)


def series_name(name, labels):
    return "%s{%s}" % (name, ", ".join('%s="%s"' % (k, v) for k, v in sorted(labels.items())))


def histogram(out, name, labels, per_step):
    """A latency histogram whose observations per 15 s land in the buckets as ``per_step`` says."""
    total = 0
    for bucket in BUCKETS:
        total = per_step.get(bucket, total)
        out[series_name(name + "_bucket", dict(labels, le=bucket))] = "0+%dx%d" % (total, SAMPLES)


def vllm_engine(labels):
    """A busy, healthy vLLM with MTP k=2: 4 running, 30 tok/s, 1.1 accepted per draft, TTFT < 1 s."""
    t, own = target(labels), dict(target(labels), model_name="nemotron", engine="0")
    out = {series_name("up", t): "1x%d" % SAMPLES,
           series_name("vllm:num_requests_running", own): "4x%d" % SAMPLES,
           series_name("vllm:num_requests_waiting", own): "0x%d" % SAMPLES,
           series_name("vllm:kv_cache_usage_perc", own): "0.5x%d" % SAMPLES,
           series_name("vllm:generation_tokens_total", own): "0+450x%d" % SAMPLES,
           series_name("vllm:prompt_tokens_total", own): "0+600x%d" % SAMPLES,
           series_name("vllm:spec_decode_num_drafts_total", own): "0+150x%d" % SAMPLES,
           series_name("vllm:spec_decode_num_accepted_tokens_total", own): "0+165x%d" % SAMPLES,
           series_name("vllm:spec_decode_num_accepted_tokens_per_pos_total", dict(own, position="0")):
               "0+100x%d" % SAMPLES,
           series_name("vllm:spec_decode_num_accepted_tokens_per_pos_total", dict(own, position="1")):
               "0+65x%d" % SAMPLES}
    histogram(out, "vllm:time_to_first_token_seconds", own, {"0.5": 2, "1": 3})
    histogram(out, "vllm:inter_token_latency_seconds", own, {"0.5": 450})
    return out


def sglang_engine(labels):
    """A busy, healthy SGLang with EAGLE: 8 running, 3 tokens per verify step, TTFT < 1 s."""
    t, own = target(labels), dict(target(labels), model_name="nemotron", tp_rank="0")
    out = {series_name("up", t): "1x%d" % SAMPLES,
           series_name("sglang:num_running_reqs", own): "8x%d" % SAMPLES,
           series_name("sglang:num_queue_reqs", own): "0x%d" % SAMPLES,
           series_name("sglang:token_usage", own): "0.5x%d" % SAMPLES,
           series_name("sglang:generation_tokens_total", own): "0+3000x%d" % SAMPLES,
           series_name("sglang:prompt_tokens_total", own): "0+4000x%d" % SAMPLES,
           series_name("sglang:spec_accept_length", own): "3x%d" % SAMPLES}
    histogram(out, "sglang:time_to_first_token_seconds", own, {"0.5": 4, "1": 8})
    histogram(out, "sglang:inter_token_latency_seconds", own, {"0.5": 3000})
    return out


def node(labels, memfree):
    """node_exporter with the textfile collector and the watchdog's file, all healthy."""
    out = {series_name("up", labels): "1x%d" % SAMPLES,
           series_name("node_memory_MemTotal_bytes", labels): "128000000000x%d" % SAMPLES,
           # After a model load on GB10: the page cache holds the weights, MemAvailable counts it free.
           series_name("node_memory_MemFree_bytes", labels): "%dx%d" % (memfree, SAMPLES),
           series_name("node_memory_MemAvailable_bytes", labels): "60000000000x%d" % SAMPLES,
           series_name("node_memory_Cached_bytes", labels): "45000000000x%d" % SAMPLES,
           series_name("node_textfile_mtime_seconds", dict(labels, file="inferops_watchdog_inferops_serving.prom")):
               "0+15x%d" % SAMPLES}
    watchdog = dict(labels, container="inferops-serving")
    out.update({series_name("inferops_watchdog_up", watchdog): "1x%d" % SAMPLES,
                series_name("inferops_watchdog_probe_latency_seconds", watchdog): "0.4x%d" % SAMPLES,
                series_name("inferops_watchdog_gave_up", watchdog): "0x%d" % SAMPLES,
                series_name("inferops_watchdog_restart_budget_remaining", watchdog): "3x%d" % SAMPLES,
                series_name("inferops_watchdog_restarts_total", watchdog): "0x%d" % SAMPLES})
    for outcome in ("healthy", "busy", "wedged", "crash_looping"):
        out[series_name("inferops_watchdog_probe_outcome", dict(watchdog, outcome=outcome))] = (
            "%dx%d" % (1 if outcome == "healthy" else 0, SAMPLES))
    return out


def fleet():
    out = {}
    out.update(vllm_engine(SPARK))
    out.update(sglang_engine(G7E))
    out.update(node(SPARK_NODE, 12000000000))
    out.update(node(G7E_NODE, 200000000000 // 4))
    return out


def changed(changes=(), dropped=()):
    """The busy fleet with some series' values changed and some absent."""
    out = fleet()
    for name, labels, values in changes:
        key = next(k for k in out if k.startswith(name + "{") and all('%s="%s"' % i in k for i in labels.items()))
        out[key] = values
    for name, labels in dropped:
        for key in [k for k in out if k.startswith(name + "{") and all('%s="%s"' % i in k for i in labels.items())]:
            del out[key]
    return out


def spark(name, values, **extra):
    return (name, dict({"host": "lab-spark"}, **extra), values)


FLAT_AFTER_10M = "0+450x40 18000x%d" % (SAMPLES - 40)
# (scenario id, input series, evaluation time, {alert: [labels of each firing alert]})
SCENARIOS = [
    ("busy fleet", fleet(), "45m", {}),
    ("busy, KV cache full with a steady queue",
     changed([spark("vllm:kv_cache_usage_perc", "0.97x%d" % SAMPLES),
              spark("vllm:num_requests_waiting", "6x%d" % SAMPLES)]), "45m", {}),
    ("engine down", changed([spark("up", "1x40 0x%d" % (SAMPLES - 40), inferops_role="engine")],
                            [("vllm:", {"host": "lab-spark"})]), "15m",
     {"InferopsEngineDown": [dict(target(SPARK))]}),
    ("vLLM wedged: token counters flat while 4 requests run",
     changed([spark("vllm:generation_tokens_total", FLAT_AFTER_10M),
              spark("vllm:prompt_tokens_total", "0+600x40 24000x%d" % (SAMPLES - 40))]),
     "12m30s", {"InferopsEngineWedged": [dict(SPARK)]}),
    ("vLLM in a 3-minute prefill: nothing generated, prompt tokens processed",
     changed([spark("vllm:generation_tokens_total", "0+450x40 18000x12 18000+450x%d" % (SAMPLES - 52)),
              spark("vllm:num_requests_running", "4x40 1x12 4x%d" % (SAMPLES - 52))]), "12m45s", {}),
    ("SGLang generating long answers: counter flat for 5 minutes (it counts at the finish)",
     changed([("sglang:generation_tokens_total", {"host": "lab-g7e"}, "0+3000x40 120000x20 120000+3000x%d"
               % (SAMPLES - 60)),
              ("sglang:prompt_tokens_total", {"host": "lab-g7e"}, "0+4000x40 160000x20 160000+4000x%d"
               % (SAMPLES - 60))]), "15m", {}),
    ("SGLang wedged: counters flat for 11 minutes",
     changed([("sglang:generation_tokens_total", {"host": "lab-g7e"}, "0+3000x40 120000x%d" % (SAMPLES - 40)),
              ("sglang:prompt_tokens_total", {"host": "lab-g7e"}, "0+4000x40 160000x%d" % (SAMPLES - 40))]),
     "22m", {"InferopsEngineWedged": [dict(G7E)]}),
    ("watchdog gave up", changed([spark("inferops_watchdog_gave_up", "0x20 1x%d" % (SAMPLES - 20)),
                                  spark("inferops_watchdog_restart_budget_remaining", "3 2 1 0x%d" % (SAMPLES - 3)),
                                  spark("inferops_watchdog_restarts_total", "0 1 2 3x%d" % (SAMPLES - 3))]),
     "10m", {"InferopsWatchdogGaveUp": [dict(SPARK_NODE, container="inferops-serving")]}),
    ("restart budget low", changed([spark("inferops_watchdog_restart_budget_remaining", "3x20 2x20 1x%d" % (SAMPLES - 40)),
                                    spark("inferops_watchdog_restarts_total", "0x20 1x20 2x%d" % (SAMPLES - 40))]),
     "15m", {"InferopsWatchdogRestartBudgetLow": [dict(SPARK_NODE, container="inferops-serving")]}),
    ("restart budget spent an hour ago and refilled", changed([
        spark("inferops_watchdog_restart_budget_remaining", "1x%d" % SAMPLES)]), "45m", {}),
    ("crash-looping", changed([spark("inferops_watchdog_probe_outcome", "0x20 1x%d" % (SAMPLES - 20),
                                     outcome="crash_looping"),
                               spark("inferops_watchdog_probe_outcome", "1x20 0x%d" % (SAMPLES - 20), outcome="healthy")]),
     "10m", {"InferopsEngineCrashLooping": [dict(SPARK_NODE, container="inferops-serving", outcome="crash_looping")]}),
    ("decode under the profile's floor with a request running",
     changed([spark("vllm:generation_tokens_total", "0+75x%d" % SAMPLES),
              spark("vllm:num_requests_running", "1x%d" % SAMPLES)]), "20m",
     {"InferopsDecodeBelowFloor": [dict(SPARK, inference_engine="vllm")]}),
    ("speculative acceptance well below the measured figure",
     changed([spark("vllm:spec_decode_num_accepted_tokens_total", "0+45x%d" % SAMPLES)]), "30m",
     {"InferopsSpecAcceptanceLow": [dict(SPARK)]}),
    ("SGLang acceptance well below the measured figure", changed([
        ("sglang:spec_accept_length", {"host": "lab-g7e"}, "1.4x%d" % SAMPLES)]), "30m",
     {"InferopsSpecAcceptanceLow": [dict(G7E)]}),
    ("KV cache full and the queue growing",
     changed([spark("vllm:kv_cache_usage_perc", "0.97x%d" % SAMPLES),
              spark("vllm:num_requests_waiting", "0+0.25x%d" % SAMPLES)]), "20m",
     {"InferopsKvCacheFullQueueGrowing": [dict(SPARK)]}),
    ("time to first token over the objective",
     changed([spark("vllm:time_to_first_token_seconds_bucket", "0x%d" % SAMPLES, le=le) for le in ("0.5", "1", "2.5")]),
     "20m", {"InferopsTtftOverObjective": [dict(SPARK)]}),
    ("GB10 MemFree nearly gone while MemAvailable looks healthy",
     changed([spark("node_memory_MemFree_bytes", "1000000000x%d" % SAMPLES)]), "10m",
     {"InferopsUnifiedMemoryLow": [dict(SPARK_NODE)]}),
    ("a discrete-GPU host with little MemFree (page cache) does not fire",
     changed([("node_memory_MemFree_bytes", {"host": "lab-g7e"}, "1000000000x%d" % SAMPLES)]), "10m", {}),
    ("node_exporter down", changed([("up", {"host": "lab-g7e", "inferops_role": "node"}, "0x%d" % SAMPLES)],
                                   [(name, {"host": "lab-g7e"}) for name in ("node_", "inferops_watchdog_")]),
     "10m", {"InferopsScrapeTargetDown": [dict(G7E_NODE)]}),
    ("watchdog stopped writing its file", changed([spark("node_textfile_mtime_seconds", "0x%d" % SAMPLES)]), "15m",
     {"InferopsWatchdogSilent": [dict(SPARK_NODE, file="inferops_watchdog_inferops_serving.prom")]}),
    ("a planned engine target is not scraped",
     changed(dropped=[("up", {"host": "lab-g7e", "inferops_role": "engine"}), ("sglang:", {"host": "lab-g7e"})]), "10m",
     {"InferopsScrapeTargetMissing": [{"host": "lab-g7e", "inferops_role": "engine"}]}),
]


@pytest.fixture(scope="module")
def rules():
    return m.alert_rules(HOSTS)


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory, rules):
    path = tmp_path_factory.mktemp("rules") / "rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False, width=1000))
    return path


def alert_rules_named(rules, name):
    return [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == name]


def expected(rules, name, labels):
    """The alert as promtool reports it: the series' labels, the rule's, annotations rendered."""
    candidates = alert_rules_named(rules, name)
    rule = next(r for r in candidates if all(labels.get(k, v) == v for k, v in r["labels"].items()))
    full = dict(labels, **rule["labels"])
    annotations = {key: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda match: full[match.group(1)], text)
                   for key, text in rule["annotations"].items()}
    return {"exp_labels": full, "exp_annotations": annotations}


def test_rules_pass_promtool_check(rules_file):
    result = subprocess.run([promtool(), "check", "rules", str(rules_file)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_each_fault_fires_its_alert_and_nothing_else(scenario, rules, rules_file, tmp_path):
    name, series, at, firing = scenario
    names = sorted({r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r})
    assert set(firing) <= set(names), "the scenario expects an alert the rules do not have"
    tests = {"rule_files": [str(rules_file)], "evaluation_interval": "15s", "tests": [{
        "interval": "15s",
        "input_series": [{"series": key, "values": values} for key, values in sorted(series.items())],
        "alert_rule_test": [{"eval_time": at, "alertname": alert,
                             "exp_alerts": [expected(rules, alert, labels) for labels in firing.get(alert, [])]}
                            for alert in names],
    }]}
    path = tmp_path / "test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False, width=1000))
    result = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, "%s\n%s" % (result.stdout, result.stderr)


def test_every_alert_has_a_fault_that_fires_it(rules):
    names = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    fired = {alert for scenario in SCENARIOS for alert in scenario[3]}
    assert names == fired


def test_every_alert_says_what_to_do(rules):
    for rule in (r for g in rules["groups"] for r in g["rules"] if "alert" in r):
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"] and len(rule["annotations"]["runbook"]) > 60


DASHBOARD_EXPRESSIONS = [expr for board in dash.dashboards().values() for title, expr in dash.panel_expressions(board)]


def test_every_dashboard_panel_returns_data_on_a_busy_fleet(rules_file, tmp_path):
    """Each expression, its $host set to the GB10 host (vLLM with MTP: every panel applies)."""
    checks = [{"expr": "count(%s) > bool 0" % expr.replace("$host", "lab-spark"), "eval_time": "45m",
               "exp_samples": [{"labels": "{}", "value": 1}]} for expr in DASHBOARD_EXPRESSIONS]
    tests = {"rule_files": [str(rules_file)], "evaluation_interval": "15s", "tests": [{
        "interval": "15s",
        "input_series": [{"series": key, "values": values} for key, values in sorted(fleet().items())],
        "promql_expr_test": checks}]}
    path = tmp_path / "dashboards.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False, width=1000))
    result = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, "a panel returns no data:\n%s\n%s" % (result.stdout, result.stderr)


def test_shipped_dashboards_are_the_rendered_ones():
    root = pathlib.Path(__file__).resolve().parents[3] / "roles" / "monitoring" / "files" / "dashboards"
    for name, board in dash.dashboards().items():
        assert (root / name).read_text() == dash.dashboard_text(board), "run scripts/monitoring-dashboards"
