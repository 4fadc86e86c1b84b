# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The gateway's drain state: which serving hosts are out of its routing, and what that costs.

The state is a JSON file on each gateway host, ``<gateway_state_dir>/drained.json``::

    {"hosts": {"<inventory_hostname>": {"since": "<ISO-8601 UTC>", "by": "<what drained it>"}}}

A host absent from ``hosts`` is in routing. The gateway's LiteLLM callback
(roles/gateway/files/inferops_drain.py) reads it at each routing decision (when its mtime
changed) and leaves the drained hosts' deployments out; the ``gateway_drain`` module writes it
(under a lock, atomically). The model groups the gateway routes to are in
``<gateway_state_dir>/routing.json``, ``{"groups": {"<served model name>": ["<host>", ...]}}``,
written by the gateway role with its config.yaml: taking out of routing the last host of a group
is an outage, refused unless allowed.

Pure functions, standard library only: the module runs them on the gateway host.
"""
from __future__ import annotations

import json

from ansible_collections.inferops.serving.plugins.module_utils._prometheus import metric_sum

STATE_FILE = "drained.json"
ROUTING_FILE = "routing.json"


class DrainError(ValueError):
    """A drain state or routing file that cannot be read; the message names the file and the fix."""


def read_text(path):
    """A file of the gateway's state directory as text; None when there is none (not drained, not configured)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _load(text, path, key):
    if text is None or not str(text).strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DrainError("%s: not JSON (%s); fix it or remove it (a removed drain state puts every host back in "
                         "routing)" % (path, exc)) from None
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise DrainError("%s: expected a JSON object with a %r mapping, got %s" % (path, key, type(data).__name__))
    return value


def parse_state(text, path=STATE_FILE):
    """The drained hosts of a ``drained.json`` text: ``{host: {since, by}}``; empty for no file."""
    hosts = _load(text, path, "hosts")
    return {str(host): dict(entry) if isinstance(entry, dict) else {} for host, entry in hosts.items()}


def parse_routing(text, path=ROUTING_FILE):
    """The model groups of a ``routing.json`` text: ``{group: [host, ...]}``."""
    groups = _load(text, path, "groups")
    if not all(isinstance(hosts, list) for hosts in groups.values()):
        raise DrainError("%s: each model group must list its hosts" % path)
    return {str(group): [str(host) for host in hosts] for group, hosts in groups.items()}


def state_text(hosts):
    """The ``drained.json`` text of ``hosts`` ({host: {since, by}}), stable (sorted keys)."""
    return json.dumps({"hosts": hosts}, indent=2, sort_keys=True) + "\n"


def updated(hosts, drain=(), undrain=(), by=None, now=None):
    """``hosts`` with ``drain`` marked drained (``since`` ``now``, ``by``) and ``undrain`` put back.

    A host already drained keeps its entry (when and by what it was drained first), so draining
    twice changes nothing.
    """
    result = {host: dict(entry) for host, entry in hosts.items() if host not in set(undrain)}
    for host in drain:
        result.setdefault(str(host), {"since": now, "by": by})
    return result


def outages(groups, drained, stopping):
    """The model groups ``stopping`` (hosts about to stop) would leave without a host in routing.

    ``groups``: {group: [host, ...]} (routing.json); ``drained``: the hosts already out of routing.
    A group counts only when one of its hosts in routing now is among ``stopping`` (a group that
    is out already is no new outage). Returns ``[{group, hosts}]`` - ``hosts`` the stopping ones.
    """
    out, stopping = set(drained), set(stopping)
    found = []
    for group, members in sorted(groups.items()):
        in_routing = [host for host in members if host not in out]
        going = [host for host in in_routing if host in stopping]
        if going and len(going) == len(in_routing):
            found.append({"group": group, "hosts": sorted(going)})
    return found


def outage_message(found, expected_seconds=None):
    """Why the drain is refused, naming each group, its hosts and the expected outage."""
    what = "; ".join("model group %s has no other host in routing than %s"
                     % (entry["group"], ", ".join(entry["hosts"])) for entry in found)
    duration = ("expected up to %d s (the engine's stop and start: its stop timeout and the readiness cap, "
                "server_ready_timeout)" % int(expected_seconds)) if expected_seconds else "until its engine is back"
    return ("%s: stopping it is an outage of that group for clients of the gateway, %s. Add a host serving the "
            "same model, roll one host at a time (-e inferops_serial=1), or accept the outage with "
            "gateway_allow_outage: true. Nothing was changed." % (what, duration))


def in_flight(metrics_text, names):
    """Requests the engine is running or has queued, from its ``/metrics`` text.

    ``names``: the plan's metric names (``server_deployment.metrics``: ``running``, ``waiting``;
    vLLM ``vllm:num_requests_running`` / ``vllm:num_requests_waiting``, SGLang
    ``sglang:num_running_reqs`` / ``sglang:num_queue_reqs``), summed over their label sets.
    None when the text has neither metric (an engine not serving metrics yet).
    """
    values = [metric_sum(metrics_text or "", names.get(key)) for key in ("running", "waiting") if names.get(key)]
    values = [value for value in values if value is not None]
    return int(round(sum(values))) if values else None


# Seconds without one generated token, with requests in flight, after which the drain stops
# waiting: the engine is wedged (its requests will never finish; the watchdog's "wedged"), so
# there is nothing left to save and the engine may stop.
STALL_AFTER = 60


def drain_progress(metrics_text, names, first_text=None, waited=0, stall_after=STALL_AFTER):
    """Whether the drain may stop waiting: ``{in_flight, stalled, done}``.

    ``in_flight``: :func:`in_flight` of ``metrics_text``. ``stalled``: requests are in flight, the
    drain has waited ``stall_after`` seconds or more, and the engine's generation counter
    (``names['generation_tokens']``) has not moved since ``first_text``, the ``/metrics`` read when
    the wait began - a wedged engine. Only for engines whose counter moves at every decode step
    (``names['tokens_counted'] == 'step'``: vLLM); SGLang counts a request's tokens when it
    finishes, so a long generation would look stalled: it waits for the timeout. ``done``: nothing
    in flight (or no metrics), or stalled.
    """
    count = in_flight(metrics_text, names)
    stalled = False
    counter = names.get("generation_tokens")
    if count and counter and names.get("tokens_counted") == "step" and first_text is not None \
            and waited >= stall_after:
        before, now = metric_sum(first_text, counter), metric_sum(metrics_text or "", counter)
        stalled = before is not None and now is not None and now <= before
    return {"in_flight": count, "stalled": stalled, "done": count in (0, None) or stalled}


def unhealthy_ids(health):
    """The deployment ids (the hosts: ``model_info.id``) LiteLLM's ``/health`` lists as unhealthy.

    With ``background_health_checks`` the proxy answers ``/health`` from its last background
    check, the same results its health-check routing leaves unhealthy deployments out with.
    """
    if not isinstance(health, dict):
        return set()
    return {str(entry.get("model_id")) for entry in health.get("unhealthy_endpoints") or []
            if isinstance(entry, dict) and entry.get("model_id")}


def without_other_host(groups, drained, host, health):
    """The model groups of ``host`` whose other hosts in routing the gateway all sees unhealthy.

    Taking ``host`` out then would leave the gateway nothing to route the group to until its
    next health check (a host just back from its own restart is still unhealthy there for up to
    ``gateway_health_check_interval``). A group without another host is the outage check's.
    """
    out, sick = set(drained), unhealthy_ids(health)
    waiting = []
    for group, members in sorted(groups.items()):
        others = [member for member in members if member != host and member not in out]
        if host in members and others and all(member in sick for member in others):
            waiting.append(group)
    return waiting
