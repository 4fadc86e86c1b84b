# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops-watchdog: keeps one serving container generating, within a restart budget.

Installed by the inferops.serving server role on every serving host and run by systemd
(``inferops-watchdog@<container>.service``, ``python3 inferops_watchdog.py --config FILE``),
one process per serving container. Python 3.8+ standard library only.

Every ``interval`` it proves the engine still generates: the container's state from the
Docker Engine API, ``/health``, ``/metrics``, a real completion (a few tokens, temperature 0,
the deployment's served model name) with a deadline, ``/metrics`` again. Then it classifies:

* ``healthy``: the completion answered within the deadline.
* ``busy``: the completion missed its deadline but the engine generated tokens meanwhile
  (a saturated engine queues the probe: never restarted).
* ``starting``: the container started less than ``startup_grace`` ago and does not answer yet.
* ``suspect`` / ``wedged``: ``/health`` answers 200 but the completion hangs past its deadline
  while the generated-token counter does not move (vLLM 50934's second incident, eugr 260).
  Engines that count tokens per step (vLLM) are wedged at the first such probe; engines that
  count them when a request finishes (SGLang) need the counter frozen across two probes.
* ``dead``: the container is not running, refuses connections after its start-up grace,
  ``/health`` fails, or completions fail with a server error.
* ``crash_looping``: Docker restarted the container ``crash_loop_restarts`` times within
  ``crash_loop_window`` and it does not serve now.
* ``slow``: under load (requests running at every sample of the window) the engine generated
  fewer than ``slow_floor`` tokens/s over ``slow_window``.
* ``probe_error``: the engine refused the probe itself (HTTP 4xx): a configuration problem,
  reported, never acted on.

``dead``, ``wedged``, ``crash_looping`` and ``slow`` restart the container (Docker Engine API),
at most ``restart_budget`` times an hour, the intent written to the state file first (no
restart it cannot record). On unified memory (GB10) the container is stopped, the page cache
dropped with ``drop_caches_before_start``, and started only once the role's pre-start rule (the
same code) lets the engine claim ``memory_fraction`` x ``MemTotal`` again (``memory_reads``,
within ``memory_wait_timeout``): a restart loop there leaks memory until a physical reset. A
spent budget gives up: probing and reporting go on, the host stays marked unhealthy with the
evidence until someone else (a converge, an operator) starts the container and it serves.

Every probe and action is a JSON line on stdout (the journal) and goes to the state file
(0600, bounded history; failures carry the metrics seen and, for the hour, the log's last
lines); node_exporter textfile metrics are written to a temporary file, then renamed.
Intervals are measured on the monotonic clock; each request has a total deadline and a size
cap; systemd hears READY=1 and WATCHDOG=1 (Type=notify, WatchdogSec).
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import socket
import sys
import time

# The collection's own code, one home each: the server role installs plugins/module_utils/_<name>.py
# beside this program as inferops_<name>.py (the host_library lookup; the directory of a script
# run by python3 is on sys.path): the unified-memory rule of the role's pre-start check, the
# Docker Engine API client of the modules, the Prometheus text parser of the controller, an
# HTTP request with a total deadline and a size cap, and the atomic file write of host_files.
from inferops_bounded_http import bounded_request
from inferops_docker_api import DockerClient, DockerError, find_container, parse_docker_time
from inferops_host_files import atomic_write
from inferops_prometheus import family, label_value, metric_sums
from inferops_unified_memory import UNIFIED_READS, UnifiedMemoryError, meminfo_fields, unified_memory_verdict

STATE_VERSION = 1
HISTORY = 60  # probe records kept in the state file
ACTIONS = 30  # action records kept in the state file
HOUR = 3600.0
LOG_LINE = 2000  # characters of one log line kept as evidence
NOTIFY_EVERY = 15.0  # seconds between two WATCHDOG=1 while waiting for the next tick
# The most the watchdog reads of one answer of the engine: vLLM's /metrics is ~100 KB; a
# larger answer is not read further (a 1.5 GB /metrics would otherwise be held in memory).
MAX_ANSWER = 8 << 20

# Outcomes that never call for an action.
QUIET = ("healthy", "busy", "starting", "suspect", "probe_error")
# Outcomes that call for a restart (within the budget).
FAULTS = ("dead", "wedged", "crash_looping", "slow")
# The faults whose engine still finishes its requests: stopped gracefully (stop_timeout, the plan's
# graceful shutdown and Docker's margin). A dead, wedged or crash-looping engine finishes nothing, so
# waiting for its in-flight requests only delays the restart: it gets unresponsive_stop_timeout.
FINISHING = ("slow",)
OUTCOMES = QUIET + FAULTS

# Every setting that has a role variable is required: the server role writes them all
# (plugins/plugin_utils/_watchdog.py), spelled as the variable without its ``watchdog_``
# or ``server_`` prefix, and its defaults/main.yml is their one home.
REQUIRED = {"container": str, "engine": str, "served_model_name": str, "urls": dict, "metrics": dict,
            "state_file": str, "docker_host": str, "probe_prompt": str, "meminfo_path": str,
            "drop_caches_file": str}
POSITIVE = ("interval", "probe_deadline", "probe_max_tokens", "crash_loop_restarts", "crash_loop_window",
            "memory_fraction", "memory_poll", "slow_window", "slow_min_running", "http_timeout", "docker_timeout")
NOT_NEGATIVE = ("startup_grace", "restart_budget", "stop_timeout", "unresponsive_stop_timeout", "memory_wait_timeout",
                "log_lines")
# slow_floor may be null (no floor); unified_memory comes from the plan.
REQUIRED_FLAGS = ("unified_memory", "drop_caches_before_start")
# Settings of the program alone (no role variable): their one home is here.
DEFAULTS = {
    "stop_timeout": 30,
    "unresponsive_stop_timeout": 5,
    "memory_poll": 5.0,
    "slow_min_running": 1,
    "textfile": None,
    # /health and /metrics answer from the API server even when the engine is saturated; a
    # starved host can still be slow to, so they get their own timeout, not the probe's deadline.
    "http_timeout": 10.0,
    # Each call to the Docker daemon (inspect, logs, start; a stop or restart waits stop_timeout more).
    "docker_timeout": 30.0,
}


class ConfigError(Exception):
    """The watchdog's configuration file is wrong; the message names the key."""


# ----------------------------------------------------------------------------------- config

def _number(config, key, minimum, strict=True):
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError("%s must be a number, got %r" % (key, value))
    if (value <= minimum) if strict else (value < minimum):
        raise ConfigError("%s must be %s %s, got %r" % (key, ">" if strict else ">=", minimum, value))
    return value


def load_config(data):
    """The configuration (a dict parsed from the JSON file) with defaults applied, validated.

    The server role writes this file from the deployment plan and validates the role
    variables before (plugins/plugin_utils/_watchdog.py); this guards the file itself.
    """
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a JSON object")
    config = dict(DEFAULTS)
    config.update({key: value for key, value in data.items() if value is not None or key not in DEFAULTS})
    for key, kind in REQUIRED.items():
        if not isinstance(config.get(key), kind) or not config[key]:
            raise ConfigError("%s is required (%s)" % (key, kind.__name__))
    for key in REQUIRED_FLAGS:
        if not isinstance(config.get(key), bool):
            raise ConfigError("%s must be true or false, got %r" % (key, config.get(key)))
    config.setdefault("slow_floor", None)
    for key in ("chat", "health", "metrics"):
        if not str(config["urls"].get(key) or "").startswith("http://"):
            raise ConfigError("urls.%s must be an http:// URL, got %r" % (key, config["urls"].get(key)))
    for key in ("running", "generation_tokens"):
        if not config["metrics"].get(key):
            raise ConfigError("metrics.%s must name the engine's Prometheus metric" % key)
    if config["metrics"].get("tokens_counted", "step") not in ("step", "finish"):
        raise ConfigError("metrics.tokens_counted must be step or finish")
    for key in POSITIVE + ("slow_floor",) * (config["slow_floor"] is not None):
        _number(config, key, 0)
    for key in NOT_NEGATIVE:
        _number(config, key, 0, strict=False)
    if config["probe_deadline"] >= config["interval"]:
        raise ConfigError("probe_deadline (%s) must be shorter than interval (%s)"
                          % (config["probe_deadline"], config["interval"]))
    if config["memory_fraction"] > 1:
        raise ConfigError("memory_fraction must be at most 1, got %r" % config["memory_fraction"])
    if config.get("memory_reads") not in UNIFIED_READS:
        raise ConfigError("memory_reads must be one of %s, got %r" % (", ".join(UNIFIED_READS), config.get("memory_reads")))
    return config


# --------------------------------------------------------------------------- metrics, clocks
# A moment is {"t": wall-clock epoch, "m": time.monotonic()}: "t" is what the journal and the
# state show, "m" what intervals are measured with, so that a wall-clock jump neither restarts a
# loading engine (forward) nor freezes the restart budget (backward). "m" is dropped from a
# state written before the last boot (load_state), and moments without it fall back to "t".

def _moment(now):
    return dict((k, now[k]) for k in ("t", "m") if k in now) if isinstance(now, dict) else {"t": now}


def metrics_point(values, names, now):
    """One (moment, running, generation tokens) sample from parsed metrics; None parts are missing."""
    point = {"running": values.get(names["running"]), "tokens": values.get(names["generation_tokens"])}
    point.update(_moment(now))
    return point


def elapsed(earlier, later):
    """Seconds from moment ``earlier`` to moment ``later`` (numbers are wall-clock moments)."""
    earlier, later = _moment(earlier), _moment(later)
    if "m" in earlier and "m" in later:
        return later["m"] - earlier["m"]
    return later["t"] - earlier["t"]


def container_age(records, sample):
    """Seconds since the container's start: its age when a probe (of this boot) first saw this
    start, plus the monotonic time since; the wall clock alone only without such a probe."""
    container = sample["container"]
    started = container.get("started_at")
    if not started:
        return None
    for entry in records:
        seen = entry.get("container") or {}
        if seen.get("started_at") == started and seen.get("id") == container.get("id") and "m" in entry \
                and "m" in sample:
            return entry["t"] - started + elapsed(entry, sample)
    return sample["t"] - started


# --------------------------------------------------------------------------- pure decisions

def docker_restarts(records, sample, window_s):
    """Restarts Docker's restart policy made within ``window_s`` before the sample.

    Docker's ``RestartCount`` counts the policy's restarts since the last explicit start (which
    resets it), so an increase between two observations is that many restarts, and a decrease
    means an explicit start happened and the policy restarted it the new value's times since.
    """
    seen = [r["container"] for r in records if elapsed(r, sample) <= window_s and r.get("container")]
    seen.append(sample["container"])
    counts = [c.get("restart_count") or 0 for c in seen if c.get("exists")]
    total = 0
    for previous, current in zip(counts, counts[1:]):
        total += current - previous if current >= previous else current
    return total


def _consecutive(records, outcomes):
    """How many of the latest records in a row have one of ``outcomes``."""
    count = 0
    for record in reversed(records):
        if record.get("outcome") not in outcomes:
            break
        count += 1
    return count


def decode_rate(records, sample, config):
    """Tokens/s over the slow window when under load at every point of it, else None."""
    window = config["slow_window"]
    points = [p for r in records for p in r.get("points", []) if 0 <= elapsed(p, sample) <= window * 1.5]
    points += sample.get("points", [])
    points = [p for p in points if p.get("tokens") is not None and p.get("running") is not None]
    if len(points) < 2:
        return None
    origin = points[0]
    points.sort(key=lambda p: elapsed(origin, p))
    # The newest point at least a window before the last one anchors the rate.
    last = points[-1]
    anchors = [p for p in points if elapsed(p, last) >= window]
    if not anchors:
        return None
    first = anchors[-1]
    span = [p for p in points if elapsed(first, p) >= 0]
    if any(p["running"] < config["slow_min_running"] for p in span):
        return None
    if last["tokens"] < first["tokens"]:  # the counter restarted with the engine
        return None
    return (last["tokens"] - first["tokens"]) / elapsed(first, last)


def classify(records, sample, config):
    """The outcome of one probe: {"outcome", "reason", "facts"}.

    ``records`` are the previous probes' records (oldest first, as the state keeps them),
    ``sample`` this probe's observations: ``t``, ``container`` (exists, running, restarting,
    status, exit_code, oom_killed, started_at epoch, restart_count), ``health`` (status or
    error), ``probe`` (ok, status, error, timed_out, latency_s, tokens), ``points`` (metrics
    before and after the probe, see metrics_point).
    """
    container, health, probe = sample["container"], sample.get("health") or {}, sample.get("probe") or {}
    points = sample.get("points") or []
    facts = {"docker_restarts": docker_restarts(records, sample, config["crash_loop_window"])}
    looping = facts["docker_restarts"] >= config["crash_loop_restarts"]

    def verdict(outcome, reason):
        return {"outcome": outcome, "reason": reason, "facts": facts,
                "container": {"running": bool(container.get("running")),
                              "restarting": bool(container.get("restarting"))}}

    def confirm(reason, needed):
        """``wedged`` once ``needed`` consecutive probes (this one included) saw it, ``suspect`` before."""
        seen = _consecutive(records, ("suspect", "wedged")) + 1
        if seen < needed:
            return verdict("suspect", "%s (%d of %d probes)" % (reason, seen, needed))
        return verdict("wedged", reason)

    if not container.get("exists"):
        return verdict("dead", "container %s does not exist" % config["container"])
    if not container.get("running"):
        state = "restarting (Docker's restart policy)" if container.get("restarting") else (
            "%s, exit code %s%s" % (container.get("status"), container.get("exit_code"),
                                    ", OOM-killed" if container.get("oom_killed") else ""))
        if looping:
            return verdict("crash_looping", "Docker restarted the container %d times within %d s; now %s"
                           % (facts["docker_restarts"], config["crash_loop_window"], state))
        return verdict("dead", "container %s is not running: %s" % (config["container"], state))
    age = container_age(records, sample)
    facts["started_s_ago"] = age
    in_grace = age is not None and age < config["startup_grace"]
    if health.get("timed_out") and not in_grace:
        # An API server that does not answer /health at all is hung, or the host is starved:
        # wedged only when it happens on consecutive probes.
        return confirm("/health did not answer within %s s" % config["http_timeout"], 2)
    if health.get("status") != 200:
        answer = ("/health answered %s" % health["status"]) if health.get("status") else (
            "/health: %s" % (health.get("error") or "no answer"))
        if in_grace and not looping:
            return verdict("starting", "started %d s ago, %s" % (age, answer))
        if looping:
            return verdict("crash_looping", "Docker restarted the container %d times within %d s; %s"
                           % (facts["docker_restarts"], config["crash_loop_window"], answer))
        return verdict("dead", answer)
    if probe.get("ok"):
        rate = decode_rate(records, sample, config)
        facts["decode_tps"] = rate
        floor = config.get("slow_floor")
        if floor is not None and rate is not None and rate < floor:
            return verdict("slow", "generated %.1f tokens/s over %d s under load, floor %.1f"
                           % (rate, config["slow_window"], floor))
        return verdict("healthy", "completion of %s token(s) in %.2f s" % (probe.get("tokens"), probe.get("latency_s")))
    status = probe.get("status")
    if status is not None and 400 <= status < 500:
        return verdict("probe_error", "the completion was refused: HTTP %s %s" % (status, probe.get("error") or ""))
    if status is not None:
        return verdict("dead", "/health answers 200 but the completion failed: HTTP %s %s"
                       % (status, probe.get("error") or ""))
    if not probe.get("timed_out"):
        return verdict("dead", "/health answers 200 but the completion failed: %s" % probe.get("error"))
    # The completion hung past its deadline: wedged unless the engine generated meanwhile.
    # An engine whose counter moves every step (vLLM) and did not move for the whole deadline is
    # wedged; one counting at the end of requests (SGLang), or no counter at all, needs the same
    # on the next probe too.
    before, after = (points[0], points[-1]) if len(points) >= 2 else (None, None)
    needed = 1 if config["metrics"].get("tokens_counted", "step") == "step" else 2
    if before and before.get("tokens") is not None and after.get("tokens") is not None:
        facts["tokens_during_probe"] = after["tokens"] - before["tokens"]
        facts["running"] = after.get("running")
        if after["tokens"] > before["tokens"]:
            return verdict("busy", "the completion missed its %s s deadline while the engine generated %d tokens"
                           % (config["probe_deadline"], after["tokens"] - before["tokens"]))
        frozen = "while %s request(s) ran the generated-token counter stayed at %d" % (
            after.get("running"), after["tokens"])
    else:
        frozen, needed = "and /metrics gave no generated-token counter", 2
    return confirm("/health answers 200 but the completion hung past its %s s deadline %s"
                   % (config["probe_deadline"], frozen), needed)


def restarts_in_last_hour(actions, now):
    """The restarts (made or only intended) of the rolling hour before moment ``now``; on the wall
    clock alone (a state from before a reboot) one stamped in the future counts for an hour at most."""
    return [a for a in actions if a.get("kind") == "restart" and -HOUR < elapsed(a, now) < HOUR]


def budget_left(actions, budget, now):
    """Restarts still allowed in the rolling hour."""
    return max(int(budget) - len(restarts_in_last_hour(actions, now)), 0)


def decide_action(state, verdict, config, now):
    """What to do about a verdict: {"action": none|wait|restart|give_up|hold, "reason", ...}.

    ``restart`` carries ``stop_first`` (the container still runs), ``stop_timeout`` (the seconds
    Docker gives the stop before SIGKILL: the graceful one for an engine that still finishes its
    requests, FINISHING; the short one otherwise) and ``wait_for_memory`` (unified memory: start
    only once the memory came back).
    """
    outcome = verdict["outcome"]
    if outcome in QUIET:
        return {"action": "none", "reason": outcome}
    gave_up = state.get("gave_up")
    if gave_up:
        return {"action": "hold", "reason": "gave up at %s: %s" % (_iso(gave_up["t"]), gave_up["reason"])}
    container = verdict.get("container") or {}
    if container.get("restarting"):
        return {"action": "wait", "reason": "Docker's restart policy is restarting the container"}
    left = budget_left(state.get("actions", []), config["restart_budget"], now)
    if left <= 0:
        return {"action": "give_up", "reason": "%s, and the restart budget (%d per hour) is spent: %s"
                % (outcome, config["restart_budget"], verdict["reason"])}
    return {"action": "restart", "reason": "%s: %s" % (outcome, verdict["reason"]),
            "stop_first": bool(container.get("running")), "wait_for_memory": bool(config["unified_memory"]),
            "stop_timeout": config["stop_timeout"] if outcome in FINISHING else config["unresponsive_stop_timeout"],
            "budget_left_after": left - 1}


def restarted_by_hand(gave_up, container):
    """A converge (a new container) or an operator (an explicit start, which resets Docker's
    RestartCount) started the engine since the watchdog gave up; Docker's own restart policy
    (RestartCount > 0) does not count."""
    if container.get("id") and gave_up.get("container_id") and container["id"] != gave_up["container_id"]:
        return True
    return (container.get("started_at") or 0) > gave_up["t"] and not container.get("restart_count")


def new_state(config):
    return {"version": STATE_VERSION, "container": config["container"], "status": "unknown",
            "outcome": None, "reason": None, "since": None, "last_success": None, "last_probe": None,
            "gave_up": None, "counters": {"probes": 0, "wedges": 0, "restarts": 0},
            "records": [], "actions": []}


def record(state, sample, verdict, decision, action, now):
    """The state after one probe (a new dict; ``state`` is not changed)."""
    state = json.loads(json.dumps(state))
    moment = _moment(now)
    now = moment["t"]
    outcome = verdict["outcome"]
    probe = sample.get("probe") or {}
    entry = {"t": now, "outcome": outcome, "reason": verdict["reason"], "action": decision["action"],
             "latency_s": probe.get("latency_s"), "points": sample.get("points") or [],
             "container": {k: sample["container"].get(k) for k in ("exists", "running", "id", "started_at",
                                                                   "restart_count")}}
    entry.update(moment)
    state["records"] = (state.get("records", []) + [entry])[-HISTORY:]
    counters = state.setdefault("counters", {"probes": 0, "wedges": 0, "restarts": 0})
    counters["probes"] = counters.get("probes", 0) + 1
    if outcome == "wedged":
        counters["wedges"] = counters.get("wedges", 0) + 1
    if action is not None:
        state["actions"] = (state.get("actions", []) + [action])[-ACTIONS:]
        if action.get("kind") == "restart" and action.get("result") == "started":
            counters["restarts"] = counters.get("restarts", 0) + 1
        if action.get("kind") == "give_up":
            state["gave_up"] = {"t": now, "reason": action["reason"], "evidence": action.get("evidence"),
                                "container_id": sample["container"].get("id")}
    # The container's log is evidence while the budget still counts the action (the journal has
    # every line for good): older actions keep their verdict and metrics, not the log.
    for old in state.get("actions", []):
        if elapsed(old, moment) >= HOUR:
            (old.get("evidence") or {}).pop("log_tail", None)
    if outcome == "healthy":
        state["last_success"] = now
        if state.get("gave_up") and restarted_by_hand(state["gave_up"], sample["container"]):
            state["gave_up"] = None  # someone else brought a new engine up, and it serves
    if state.get("outcome") != outcome:
        state["since"] = now
    state["outcome"], state["reason"], state["last_probe"] = outcome, verdict["reason"], now
    if state.get("gave_up"):
        state["status"] = "gave_up"
    elif outcome in ("healthy", "busy"):
        state["status"] = "healthy"
    elif outcome in ("starting", "suspect"):
        state["status"] = outcome
    else:
        state["status"] = "unhealthy"
    return state


def render_textfile(state, config, now, state_write_failed=False):
    """node_exporter textfile collector content (Prometheus text format 0.0.4)."""
    labels = 'container="%s"' % label_value(config["container"])
    last = (state.get("records") or [{}])[-1]
    out = []

    def metric(name, kind, help_text, value):
        samples = [("%s,%s" % (labels, key), value[key]) for key in sorted(value)] \
            if isinstance(value, dict) else [(labels, value)]
        out.extend(family(name, kind, help_text, samples))

    metric("inferops_watchdog_up", "gauge", "1 when the engine answered the last completion probe in time.",
           1 if last.get("outcome") in ("healthy", "slow") else 0)
    metric("inferops_watchdog_probe_latency_seconds", "gauge", "Latency of the last completion probe.",
           last.get("latency_s") if last.get("latency_s") is not None else float("nan"))
    metric("inferops_watchdog_probe_outcome", "gauge", "1 for the outcome of the last probe, 0 for the others.",
           {'outcome="%s"' % o: 1 if last.get("outcome") == o else 0 for o in OUTCOMES})
    counters = state.get("counters", {})
    metric("inferops_watchdog_probes_total", "counter", "Probes made.", counters.get("probes", 0))
    metric("inferops_watchdog_wedges_total", "counter", "Probes that found the engine wedged.",
           counters.get("wedges", 0))
    metric("inferops_watchdog_restarts_total", "counter", "Container restarts made by the watchdog.",
           counters.get("restarts", 0))
    metric("inferops_watchdog_restart_budget_remaining", "gauge", "Restarts still allowed in the rolling hour.",
           budget_left(state.get("actions", []), config["restart_budget"], now))
    metric("inferops_watchdog_gave_up", "gauge", "1 when the budget was spent and the watchdog stopped acting.",
           1 if state.get("gave_up") else 0)
    metric("inferops_watchdog_state_write_failed", "gauge",
           "1 when the state file could not be written: the watchdog refuses to restart until it can.",
           1 if state_write_failed else 0)
    metric("inferops_watchdog_last_success_timestamp_seconds", "gauge",
           "Unix time of the last healthy probe (0: none yet).", state.get("last_success") or 0)
    return "\n".join(out) + "\n"


def _iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


# ------------------------------------------------------------------------------------ I/O

class Host(object):
    """What the watchdog reads and does on the host: Docker Engine API, the engine's HTTP API,
    /proc/meminfo. The unit tests replace it with a fake of the same methods."""

    def __init__(self, config):
        self.config = config
        self.tty = False
        try:
            self.docker = DockerClient(config["docker_host"], config["docker_timeout"])
        except DockerError as exc:
            raise ConfigError(str(exc)) from exc

    # Docker Engine API (the collection's client) -------------------------------------------
    def inspect(self):
        """The container's state as the classifier wants it."""
        info = find_container(self.docker, self.config["container"])
        if info is None:
            return {"exists": False}
        state = info.get("State") or {}
        self.tty = bool((info.get("Config") or {}).get("Tty"))
        return {"exists": True, "id": (info.get("Id") or "")[:12], "running": bool(state.get("Running")),
                "restarting": bool(state.get("Restarting")), "status": state.get("Status"),
                "exit_code": state.get("ExitCode"), "oom_killed": bool(state.get("OOMKilled")),
                "error": state.get("Error") or None, "started_at": parse_docker_time(state.get("StartedAt")),
                "finished_at": parse_docker_time(state.get("FinishedAt")),
                "restart_count": int(info.get("RestartCount") or 0)}

    def log_tail(self, lines):
        return self.docker.log_tail(self.config["container"], lines, self.tty)

    def lifecycle(self, verb, timeout=None):
        """Start, stop (SIGKILL after ``timeout`` s) or restart the container; already so is fine."""
        container = self.config["container"]
        if verb == "start":
            self.docker.start(container)
        elif verb == "stop":
            self.docker.stop(container, timeout)
        else:
            self.docker.restart(container, timeout)

    # The engine's HTTP API -------------------------------------------------------------------
    def api_key(self):
        """The engine's API key (config ``api_key_env``) from the 0600 env file, or None.

        Read at each request from the file the role wrote (the key never enters this program's
        configuration, its state or the journal); a Docker env file is literal NAME=value lines.
        """
        name, path = self.config.get("api_key_env"), self.config.get("env_file")
        if not name or not path:
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    key, sep, value = line.rstrip("\n").partition("=")
                    if sep and key == name:
                        return value
        except OSError:
            return None
        return None

    def http(self, method, url, body=None, timeout=5.0):
        """(status, body text) of one request that ends within ``timeout`` s in all (not per read:
        an answer trickling a byte at a time is cut at the deadline) and reads at most
        MAX_ANSWER bytes; raises socket.timeout / OSError / HTTPException (AnswerTooLarge)."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        key = self.api_key()
        if key:
            headers["Authorization"] = "Bearer " + key
        status, answer = bounded_request(method, url, data, headers, timeout, MAX_ANSWER)
        return status, answer.decode("utf-8", "replace")

    def drop_caches(self):
        """Write back dirty pages, then drop the clean page cache (sync; echo 1 > drop_caches)."""
        os.sync()
        with open(self.config["drop_caches_file"], "w", encoding="ascii") as handle:
            handle.write("1\n")

    def read_meminfo(self):
        with open(self.config["meminfo_path"], encoding="utf-8") as handle:
            return handle.read()


def _error_text(exc):
    return "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__


def observe(host, config, clock=time.time, monotonic=time.monotonic):
    """One probe's observations (see classify) and the raw metrics kept as evidence."""
    sample = {"t": clock(), "m": monotonic(), "container": host.inspect(), "health": {}, "probe": {}, "points": []}
    if not sample["container"].get("running"):
        return sample, None
    urls, names = config["urls"], config["metrics"]
    try:
        sample["health"]["status"] = host.http("GET", urls["health"], timeout=config["http_timeout"])[0]
    except socket.timeout as exc:
        sample["health"]["error"], sample["health"]["timed_out"] = _error_text(exc), True
        return sample, None
    except (OSError, http.client.HTTPException) as exc:
        sample["health"]["error"] = _error_text(exc)
        return sample, None
    seen = {}

    def metrics():
        try:
            status, text = host.http("GET", urls["metrics"], timeout=config["http_timeout"])
        except (OSError, http.client.HTTPException):
            return
        if status == 200:
            values = metric_sums(text)
            seen.update({k: v for k, v in values.items() if k in (names["running"], names["generation_tokens"],
                                                                  names.get("waiting"))})
            sample["points"].append(metrics_point(values, names, {"t": clock(), "m": monotonic()}))

    metrics()
    body = {"model": config["served_model_name"], "temperature": 0, "max_tokens": config["probe_max_tokens"],
            "messages": [{"role": "user", "content": config["probe_prompt"]}]}
    started = monotonic()
    probe = sample["probe"]
    try:
        status, text = host.http("POST", urls["chat"], body, timeout=config["probe_deadline"])
        probe["latency_s"] = round(monotonic() - started, 3)
        if status == 200:
            usage = (json.loads(text).get("usage") or {})
            probe["tokens"] = usage.get("completion_tokens")
            probe["ok"] = probe["latency_s"] <= config["probe_deadline"]
            probe["timed_out"] = not probe["ok"]
        else:
            probe["status"], probe["error"] = status, text[:300]
    except socket.timeout:
        probe["latency_s"], probe["timed_out"] = round(monotonic() - started, 3), True
    except (OSError, http.client.HTTPException, ValueError) as exc:
        probe["latency_s"], probe["error"] = round(monotonic() - started, 3), _error_text(exc)
    metrics()
    return sample, seen


def evidence(host, config, sample, metrics_seen):
    """What a failure looked like: the container's state, the metrics seen, its last log lines."""
    found = {"container": sample["container"], "health": sample.get("health"), "probe": sample.get("probe"),
             "metrics": metrics_seen, "points": sample.get("points")}
    if sample["container"].get("exists") and config["log_lines"]:
        try:
            found["log_tail"] = [line[:LOG_LINE] for line in host.log_tail(config["log_lines"])]
        except DockerError as exc:
            found["log_tail"] = ["(%s)" % exc]
    return found


def wait_for_memory(host, config, dropped=False, clock=time.time, sleep=time.sleep):
    """Poll meminfo until the unified-memory rule lets the engine start, or the wait times out.

    Only held memory comes back by waiting: a host where only the page cache is in the way and
    the engine reads MemFree (``refuse``) ends the wait at once.
    """
    deadline = clock() + config["memory_wait_timeout"]
    while True:
        try:
            verdict = unified_memory_verdict(meminfo_fields(host.read_meminfo()), config["memory_fraction"],
                                             config["memory_reads"], "done" if dropped else "off")
        except UnifiedMemoryError as exc:
            verdict = {"short": True, "action": "wait", "message": str(exc)}
        if not verdict["short"] or verdict["action"] == "refuse" or clock() >= deadline:
            return {"enough": not verdict["short"], "action": verdict["action"],
                    "mem_free_kib": verdict.get("mem_free_kib"), "mem_available_kib": verdict.get("mem_available_kib"),
                    "needed_kib": verdict.get("needed_kib"), "message": verdict["message"],
                    "waited_s": round(clock() + config["memory_wait_timeout"] - deadline, 1)}
        sd_notify("WATCHDOG=1")
        sleep(config["memory_poll"])


def restart(host, config, decision, clock=time.time, sleep=time.sleep):
    """Carry out a restart decision; returns (result, details)."""
    details = {}
    try:
        if not decision["wait_for_memory"]:
            host.lifecycle("restart" if decision["stop_first"] else "start",
                           decision["stop_timeout"] if decision["stop_first"] else None)
            return "started", details
        if decision["stop_first"]:
            host.lifecycle("stop", decision["stop_timeout"])
        if config["drop_caches_before_start"]:
            host.drop_caches()
            details["dropped_caches"] = True
        details["memory"] = wait_for_memory(host, config, config["drop_caches_before_start"], clock, sleep)
        if not details["memory"]["enough"]:
            return "memory_not_back", details
        host.lifecycle("start")
        return "started", details
    except (DockerError, OSError) as exc:
        details["error"] = _error_text(exc)
        return "failed", details


def write_atomic(path, text, mode=0o644):
    """``text`` into ``path`` (its directory made): a temporary file, fsynced, renamed over it."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic_write(path, text.encode("utf-8"), mode)


def _moments(items):
    return isinstance(items, list) and all(
        isinstance(item, dict) and isinstance(item.get("t"), (int, float)) and not isinstance(item.get("t"), bool)
        for item in items)


def state_problem(state, config):
    """Why a parsed state file cannot be used (a sentence), or None."""
    if not isinstance(state, dict):
        return "it holds a JSON %s, not an object" % type(state).__name__
    if state.get("version") != STATE_VERSION or state.get("container") != config["container"]:
        return "it is of another version or container"
    if not _moments(state.get("records")) or not _moments(state.get("actions")):
        return "its records or actions are not lists of timed entries"
    if not all(_moments(entry.get("points", [])) for entry in state["records"]):
        return "its metrics points are not timed entries"
    if not isinstance(state.get("counters"), dict) or not (state.get("gave_up") is None or _moments([state["gave_up"]])):
        return "its counters or give-up mark are not of the expected shape"
    return None


def load_state(config, boot=None, out=None):
    """The state file, or a new state when it is missing or not of the expected shape (a warning
    on the journal: a bad file must not end the program, systemd would restart it in a loop).

    ``boot`` (the kernel's boot_id): monotonic times ("m") from another boot are dropped.
    """
    try:
        with open(config["state_file"], encoding="utf-8") as handle:
            state = json.load(handle)
        problem = state_problem(state, config)
    except FileNotFoundError:
        return dict(new_state(config), boot=boot)
    except (OSError, ValueError, RecursionError) as exc:
        problem = "it cannot be read: %s" % _error_text(exc)
    if problem:
        journal({"container": config["container"], "level": "warning", "state_file": config["state_file"],
                 "message": "state file ignored, starting afresh: %s" % problem}, out)
        return dict(new_state(config), boot=boot)
    if state.get("boot") != boot:
        for item in state["records"] + state["actions"] + [p for r in state["records"] for p in r.get("points", [])]:
            item.pop("m", None)
    state["boot"] = boot
    return state


def boot_id(path="/proc/sys/kernel/random/boot_id"):
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def sd_notify(message, env=None):
    """Tell systemd ``message`` (READY=1, WATCHDOG=1) over $NOTIFY_SOCKET; False without one."""
    address = (os.environ if env is None else env).get("NOTIFY_SOCKET")
    if not address or address[0] not in "/@":
        return False
    if address[0] == "@":
        address = "\0" + address[1:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.connect(address)
        sock.sendall(message.encode("utf-8"))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def longest_silence(config):
    """The most seconds one tick can go without a heartbeat: each call that blocks, at its own
    deadline (Docker's inspect, logs, stop or restart and start; /health, the probe, /metrics twice).
    The waits between them (memory, the next tick) send heartbeats of their own."""
    docker, stop = config["docker_timeout"], max(config["stop_timeout"], config["unresponsive_stop_timeout"])
    return 4 * docker + stop + 3 * config["http_timeout"] + config["probe_deadline"]


def watchdog_usec(config, env=None):
    """The WATCHDOG_USEC= to tell systemd when the unit's WatchdogSec= ($WATCHDOG_USEC) is shorter
    than twice the longest silence (a long probe deadline or graceful stop would get the program
    killed as hung in the middle of a tick, a wedged engine never restarted); else None."""
    given = (os.environ if env is None else env).get("WATCHDOG_USEC", "")
    wanted = int(2 * longest_silence(config) * 1000000)
    return wanted if given.isdigit() and int(given) < wanted else None


def journal(line, out=None):
    """One JSON line on stdout: systemd puts it in the journal."""
    out = out or sys.stdout
    out.write(json.dumps(line, sort_keys=True) + "\n")
    out.flush()


def save(config, state, now, out=None):
    """Write the state file, then the textfile; the error text of a failed state write, else None.

    Never raises: a full disk must not crash the program (systemd would restart it and the
    restart it just made would be forgotten). A failed write is reported on the journal and, when
    the textfile can still be written, as ``inferops_watchdog_state_write_failed 1``.
    """
    error = None
    try:
        write_atomic(config["state_file"], json.dumps(state, indent=1, sort_keys=True) + "\n", 0o600)
    except (OSError, ValueError) as exc:
        error = _error_text(exc)
        journal({"container": config["container"], "level": "error", "state_write_failed": error,
                 "state_file": config["state_file"]}, out)
    if config.get("textfile"):
        try:
            write_atomic(config["textfile"], render_textfile(state, config, now, state_write_failed=bool(error)))
        except (OSError, ValueError) as exc:
            journal({"container": config["container"], "level": "error", "textfile_write_failed": _error_text(exc)},
                    out)
    return error


def tick(host, config, state, clock=time.time, sleep=time.sleep, out=None, act=True, monotonic=time.monotonic):
    """One probe, its verdict, its action; returns the new state (also written to disk).

    ``act=False`` (``--once``) probes and reports what it would do, changing nothing.
    """
    try:
        sample, seen = observe(host, config, clock, monotonic)
    except DockerError as exc:
        sample, seen = {"t": clock(), "m": monotonic(), "container": {"exists": False, "error": str(exc)}}, None
        verdict = {"outcome": "probe_error", "reason": str(exc), "facts": {}, "container": {}}
    else:
        verdict = classify(state.get("records", []), sample, config)
    now = _moment(sample)
    decision = decide_action(state, verdict, config, now)
    action = None
    if not act:
        journal({"container": config["container"], "outcome": verdict["outcome"], "reason": verdict["reason"],
                 "would": decision["action"], "status": state.get("status"), "facts": verdict["facts"]}, out)
        state = dict(state, status="healthy" if verdict["outcome"] in ("healthy", "busy") else "unhealthy")
        return state
    if decision["action"] in ("restart", "give_up"):
        action = dict(now, kind=decision["action"], outcome=verdict["outcome"], reason=decision["reason"],
                      evidence=evidence(host, config, sample, seen))
        if decision["action"] == "restart":
            # The intent first: a restart the state file does not hold is one the budget forgets
            # (a crash or a full disk after it, systemd restarts the program, and it restarts again).
            error = save(config, record(state, sample, verdict, decision, dict(action, result="intended"), now),
                         {"t": clock(), "m": monotonic()}, out)
            if error is None:
                action["result"], details = restart(host, config, decision, monotonic, sleep)
                action.update(details)
            else:
                decision = {"action": "refused", "reason": "not restarting: the state file cannot record the "
                            "restart, so the restart budget could not hold (%s)" % error}
                action = None
    line = {"container": config["container"], "outcome": verdict["outcome"], "reason": verdict["reason"],
            "action": decision["action"], "latency_s": (sample.get("probe") or {}).get("latency_s"),
            "facts": verdict["facts"]}
    if decision["action"] not in ("none",):
        line["action_reason"] = decision["reason"]
    if action is not None:
        line["evidence"] = action["evidence"]
        line["result"] = action.get("result")
        line.update({k: action[k] for k in ("memory", "error") if k in action})
    if decision["action"] == "refused":
        line["level"] = "error"
    journal(line, out)
    state = record(state, sample, verdict, decision, action, now)
    save(config, state, {"t": clock(), "m": monotonic()}, out)
    return state


def run(host, config, state, once=False, clock=time.time, monotonic=time.monotonic, sleep=time.sleep, out=None):
    """The program's loop: a tick every ``interval`` s; with ``once``, one tick and its exit status.

    systemd (Type=notify, WatchdogSec) hears READY=1 once (and WATCHDOG_USEC= when a tick may
    be silent longer than half the unit's WatchdogSec), then WATCHDOG=1 after every tick and at
    least every NOTIFY_EVERY s of the wait between ticks: a program that hangs is restarted.
    """
    sd_notify("READY=1")
    usec = watchdog_usec(config)
    if usec:
        sd_notify("WATCHDOG_USEC=%d" % usec)
    while True:
        started = monotonic()
        state = tick(host, config, state, clock, sleep, out, act=not once, monotonic=monotonic)
        if once:
            return 0 if state["status"] == "healthy" else 1
        sd_notify("WATCHDOG=1")
        while True:
            left = config["interval"] - (monotonic() - started)
            if left <= 0:
                break
            sleep(min(left, NOTIFY_EVERY))
            sd_notify("WATCHDOG=1")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="inferops-watchdog", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--config", required=True, help="the JSON configuration the server role writes")
    parser.add_argument("--once", action="store_true",
                        help="one probe, report what it would do, change nothing; exit 0 when healthy")
    args = parser.parse_args(argv)
    try:
        with open(args.config, encoding="utf-8") as handle:
            config = load_config(json.load(handle))
        host = Host(config)
    except (OSError, ValueError, RecursionError, ConfigError) as exc:
        # Exit status 2: the unit's RestartPreventExitStatus, a restart cannot fix the file.
        sys.stderr.write("inferops-watchdog: %s: %s\n" % (args.config, _error_text(exc)))
        return 2
    return run(host, config, load_state(config, boot_id()), args.once)


if __name__ == "__main__":
    sys.exit(main())
