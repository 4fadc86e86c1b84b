# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Readiness of a starting engine: still making progress, or stuck? Pure functions.

A cold start is a sequence of phases (``_startup_phases.STARTUP_PHASES``). Each phase has a stall
budget: the longest time it may go without a new log line before the start counts as stuck.
The budgets differ for a first deploy (the weights are downloaded and processed: the g7e field report, a g7e
first deploy spends ~45 min in FP8 ModelOpt weight processing) and a restart from cached weights
(the g7e field report: ~14 s weight load + ~20 s CUDA graph capture; the GB10 write-up, GB10: a cold container pays
the CUDA-graph/compile tax on top). The overall cap (``server_ready_timeout``) is separate.
"""
from __future__ import annotations

from ._startup_phases import STARTUP_PHASE_NAMES, STARTUP_PHASES

# Seconds without a new log line per phase. Restart: generous multiples of the field reports' figures
# (weight load 14 s, graphs 20 s, torch.compile ~40 s on GB10), so a slow disk is not "stuck".
# First deploy: the weight phase covers a download of 100+ GB and the g7e field report's ~45 min of
# processing in CPU RAM, during which the engine may print nothing at all.
RESTART_BUDGETS = {
    "process_start": 300,
    "engine_init": 600,
    "weight_loading": 900,
    "compile": 1200,
    "kv_cache": 600,
    "cuda_graphs": 900,
    "server_start": 600,
}
FIRST_DEPLOY_BUDGETS = dict(RESTART_BUDGETS, weight_loading=3600, compile=1800, process_start=600)

# The verdicts of ``verdict``.
READY, WAITING, STUCK, TIMEOUT = "ready", "waiting", "stuck", "timeout"


class BudgetError(ValueError):
    """A budget setting that cannot be used (named variable, problem, fix in the message)."""


def _seconds(value, name):
    if isinstance(value, bool) or value is None:
        raise BudgetError("%s must be a whole number of seconds > 0, not %r" % (name, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BudgetError("%s must be a whole number of seconds > 0, not %r" % (name, value))
    if number <= 0 or number != float(value):
        raise BudgetError("%s must be a whole number of seconds > 0, not %r" % (name, value))
    return number


def budgets(first_deploy, stall_timeout=None, phase_budgets=None):
    """The stall budget of every phase but ``ready``: ``{phase: seconds}``.

    ``first_deploy`` picks the defaults; ``stall_timeout`` (server_ready_stall_timeout) replaces
    every phase's budget; ``phase_budgets`` (server_ready_phase_budgets) then replaces single
    phases. Raises BudgetError for an unknown phase or a budget that is not a positive integer.
    """
    table = dict(FIRST_DEPLOY_BUDGETS if first_deploy else RESTART_BUDGETS)
    if stall_timeout not in (None, "", 0):
        every = _seconds(stall_timeout, "server_ready_stall_timeout")
        table = dict((phase, every) for phase in table)
    for phase, value in sorted((phase_budgets or {}).items()):
        if phase not in table:
            raise BudgetError("server_ready_phase_budgets has the unknown phase %r; the phases are %s"
                              % (phase, ", ".join(name for name in STARTUP_PHASE_NAMES if name != "ready")))
        table[phase] = _seconds(value, "server_ready_phase_budgets.%s" % phase)
    return table


def first_deploy(setting, model, history):
    """Whether this start is a first deploy of ``model`` on the host (weights not yet cached).

    ``setting`` (server_ready_first_deploy) ``true``/``false`` decides; ``auto``: a first deploy
    unless a deployment of the same model was proven on this host (``history``: the state file's
    records, whose ``profile.model`` is what they served). A local path is never downloaded.
    """
    if isinstance(setting, bool):
        return setting
    text = str(setting).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    if text != "auto":
        raise BudgetError("server_ready_first_deploy must be auto, true or false, not %r" % (setting,))
    if not model or str(model).startswith("/"):
        return False
    for entry in history or []:
        profile = entry.get("profile") if isinstance(entry, dict) else None
        if isinstance(profile, dict) and profile.get("model") == model:
            return False
    return True


def restarted(previous, container_id, started_at):
    """Whether the container of the previous wait (``previous``: its progress record) was started
    again since: the same container, another start (its restart policy after a crash between two
    waits). A record of another container (a rollback's new one) or without an id says nothing."""
    return (isinstance(previous, dict) and bool(container_id) and previous.get("container_id") == container_id
            and previous.get("started_at") != started_at)


def track(previous, started_at, phase, size, now, last_data_at=None, container_id=None):
    """The progress record after one bounded wait: ``{container_id, started_at, phase, bytes, activity_at}``.

    ``previous`` is the record of the wait before (None, or one of another container start:
    ignored); ``size`` the log bytes read since the start; ``last_data_at`` when bytes last
    arrived during this wait. New bytes or a new phase are activity; otherwise the previous
    activity time stands. A first record starts the stall clock at ``last_data_at`` or ``now``.
    """
    if not isinstance(previous, dict) or previous.get("started_at") != started_at:
        return {"container_id": container_id, "started_at": started_at, "phase": phase, "bytes": size,
                "activity_at": last_data_at if last_data_at is not None else now}
    activity = previous.get("activity_at", now)
    if size > previous.get("bytes", 0) or phase != previous.get("phase"):
        activity = last_data_at if last_data_at is not None and last_data_at >= activity else now
    return {"container_id": container_id, "started_at": started_at, "phase": phase, "bytes": size,
            "activity_at": activity}


def describe_phase(phase):
    return dict(STARTUP_PHASES).get(phase, phase)


def verdict(ready, phase, elapsed, idle, stall_budgets, cap):
    """``(verdict, message)`` of a start that was ``elapsed`` s old and ``idle`` s without a new line.

    READY once ready; TIMEOUT when ``elapsed`` reached ``cap`` (server_ready_timeout); STUCK when
    ``idle`` reached the phase's budget; WAITING otherwise, with the operator's progress line
    ``"<phase>, <elapsed> s"``.
    """
    elapsed, idle = int(elapsed), int(idle)
    if ready:
        return READY, "ready after %d s" % elapsed
    if elapsed >= cap:
        return TIMEOUT, ("the server was not ready after %d s (the cap, server_ready_timeout %d s), still in phase "
                         "%s (%s): raise server_ready_timeout if this start is slow but moving"
                         % (elapsed, cap, phase, describe_phase(phase)))
    budget = stall_budgets.get(phase)
    if budget is not None and idle >= budget:
        return STUCK, ("the start is stuck in phase %s (%s): no new log line for %d s (its stall budget is %d s), "
                       "%d s after the container started; if this phase is slow but alive, raise "
                       "server_ready_phase_budgets.%s" % (phase, describe_phase(phase), idle, budget, elapsed, phase))
    return WAITING, "%s, %d s" % (phase, elapsed)


def start_proven(state, spec_sha256, started_at):
    """Whether the running container's start was proven: the host's last known-good is this spec,
    recorded with this very ``started_at`` (a start the controller never finished proving - it died
    during the wait, or the watchdog restarted the engine since - is not)."""
    current = (state or {}).get("last_known_good") or {}
    return bool(started_at) and current.get("spec_sha256") == spec_sha256 and current.get("started_at") == started_at


def plan(deployment, state=None, started_at=None, setting="auto", restart_timeout=1800, first_deploy_timeout=5400,
         stall_timeout=None, phase_budgets=None, wait_chunk=30):
    """How the role waits for this deployment's engine: ``{first_deploy, timeout, budgets, wait_chunk,
    retries, proven}``. Raises BudgetError naming the variable for a setting it cannot use."""
    history = list((state or {}).get("history") or [])
    if (state or {}).get("last_known_good"):
        history.append(state["last_known_good"])
    first = first_deploy(setting, (deployment or {}).get("model"), history)
    timeout = _seconds(first_deploy_timeout if first else restart_timeout,
                       "server_ready_first_deploy_timeout" if first else "server_ready_timeout")
    chunk = _seconds(wait_chunk, "server_ready_wait_chunk")
    return {
        "first_deploy": first,
        "timeout": timeout,
        "budgets": budgets(first, stall_timeout, phase_budgets),
        "wait_chunk": chunk,
        # one bounded wait per chunk up to the cap, and one more: the module itself fails at the cap
        "retries": -(-timeout // chunk) + 1,
        "proven": start_proven(state, (deployment or {}).get("spec_sha256"), started_at),
    }
