# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The watchdog's configuration: built from the deployment plan and the watchdog role's
variables, validated here (the deployment plan calls it: ``server_deployment.watchdog.config``),
so a bad setting fails the plan with the variable's name before anything on the host changes.

argument_specs checks types and choices; the ranges (an interval of 0, a negative budget, a
deadline not shorter than the interval) and the plan's engine are checked here. The program on
the host (roles/watchdog/files/inferops_watchdog.py) checks its file again when it starts.
"""
from __future__ import annotations

import importlib
import inspect
import math
import re

from ansible_collections.inferops.serving.plugins.plugin_utils._engines import METRICS as ENGINE_METRICS

# option key -> (role variable, minimum, strict, kind)
_RANGES = {
    "interval": ("watchdog_interval", 0, True, "seconds"),
    "probe_deadline": ("watchdog_probe_deadline", 0, True, "seconds"),
    "probe_max_tokens": ("watchdog_probe_max_tokens", 0, True, "tokens"),
    "restart_budget": ("watchdog_restart_budget", 0, False, "restarts per hour"),
    "startup_grace": ("watchdog_startup_grace", 0, False, "seconds"),
    "crash_loop_restarts": ("watchdog_crash_loop_restarts", 0, True, "restarts"),
    "crash_loop_window": ("watchdog_crash_loop_window", 0, True, "seconds"),
    "memory_wait_timeout": ("server_memory_wait_timeout", 0, False, "seconds"),
    "log_lines": ("watchdog_log_lines", 0, False, "lines"),
    "slow_fraction": ("watchdog_slow_fraction", 0, False, "share of the measured rate"),
}
_OPTIONAL = {
    "slow_floor": ("watchdog_slow_floor", 0, True, "tokens/s"),
    "slow_window": ("watchdog_slow_window", 0, True, "seconds"),
}
# option key -> role variable, for the strings the program needs (no default of its own).
_PATHS = {"docker_host": "server_docker_host", "meminfo_path": "server_meminfo_path",
          "drop_caches_file": "server_drop_caches_file", "probe_prompt": "server_smoke_prompt"}
_INTEGERS = ("probe_max_tokens", "restart_budget", "crash_loop_restarts", "log_lines")


# The collection's standard-library-only libraries the watchdog imports on the host, installed
# beside it as inferops_<name>.py: name -> the module_utils module that is its one home.
HOST_LIBRARIES = {name: "ansible_collections.inferops.serving.plugins.module_utils._" + name
                  for name in ("unified_memory", "docker_api", "prometheus", "bounded_http", "host_files")}


def library_source(name):
    """The source text of the host library ``name`` (one of HOST_LIBRARIES); KeyError naming the known ones."""
    if name not in HOST_LIBRARIES:
        raise KeyError("host_library: unknown library %r; known: %s" % (name, ", ".join(sorted(HOST_LIBRARIES))))
    return inspect.getsource(importlib.import_module(HOST_LIBRARIES[name]))


class WatchdogConfigError(ValueError):
    """A watchdog variable or the plan it reads is wrong; the message names the variable and the fix."""


def _check(options, key, spec, errors):
    variable, minimum, strict, kind = spec
    value = options.get(key)
    if isinstance(value, str):
        try:
            value = float(value) if "." in value else int(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        errors.append("%s must be a number (%s), got %r" % (variable, kind, options.get(key)))
        return None
    if key in _INTEGERS and value != int(value):
        errors.append("%s must be a whole number (%s), got %r" % (variable, kind, value))
        return None
    if value < minimum or (strict and value == minimum):
        errors.append("%s must be %s %s (%s), got %r" % (variable, ">" if strict else ">=", minimum, kind, value))
        return None
    return int(value) if key in _INTEGERS else value


def measured_single_stream(profile):
    """The profile's measured single-stream decode rate in tokens/s (``measured.single_stream_tok_s``;
    a range like ``"15-17"`` gives its lower end), or None."""
    value = ((profile or {}).get("measured") or {}).get("single_stream_tok_s")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = re.match(r"^\s*(\d+(?:\.\d+)?)", str(value or ""))
    return float(match.group(1)) if match else None


def slow_floor(deployment, floor, fraction):
    """(floor tokens/s or None, where it comes from)."""
    if floor is not None:
        return float(floor), "watchdog_slow_floor"
    measured = measured_single_stream(deployment.get("profile"))
    if measured is None or not fraction:
        return None, "off (no watchdog_slow_floor, and the profile measured no single_stream_tok_s)" \
            if measured is None else "off (watchdog_slow_fraction is 0)"
    return round(measured * fraction, 2), "%s x the profile's measured single_stream_tok_s %s" % (fraction, measured)


def watchdog_config(deployment, options):
    """The watchdog's JSON configuration (a dict) for the host, from ``server_deployment`` and the
    role's watchdog options; WatchdogConfigError listing every problem otherwise.

    ``options``: interval, probe_deadline, probe_max_tokens, probe_prompt, restart_budget,
    startup_grace, crash_loop_restarts, crash_loop_window, unified_memory, meminfo_path,
    drop_caches_before_start, drop_caches_file, memory_wait_timeout, slow_floor, slow_fraction,
    slow_window, docker_host, log_lines; and, when given, state_file and textfile (None: no metrics
    file), else the plan's ``watchdog`` files.

    One spelling end to end: an option and the configuration key the program reads are the role
    variable's name without its ``watchdog_`` (or ``server_``) prefix; their defaults live in the
    roles' defaults/main.yml only, so every one of them is in the file the program reads.
    """
    files = (deployment or {}).get("watchdog") or {}
    errors = []
    values = {key: _check(options, key, spec, errors) for key, spec in _RANGES.items()}
    for key, spec in _OPTIONAL.items():
        values[key] = None if options.get(key) in (None, "") else _check(options, key, spec, errors)
    if values["interval"] is not None and values["probe_deadline"] is not None \
            and values["probe_deadline"] >= values["interval"]:
        errors.append("watchdog_probe_deadline (%s s) must be shorter than watchdog_interval (%s s): "
                      "a probe has to end before the next one starts" % (values["probe_deadline"], values["interval"]))
    for key, variable in _PATHS.items():
        if not isinstance(options.get(key), str) or not options[key]:
            errors.append("%s must be a non-empty string, got %r" % (variable, options.get(key)))
    engine = (deployment or {}).get("engine")
    if engine not in ENGINE_METRICS:
        errors.append("the deployment's engine %r is not one the watchdog knows (%s): it cannot read its metrics"
                      % (engine, ", ".join(sorted(ENGINE_METRICS))))
    urls = (deployment or {}).get("urls") or {}
    missing = [key for key in ("chat", "health", "metrics") if not urls.get(key)]
    if missing:
        errors.append("server_deployment.urls lacks %s: the plan must say where the engine answers" % ", ".join(missing))
    if not (deployment or {}).get("served_model_name"):
        errors.append("server_deployment.served_model_name is empty: the probe needs the model's served name")
    if errors:
        raise WatchdogConfigError("the watchdog cannot be configured: " + "; ".join(errors))
    metrics = dict(ENGINE_METRICS[engine])
    metrics.update({k: v for k, v in (deployment.get("metrics") or {}).items() if v})
    floor, floor_source = slow_floor(deployment, values["slow_floor"], values["slow_fraction"])
    config = dict(values)
    config.update({
        "container": deployment["container"],
        "docker_host": options["docker_host"],
        "engine": engine,
        "served_model_name": deployment["served_model_name"],
        # The probe's API key is read from the 0600 env file at each request, never copied here.
        "api_key_env": deployment.get("api_key_env"),
        "env_file": deployment.get("env_file") if deployment.get("api_key_env") else None,
        "urls": {key: urls[key] for key in ("chat", "health", "metrics")},
        "metrics": {key: metrics.get(key) for key in ("running", "waiting", "generation_tokens", "tokens_counted")},
        "unified_memory": bool(options.get("unified_memory")),
        "memory_fraction": float(((deployment.get("memory") or {}).get("fraction")) or 0.9),
        "memory_reads": (deployment.get("memory") or {}).get("reads") or "MemAvailable",
        "drop_caches_before_start": bool(options.get("drop_caches_before_start")) and bool(options.get("unified_memory")),
        "drop_caches_file": options["drop_caches_file"],
        "meminfo_path": options["meminfo_path"],
        "slow_floor": floor,
        "slow_floor_source": floor_source,
        "slow_window": values["slow_window"] or values["interval"],
        "state_file": options.get("state_file") or files.get("state_file"),
        "textfile": (options["textfile"] or None) if "textfile" in options else files.get("textfile"),
    })
    # The engine's graceful shutdown finishes its in-flight requests before it exits: Docker's
    # stop must wait longer than it (the plan's shutdown.stop_timeout), as every other stop does.
    stop_timeout = ((deployment.get("shutdown") or {}).get("stop_timeout"))
    if stop_timeout:
        config["stop_timeout"] = max(int(stop_timeout), int(config.get("stop_timeout") or 0))
    del config["slow_fraction"]  # folded into slow_floor
    config["probe_prompt"] = options["probe_prompt"]
    return config
