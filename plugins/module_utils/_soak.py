# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Did an engine survive sustained load? The soak's verdict, from what the load and Docker saw.

``soak_verdict(stats, before, after, watchdog=None)`` is pure: ``stats`` are the load's counts
(requests, ok, errors, timeouts, first_error, tokens), ``before``/``after`` the container's
inspect (``State.StartedAt``, ``RestartCount``, ``State.Running``) at the soak's start and end,
``watchdog`` the host-side watchdog's state file (or None). The kinds, in the order they are
judged (the first that holds is the signature recorded on the known-bad list):

* ``crash_under_soak``: the engine process ended (not running, restarted by Docker's policy or
  by the watchdog: its StartedAt or RestartCount moved);
* ``wedge_under_soak``: requests hung past their deadline (or the watchdog saw it wedged) while
  the container kept running;
* ``errors_under_soak``: requests failed with an answer (HTTP 5xx, a broken stream);
* ``no_progress``: not a single request completed.
"""
from __future__ import annotations


def _state(inspect):
    inspect = inspect or {}
    state = inspect.get("State") or {}
    return {"running": bool(state.get("Running")), "started_at": state.get("StartedAt"),
            "restarts": int(inspect.get("RestartCount") or 0), "exit_code": state.get("ExitCode"),
            "oom_killed": bool(state.get("OOMKilled"))}


def soak_verdict(stats, before, after, watchdog=None):
    """``{ok, kind, message, evidence}`` of one soak (kind None when it passed)."""
    was, now = _state(before), _state(after)
    requests = int(stats.get("requests") or 0)
    ok_count = int(stats.get("ok") or 0)
    figures = "%d requests, %d ok, %d failed, %d timed out" % (
        requests, ok_count, int(stats.get("errors") or 0), int(stats.get("timeouts") or 0))
    evidence = {"figures": figures, "first_error": stats.get("first_error"), "container_before": was,
                "container_after": now}
    seen = (watchdog or {}).get("status"), (watchdog or {}).get("reason")
    if seen[0] not in (None, "healthy"):
        evidence["watchdog"] = {"status": seen[0], "reason": seen[1]}
    kind = None
    if not now["running"] or now["restarts"] != was["restarts"] or now["started_at"] != was["started_at"]:
        kind = "crash_under_soak"
        how = ("it is not running (exit code %s%s)" % (now["exit_code"], ", OOM-killed" if now["oom_killed"] else "")
               if not now["running"] else "it was restarted (restarts %d -> %d, started %s -> %s)"
               % (was["restarts"], now["restarts"], was["started_at"], now["started_at"]))
        message = "the engine died under sustained load: %s; %s" % (how, figures)
    elif int(stats.get("timeouts") or 0) > 0 or seen[0] == "wedged":
        kind = "wedge_under_soak"
        message = "requests hung past their deadline while the container kept running (a wedged engine): %s" % figures
    elif int(stats.get("errors") or 0) > 0:
        kind = "errors_under_soak"
        message = "requests failed under sustained load: %s; first: %s" % (figures, stats.get("first_error"))
    elif ok_count == 0:
        kind = "no_progress"
        message = "not one request completed under sustained load: %s" % figures
    else:
        message = "survived sustained load: %s, %s tokens" % (figures, stats.get("tokens") or 0)
    if kind and evidence.get("watchdog"):
        message += "; the watchdog says %s (%s)" % (evidence["watchdog"]["status"], evidence["watchdog"]["reason"])
    return {"ok": kind is None, "kind": kind, "message": message, "evidence": evidence}
