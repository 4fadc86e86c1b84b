# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What playbooks/benchmark.yml, tune.yml and pin.yml decide, over _bench's rules.

_bench holds the rules (summarise, choose, advise_k, overlay, gate); this module fits them to
what the playbooks have in hand: a sweep's ``results.json`` (scripts/run-loadgen), the deployment
plan (``server_deployment``), extra vars given as strings. Pure functions; the lookup
inferops.serving.bench_plan calls them.
"""
from __future__ import annotations

import re

from ansible_collections.inferops.serving.plugins.plugin_utils import _bench

BenchError = _bench.BenchError

NO_OBJECTIVE = ("No latency objective: give at least one bound, e.g. -e benchmark_tune_ttft_p99_s=8 "
                "-e benchmark_tune_itl_p99_ms=150 (or -e '{\"benchmark_tune_objective\": {\"ttft_p99_s\": 8}}')")
# Each level: its duration (default 180 s, or about 1 s a request), its warm-up and AIPerf's start (10-40 s).
LEVEL_SLACK_S, SWEEP_SLACK_S, DEFAULT_DURATION_S, DEFAULT_LEVELS = 240, 300, 180, 5

# Speculative flags per engine: a profile without one has no draft tokens to tune (k is not swept).
_SPECULATIVE_ARGS = {"vllm": ("speculative_config", "speculative-config"),
                     "sglang": ("speculative-algorithm", "speculative_algorithm")}


def _runs(results):
    if isinstance(results, dict):
        if "runs" not in results:
            raise BenchError("results: no 'runs' key; expected scripts/run-loadgen's results.json "
                             "({plan, endpoint, runs: [{run, levels}]})")
        return results["runs"]
    return results


def summary(results):
    """_bench.summarise over a results.json (or its ``runs``), with the sweep's plan and endpoint
    kept beside the levels, so summary.json says what was measured and how."""
    out = _bench.summarise(_runs(results))
    if isinstance(results, dict):
        for key in ("plan", "endpoint", "generator"):
            if key in results:
                out[key] = results[key]
        endpoint = results.get("endpoint") or {}
        out["title"] = "%s %s" % (endpoint.get("engine", ""), endpoint.get("model", "")) if endpoint else "load sweep"
    return out


def _max_num_seqs(deployment):
    expect = (deployment or {}).get("expect") or {}
    if expect.get("max_num_seqs") is not None:
        return int(expect["max_num_seqs"])
    args = ((deployment or {}).get("profile") or {}).get("args") or {}
    value = args.get("max-num-seqs", args.get("max-running-requests"))
    return int(value) if value is not None else None


def table(summary_, deployment=None):
    """_bench.markdown_table with the profile's ``measured`` figures (measured_levels, saturated
    figures at the plan's max-num-seqs, a burst figure beside a burst sweep) beside the sweep's, and a
    heading naming the profile."""
    deployment = deployment or {}
    profile = deployment.get("profile") or {}
    measured = _bench.measured_levels(profile.get("measured"), _max_num_seqs(deployment),
                                      _bench.burst_size(summary_))
    heading = ""
    if profile.get("name"):
        cap = _max_num_seqs(deployment)
        heading = "Profile %s (%s)%s\n\n" % (
            profile["name"], "max-num-seqs %d" % cap if cap is not None else "no max-num-seqs set",
            "; measured: " + str(profile["measured"]["source"]) if (profile.get("measured") or {}).get("source")
            else "")
    return heading + _bench.markdown_table(summary_, measured)


def level(summary_, concurrency, results=None):
    """One level's figures as plain numbers (the means), the shape _bench.choose and _bench.gate
    take: ``{concurrency, output_tok_s, ttft_p50_s, ..., acceptance_per_pos, accept_length,
    runs}``. ``accept_length`` (SGLang) is the summary's mean; a summary written without it (before
    summarise read it) takes the mean over the summary's runs from ``results`` when given."""
    try:
        concurrency = int(concurrency)
    except (TypeError, ValueError):
        raise BenchError("concurrency: got %r; expected a number of concurrent requests" % (concurrency,))
    found = [entry for entry in summary_.get("levels", []) if entry.get("concurrency") == concurrency]
    if not found:
        raise BenchError("the sweep measured no level at concurrency %d (levels: %s): run it at that concurrency"
                         % (concurrency, ", ".join(str(entry.get("concurrency")) for entry in summary_.get("levels", []))
                            or "none"))
    entry = found[0]
    figures = {"concurrency": concurrency, "runs": list(entry.get("runs", []))}
    for name in _bench.LEVEL_FIGURES + _bench.OPTIONAL_FIGURES:
        if isinstance(entry.get(name), dict):
            figures[name] = entry[name]["mean"]
    if isinstance(entry.get("acceptance_per_pos"), dict):
        figures["acceptance_per_pos"] = list(entry["acceptance_per_pos"]["mean"])
    if results is not None and "accept_length" not in figures:
        lengths = [item["accept_length"] for run in _runs(results) if run.get("run") in figures["runs"]
                   for item in run.get("levels", [])
                   if item.get("concurrency") == concurrency and item.get("accept_length") is not None]
        if lengths:
            figures["accept_length"] = sum(lengths) / len(lengths)
    return figures


def _int_list(values, name):
    if values is None or values == "":
        return []
    given = values
    if isinstance(values, (int, str)) and not isinstance(values, bool):
        values = [part for part in str(values).split(",") if part.strip()]
    try:
        out = [int(value) for value in values]
    except (TypeError, ValueError):
        raise BenchError("%s: got %r; expected a list of whole numbers, e.g. [4, 8, 16, 32] or '4,8,16,32'"
                         % (name, given))
    if any(value < 1 for value in out):
        raise BenchError("%s: got %r; every value must be 1 or more" % (name, given))
    return sorted(set(out))


def speculative(deployment):
    """Whether the planned profile runs speculative decoding (has draft tokens to tune)."""
    engine = deployment.get("engine")
    args = (deployment.get("profile") or {}).get("args") or {}
    return any(args.get(name) for name in _SPECULATIVE_ARGS.get(engine, ()))


def candidates(deployment, max_num_seqs=None, k=None, base_overrides=None):
    """The configurations tune.yml deploys and sweeps: every max-num-seqs value (default 4, 8, 16,
    32: the GB10 field report's sweep) times every k (default 1, 2, 3 for a speculative profile; none otherwise:
    k is not swept without draft tokens). Each with
    the ``server_profile_overrides`` to deploy it: the inventory's own overrides (``base_overrides``)
    with _bench.overlay's args laid over them, and the concurrency to sweep it at (its
    max-num-seqs: _bench.choose compares configurations at their own saturation point)."""
    engine = (deployment or {}).get("engine")
    if engine not in ("vllm", "sglang"):
        raise BenchError("deployment: engine %r; expected the server role's server_deployment (vllm or sglang)"
                         % (engine,))
    seqs = _int_list(max_num_seqs, "benchmark_tune_max_num_seqs") or [4, 8, 16, 32]
    if not speculative(deployment):
        if k:
            raise BenchError("benchmark_tune_k: the profile %s runs no speculative decoding; there are no draft "
                             "tokens to tune: leave benchmark_tune_k unset"
                             % (deployment.get("profile") or {}).get("name"))
        ks = [None]
    else:
        ks = _int_list(k, "benchmark_tune_k") or [1, 2, 3]
    out = []
    for seq in seqs:
        for draft in ks:
            config = {"max_num_seqs": seq}
            if draft is not None:
                config["k"] = draft
            args = _bench.overlay(config, {}, engine)["server_profile_overrides"]["args"]
            overrides = dict(base_overrides or {})
            overrides["args"] = dict(overrides.get("args") or {}, **args)
            label = "max-num-seqs %d%s" % (seq, ", k=%d" % draft if draft is not None else "")
            # its sweep's directory under tune's results directory
            out.append({"config": config, "concurrency": seq, "overrides": overrides, "label": label,
                        "slug": re.sub(r"[^0-9a-z]+", "-", label)})
    return out


def _objective(objective):
    out = {}
    for key, value in (objective or {}).items():
        if value is None or value == "":
            continue
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            raise BenchError("objective %s: got %r; expected a number" % (key, value))
    if not out:
        raise BenchError(NO_OBJECTIVE[0].lower() + NO_OBJECTIVE[1:])
    return out


def tune(entries, objective, deployment, host=None):
    """tune.yml's decision from its sweeps: ``entries`` ``[{config, level}]`` (each candidate's
    level() at its own max-num-seqs). _bench.choose picks the configuration with the most tok/s
    meeting the objective; then _bench.advise_k, from the measured tok/s of the k values at the
    chosen max-num-seqs that also met the objective (a smaller k within 2 % wins), and from the
    per-position acceptance of the deepest k measured there (the acceptance rule, reported
    beside; SGLang: the rates derived from its accept length at each k swept,
    _bench.acceptance_from_accept_lengths). The overlay (_bench.overlay) carries the advised k and the evidence.

    Returns ``{met, message, choice, k_advice, overlay}``; ``overlay`` is None when nothing met it.
    """
    objective = _objective(objective)
    engine = deployment.get("engine")
    sweep = []
    for index, entry in enumerate(entries or []):
        if not isinstance(entry, dict) or "config" not in entry or not isinstance(entry.get("level"), dict):
            raise BenchError("entries[%d]: expected {config, level}, got %r" % (index, entry))
        sweep.append(dict(entry["level"], config=entry["config"]))
    chosen = _bench.choose(sweep, objective)
    result = {"met": chosen["met"], "message": chosen["message"], "choice": chosen["choice"], "k_advice": None,
              "overlay": None}
    if not chosen["met"]:
        return result
    choice = dict(chosen["choice"])
    evidence = {"host": host, "profile": (deployment.get("profile") or {}).get("name"), "engine": engine,
                "objective": objective, "choose": chosen["evidence"], "choose_message": chosen["message"]}
    if "k" in choice:
        met_configs = [record["config"] for record in chosen["evidence"]["met"]]
        same = [entry for entry in sweep if entry["config"].get("max_num_seqs") == choice["max_num_seqs"]
                and entry["config"] in met_configs]
        tok_s_by_k = {entry["config"]["k"]: entry["output_tok_s"] for entry in same}
        deepest = max((entry for entry in sweep if entry["config"].get("max_num_seqs") == choice["max_num_seqs"]
                       and entry.get("acceptance_per_pos")), key=lambda entry: len(entry["acceptance_per_pos"]),
                      default=None)
        measured = _bench.advise_k(None, tok_s_by_k) if len(tok_s_by_k) > 1 else None
        by_acceptance = _bench.advise_k(deepest["acceptance_per_pos"]) if deepest else None
        lengths = {entry["config"]["k"]: entry["accept_length"] for entry in sweep
                   if entry["config"].get("max_num_seqs") == choice["max_num_seqs"]
                   and entry["config"].get("k") is not None and entry.get("accept_length") is not None}
        if by_acceptance is None and lengths:
            # SGLang: no per-position counter; its accept lengths over the swept k give the rates.
            rates = _bench.acceptance_from_accept_lengths(lengths)
            if rates:
                by_acceptance = dict(_bench.advise_k(rates), accept_length_by_k=lengths)
        advice = measured or by_acceptance
        if advice is not None and advice["k"] in tok_s_by_k:
            choice["k"] = advice["k"]
            reason = advice["reason"]
        else:
            reason = "k=%d: the only k measured meeting the objective at max-num-seqs %d" % (
                choice["k"], choice["max_num_seqs"])
            if by_acceptance is not None and by_acceptance["k"] != choice["k"]:
                reason += ("; the acceptance rule suggests k=%d (%s): sweep it with benchmark_tune_k"
                           % (by_acceptance["k"], by_acceptance["reason"]))
        result["k_advice"] = {"measured": measured, "acceptance": by_acceptance, "k": choice["k"], "reason": reason}
        evidence["k_advice"] = result["k_advice"]
    evidence["chosen"] = choice
    result["choice"] = choice
    result["overlay"] = _bench.overlay(choice, evidence, engine)
    result["message"] = "%s; %s" % (chosen["message"], result["k_advice"]["reason"]) if result["k_advice"] \
        else chosen["message"]
    return result


def gate(candidate, baseline=None, threshold=0.10):
    """pin.yml's performance verdict: _bench.gate against the lock's recorded figures; with no
    baseline (a first pin, or a lock written before figures were recorded), or one measured at
    another concurrency, the candidate is accepted and its figures become the baseline, and the
    message says so. ``signature``: the known-bad signature of a refusal (slower_than_baseline,
    speculative_acceptance_collapsed, or both joined by '+'). ``state``: ``accepted`` or
    ``refused`` (the pin role fails the canary on ``refused``)."""
    verdict = _gate(candidate, baseline, threshold)
    verdict["state"] = "accepted" if verdict["accepted"] else "refused"
    return verdict


def _gate(candidate, baseline=None, threshold=0.10):
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise BenchError("pin_perf_threshold: got %r; expected a fraction, e.g. 0.10" % (threshold,))
    figures = {key: value for key, value in candidate.items() if key != "runs"}
    if not baseline or baseline.get("output_tok_s") is None:
        return {"accepted": True, "baseline": None, "figures": figures, "signature": None,
                "message": "accepted without comparison: the lock has no baseline figures for this image; "
                           "recorded %.1f output tok/s at concurrency %s as its baseline"
                           % (candidate["output_tok_s"], candidate["concurrency"])}
    if baseline.get("concurrency") != candidate.get("concurrency"):
        return {"accepted": True, "baseline": baseline, "figures": figures, "signature": None,
                "message": "accepted without comparison: the lock's baseline was measured at concurrency %s, this "
                           "benchmark at %s (set pin_bench_concurrency=%s to compare); recorded %.1f output "
                           "tok/s at concurrency %s as the new baseline"
                           % (baseline.get("concurrency"), candidate["concurrency"], baseline.get("concurrency"),
                              candidate["output_tok_s"], candidate["concurrency"])}
    verdict = _bench.gate(baseline, candidate, threshold)
    signature = "+".join({"throughput": "slower_than_baseline",
                          "speculative acceptance": "speculative_acceptance_collapsed"}[reason]
                         for reason in verdict["reasons"]) or None
    return dict(verdict, baseline=baseline, figures=figures, signature=signature)


def objective(given=None, bounds=None):
    """tune's objective: ``benchmark_tune_objective`` with the single bounds
    (``benchmark_tune_ttft_p99_s`` ...) laid over; unset ones dropped. Refused when empty."""
    merged = dict(given or {})
    merged.update({key: value for key, value in (bounds or {}).items() if value is not None and value != ""})
    if not any(value is not None and value != "" for value in merged.values()):
        raise BenchError(NO_OBJECTIVE)
    return _objective(merged)


def _blank(value):
    """Unset: none, empty, or 0 (a role default meaning "the workload's")."""
    return value is None or str(value).strip() in ("", "0")


def levels(values):
    """Concurrency levels as given (a list, a number or "1,4,8"), in order; [] for the workload's."""
    if _blank(values):
        return []
    parts = [str(part).strip() for value in (values if isinstance(values, (list, tuple)) else [values])
             for part in str(value).split(",") if str(part).strip()]
    try:
        out = [int(part) for part in parts]
    except ValueError:
        raise BenchError("benchmark_levels: got %r; expected concurrency levels, e.g. [1, 4, 8] or '1,4,8'" % (values,))
    if any(level < 1 for level in out):
        raise BenchError("benchmark_levels: got %r; every level must be 1 or more" % (values,))
    return out


def endpoint_url(deployment, url=None, address=None):
    """The endpoint's base URL as the controller reaches it: ``benchmark_url``, else
    http://<benchmark_address>:<the plan's port>."""
    return str(url or "http://%s:%s" % (address, deployment["port"])).rstrip("/")


def results_dir(host, given=None, root=".", stamp="", prefix=""):
    """Where a host's sweep goes: ``given`` with {host} replaced, else <root>/<prefix><stamp>/<host>."""
    if given:
        return str(given).replace("{host}", host)
    return "%s/%s%s/%s" % (str(root).rstrip("/"), prefix, stamp, host)


def sweep_timeout(levels_, runs, duration=None):
    """Seconds the sweep may take before Ansible gives up on it."""
    seconds = int(duration) if not _blank(duration) else DEFAULT_DURATION_S
    return (len(levels_) or DEFAULT_LEVELS) * int(runs) * (seconds + LEVEL_SLACK_S) + SWEEP_SLACK_S


def sweep(deployment, host, python, scripts, options):
    """The sweep of one host (scripts/run-loadgen sweep): ``{url, out, levels, timeout, argv,
    plot_argv}``. ``options``: url, address, results_dir, root, stamp, prefix, levels, runs, duration,
    requests, workload, seed, api_key (whether the key goes on standard input), profile_dirs."""
    url = endpoint_url(deployment, options.get("url"), options.get("address") or host)
    out = results_dir(host, options.get("results_dir"), options.get("root", "."), options.get("stamp", ""),
                      options.get("prefix", ""))
    wanted = levels(options.get("levels"))
    runs = int(options.get("runs") or 3)
    duration, requests = options.get("duration"), options.get("requests")
    argv = [python, scripts + "/run-loadgen", "sweep", "--url", url, "--engine", deployment["engine"],
            "--model", deployment["served_model_name"], "--out", out, "--workload", options.get("workload") or "chat",
            "--runs", str(runs), "--seed", str(options.get("seed") or 1)]
    if wanted:
        argv += ["--levels", ",".join(str(level) for level in wanted)]
    if not _blank(duration):
        argv += ["--duration", str(duration)]
    if not _blank(requests):
        argv += ["--requests", str(requests)]
    if runs < 3:
        argv.append("--allow-fewer-runs")
    if options.get("api_key"):
        argv.append("--api-key-stdin")
    plot = [python, scripts + "/run-loadgen", "plot", "--summary", out + "/summary.json", "--out", out + "/plot.png",
            "--profile", deployment["profile"]["name"],
            "--title", "%s %s %s" % (host, deployment["engine"], deployment["served_model_name"])]
    if _max_num_seqs(deployment) is not None:
        plot += ["--max-num-seqs", str(_max_num_seqs(deployment))]
    plot += ["--profile-dir=%s" % directory for directory in options.get("profile_dirs") or []]
    return {"url": url, "out": out, "levels": wanted, "timeout": sweep_timeout(wanted, runs, duration),
            "argv": argv, "plot_argv": plot}


def _merged(base, over):
    """``base`` with ``over`` laid over, mappings merged at every depth (Ansible's combine(recursive=true))."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def report(results, deployment=None):
    """A sweep's ``results.json`` as ``{summary, table}`` (summary(), table())."""
    summary_ = summary(results)
    try:
        return {"summary": summary_, "table": table(summary_, deployment)}
    except (KeyError, TypeError) as exc:
        raise BenchError("table: %s (expected a summary and server_deployment)" % exc)


def tune_plan(deployment, host, given=None, bounds=None, max_num_seqs=None, k=None, base_overrides=None,
              dir_options=None):
    """What tune decides before anything is deployed: ``{objective, candidates, dir}`` (objective(),
    candidates(), and ``dir.out`` the tune's results directory, results_dir())."""
    options = dict(dir_options or {})
    return {"objective": objective(given, bounds),
            "candidates": candidates(deployment, max_num_seqs, k, base_overrides),
            "dir": {"out": results_dir(host, options.get("results_dir"), options.get("root", "."),
                                       options.get("stamp", ""), options.get("prefix", ""))}}


def decision(entries, objective_, deployment, host=None, base_overrides=None, failed=None, sweeps=None):
    """tune's decision from its sweeps (tune()) and, when a candidate met the objective, the overlay's
    variables (overlay_vars(), else None): ``{decision, overlay}``."""
    decided = tune(entries, objective_, deployment, host)
    return {"decision": decided,
            "overlay": overlay_vars(decided, base_overrides, failed, sweeps) if decided["met"] else None}


def overlay_vars(decision, base_overrides, failed, sweeps):
    """The variables of tune's inventory overlay: the inventory's own overrides with the chosen flags
    laid over, and the evidence (every candidate's figures, the failed ones, where the sweeps are)."""
    overlay_ = decision["overlay"]
    overrides = _merged(base_overrides or {}, overlay_["server_profile_overrides"])
    evidence = dict(overlay_["server_profile_overrides_evidence"], failed=list(failed or []), sweeps=sweeps)
    return {"server_profile_overrides": overrides, "server_profile_overrides_evidence": evidence}
