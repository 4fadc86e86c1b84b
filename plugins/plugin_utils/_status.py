# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""A host's serving status, read without changing anything (playbooks/status.yml).

``host_status`` compares what runs (the container's image and spec label) with what the
inventory plans (the deployment plan: the lock's digest, the profile, the options), and reads
the engine's health, one real completion and its live metrics. ``drift`` lists every way the
host differs from its plan; a host with drift, or one that does not answer, is not OK.

``unread_status`` is the row of a host that could not be read at all (unreachable, or a read
failed), and ``fleet_status`` gives every host of the play a row, so one dead host never hides
the others (the reason it is dead is in its row). ``serving_rows`` does the same for site.yml's
summary, from what the server role recorded of each host's converge.
"""
from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.module_utils._prometheus import metric_max, metric_sum
from ansible_collections.inferops.serving.plugins.plugin_utils import _rollback
from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action


def _short(digest):
    return str(digest)[:19] if digest else None


def _image_digest(ref):
    """The ``sha256:...`` of an image reference (``repo@sha256:...`` or an image ID), or None."""
    ref = str(ref or "")
    if "@" in ref:
        return ref.rsplit("@", 1)[1]
    return ref if ref.startswith("sha256:") else None


def host_status(host, deployment, container=None, recorded=None, health=None, completion=None, metrics=None,
                watchdog=None, known_bad=None, groups=None, hardware_group=None):
    """``{host, ok, state, drift, ...}`` of one host; every argument is a task's result as registered.

    ``container`` is the container read (deployment_state with ``container``, or
    community.docker.docker_container_info's result), ``recorded`` the deployment_state read,
    ``health``/``completion`` ansible.builtin.uri results, ``metrics`` the
    /metrics text, ``watchdog`` the watchdog's state file (parsed) or None. ``known_bad`` (the
    inventory's list), ``groups`` and ``hardware_group`` (the host's): a host whose plan
    playbooks/rollback.yml left (``_rollback``) is ROLLED BACK, not DRIFT - it serves what the
    rollback returned to, on purpose, and its row says how to end that.
    """
    action = container_action(deployment, container)
    info = (container or {}).get("container") or {}
    running_ref = (info.get("Config") or {}).get("Image")
    drift = list(action["drift"])
    if action["exists"] and not action["running"]:
        drift.append("container %s is not running (%s)"
                     % (deployment["container"], (info.get("State") or {}).get("Status", "unknown")))
    health_ok = (health or {}).get("status") == 200
    answer = None
    latency = None
    if (completion or {}).get("status") == 200:
        try:
            answer = str(completion["json"]["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError):
            answer = None
        latency = completion.get("elapsed")
    smoke = deployment.get("smoke") or {}
    answers = answer is not None and str(smoke.get("expect", "")) in answer
    rolled_back = _rollback.status_note(deployment, known_bad, _rollback.hardware_group(groups, hardware_group)) \
        if drift and known_bad else None
    problems = [] if rolled_back else list(drift)
    if not health_ok:
        problems.append("/health answered %s" % ((health or {}).get("status") or (health or {}).get("msg") or "nothing"))
    if not answers:
        problems.append("the completion %s" % ("answered %r" % answer if answer is not None else "failed: %s"
                                               % ((completion or {}).get("msg") or "no answer")))
    names = deployment.get("metrics") or {}
    text = metrics or ""
    live = {
        "running": metric_sum(text, names.get("running")),
        "waiting": metric_sum(text, names.get("waiting")),
        "kv_cache_usage": metric_max(text, names.get("kv_cache_usage")),
    }
    drafts, accepted = metric_sum(text, names.get("spec_drafts")), metric_sum(text, names.get("spec_accepted"))
    if drafts:
        live["mean_accepted_per_draft"] = round((accepted or 0.0) / drafts, 2)
    if names.get("spec_accept_length"):
        live["accept_length"] = metric_max(text, names.get("spec_accept_length"))
    watch = watchdog or {}
    if watch:
        live["watchdog"] = "gave up" if watch.get("gave_up") else (watch.get("status") or watch.get("outcome") or "on")
    last = (recorded or {}).get("last_known_good") or {}
    if rolled_back:
        state = rolled_back + ("; NOT SERVING: " + "; ".join(problems) if problems else "")
    elif drift:
        state = "DRIFT: " + "; ".join(drift)
    elif problems:
        state = "NOT SERVING: " + "; ".join(problems)
    else:
        state = "serving"
    return {
        "host": host,
        "ok": not problems,
        "state": state,
        "drift": drift,
        "problems": problems,
        "profile": deployment["profile"].get("name"),
        "digest": _image_digest(running_ref) or _image_digest(deployment["image"]["ref"]),
        "planned_digest": _image_digest(deployment["image"]["ref"]),
        "last_known_good": {"image": last.get("image"), "validated_at": last.get("validated_at"),
                            "engine_version": last.get("engine_version")} if last else None,
        "engine_version": last.get("engine_version") or deployment["image"].get("engine_version"),
        "url": None,
        "smoke_answer": answer,
        "smoke_latency_seconds": latency,
        "details": {k: v for k, v in live.items() if v is not None},
    }


UNREAD = "NOT READ: failed or not reached, see its errors above"


def unread_status(result, host, deployment=None, task=None, censored=False):
    """The status row of a host whose read did not happen (``unread`` true), or ``{host, unread:
    false}`` when ``result`` says it answered: a mapping either way, so a playbook tests one boolean
    (ansible-core 2.18 turns a fact set to None into an empty string).

    ``result`` is a registered task result: the reach probe (ansible.builtin.ping with
    ``ignore_unreachable``), or ``ansible_failed_result`` in a rescue with ``task`` the failed
    task's name. ``censored`` (the failed task is ``no_log``) keeps its message out of the row:
    a no_log task's error may quote what it hid.
    """
    result = result or {}
    if task is None and not result.get("unreachable") and not result.get("failed") and result.get("ping") == "pong":
        return {"host": host, "unread": False}
    reason = " ".join(str(result.get("msg") or "no reason given").split())
    # ansible-core 2.19+ prefixes a result's message with what the reader already knows.
    reason = reason[len("Task failed: "):] if reason.startswith("Task failed: ") else reason
    if result.get("unreachable"):
        state = "UNREACHABLE: %s" % reason
    elif task is None:
        state = "NOT READ: the host answered nothing usable: %s" % reason
    elif censored:
        state = "NOT READ: %r failed (its message is hidden: the task is no_log)" % task
    else:
        state = "NOT READ: %r failed: %s" % (task, reason)
    deployment = deployment or {}
    return {
        "host": host,
        "unread": True,
        "ok": False,
        "state": state,
        "drift": [],
        "problems": [state],
        "profile": (deployment.get("profile") or {}).get("name"),
        "digest": None,
        "planned_digest": _image_digest((deployment.get("image") or {}).get("ref")),
        "last_known_good": None,
        "engine_version": None,
        "url": None,
        "smoke_answer": None,
        "smoke_latency_seconds": None,
        "details": {},
    }


def fleet_status(hosts, statuses):
    """One status row per host of ``hosts``, in order: its own, or a NOT READ row where it has none.

    ``statuses`` maps a host to its ``server_status``; a host whose status tasks failed before
    any row was recorded has None or no entry.
    """
    rows = []
    for host in hosts:
        status = statuses.get(host)
        if not isinstance(status, dict):
            status = {"host": host, "ok": False, "state": UNREAD, "drift": [], "problems": [UNREAD], "details": {}}
        rows.append(status)
    return rows


def serving_rows(hosts, summaries):
    """One summary row per host of ``hosts``, in order: a copy of its ``server_summary`` with ``host``
    set, or ``{host}`` alone where it has none (the summary table shows that host as NOT SERVED).

    ``summaries`` maps a host to its ``server_summary``; a host that failed or was not reached
    before the server role recorded one has None or no entry.
    """
    rows = []
    for host in hosts:
        summary = summaries.get(host)
        rows.append(dict(summary if isinstance(summary, Mapping) else {}, host=host))
    return rows
