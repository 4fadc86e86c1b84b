# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Which serving hosts the gateway routes to, and whether that agrees with what serves.

``gateway_routing()`` reads one gateway: its deployments as the running proxy lists them
(LiteLLM's ``GET /v1/model/info``, or the config's ``model_list``: each deployment's
``model_info.inferops_host`` names its serving host, written by ``_gateway.gateway_config``) and
the drain state (``<gateway_state_dir>/drained.json``: ``{"hosts": {host: {since, by}}}``). A host
is in routing when it is a deployment of the gateway and not drained; out of routing when it is
drained, or no deployment of the gateway (a host added to the inventory but not yet converged into
the gateway's configuration).

``routing_rows()`` puts that beside the status rows (``_status.host_status``) and flags the two
disagreements: a host that serves but is out of routing (its capacity is lost to every client of
the gateway: a drain nobody undid, a gateway not converged since the host was added), and a host in
routing that does not serve (the gateway sends it requests that fail over or fail). Each gateway
gets a row of its own: its URL and which hosts are in routing.
"""
from __future__ import annotations

import json
from collections.abc import Mapping


def client_url(listen_address, port, host_address):
    """The URL clients use: the listen address, or the host's address when it listens on every interface."""
    address = str(host_address if str(listen_address) in ("0.0.0.0", "::", "") else listen_address)
    return "http://%s:%d/v1" % ("[%s]" % address if ":" in address else address, int(port))


def _deployments(model_info):
    """``{host: model group}`` from /v1/model/info's answer (``{data: [...]}``) or a config (``{model_list: [...]}``)."""
    if isinstance(model_info, Mapping):
        entries = model_info.get("data", model_info.get("model_list"))
    else:
        entries = model_info
    if not isinstance(entries, (list, tuple)):
        raise ValueError("expected LiteLLM's /v1/model/info answer ({data: [...]}), got %s" % type(model_info).__name__)
    found = {}
    for entry in entries:
        info = (entry or {}).get("model_info") if isinstance(entry, Mapping) else None
        host = info.get("inferops_host") if isinstance(info, Mapping) else None
        if host:
            found[str(host)] = str(entry.get("model_name") or "")
    return found


def _drained(drained):
    """``{host: "since <since> by <by>"}`` from the drain file (None: no file)."""
    if drained is None:
        return {}
    hosts = drained.get("hosts") if isinstance(drained, Mapping) else None
    if not isinstance(hosts, Mapping):
        raise ValueError('expected {"hosts": {"<host>": {"since": ..., "by": ...}}}, got %r' % (drained,))
    found = {}
    for host, why in hosts.items():
        why = why if isinstance(why, Mapping) else {}
        found[str(host)] = "since %s by %s" % (why.get("since") or "an unknown time", why.get("by") or "an unknown reason")
    return found


def gateway_routing(gateway, url, model_info=None, drained=None, error=None):
    """One gateway's routing: ``{gateway, url, ok, state, groups, in_routing, drained, problems}``.

    ``model_info``: the deployments the running proxy lists (None when it was not read, ``error``
    then says why); ``drained``: the parsed drain file, None when there is none. ``groups`` is each
    model group's hosts, ``in_routing`` each deployment's host -> bool, ``drained`` each drained
    host -> since when and by what.
    """
    problems = []
    deployments, drain = {}, {}
    if error or model_info is None:
        problems.append("NOT READ: %s" % " ".join(str(error or "the gateway's deployments were not read").split()))
    else:
        try:
            deployments = _deployments(model_info)
        except ValueError as exc:
            problems.append("NOT READ: /v1/model/info: %s" % exc)
        if not deployments and not problems:
            problems.append("NO DEPLOYMENT names its serving host (model_info.inferops_host): converge the gateway "
                            "(playbooks/gateway.yml)")
    try:
        drain = _drained(drained)
    except ValueError as exc:
        problems.append("the drain file is not readable: %s; fix or remove it on %s" % (exc, gateway))
    groups = {}
    for host, group in sorted(deployments.items()):
        groups.setdefault(group, []).append(host)
    # Unknown when anything was not read: a drain file that cannot be read says nothing of who is drained.
    in_routing = {} if problems else {host: host not in drain for host in sorted(deployments)}
    if problems:
        state = "; ".join(problems)
    else:
        state = "routes to %d of %d hosts" % (sum(in_routing.values()), len(in_routing))
    return {"gateway": str(gateway), "url": url, "ok": not problems, "state": state, "groups": groups,
            "in_routing": in_routing, "drained": drain, "problems": problems}


def routing_from_reads(result, gateway, url, drained_text=None):
    """``gateway_routing()`` from the reads of the role's ``status`` entry point: ``result`` the
    registered ``ansible.builtin.uri`` result of ``GET /v1/model/info`` (its message only, never its
    request, goes into the state), ``drained_text`` the drain file's text (None: no file)."""
    result = result if isinstance(result, Mapping) else {}
    status = result.get("status")
    model_info, error = None, None
    if status == 200 and isinstance(result.get("json"), (Mapping, list)):
        model_info = result["json"]
    elif status is None:
        # Not the read's result: a task before it failed (ansible_failed_result), or the host was
        # unreachable (its result itself: the connection's reason, without ansible-core's prefix).
        reason = " ".join(str(result.get("msg") or "no reason given").split())
        reason = reason[len("Task failed: "):] if reason.startswith("Task failed: ") else reason
        error = "%s: %s" % ("UNREACHABLE" if result.get("unreachable") else "the read failed", reason)
    elif status == 401:
        error = "GET /v1/model/info answered 401: the gateway refuses gateway_master_key (set it as the gateway was converged)"
    else:
        error = "GET /v1/model/info answered %s: %s" % (status if status not in (None, -1) else "nothing",
                                                        result.get("msg") or "no reason given")
    drained = None
    if drained_text is not None:
        try:
            drained = json.loads(drained_text)
        except ValueError as exc:
            drained = {"not JSON": str(exc)}
    return gateway_routing(gateway, url, model_info, drained=drained, error=error)


def _host_routing(host, gateway):
    """``(in routing: True/False/None, why)`` of ``host`` on one gateway; None when it was not read."""
    if not gateway.get("ok"):
        return None, "unknown on %s (%s)" % (gateway["gateway"], gateway["state"])
    if host not in gateway["in_routing"]:
        return False, "out on %s: no deployment of its configuration" % gateway["gateway"]
    if not gateway["in_routing"][host]:
        return False, "out on %s: drained %s" % (gateway["gateway"], gateway["drained"][host])
    return True, "in on %s" % gateway["gateway"]


def _hosts(hosts):
    return " ".join(hosts) if hosts else "none"


def routing_rows(rows, gateways):
    """The status ``rows`` with each host's routing, then one row per gateway.

    A host row gets ``details.routing`` (in or out, on which gateway, why) and
    ``routing`` (``{gateway: True/False/None}``). It is flagged (``ok`` false, the state says why)
    when it serves (``ok``) but is out of routing on a gateway, or is in routing but does not
    serve. A row of a host no gateway knows is unchanged. ``gateways``: ``gateway_routing()``
    results. The gateway's row lists its URL, the hosts in routing and those out.
    """
    gateways = [g for g in (gateways or []) if isinstance(g, Mapping) and g.get("gateway")]
    result = []
    for row in rows:
        row = dict(row)
        serving = bool(row.get("ok"))
        routing, whys, flags = {}, [], []
        for gateway in gateways:
            inside, why = _host_routing(row["host"], gateway)
            routing[gateway["gateway"]] = inside
            whys.append(why)
            if serving and inside is False:
                flags.append("serving but OUT OF ROUTING on %s (%s): no client request reaches it"
                             % (gateway["gateway"], why.split(": ", 1)[1]))
            elif not serving and inside:
                flags.append("IN ROUTING on %s but not serving: the gateway sends it requests that fail over or fail"
                             % gateway["gateway"])
        if gateways:
            row["routing"] = routing
            row["details"] = dict(row.get("details") or {}, routing="; ".join(whys))
        if flags:
            row["ok"] = False
            row["problems"] = list(row.get("problems") or []) + flags
            row["state"] = "; ".join(flags) if serving else "%s; %s" % (row.get("state"), "; ".join(flags))
        result.append(row)
    for gateway in gateways:
        inside = [host for host, yes in gateway["in_routing"].items() if yes]
        out = ["%s (drained %s)" % (host, gateway["drained"][host]) for host, yes in gateway["in_routing"].items()
               if not yes]
        details = {"in routing": _hosts(inside), "out of routing": _hosts(out)} if gateway["in_routing"] else {}
        result.append({"host": gateway["gateway"], "ok": gateway["ok"], "profile": "gateway (LiteLLM)",
                       "url": gateway["url"], "state": gateway["state"], "problems": list(gateway["problems"]),
                       "details": details, "gateway": True})
    return result
