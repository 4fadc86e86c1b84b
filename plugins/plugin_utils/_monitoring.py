# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The fleet's monitoring, from the deployment plans of its serving hosts.

``scrape_targets`` says what Prometheus scrapes (every engine's ``/metrics`` and every serving
host's node_exporter, labelled with the host, profile and engine); ``prometheus_config`` the
``prometheus.yml`` that scrapes them; ``alert_rules`` the rules file: recording rules that turn
each engine's own metric names (``_engines.METRICS`` / ``LATENCY_HISTOGRAMS``, the one home of
them) into ``inferops:*`` series, the profiles' measured figures into ``inferops:objective_*``
series, and the alerts over both; ``dashboards`` the Grafana dashboards over the same series.

Every engine metric a rule reads is checked against what the plan's engine release exports: the
engine catalog (``_engine_catalog``, generated from each release's wheel by
scripts/engine-catalog) lists each release's metrics, and a rule naming a metric the release
lacks (a rename) is an error naming the metric, the release and the hosts running it, before
anything is written. The monitoring role only writes what these return, so a renamed metric
changes one table (``_engines``) and the promtool tests (tests/unit/monitoring) catch a rule that
no longer matches.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _engines as engines

# What the watchdog program (roles/watchdog/files/inferops_watchdog.py, render_textfile) writes to
# the node_exporter textfile collector; a unit test renders it and checks every name.
WATCHDOG_METRICS = {
    "up": "inferops_watchdog_up",
    "probe_latency": "inferops_watchdog_probe_latency_seconds",
    "probe_outcome": "inferops_watchdog_probe_outcome",
    "probes": "inferops_watchdog_probes_total",
    "wedges": "inferops_watchdog_wedges_total",
    "restarts": "inferops_watchdog_restarts_total",
    "restart_budget": "inferops_watchdog_restart_budget_remaining",
    "gave_up": "inferops_watchdog_gave_up",
    "last_success": "inferops_watchdog_last_success_timestamp_seconds",
}
# The target labels every series carries; ``inferops_role`` tells engine targets from node ones
# (a label, not the job name: one job per engine, since credentials are per scrape job).
TARGET_LABELS = ("host", "instance", "profile", "inference_engine", "container")
BY = ", ".join(TARGET_LABELS)
# How long the generated-token counter must stay flat while requests run before the engine is
# called wedged: vLLM counts every engine step, SGLang only when a request finishes (a long
# answer leaves it flat for minutes while the engine generates).
WEDGE_WINDOW = {"step": "1m", "finish": "10m"}

DEFAULTS = {
    "scrape_interval": "15s",
    "evaluation_interval": "15s",
    "node_exporter_port": 9100,
    "rules_file": "/etc/prometheus/inferops_rules.yml",
    "credentials_dir": "/etc/prometheus/inferops",
    "alertmanager": "127.0.0.1:9093",
    "decode_floor_fraction": 0.5,
    "acceptance_fraction": 0.6,
    "ttft_margin": 2.0,
    "kv_cache_full_ratio": 0.9,
    "unified_memfree_floor_ratio": 0.02,
    "restart_budget_low": 1,
    "watchdog_stale_seconds": 300,
    "node_exporter_install": True,
    "extra_targets": {},
}
# option key -> (role variable, lowest, highest)
_RANGES = {
    "decode_floor_fraction": ("monitoring_decode_floor_fraction", 0.0, 1.0),
    "acceptance_fraction": ("monitoring_acceptance_fraction", 0.0, 1.0),
    "ttft_margin": ("monitoring_ttft_margin", 1.0, None),
    "kv_cache_full_ratio": ("monitoring_kv_cache_full_ratio", 0.0, 1.0),
    "unified_memfree_floor_ratio": ("monitoring_unified_memfree_floor_ratio", 0.0, 1.0),
    "restart_budget_low": ("monitoring_restart_budget_low", 0, None),
    "watchdog_stale_seconds": ("monitoring_watchdog_stale_seconds", 1, None),
    "node_exporter_port": ("monitoring_node_exporter_port", 1, 65535),
}
_DURATION_RE = re.compile(r"^[0-9]+(ms|s|m|h)$")
# An engine's own metric in a PromQL expression (the engines prefix theirs with their name).
_ENGINE_METRIC_RE = re.compile(r"\b(?:%s):[A-Za-z0-9_:]+" % "|".join(sorted(engines.ENGINES)))
_SAMPLE_SUFFIXES = ("_bucket", "_sum", "_count")
# A series the rules record (what the dashboards read).
RECORDED_SERIES_RE = re.compile(r"\binferops:[A-Za-z0-9_:]+")


class MonitoringError(ValueError):
    """A monitoring option or a serving host's plan that cannot be monitored."""


def settings(options=None):
    """The options with their defaults, each checked; errors name the role variable."""
    values = dict(DEFAULTS)
    values.update({k: v for k, v in (options or {}).items() if v is not None})
    errors = []
    for key, (variable, low, high) in _RANGES.items():
        try:
            number = float(values[key])
        except (TypeError, ValueError):
            errors.append("%s is %r: it must be a number" % (variable, values[key]))
            continue
        if number < low or (high is not None and number > high):
            errors.append("%s is %s: it must be between %s and %s" % (variable, values[key], low, high or "any"))
    for key in ("scrape_interval", "evaluation_interval"):
        if not _DURATION_RE.match(str(values[key])):
            errors.append("monitoring_%s is %r: write a Prometheus duration such as 15s or 1m" % (key, values[key]))
    install = values["node_exporter_install"]
    if isinstance(install, str) and install.strip().lower() in ("true", "false", "yes", "no"):
        values["node_exporter_install"] = install.strip().lower() in ("true", "yes")
    elif not isinstance(install, bool):
        errors.append("monitoring_node_exporter_install is %r: write true or false" % (install,))
    errors.extend(_extra_target_errors(values["extra_targets"]))
    if errors:
        raise MonitoringError("; ".join(errors))
    return values


def _extra_target_errors(extra):
    """What is wrong with ``monitoring_extra_targets`` (prometheus.prometheus' ``prometheus_targets`` shape)."""
    variable = "monitoring_extra_targets (prometheus_targets)"
    shape = "write {job name: [{targets: [host:port, ...], labels: {...}}]}"
    if not isinstance(extra, Mapping):
        return ["%s is a %s: %s" % (variable, type(extra).__name__, shape)]
    errors = []
    for job, configs in extra.items():
        if not isinstance(job, str) or not job or job == "prometheus" or job.startswith("inferops-"):
            errors.append("%s has the job %r: name it otherwise (prometheus and inferops-* are the role's own jobs)"
                          % (variable, job))
            continue
        if not isinstance(configs, (list, tuple)) or not configs:
            errors.append("%s[%s] is not a list of static configs: %s" % (variable, job, shape))
            continue
        for config in configs:
            targets = config.get("targets") if isinstance(config, Mapping) else None
            labels = config.get("labels", {}) if isinstance(config, Mapping) else None
            if (not isinstance(targets, (list, tuple)) or not targets
                    or not all(isinstance(t, str) and t for t in targets) or not isinstance(labels, Mapping)
                    or set(config) - {"targets", "labels"}):
                errors.append("%s[%s] has %r: %s" % (variable, job, config, shape))
    return errors


def node_exporter_port(listen_address, variable="node_exporter_web_listen_address"):
    """The port of a node_exporter ``--web.listen-address`` (``0.0.0.0:9100``, ``:9100``, ``[::]:9100``)."""
    host, colon, port = str(listen_address or "").rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536 or (host.startswith("[") != host.endswith("]")):
        raise MonitoringError("%s is %r: write host:port, for example 0.0.0.0:9100 or :9100"
                              % (variable, listen_address))
    return int(port)


def node_exporter_settings(host, hostvars, options=None):
    """How one serving host's node_exporter listens, from its own variables.

    ``{"listen_address", "port", "metrics_path"}``: the role's ``monitoring_node_exporter_port``
    set for that host comes first, then prometheus.prometheus.node_exporter's
    ``node_exporter_web_listen_address`` and ``node_exporter_web_telemetry_path`` (an operator's
    node_exporter deployed by that collection is scraped where it listens), then the role default.
    """
    values = settings(options)
    hostvars = hostvars or {}
    if hostvars.get("monitoring_node_exporter_port") not in (None, ""):
        try:
            port = int(settings(dict(values, node_exporter_port=hostvars["monitoring_node_exporter_port"]))
                       ["node_exporter_port"])
        except MonitoringError as exc:
            raise MonitoringError("host %s: %s" % (host, exc)) from exc
        listen = ":%d" % port
    elif hostvars.get("node_exporter_web_listen_address"):
        listen = str(hostvars["node_exporter_web_listen_address"])
        port = node_exporter_port(listen, "host %s: node_exporter_web_listen_address" % host)
    else:
        port = int(values["node_exporter_port"])
        listen = ":%d" % port
    path = str(hostvars.get("node_exporter_web_telemetry_path") or "/metrics")
    if not path.startswith("/"):
        raise MonitoringError("host %s: node_exporter_web_telemetry_path is %r: write a path such as /metrics"
                              % (host, path))
    return {"listen_address": listen, "port": port, "metrics_path": path}


def _number(value):
    """A float as PromQL/YAML writes it, without float noise."""
    return float("%.6g" % float(value))


def objectives(profile, options=None):
    """What the profile's ``measured`` figures promise, as alert thresholds (None: no figure).

    ``decode_floor``: tokens/s an engine with a request running must at least generate (the
    measured single-stream rate, or 1000 / median inter-token latency, times
    ``decode_floor_fraction``); ``accepted_per_draft``: speculative tokens accepted per draft
    (the sum of the measured per-position acceptance, or the measured accept length less one,
    times ``acceptance_fraction``); ``ttft``:
    seconds to first token (the measured figure at saturation or online load, times
    ``ttft_margin``). ``sources`` names the figure each came from.
    """
    values = settings(options)
    measured = (profile or {}).get("measured") or {}
    if not isinstance(measured, Mapping):
        measured = {}
    found, sources = {"decode_floor": None, "accepted_per_draft": None, "ttft": None}, {}
    stream = measured.get("single_stream_tok_s")
    if stream:
        found["decode_floor"], sources["decode_floor"] = float(stream), "measured.single_stream_tok_s"
    else:
        itl = sorted(k for k in measured if re.search(r"median_itl_ms$", k) and measured[k])
        if itl:
            found["decode_floor"], sources["decode_floor"] = 1000.0 / float(measured[itl[0]]), "measured." + itl[0]
    if found["decode_floor"] is not None:
        found["decode_floor"] = _number(found["decode_floor"] * float(values["decode_floor_fraction"]))
    per_position = measured.get("draft_acceptance_by_position")
    if isinstance(per_position, (list, tuple)) and per_position:
        found["accepted_per_draft"] = _number(sum(float(v) for v in per_position) * float(values["acceptance_fraction"]))
        sources["accepted_per_draft"] = "measured.draft_acceptance_by_position"
    elif measured.get("accept_length"):
        # SGLang's accept length counts the verified token too: accepted draft tokens + 1.
        found["accepted_per_draft"] = _number((float(measured["accept_length"]) - 1.0)
                                              * float(values["acceptance_fraction"]))
        sources["accepted_per_draft"] = "measured.accept_length"
    if measured.get("ttft_at_saturation_s"):
        found["ttft"], sources["ttft"] = float(measured["ttft_at_saturation_s"]), "measured.ttft_at_saturation_s"
    else:
        ttft = sorted(k for k in measured if re.search(r"_ttft_ms$", k) and measured[k])
        if ttft:
            found["ttft"], sources["ttft"] = float(measured[ttft[0]]) / 1000.0, "measured." + ttft[0]
    if found["ttft"] is not None:
        found["ttft"] = _number(found["ttft"] * float(values["ttft_margin"]))
    found["sources"] = sources
    return found


def _host_entry(entry):
    if not isinstance(entry, Mapping) or not entry.get("host"):
        raise MonitoringError("every serving host needs host (its inventory name) and deployment; got %r"
                              % (type(entry).__name__,))
    deployment = entry.get("deployment")
    if not isinstance(deployment, Mapping) or deployment.get("engine") not in engines.ENGINES:
        raise MonitoringError("host %s has no deployment plan (server_deployment): run the server role's resolve "
                              "(inferops.serving.server, tasks_from: resolve) for it before the monitoring role"
                              % entry["host"])
    return entry


def scrape_targets(hosts, options=None):
    """Every target Prometheus scrapes, from the serving hosts' plans.

    ``hosts``: ``[{"host", "address", "deployment", "node_exporter_port"?, "node_exporter_path"?}]``
    (``node_exporter_settings`` gives the last two), ``address`` being
    where the monitoring host reaches it (the engine listens on the plan's port). One engine target and
    one node_exporter target per host; ``credentials_file`` is set when the engine wants an API
    key (the plan's ``api_key_env``, from the server_secrets channel).
    """
    values = settings(options)
    targets = []
    for entry in sorted((_host_entry(h) for h in hosts or ()), key=lambda h: str(h["host"])):
        deployment, host = entry["deployment"], str(entry["host"])
        address = str(entry.get("address") or host)
        profile = (deployment.get("profile") or {}).get("name") or ""
        url = urlsplit(deployment["urls"]["metrics"])
        unified = bool((deployment.get("memory") or {}).get("unified"))
        common = {"host": host, "profile": profile, "inference_engine": deployment["engine"],
                  "container": deployment["container"]}
        targets.append({
            "job": "inferops-engine-%s" % host,
            "address": "%s:%d" % (address, int(deployment["port"])),
            "scheme": url.scheme or "http",
            "metrics_path": url.path or "/metrics",
            "labels": dict(common, inferops_role="engine"),
            "api_key_env": deployment.get("api_key_env"),
            "credentials_file": ("%s/%s.key" % (values["credentials_dir"].rstrip("/"), host)
                                 if deployment.get("api_key_env") else None),
        })
        targets.append({
            "job": "inferops-node-%s" % host,
            "address": "%s:%d" % (address, int(entry.get("node_exporter_port") or values["node_exporter_port"])),
            "scheme": "http",
            "metrics_path": entry.get("node_exporter_path") or "/metrics",
            "labels": {"host": host, "inferops_role": "node", "unified_memory": "true" if unified else "false"},
            "api_key_env": None,
            "credentials_file": None,
        })
    return targets


def prometheus_config(targets, options=None):
    """``prometheus.yml`` (as a dict) scraping ``targets`` (scrape_targets' list)."""
    values = settings(options)
    jobs = [{"job_name": "prometheus", "static_configs": [{"targets": ["localhost:9090"]}]}]
    for target in targets:
        job = {"job_name": target["job"], "scheme": target["scheme"], "metrics_path": target["metrics_path"],
               "static_configs": [{"targets": [target["address"]], "labels": dict(target["labels"])}]}
        if target.get("credentials_file"):
            job["authorization"] = {"type": "Bearer", "credentials_file": target["credentials_file"]}
        jobs.append(job)
    # The operator's own targets (prometheus.prometheus' prometheus_targets: job -> static configs).
    for job_name in sorted(values["extra_targets"]):
        jobs.append({"job_name": job_name, "static_configs": [
            {key: (list(config[key]) if key == "targets" else dict(config[key])) for key in config}
            for config in values["extra_targets"][job_name]]})
    config = {
        "global": {"scrape_interval": values["scrape_interval"], "evaluation_interval": values["evaluation_interval"]},
        "rule_files": [values["rules_file"]],
        "scrape_configs": jobs,
    }
    if values.get("alertmanager"):
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [values["alertmanager"]]}]}]}
    return config


def _record(name, expr, labels=None):
    rule = {"record": name, "expr": expr}
    if labels:
        rule["labels"] = dict(labels)
    return rule


def engine_release(engine, version=None):
    """The catalog release whose metrics an engine at ``version`` exports.

    The stored release at or below ``version`` (a nightly ``0.19.2rc1.dev134`` exports what
    0.19.1 does, as far as the data knows); the newest stored release when the plan names no
    version (the lint requires one: engine-version-missing).
    """
    if not version:
        return catalog.release(engine, catalog.releases(engine)[-1])
    try:
        return catalog.nearest_release(engine, str(version).split(" ", 1)[0])[0]
    except catalog.CatalogError as exc:
        raise MonitoringError("%s: fix image.engine_version in the profile or the image lock" % exc) from exc


def engine_metrics_read(expressions):
    """The engine metric names (``vllm:*``, ``sglang:*``) PromQL ``expressions`` select, sorted."""
    return sorted({name for expr in expressions for name in _ENGINE_METRIC_RE.findall(expr)})


def metrics_lacking(release, expressions):
    """The engine metric names ``expressions`` select that ``release`` does not export, sorted.

    A histogram's samples (``_bucket``, ``_sum``, ``_count``) count as its name; the catalog lists
    a counter as its ``_total`` sample.
    """
    exported = release.metrics
    lacking = []
    for name in engine_metrics_read(expressions):
        base = next((name[:-len(suffix)] for suffix in _SAMPLE_SUFFIXES if name.endswith(suffix)), None)
        if name not in exported and exported.get(base) not in ("histogram", "summary"):
            lacking.append(name)
    return lacking


def _lacking_error(engine, lacking_by_release):
    """The error for rules reading metrics some releases of the fleet do not export."""
    parts = []
    for release, hosts, lacking in lacking_by_release:
        named = []
        for name in lacking:
            near = catalog.suggest(name, release.metrics)
            named.append("%s%s" % (name, " (it exports %s)" % ", ".join(near) if near else ""))
        parts.append("%s (%s) does not export %s"
                     % (release.label, ("the catalog's release for host " + ", ".join(hosts)) if hosts
                        else "the newest stored release: no host runs the engine", "; ".join(named)))
    return MonitoringError(
        "the monitoring rules read %s metrics that the engine release does not export: %s. A renamed metric: "
        "update the engine's names in plugins/plugin_utils/_engines.py (METRICS, PROMPT_TOKENS, "
        "LATENCY_HISTOGRAMS), or pin an image whose engine exports them (image.engine_version)"
        % (engines.label(engine), "; ".join(parts)))


def engine_recording_rules(engine, releases=None):
    """Recording rules turning ``engine``'s own metric names into the ``inferops:engine_*`` series.

    ``releases``: ``[(release, hosts)]``, the catalog releases (``engine_release``) the fleet runs
    ``engine`` at and the hosts running each (default: the newest stored release, no host). The
    speculative-decoding rules are written when one of them exports the metrics they read (a release
    without them records nothing there); every other rule's metrics must be exported by each of
    them, else a :class:`MonitoringError` names the metric, the release and its hosts.
    """
    fleet = list(releases or [(engine_release(engine), [])])
    releases = [release for release, _hosts in fleet]
    metrics, histograms = engines.METRICS[engine], engines.LATENCY_HISTOGRAMS[engine]
    window = WEDGE_WINDOW[metrics["tokens_counted"]]
    tokens = metrics["generation_tokens"]
    rules = [
        _record("inferops:engine_requests_running", "sum by (%s) (%s)" % (BY, metrics["running"])),
        _record("inferops:engine_requests_waiting", "sum by (%s) (%s)" % (BY, metrics["waiting"])),
        _record("inferops:engine_kv_cache_usage_ratio", "max by (%s) (%s)" % (BY, metrics["kv_cache_usage"])),
        _record("inferops:engine_generation_tokens:rate1m", "sum by (%s) (rate(%s[1m]))" % (BY, tokens)),
        _record("inferops:engine_generation_tokens:rate5m", "sum by (%s) (rate(%s[5m]))" % (BY, tokens)),
        _record("inferops:engine_requests_running:min5m",
                "sum by (%s) (min_over_time(%s[5m]))" % (BY, metrics["running"])),
        # The wedge: the tokens processed (generated, and prompt tokens: a long prefill generates
        # nothing for a while) and the fewest requests running, over the same window.
        _record("inferops:engine_tokens:increase_wedge_window",
                "sum by (%s) (increase(%s[%s])) + sum by (%s) (increase(%s[%s]))"
                % (BY, tokens, window, BY, engines.PROMPT_TOKENS[engine], window)),
        _record("inferops:engine_requests_running:min_wedge_window",
                "sum by (%s) (min_over_time(%s[%s]))" % (BY, metrics["running"], window)),
    ]
    for key in ("ttft", "itl"):
        for suffix, quantile in (("p50", "0.5"), ("p90", "0.9")):
            rules.append(_record("inferops:engine_%s_seconds:%s_5m" % (key, suffix),
                                 "histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket[5m])))"
                                 % (quantile, BY, histograms[key])))
    lacking = [(release, hosts, metrics_lacking(release, [rule["expr"] for rule in rules])) for release, hosts in fleet]
    if any(names for _release, _hosts, names in lacking):
        raise _lacking_error(engine, [entry for entry in lacking if entry[2]])

    def exported(*names):
        return all(names) and any(not metrics_lacking(release, names) for release in releases)

    if exported(metrics.get("spec_drafts"), metrics.get("spec_accepted")):
        rules.append(_record("inferops:engine_spec_accepted_per_draft:ratio_rate10m",
                             "sum by (%s) (rate(%s[10m])) / sum by (%s) (rate(%s[10m]))"
                             % (BY, metrics["spec_accepted"], BY, metrics["spec_drafts"])))
    elif exported(metrics.get("spec_accept_length")):
        # SGLang's gauge is the mean tokens per verify step: the accepted draft tokens plus one.
        rules.append(_record("inferops:engine_spec_accepted_per_draft:ratio_rate10m",
                             "max by (%s) (avg_over_time(%s[10m])) - 1" % (BY, metrics["spec_accept_length"])))
    if exported(metrics.get("spec_accepted_per_pos"), metrics.get("spec_drafts")):
        rules.append(_record("inferops:engine_spec_acceptance_by_position:ratio_rate10m",
                             "sum by (%s, position) (rate(%s[10m])) / on (%s) group_left sum by (%s) (rate(%s[10m]))"
                             % (BY, metrics["spec_accepted_per_pos"], BY, BY, metrics["spec_drafts"])))
    # The engine as a rule label too: the same record from two engines' groups is then distinct
    # (promtool's duplicate-rule lint), and it is the value the target label already carries.
    for rule in rules:
        rule["labels"] = {"inference_engine": engine}
    return rules


def engine_rule_groups(entries):
    """One recording-rule group per engine, for the releases the fleet's plans run it at.

    An engine no host runs gets its rules for the newest stored release. A release lacking a metric
    the rules read is an error naming the hosts that run it.
    """
    groups = []
    for engine in sorted(engines.ENGINES):
        hosts_at = {}
        for entry in entries:
            deployment = entry["deployment"]
            if deployment["engine"] == engine:
                release = engine_release(engine, (deployment.get("image") or {}).get("engine_version"))
                hosts_at.setdefault(release.version, (release, []))[1].append(str(entry["host"]))
        by_release = sorted(hosts_at.values(), key=lambda item: catalog.parse_version(item[0].version))
        rules = engine_recording_rules(engine, by_release or None)
        groups.append({"name": "inferops-engine-%s" % engine, "rules": rules})
    return groups


def objective_rules(deployments, options=None):
    """``inferops:objective_*`` series, one per profile and measured figure (labelled ``profile``)."""
    by_profile = {}
    for deployment in deployments:
        profile = deployment.get("profile") or {}
        by_profile.setdefault(profile.get("name") or "", profile)
    rules = []
    for name in sorted(by_profile):
        found = objectives(by_profile[name], options)
        for key, record in (("decode_floor", "inferops:objective_decode_floor_tokens_per_second"),
                            ("accepted_per_draft", "inferops:objective_spec_accepted_per_draft"),
                            ("ttft", "inferops:objective_ttft_seconds")):
            if found[key] is not None:
                rules.append(_record(record, "vector(%s)" % found[key],
                                     {"profile": name, "objective_source": found["sources"][key]}))
    return rules


def _alert(name, severity, expr, duration, summary, runbook):
    return {"alert": name, "expr": expr, "for": duration,
            "labels": {"severity": severity},
            "annotations": {"summary": summary, "runbook": runbook}}


def alerts(values):
    """The alerts; every one says what happened on which host and what to do about it."""
    w = WATCHDOG_METRICS
    status = "ansible-playbook -i <inventory> inferops.serving.status --limit {{ $labels.host }}"
    return [
        _alert("InferopsEngineDown", "critical", 'up{inferops_role="engine"} == 0', "2m",
               "The engine on {{ $labels.host }} ({{ $labels.container }}) does not answer /metrics.",
               "Run `%s` to see the container and the watchdog's state; on the host, "
               "`docker logs --tail 200 {{ $labels.container }}` shows why the engine stopped. If the watchdog "
               "gave up or the container is gone, redeploy with site.yml --limit {{ $labels.host }}." % status),
        _alert("InferopsEngineWedged", "critical",
               "inferops:engine_tokens:increase_wedge_window == 0 "
               "and on (instance) inferops:engine_requests_running:min_wedge_window > 0", "1m",
               "The engine on {{ $labels.host }} answers but generates nothing while requests run.",
               "The token counters have been flat with requests running: the engine is wedged "
               "(health still 200). The watchdog restarts it within its budget; if it does not, restart the "
               "container on the host (`docker restart {{ $labels.container }}`) and keep `docker logs` of the "
               "wedged engine for the bug report before it is lost."),
        _alert("InferopsWatchdogGaveUp", "critical", "%s == 1" % w["gave_up"], "0m",
               "The watchdog on {{ $labels.host }} spent its restart budget and stopped acting.",
               "Nothing restarts {{ $labels.container }} any more. Read the watchdog's journal on the host "
               "(`journalctl -u inferops-watchdog@{{ $labels.container }}`) and the engine's logs, fix the cause, "
               "then redeploy with site.yml --limit {{ $labels.host }} (a served probe clears the give-up)."),
        _alert("InferopsWatchdogRestartBudgetLow", "warning",
               "%s <= %d and %s == 0 and increase(%s[1h]) > 0"
               % (w["restart_budget"], int(values["restart_budget_low"]), w["gave_up"], w["restarts"]), "0m",
               "The watchdog on {{ $labels.host }} has restarted the engine and has few restarts left this hour.",
               "The engine keeps failing. Read `journalctl -u inferops-watchdog@{{ $labels.container }}` for the "
               "outcome of each probe (wedged, dead, slow) and the engine's logs before the budget is spent and "
               "the watchdog gives up."),
        _alert("InferopsEngineCrashLooping", "critical", '%s{outcome="crash_looping"} == 1' % w["probe_outcome"],
               "0m",
               "The engine on {{ $labels.host }} is crash-looping (Docker keeps restarting it).",
               "Read the first error in `docker logs {{ $labels.container }}` (an out-of-memory, a bad flag or a "
               "CUDA error); a restart will not fix it. Roll back with playbooks/rollback.yml --limit "
               "{{ $labels.host }} or fix the profile and redeploy."),
        _alert("InferopsDecodeBelowFloor", "warning",
               "inferops:engine_generation_tokens:rate5m < on (profile) group_left "
               "inferops:objective_decode_floor_tokens_per_second "
               "and on (instance) inferops:engine_requests_running:min5m >= 1 "
               "and on (instance) inferops:engine_generation_tokens:rate5m > 0", "10m",
               "The engine on {{ $labels.host }} generates fewer tokens/s than profile {{ $labels.profile }}'s "
               "floor while requests run.",
               "Compare with the profile's measured figures: check the engine picked the profile's backends "
               "(`%s` runs the backend proof), that nothing else uses the GPU (`nvidia-smi`), and on GB10 that "
               "memory is not swapping. A slow engine past the watchdog's slow floor is restarted by it." % status),
        _alert("InferopsSpecAcceptanceLow", "warning",
               "inferops:engine_spec_accepted_per_draft:ratio_rate10m < on (profile) group_left "
               "inferops:objective_spec_accepted_per_draft", "15m",
               "Speculative acceptance on {{ $labels.host }} is well below profile {{ $labels.profile }}'s measured "
               "figure.",
               "The draft model no longer matches the traffic or the engine: see the per-position acceptance "
               "on the engine dashboard. Check the draft's backend and the sampling settings of the clients; "
               "if acceptance stays low, serve the profile's fallback (no speculation)."),
        _alert("InferopsKvCacheFullQueueGrowing", "warning",
               "inferops:engine_kv_cache_usage_ratio > %s and on (instance) "
               "delta(inferops:engine_requests_waiting[5m]) > 0 and on (instance) inferops:engine_requests_waiting > 0"
               % _number(values["kv_cache_full_ratio"]), "5m",
               "The KV cache on {{ $labels.host }} is nearly full and requests queue up.",
               "The engine is at capacity: requests wait for cache blocks. Shed or route load to another host, "
               "or serve a profile with more KV cache (a lower max-num-seqs, FP8 KV cache) for this traffic."),
        _alert("InferopsTtftOverObjective", "warning",
               "inferops:engine_ttft_seconds:p90_5m > on (profile) group_left inferops:objective_ttft_seconds",
               "10m",
               "Time to first token on {{ $labels.host }} (p90) is over profile {{ $labels.profile }}'s objective.",
               "Requests queue or prefill is slow: see queue and KV cache on the engine dashboard. Queueing means "
               "more load than the host serves (add a host or route away); no queue means slow prefill (check "
               "the backends with the status playbook)."),
        _alert("InferopsUnifiedMemoryLow", "critical",
               'node_memory_MemFree_bytes{unified_memory="true"} / node_memory_MemTotal_bytes < %s'
               % _number(values["unified_memfree_floor_ratio"]), "5m",
               "Free memory (MemFree) on unified-memory host {{ $labels.host }} is nearly gone.",
               "On GB10 the GPU allocates from MemFree: the page cache counts as used and MemAvailable looks "
               "healthy while the engine hits a device out-of-memory. Drop the page cache on the host "
               "(`sync; echo 1 > /proc/sys/vm/drop_caches`) and look for other processes holding memory; "
               "lower the profile's memory share if it recurs."),
        _alert("InferopsScrapeTargetDown", "warning", 'up{inferops_role="node"} == 0', "5m",
               "node_exporter on {{ $labels.host }} does not answer: its memory and watchdog metrics are missing.",
               "On the host: `systemctl status prometheus-node-exporter`; rerun the monitoring play of site.yml."),
        _alert("InferopsWatchdogSilent", "warning",
               'time() - node_textfile_mtime_seconds{file=~"inferops_watchdog_.*"} > %d'
               % int(values["watchdog_stale_seconds"]), "5m",
               "The watchdog on {{ $labels.host }} stopped writing its metrics ({{ $labels.file }}).",
               "`systemctl status 'inferops-watchdog@*'` on the host; the engine is not being watched."),
    ]


def target_presence_rules(targets):
    """One alert per planned target: its series is absent (Prometheus does not scrape it)."""
    rules = []
    for target in targets:
        labels = target["labels"]
        rules.append(_alert(
            "InferopsScrapeTargetMissing", "warning",
            'absent(up{inferops_role="%s", host="%s"})' % (labels["inferops_role"], labels["host"]), "5m",
            "Prometheus does not scrape the %s of %s." % (labels["inferops_role"], labels["host"]),
            "The deployment plans list this target but Prometheus has none: rerun the monitoring play of "
            "site.yml and check `promtool check config /etc/prometheus/prometheus.yml` on the monitoring host."))
        rules[-1]["labels"].update({"host": labels["host"], "inferops_role": labels["inferops_role"]})
    return rules


def alert_rules(hosts, options=None):
    """The rules file (as a dict): engine recording rules, the profiles' objectives, the alerts."""
    values = settings(options)
    entries = [_host_entry(h) for h in hosts or ()]
    targets = scrape_targets(entries, values)
    groups = engine_rule_groups(entries)
    objectives_group = objective_rules([e["deployment"] for e in entries], values)
    if objectives_group:
        groups.append({"name": "inferops-objectives", "rules": objectives_group})
    groups.append({"name": "inferops-alerts", "rules": alerts(values) + target_presence_rules(targets)})
    return {"groups": groups}


def _textfile_dir(entry, values):
    """The directory the host's watchdog writes to (None: none), checked against the operator's node_exporter."""
    written = (entry["deployment"].get("options") or {}).get("textfile_dir") or None
    read = entry.get("node_exporter_textfile_dir")
    if not values["node_exporter_install"] and read and written and str(read).rstrip("/") != str(written).rstrip("/"):
        raise MonitoringError(
            "host %s: the watchdog writes its metrics to %s (watchdog_textfile_dir), but the operator's "
            "node_exporter reads node_exporter_textfile_dir %s (monitoring_node_exporter_install is false): set "
            "watchdog_textfile_dir to %s (its default follows node_exporter_textfile_dir), or let the role "
            "install node_exporter (monitoring_node_exporter_install: true)" % (entry["host"], written, read, read))
    return written


def monitoring_plan(hosts, options=None):
    """Everything the monitoring role writes, from the serving hosts' plans.

    ``targets`` (scrape_targets), ``prometheus`` (prometheus.yml), ``rules`` (the rules file),
    ``credentials`` (``[{"host", "path", "env"}]``: the files holding an engine's API key, and the
    secret's name in the host's ``server_secrets``; never the key), ``textfile_dirs`` (``{host:
    directory}``: where each host's watchdog writes its metrics, for node_exporter),
    ``node_exporters`` (``{host: {"listen_address", "metrics_path", "textfile_dir"}}``: how the
    role's node_exporter on each host is configured). A host entry's
    ``node_exporter_textfile_dir`` (prometheus.prometheus' variable) must match the plan's
    directory when the operator runs node_exporter (``node_exporter_install`` false).
    """
    values = settings(options)
    entries = [_host_entry(h) for h in hosts or ()]
    targets = scrape_targets(entries, values)
    textfile_dirs = {str(e["host"]): _textfile_dir(e, values) for e in entries}
    return {
        "targets": targets,
        "prometheus": prometheus_config(targets, values),
        "rules": alert_rules(entries, values),
        "credentials": [{"host": t["labels"]["host"], "path": t["credentials_file"], "env": t["api_key_env"]}
                        for t in targets if t.get("credentials_file")],
        "textfile_dirs": textfile_dirs,
        "node_exporters": {str(e["host"]): {
            "listen_address": e.get("node_exporter_listen") or ":%d" % int(e.get("node_exporter_port")
                                                                           or values["node_exporter_port"]),
            "metrics_path": e.get("node_exporter_path") or "/metrics",
            "textfile_dir": textfile_dirs[str(e["host"])]} for e in entries},
    }


def serving_host(name, hostvars, options=None):
    """The entry ``monitoring_plan`` takes for one serving host, from the host's variables.

    Where the monitoring host reaches it (``monitoring_scrape_address``, else ``ansible_host``,
    else its name), its plan (``server_deployment``) and its node_exporter (``node_exporter_settings``;
    prometheus.prometheus' ``node_exporter_textfile_dir`` is kept for the check of the watchdog's
    directory).
    """
    node = node_exporter_settings(str(name), hostvars, options)
    return {"host": str(name),
            "address": hostvars.get("monitoring_scrape_address") or hostvars.get("ansible_host") or str(name),
            "deployment": hostvars.get("server_deployment"),
            "node_exporter_port": node["port"],
            "node_exporter_listen": node["listen_address"],
            "node_exporter_path": node["metrics_path"],
            "node_exporter_textfile_dir": hostvars.get("node_exporter_textfile_dir")}


def play_plan(names, hostvars, options=None, unplanned="fail"):
    """The monitoring plan of the serving hosts ``names``, from the play's ``hostvars``: the lookup's.

    ``monitoring_plan`` of their entries (``serving_host``), with ``unplanned`` (the hosts without a
    plan, ``server_deployment``) empty. A host without a plan fails the plan, naming the host and the
    role's resolve, unless ``unplanned="report"``: then the result is ``{"unplanned": [...]}`` alone,
    and the caller keeps what it wrote before (a run limited to some serving hosts has no plan for the
    others, and a configuration written without them would drop their targets).
    """
    if unplanned not in ("fail", "report"):
        raise MonitoringError("unplanned is %r: write fail or report" % (unplanned,))
    names = [str(name) for name in names or ()]
    unknown = [name for name in names if name not in hostvars]
    if unknown:
        raise MonitoringError("monitoring_serving_hosts names %s, not in the inventory: list the serving hosts "
                              "(the default is groups['serving'])" % ", ".join(unknown))
    missing = [name for name in names if hostvars[name].get("server_deployment") is None]
    if missing and unplanned == "report":
        return {"unplanned": missing}
    plan = monitoring_plan([serving_host(name, hostvars[name], options) for name in names], options)
    plan["unplanned"] = []
    return plan
