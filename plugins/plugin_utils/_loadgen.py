# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""A load sweep's decisions: which steps it runs, the load generator's command line for each, and
its report and the engine's /metrics read into one level of the results.

scripts/run-loadgen runs NVIDIA AIPerf (pinned in requirements-loadgen.txt, its own virtualenv:
docs/benchmarking.md) once per run and concurrency level against an OpenAI-compatible endpoint and
writes ``{"runs": [{"run": i, "levels": [level, ...]}]}``; ``level`` is what ``level_result`` returns.
The workloads follow the field reports' methodology (``WORKLOADS``): a fixed seed, warm-up requests at the
level's own concurrency before each measurement (the GB10 write-up: the first requests after a start pay the
CUDA graph capture), three runs or more (R1 is reported, R2..Rn are what a summary averages).
"""
from __future__ import annotations

import json

from ansible_collections.inferops.serving.plugins.plugin_utils import _bench
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import (
    acceptance_per_position, metric_max)


class LoadgenError(ValueError):
    """A sweep that cannot run as asked, or a generator report that cannot be read."""


# Each workload: prompt and output tokens per request (osl_stddev: AIPerf's --osl-stddev, a normal
# truncated at 0 and rounded up; 0 is every request the same), how long a level lasts (seconds, or a
# fixed number of requests), its default concurrency levels, warm-up requests (None: max(3,
# concurrency)), and the field report it reproduces.
WORKLOADS = {
    "chat": {"isl": 512, "osl": 256, "osl_stddev": 0, "duration_s": 180, "requests": None,
             "levels": [1, 4, 8, 16, 32], "warmup": None,
             "source": "the GB10 field report: guidellm concurrent profile, chat shape prompt 512 / output 256, 180 s per "
                       "level; 1 stream 24.2 tok/s, 4 -> 47.7, 32 -> 131 (KV-bound)"},
    # A burst warms up with the GB10 write-up's three requests, not a second burst of 500. Its outputs are the g7e
    # field report's: at most 200 asked, 50,722 generated over 500 requests (101.4 on average, "burst throughput is
    # sensitive to output length"), so not 200 each (5,060 tok/s on the simulator's model instead of
    # ~3,200): AIPerf's --osl 96 --osl-stddev 57 draws ~101.5 on average (the truncation at 0 and the
    # rounding up add ~5.5), the spread of the g7e field report's lengths if spread evenly over 2..200 (std 57).
    "burst": {"isl": 200, "osl": 96, "osl_stddev": 57, "duration_s": None, "requests": 500, "levels": [500],
              "warmup": 3,
              "source": "the g7e field report: burst of 500 prompts, 200 in / at most 200 out (~101 generated on average: "
                        "50,722 tokens), all at once, --seed 1, 3 runs; R2-R3 3,215 tok/s"},
    "long": {"isl": 16384, "osl": 200, "osl_stddev": 0, "duration_s": 180, "requests": None, "levels": [1, 4],
             "warmup": None,
             "source": "the g7e field report: long context 16384 in / 200 out; the GB10 write-up: decode steady from 512 to 100K "
                       "tokens of context"},
}
MIN_RUNS = 3
DEFAULT_SEED = 1
# The GB10 write-up: three throwaway requests made the cold-start TTFT (24.8 s vs 1.9 s) go away.
MIN_WARMUP_REQUESTS = 3


def _positive_int(name, value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number <= 0 or str(value).strip() != str(number):
        raise LoadgenError("%s must be a positive whole number, got %r" % (name, value))
    return number


def sweep_plan(workload="chat", levels=None, runs=MIN_RUNS, duration_s=None, requests=None, seed=DEFAULT_SEED,
               warmup_requests=None, allow_fewer_runs=False):
    """The sweep to run: its settings and its steps, ``(run, concurrency)`` in the order they run.

    Every level of run 1, then of run 2, ...: each run is a whole sweep, as the field reports' R1/R2/R3.
    ``duration_s`` or ``requests`` override the workload's (a short sweep for tests and CI);
    fewer than three runs is refused unless ``allow_fewer_runs`` (a smoke test, not a measurement).
    """
    if workload not in WORKLOADS:
        raise LoadgenError("workload %r is not one of %s" % (workload, ", ".join(sorted(WORKLOADS))))
    shape = WORKLOADS[workload]
    levels = [_positive_int("each concurrency level", level) for level in (levels or shape["levels"])]
    if len(set(levels)) != len(levels):
        raise LoadgenError("concurrency levels %s repeat a level: list each level once" % levels)
    runs = _positive_int("runs", runs)
    if runs < MIN_RUNS and not allow_fewer_runs:
        raise LoadgenError("runs is %d: a measurement takes at least %d runs (R1 warms caches; the summary "
                           "reports R2..Rn as mean +- std); pass more runs" % (runs, MIN_RUNS))
    if duration_s is not None and requests is not None:
        raise LoadgenError("set either a duration per level or a number of requests per level, not both")
    if requests is not None:
        duration_s, requests = None, _positive_int("requests per level", requests)
    elif duration_s is not None:
        duration_s = _positive_int("duration per level (seconds)", duration_s)
    else:
        duration_s, requests = shape["duration_s"], shape["requests"]
    plan = {"workload": workload, "isl": shape["isl"], "osl": shape["osl"], "osl_stddev": shape["osl_stddev"],
            "levels": levels, "runs": runs,
            "duration_s": duration_s, "requests": requests, "seed": int(seed), "source": shape["source"],
            "warmup_requests": shape["warmup"] if warmup_requests is None else _positive_int("warm-up requests",
                                                                                             warmup_requests)}
    plan["steps"] = [(run, level) for run in range(1, runs + 1) for level in levels]
    return plan


def warmup_for(plan, concurrency):
    """Warm-up requests before a level: enough to fill the level's batch once (its CUDA graph), >= 3."""
    if plan["warmup_requests"] is not None:
        return plan["warmup_requests"]
    return max(MIN_WARMUP_REQUESTS, int(concurrency))


# AIPerf 0.13.0 takes an endpoint's API key only as ``--api-key KEY`` on its command line: its CLI
# reads no environment variable for it (OPENAI_API_KEY only rehydrates a key a run_config.json had
# redacted), and ``${VAR}`` is substituted only inside a ``--config`` YAML, which must then hold the
# whole benchmark (datasets, phases). A key in argv is readable by every user of the controller
# (``ps``, /proc/PID/cmdline). So a keyed level runs AIPerf's CLI through this launcher: its argv
# names the environment variable, not the key; it pops the key from its environment (so no child
# inherits the variable) and hands it to the CLI in the process, sys.argv staying key-free (AIPerf
# records its command line from sys.argv). AIPerf forwards it to its own subprocesses through their
# environment (AIPERF_INJECTED_API_KEY, orchestrator/local_executor.py), never through argv.
AIPERF_LAUNCHER = (
    "import os, sys\n"
    "name = sys.argv[1]\n"
    "key = os.environ.pop(name, '')\n"
    "if not key:\n"
    "    sys.exit('run-loadgen: the environment variable %s holds no API key: export the endpoint key in it' % name)\n"
    "sys.argv = ['aiperf'] + sys.argv[2:]\n"
    "from aiperf.cli import app\n"
    "sys.exit(app(sys.argv[1:] + ['--api-key', key]))\n")


# The environment variable run-loadgen hands the key to the launcher in (its own, whatever the engine's
# key variable is called: the launcher pops it, so no AIPerf process inherits it).
LAUNCHER_KEY_ENV = "INFEROPS_LOADGEN_API_KEY"


# AIPerf binds its ZMQ sockets as <temporary directory>/tmpXXXXXXXX/aiperf/<name>.ipc (event_bus_proxy_backend.ipc:
# 47 characters after the directory) and fails when a path is over the 107 characters a Unix socket takes
# ("ipc path ... is longer than 107 characters"), then exits 0 without a report. Each AIPerf run gets a
# directory of its own (run-loadgen: aiperf-<pid>-XXXXXXXX, a pid of up to 7 digits) under a base no longer
# than this.
AIPERF_TMP_BASE_MAX = 36


def aiperf_tmp_base(tmpdir, fallback="/tmp"):
    """The directory to make an AIPerf run's own temporary directory in: the controller's temporary
    directory (``tmpdir``, tempfile.gettempdir()) when its sockets' paths fit under it, else ``fallback``."""
    return tmpdir if len(str(tmpdir)) <= AIPERF_TMP_BASE_MAX else fallback


def api_key(stdin_text=None, env=None, env_name=None):
    """The endpoint's API key for a sweep, from the first line of standard input (``stdin_text``:
    roles/benchmark/tasks/sweep.yml hands it over there, as the command module's ``stdin``: Ansible's
    ``environment`` would put it on the controller's ``sh -c`` command line) or from the environment
    variable ``env_name`` (a person running run-loadgen); None without either. An empty one is an
    error naming its source, never the key."""
    if stdin_text is not None:
        key = stdin_text.splitlines()[0].strip() if stdin_text.strip() else ""
        if not key:
            raise LoadgenError("--api-key-stdin: the first line of standard input is empty: pipe the endpoint's "
                               "API key in (printf '%s\\n' \"$KEY\" | run-loadgen sweep --api-key-stdin ...)")
        return key
    if env_name:
        key = (env or {}).get(env_name, "").strip()
        if not key:
            raise LoadgenError("--api-key-env %s names an empty or unset environment variable: export the "
                               "endpoint's API key in it" % env_name)
        return key
    return None


def aiperf_argv(aiperf, plan, concurrency, url, model, tokenizer, artifact_dir, api_key_env=None, ignore_eos=True,
                python=None):
    """The command line of one level: ``aiperf profile ...``.

    Output tokens are the engine's own counts (``--use-server-token-count``: reasoning tokens count,
    the client's tokenizer does not matter); ``ignore_eos`` makes every request produce ``osl``
    tokens, as the field reports' fixed-shape workloads (vLLM and SGLang both honour it).

    With ``api_key_env`` (the name of the environment variable holding the endpoint's API key), the
    key never enters a command line: ``python -c AIPERF_LAUNCHER <api_key_env> profile ...`` with
    ``python`` the load generator's venv interpreter (the launcher's comment says why).
    """
    argv = [aiperf, "profile", "--model", model, "--url", url, "--endpoint-type", "chat", "--streaming",
            "--tokenizer", tokenizer, "--use-server-token-count",
            "--isl", str(plan["isl"]), "--isl-stddev", "0", "--osl", str(plan["osl"]),
            "--osl-stddev", str(plan.get("osl_stddev", 0)),
            "--concurrency", str(concurrency), "--random-seed", str(plan["seed"]),
            "--warmup-request-count", str(warmup_for(plan, concurrency)),
            "--ui-type", "none", "--no-gpu-telemetry", "--no-server-metrics", "--artifact-dir", str(artifact_dir)]
    if plan["requests"] is not None:
        argv += ["--request-count", str(plan["requests"])]
    else:
        argv += ["--benchmark-duration", str(plan["duration_s"])]
    if ignore_eos:
        argv += ["--extra-inputs", "ignore_eos:true"]
    if api_key_env:
        if not python:
            raise LoadgenError("an API key variable (%s) needs the load generator's python to launch AIPerf "
                               "without the key on its command line" % api_key_env)
        argv = [python, "-c", AIPERF_LAUNCHER, api_key_env] + argv[1:]
    return argv


def _stat(report, metric, stat, source):
    entry = report.get(metric)
    if not isinstance(entry, dict) or not isinstance(entry.get(stat), (int, float)):
        raise LoadgenError("%s has no %s.%s: not an AIPerf profile_export_aiperf.json of a completed chat "
                           "benchmark (schema %s)" % (source, metric, stat, report.get("schema_version")))
    return float(entry[stat])


def _ms(report, metric, stat, source):
    if (report.get(metric) or {}).get("unit") not in ("ms", None):
        raise LoadgenError("%s reports %s in %s, expected ms" % (source, metric, report[metric]["unit"]))
    return _stat(report, metric, stat, source)


def level_result(report, concurrency, source="the AIPerf report"):
    """One level of the results from AIPerf's ``profile_export_aiperf.json`` (parsed).

    ``output_tok_s`` is AIPerf's output_token_throughput (all output tokens over the level's
    duration, the field reports' aggregate tok/s); TTFT in seconds, ITL in milliseconds, as the field reports quote
    them. A report without a completed request is an error naming the generator's own errors.
    """
    if not isinstance(report, dict):
        raise LoadgenError("%s is not a JSON object" % source)
    errors = sum(int(item.get("count", 1)) for item in report.get("error_summary") or [] if isinstance(item, dict))
    completed = int(_stat(report, "completed_request_count", "avg", source)) if report.get(
        "completed_request_count") else 0
    if not completed:
        details = "; ".join(str((item or {}).get("error_details", item))[:200]
                            for item in report.get("error_summary") or [])
        raise LoadgenError("%s: no request completed at concurrency %s (%d errors%s)"
                           % (source, concurrency, errors, ": " + details if details else ""))
    return {
        "concurrency": int(concurrency),
        "output_tok_s": round(_stat(report, "output_token_throughput", "avg", source), 3),
        "ttft_p50_s": round(_ms(report, "time_to_first_token", "p50", source) / 1000.0, 4),
        "ttft_p99_s": round(_ms(report, "time_to_first_token", "p99", source) / 1000.0, 4),
        "itl_p50_ms": round(_ms(report, "inter_token_latency", "p50", source), 3),
        "itl_p99_ms": round(_ms(report, "inter_token_latency", "p99", source), 3),
        "requests_per_s": round(_stat(report, "request_throughput", "avg", source), 4),
        "requests": completed,
        "errors": errors,
    }


def first_request_error(records_text):
    """The first failed request's error in AIPerf's per-request records (``profile_export.jsonl``), or None.

    AIPerf writes no report when every request failed; its records still say why (e.g. the endpoint's
    404 for an unknown model), which is what the operator needs in the failure message.
    """
    for line in (records_text or "").splitlines():
        try:
            error = json.loads(line).get("error")
        except (ValueError, AttributeError):
            continue
        if isinstance(error, dict):
            message = str(error.get("message", ""))
            try:
                message = json.loads(message)["error"]["message"]
            except (ValueError, TypeError, KeyError):
                pass
            return ("%s %s: %s" % (error.get("code", ""), error.get("type", ""), message)).strip()[:300]
    return None


def engine_figures(metrics, before, after, kv_samples=()):
    """What the engine's /metrics add to a level: peak KV cache usage, acceptance per draft position.

    ``metrics`` is the engine's METRICS entry (plugin_utils/_engines.py); ``before``/``after`` the
    /metrics text around the level; ``kv_samples`` the texts scraped while it ran (KV usage is a
    gauge: its peak under load is the figure, the GB10 field report's "69 % at 32"). Keys are left out when the
    engine does not export them: SGLang has no per-position counters, its mean accept length instead.
    """
    figures = {}
    usage = [value for value in (metric_max(text, metrics.get("kv_cache_usage"))
                                 for text in list(kv_samples) + [after]) if value is not None]
    if usage:
        figures["kv_cache_usage"] = round(max(usage), 4)
    per_position = acceptance_per_position(metrics, before, after)
    if per_position is not None:
        figures["acceptance_per_pos"] = per_position
    accept_length = metric_max(after, metrics.get("spec_accept_length"))
    if accept_length:
        figures["accept_length"] = round(accept_length, 3)
    return figures


def add_level(results, run, level):
    """``results`` with ``level`` appended to run ``run`` (created in order); returns ``results``."""
    runs = results.setdefault("runs", [])
    entry = next((item for item in runs if item["run"] == run), None)
    if entry is None:
        entry = {"run": run, "levels": []}
        runs.append(entry)
    entry["levels"].append(level)
    return results


def measured_points(measured, max_num_seqs=None, burst_concurrency=None):
    """A profile's ``measured`` figures as points to draw beside a sweep, with their concurrency
    (_bench.measured_figures: concurrency 1, the profile's max-num-seqs, the burst's size). Output
    tok/s and TTFT only; figures whose concurrency is unknown are left out.
    """
    points = {"output_tok_s": [], "ttft_s": []}
    for key, figure, concurrency, value in _bench.measured_figures(measured, max_num_seqs, burst_concurrency):
        if figure in points:
            points[figure].append({"concurrency": concurrency, "value": value, "label": key})
    return points
