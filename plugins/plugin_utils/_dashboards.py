# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The Grafana dashboards of the fleet: fleet overview, one host, one engine.

Every panel reads the series the alert rules record (``_monitoring``: each engine's own metric
names mapped to ``inferops:engine_*``), the watchdog's textfile metrics and node_exporter's, so an
engine release that renames a metric changes ``_engines.METRICS`` only. The rules' engine metrics
are checked against what the plan's release exports (the engine catalog), and the tests check
that every series a panel reads is recorded (tests/unit/monitoring/test_metric_names.py) and
return data against Prometheus (test_alert_rules.py), so a rename fails a test, not a panel.
``roles/monitoring/files/dashboards/`` holds the JSON these functions render (a unit test checks
they are the same).
"""
from __future__ import annotations

import json

from ansible_collections.inferops.serving.plugins.plugin_utils._monitoring import WATCHDOG_METRICS as W

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
HOST = 'host="$host"'


def _panel(title, exprs, unit="short", kind="timeseries", description=""):
    """A panel; ``exprs``: ``[(expression, legend)]``."""
    return {"type": kind, "title": title, "description": description, "datasource": DATASOURCE,
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "refId": chr(65 + i)}
                        for i, (expr, legend) in enumerate(exprs)]}


def _dashboard(uid, title, panels, host_variable):
    variables = [{"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}]
    if host_variable:
        variables.append({"name": "host", "label": "Host", "type": "query", "datasource": DATASOURCE,
                          "query": {"query": 'label_values(up{inferops_role="engine"}, host)', "refId": "host"},
                          "definition": 'label_values(up{inferops_role="engine"}, host)', "refresh": 2})
    laid_out = []
    for index, panel in enumerate(panels):
        width = 24 if panel["type"] == "table" else 12
        laid_out.append(dict(panel, id=index + 1,
                             gridPos={"h": 8, "w": width, "x": 0 if width == 24 else 12 * (index % 2), "y": 8 * index}))
    return {"uid": uid, "title": title, "tags": ["inferops"], "editable": True, "schemaVersion": 39,
            "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
            "templating": {"list": variables}, "panels": laid_out}


def fleet_dashboard():
    return _dashboard("inferops-fleet", "inferops: fleet", [
        _panel("Engines answering /metrics", [('sum(up{inferops_role="engine"})', "up"),
                                              ('count(up{inferops_role="engine"})', "planned")], kind="stat"),
        _panel("Firing alerts", [('count by (alertname) (ALERTS{alertstate="firing", alertname=~"Inferops.*"}) '
                                  'or vector(0)', "{{alertname}}")], kind="stat"),
        _panel("Generated tokens/s", [("inferops:engine_generation_tokens:rate5m", "{{host}}")], "short"),
        _panel("Requests running", [("inferops:engine_requests_running", "{{host}}")]),
        _panel("Requests waiting", [("inferops:engine_requests_waiting", "{{host}}")]),
        _panel("KV cache usage", [("inferops:engine_kv_cache_usage_ratio", "{{host}}")], "percentunit"),
        _panel("Time to first token, p90", [("inferops:engine_ttft_seconds:p90_5m", "{{host}}")], "s"),
        _panel("Watchdog: last probe", [("%s == 1" % W["probe_outcome"], "{{host}} {{outcome}}")], kind="table"),
    ], host_variable=False)


def host_dashboard():
    return _dashboard("inferops-host", "inferops: host", [
        _panel("Targets up", [('up{%s}' % HOST, "{{inferops_role}}")], kind="stat"),
        _panel("Memory the GPU can take on unified memory (MemFree) and the page cache",
               [('node_memory_MemFree_bytes{%s}' % HOST, "MemFree"),
                ('node_memory_Cached_bytes{%s}' % HOST, "page cache"),
                ('node_memory_MemAvailable_bytes{%s}' % HOST, "MemAvailable (counts the page cache)"),
                ('node_memory_MemTotal_bytes{%s}' % HOST, "MemTotal")], "bytes",
               description="On GB10 the GPU allocates from MemFree: MemAvailable looks healthy during a device OOM."),
        _panel("Watchdog probe latency", [('%s{%s}' % (W["probe_latency"], HOST), "{{container}}")], "s"),
        _panel("Watchdog restarts in the last hour", [('increase(%s{%s}[1h])' % (W["restarts"], HOST), "restarts"),
                                                      ('%s{%s}' % (W["restart_budget"], HOST), "budget left"),
                                                      ('%s{%s}' % (W["gave_up"], HOST), "gave up")]),
        _panel("Watchdog outcome", [('%s{%s} == 1' % (W["probe_outcome"], HOST), "{{outcome}}")], kind="table"),
        _panel("Generated tokens/s", [('inferops:engine_generation_tokens:rate1m{%s}' % HOST, "{{container}}")]),
    ], host_variable=True)


def engine_dashboard():
    return _dashboard("inferops-engine", "inferops: engine", [
        _panel("Generated tokens/s", [('inferops:engine_generation_tokens:rate1m{%s}' % HOST, "1m"),
                                      ('inferops:engine_generation_tokens:rate5m{%s}' % HOST, "5m"),
                                      ('inferops:objective_decode_floor_tokens_per_second and on (profile) '
                                       'inferops:engine_requests_running{%s}' % HOST, "floor")]),
        _panel("Time to first token", [('inferops:engine_ttft_seconds:p50_5m{%s}' % HOST, "p50"),
                                       ('inferops:engine_ttft_seconds:p90_5m{%s}' % HOST, "p90"),
                                       ('inferops:objective_ttft_seconds and on (profile) '
                                        'inferops:engine_requests_running{%s}' % HOST, "objective")], "s"),
        _panel("Inter-token latency", [('inferops:engine_itl_seconds:p50_5m{%s}' % HOST, "p50"),
                                       ('inferops:engine_itl_seconds:p90_5m{%s}' % HOST, "p90")], "s"),
        _panel("Requests", [('inferops:engine_requests_running{%s}' % HOST, "running"),
                            ('inferops:engine_requests_waiting{%s}' % HOST, "waiting")]),
        _panel("KV cache usage", [('inferops:engine_kv_cache_usage_ratio{%s}' % HOST, "usage")], "percentunit"),
        _panel("Speculative tokens accepted per draft",
               [('inferops:engine_spec_accepted_per_draft:ratio_rate10m{%s}' % HOST, "accepted per draft"),
                ('inferops:objective_spec_accepted_per_draft and on (profile) '
                 'inferops:engine_requests_running{%s}' % HOST, "objective")]),
        _panel("Speculative acceptance per draft position (vLLM)",
               [('inferops:engine_spec_acceptance_by_position:ratio_rate10m{%s}' % HOST, "position {{position}}")],
               "percentunit"),
        _panel("Watchdog restarts and outcome", [('increase(%s{%s}[1h])' % (W["restarts"], HOST), "restarts (1h)"),
                                                 ('%s{%s}' % (W["up"], HOST), "probe answered")]),
    ], host_variable=True)


def dashboards():
    """``{file name: dashboard}`` of every dashboard."""
    return {"inferops-fleet.json": fleet_dashboard(), "inferops-host.json": host_dashboard(),
            "inferops-engine.json": engine_dashboard()}


def dashboard_text(dashboard):
    """The file content of a dashboard (stable: sorted keys, two-space indent, final newline)."""
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


def panel_expressions(dashboard):
    """``[(panel title, expression)]`` of a dashboard."""
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]
