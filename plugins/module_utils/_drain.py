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

import errno
import json
import os
import stat
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.module_utils._prometheus import metric_sum

STATE_FILE = "drained.json"
ROUTING_FILE = "routing.json"


class DrainError(ValueError):
    """A drain state or routing file that cannot be read; the message names the file and the fix."""


def running_master_key(env_text):
    """The master key the gateway's proxy runs with, from its env file's text (``LITELLM_MASTER_KEY=``,
    as systemd's ``EnvironmentFile=`` reads it, quotes removed), or None."""
    for line in (env_text or "").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip() == "LITELLM_MASTER_KEY":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value or None
    return None


def read_text(path):
    """A file of the gateway's state directory as text; None when there is none (not drained, not configured).

    Opened without following a link (``O_NOFOLLOW``) and read only when it is a regular file: root
    never reads, through a link planted there, a file the link points at. Raises DrainError naming
    the file for a link or another kind of file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DrainError("%s: a symbolic link, refused (root does not follow links in the gateway's state "
                             "directory); remove it and rerun the gateway role (playbooks/gateway.yml)" % path) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise DrainError("%s: not a regular file, refused; remove it and rerun the gateway role "
                             "(playbooks/gateway.yml)" % path)
        return handle.read().decode("utf-8")


def state_dir_problem(path, uid=None):
    """Why the gateway's state directory ``path`` cannot hold root's drain state, or None.

    It must be a real directory (not a link), owned by ``uid`` (the module's user: root) and
    writable by nobody else, so the proxy's user can read it and never plant a link or swap a file
    in it. None also when it does not exist (a gateway not configured yet).
    """
    uid = os.geteuid() if uid is None else uid
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    fix = "the gateway role makes it root-owned, mode 0755: rerun it (playbooks/gateway.yml)"
    if stat.S_ISLNK(info.st_mode):
        return "%s: the gateway's state directory is a symbolic link, refused; %s" % (path, fix)
    if not stat.S_ISDIR(info.st_mode):
        return "%s: the gateway's state directory is not a directory; %s" % (path, fix)
    if info.st_uid != uid:
        return "%s: the gateway's state directory is owned by uid %d, not %d; %s" % (path, info.st_uid, uid, fix)
    if info.st_mode & 0o022:
        return ("%s: the gateway's state directory is writable by its group or others (mode %04o); %s"
                % (path, stat.S_IMODE(info.st_mode), fix))
    return None


def open_lock(path):
    """The state directory's lock file ``path``, opened for ``flock`` without following a link (0600)."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DrainError("%s: a symbolic link, refused; remove it" % path) from None
        raise


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


def outages_of(found, host=None):
    """The outages of ``found`` that ``host`` takes part in (it is among their stopping hosts): a
    serving host asking about its whole batch refuses only its own; every outage when ``host`` is
    None. The other hosts of an outage ask too, and refuse it themselves."""
    return [entry for entry in found if host is None or host in entry["hosts"]]


def outage_message(found, expected_seconds=None):
    """Why the drain is refused, naming each group, its hosts and the expected outage."""
    what = "; ".join("model group %s has no other host in routing than %s"
                     % (entry["group"], ", ".join(entry["hosts"])) for entry in found)
    duration = ("expected up to %d s (the engine's stop and start: its stop timeout and the readiness cap, "
                "server_ready_timeout)" % int(expected_seconds)) if expected_seconds else "until its engine is back"
    return ("%s: stopping it is an outage of that group for clients of the gateway, %s. Add a host serving the "
            "same model, roll fewer hosts at once (site.yml's waves: inferops_max_unavailable=1, or "
            "-e inferops_serial=1), or accept the outage with "
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


def unread_wait(stop_timeout=None, drain_timeout=None):
    """Seconds the drain waits when it cannot read the engine's in-flight gauges.

    It cannot tell whether requests are running, so it does not call the engine drained: it waits
    the plan's stop timeout (``server_deployment.shutdown.stop_timeout``: the engine's graceful
    shutdown plus Docker's margin, the longest a request may still need), at most the gateway's
    ``drain_timeout``. An engine without a graceful stop (no stop timeout: SGLang) gets the whole
    ``drain_timeout``: its stop cuts whatever still runs.
    """
    limit = None if drain_timeout in (None, "") else max(0, int(drain_timeout))
    if stop_timeout in (None, "", 0, "0"):
        return limit if limit is not None else 0
    wait = max(0, int(stop_timeout))
    return min(wait, limit) if limit is not None else wait


def _text_of(answer):
    """The text of a ``/metrics`` read (its text, or a uri result's content when it answered 200); None else."""
    if isinstance(answer, Mapping):
        return answer.get("content") if answer.get("status") == 200 else None
    return answer


def read_gauges(answer, names):
    """``{readable, in_flight, text, reason}`` of one read of the engine's ``/metrics``.

    ``answer``: the read - its text (an answer with status 200), or ``ansible.builtin.uri``'s
    result (``status``, ``content``, ``msg``; status -1 when there was no answer: a refused
    connection, a timeout). ``names``: the plan's metric names (``server_deployment.metrics``,
    from the engine catalog: ``_engines.METRICS``, the names the monitoring rules read too).
    Readable only when the status is 200 and the text has every gauge of ``names['running']``
    and ``names['waiting']``: a 404 (SGLang without ``--enable-metrics``), a 401, a timeout, or a
    gauge renamed by an engine upgrade is unreadable, with ``reason`` saying which - never
    "nothing in flight".
    """
    if isinstance(answer, Mapping):
        status = answer.get("status")
        text = answer.get("content")
        if status != 200:
            why = str(answer.get("msg") or "").strip()
            if status in (None, -1):
                reason = "no answer from /metrics (%s)" % (why or "connection failed or timed out")
            else:
                reason = "/metrics answered HTTP %s, not 200%s" % (status, (" (%s)" % why) if why else "")
            return {"readable": False, "in_flight": None, "text": None, "reason": reason}
    else:
        text = answer
    text = "" if text is None else str(text)
    gauges = [names.get(key) for key in ("running", "waiting")]
    if not all(gauges):
        return {"readable": False, "in_flight": None, "text": text,
                "reason": "the plan names no running and waiting gauges for this engine (server_deployment.metrics)"}
    missing = [name for name in gauges if metric_sum(text, name) is None]
    if missing:
        return {"readable": False, "in_flight": None, "text": text,
                "reason": "/metrics has no %s (a gauge renamed by an engine upgrade, or metrics not enabled)"
                          % " or ".join(missing)}
    return {"readable": True, "in_flight": in_flight(text, names), "text": text, "reason": None}


def drain_progress(metrics_text, names, first_text=None, waited=0, stall_after=STALL_AFTER, unread_after=None):
    """Whether the drain may stop waiting: ``{in_flight, stalled, readable, reason, waited, unread_after, done}``,
    and ``message`` (what the run prints) when the gauges cannot be read.

    ``metrics_text``: the ``/metrics`` read now (:func:`read_gauges`: its text or the uri result).
    ``readable``/``reason``: :func:`read_gauges`' - when the gauges cannot be read, nothing is
    known of the requests in flight: the drain is ``done`` only once it has ``waited``
    ``unread_after`` seconds (:func:`unread_wait`; None: never, the caller's bound ends it), and
    ``reason`` says why it could not read them. ``in_flight``: running plus waiting.
    ``stalled``: requests are in flight, the drain has waited ``stall_after`` seconds or more,
    and the engine's generation counter (``names['generation_tokens']``) has not moved since
    ``first_text``, the ``/metrics`` read when the wait began - a wedged engine. Only for
    engines whose counter moves at every decode step (``names['tokens_counted'] == 'step'``:
    vLLM); SGLang counts a request's tokens when it finishes, so a long generation would look
    stalled: it waits for the timeout. ``done``: readable and nothing in flight, or stalled, or
    unreadable for ``unread_after`` seconds.
    """
    read = read_gauges(metrics_text, names)
    waited = int(waited or 0)
    if not read["readable"]:
        done = unread_after is not None and waited >= int(unread_after)
        gauges = ", ".join(str(names.get(key)) for key in ("running", "waiting") if names.get(key)) or "none named"
        message = ("the drain could not read the in-flight gauges of the engine (%s): %s. It did not call the engine "
                   "drained: it waited %d s (up to %s s: the stop timeout of the plan, at most gateway_drain_timeout, all "
                   "of it for an engine without a graceful stop) before letting the stop go ahead. Requests still "
                   "running then are cut at the stop; give the engine its metrics (SGLang: --enable-metrics) so "
                   "the drain can see them" % (gauges, read["reason"], waited,
                                               "no bound" if unread_after is None else int(unread_after)))
        return {"in_flight": None, "stalled": False, "readable": False, "reason": read["reason"], "waited": waited,
                "unread_after": unread_after, "done": done, "message": message}
    count = read["in_flight"]
    stalled = False
    counter = names.get("generation_tokens")
    first = _text_of(first_text)
    if count and counter and names.get("tokens_counted") == "step" and first is not None and waited >= stall_after:
        before, now = metric_sum(first, counter), metric_sum(read["text"], counter)
        stalled = before is not None and now is not None and now <= before
    return {"in_flight": count, "stalled": stalled, "readable": True, "reason": None, "waited": waited,
            "unread_after": unread_after, "done": count == 0 or stalled}


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
