# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine metric names the rules and dashboards read, against what each engine release exports.

The engine catalog (plugins/plugin_utils/engine_catalog/, generated from each release's wheel by
scripts/engine-catalog) lists every release's Prometheus metrics. A rule or panel reading a name
the plan's release does not export would record nothing and leave a panel empty; here it fails.
"""
from __future__ import annotations

import copy

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _dashboards as dash
from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "secret_env": [],
           "textfile_dir": "/var/lib/node_exporter"}


def fleet(vllm_version=None):
    spark = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101))
    if vllm_version:
        spark = copy.deepcopy(spark)
        spark["image"]["engine_version"] = vllm_version
    return [{"host": "lab-spark", "address": "10.0.0.1", "deployment": spark},
            {"host": "lab-g7e", "address": "10.0.0.2", "deployment": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102))}]


def fixture_release(engine, version, base, renamed=None, dropped=()):
    """A release that is not on PyPI: the stored catalog of ``base`` (real data, generated from that
    wheel) with metrics renamed (``{old: new}``) or dropped, as an engine release that renames a
    metric would look to the catalog."""
    data = {"engine": engine, "version": version, "flags": {}, "speculative_keys": [], "env": [],
            "metrics": {}}
    for name, kind in catalog.release(engine, base).metrics.items():
        if name not in dropped:
            data["metrics"][(renamed or {}).get(name, name)] = kind
    return catalog.Release(data)


@pytest.fixture
def stored_with(monkeypatch):
    """Make ``catalog.nearest_release`` answer a fixture release for its version."""
    def install(release):
        real = catalog.nearest_release

        def nearest(engine, version):
            if engine == release.engine and version == release.version:
                return release, True
            return real(engine, version)
        monkeypatch.setattr(catalog, "nearest_release", nearest)
        return release
    return install


def test_the_plans_name_the_release_whose_metrics_count():
    assert m.engine_release("vllm", "0.19.2rc1.dev134").version == "0.19.1"  # a nightly: its last release
    assert m.engine_release("sglang", "0.5.13").version == "0.5.13"
    assert m.engine_release("vllm", None).version == catalog.releases("vllm")[-1]


@pytest.mark.parametrize("engine, version", [(e, v) for e in ("vllm", "sglang") for v in catalog.releases(e)])
def test_every_stored_release_exports_every_metric_the_rules_read(engine, version):
    release = catalog.release(engine, version)
    rules = m.engine_recording_rules(engine, [(release, ["host-1"])])
    assert m.metrics_lacking(release, [rule["expr"] for rule in rules]) == []
    # Each stored release exports its speculative-decoding metrics: the acceptance rules are there.
    assert "inferops:engine_spec_accepted_per_draft:ratio_rate10m" in {rule["record"] for rule in rules}


def test_the_rules_of_the_lab_fleet_read_only_metrics_its_releases_export():
    rules = m.alert_rules(fleet())
    by_engine = {group["name"]: [rule["expr"] for rule in group["rules"]] for group in rules["groups"]}
    assert m.engine_metrics_read(by_engine["inferops-engine-vllm"])  # the check has names to check
    assert m.metrics_lacking(catalog.release("vllm", "0.19.1"), by_engine["inferops-engine-vllm"]) == []
    assert m.metrics_lacking(catalog.release("sglang", "0.5.13"), by_engine["inferops-engine-sglang"]) == []


def test_a_release_that_renamed_a_metric_is_refused_naming_metric_release_host_and_new_name(stored_with):
    stored_with(fixture_release("vllm", "0.99.0", "0.33.0",
                                renamed={"vllm:kv_cache_usage_perc": "vllm:kv_cache_usage_ratio"}))
    with pytest.raises(m.MonitoringError) as raised:
        m.alert_rules(fleet("0.99.0"))
    message = str(raised.value)
    assert "vLLM 0.99.0" in message and "host lab-spark" in message
    assert "vllm:kv_cache_usage_perc (it exports vllm:kv_cache_usage_ratio" in message
    assert "plugins/plugin_utils/_engines.py" in message
    with pytest.raises(m.MonitoringError, match="vllm:kv_cache_usage_perc"):
        m.monitoring_plan(fleet("0.99.0"))  # the role's plan: nothing is written


def test_a_renamed_histogram_is_caught_through_its_bucket_samples(stored_with):
    stored_with(fixture_release("vllm", "0.99.0", "0.33.0", renamed={
        "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds"}))
    with pytest.raises(m.MonitoringError, match=r"vllm:inter_token_latency_seconds_bucket"):
        m.alert_rules(fleet("0.99.0"))


def test_a_release_without_speculative_metrics_records_no_acceptance(stored_with):
    spec = [name for name in catalog.release("vllm", "0.33.0").metrics if name.startswith("vllm:spec_decode_")]
    stored_with(fixture_release("vllm", "0.99.0", "0.33.0", dropped=spec))
    groups = {g["name"]: g["rules"] for g in m.alert_rules(fleet("0.99.0"))["groups"]}
    records = {rule["record"] for rule in groups["inferops-engine-vllm"]}
    assert "inferops:engine_requests_running" in records
    assert not any("spec" in record for record in records)


def test_every_series_a_dashboard_reads_is_recorded_or_exported():
    """The dashboards read the recorded inferops:* series (and node_exporter's and the watchdog's);
    each recorded one comes from a rule, and any engine metric a panel reads is exported."""
    rules = m.alert_rules(fleet())
    recorded = {rule["record"] for group in rules["groups"] for rule in group["rules"] if "record" in rule}
    expressions = [expr for board in dash.dashboards().values() for _title, expr in dash.panel_expressions(board)]
    read = set()
    for expr in expressions:
        read.update(m.RECORDED_SERIES_RE.findall(expr))
    assert read and read <= recorded, "panels read series no rule records: %s" % sorted(read - recorded)
    for engine, version in (("vllm", "0.19.1"), ("sglang", "0.5.13")):
        assert m.metrics_lacking(catalog.release(engine, version), expressions) == []


def test_a_panel_reading_a_metric_the_release_lacks_is_caught():
    # The check the dashboards test above runs, on a panel that reads an engine's metric directly.
    panel = "rate(vllm:gpu_prefix_cache_hits_total[5m])"
    assert not any("vllm:gpu_prefix_cache_hits_total" in r.metrics for r in catalog.all_releases("vllm"))
    assert m.metrics_lacking(catalog.release("vllm", "0.19.1"), [panel]) == ["vllm:gpu_prefix_cache_hits_total"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_stored_release_exports_the_gauges_the_drain_and_the_watchdog_read(engine):
    """The plan's own metric names (server_deployment.metrics): the gateway's drain waits on
    ``running`` + ``waiting``, the watchdog reads them and ``generation_tokens`` for a wedge, the
    loadgen reads ``kv_cache_usage``. A release that renamed one would leave them blind (a drain
    that sees no request in flight stops the engine under its clients): every stored release must
    export each. The speculative names are read only where the release has them."""
    metrics = d.plan("gb10-nvfp4-mtp-latency" if engine == "vllm" else "g7e-fp8-sglang-eagle",
                     dict(OPTIONS, port=8101))["metrics"]
    core = [metrics[key] for key in ("running", "waiting", "generation_tokens", "kv_cache_usage")]
    missing = {version: m.metrics_lacking(catalog.release(engine, version), core)
               for version in catalog.releases(engine)}
    assert {version: names for version, names in missing.items() if names} == {}
    assert m.metrics_lacking(fixture_release(engine, "9.9.9", catalog.releases(engine)[-1],
                                             dropped=(metrics["waiting"],)), core) == [metrics["waiting"]]
