# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""How site.yml rolls the serving fleet: which hosts converge together (the waves), and when the
rollout stops starting hosts because others failed.

A model group is the hosts serving one model (the plan's ``served_model_name``, the gateway's
model group). A wave never holds more hosts of one group that change than ``max_unavailable``
allows (a count, or a percentage of the group's hosts, rounded down, at least 1), so a converge
takes at most that many hosts of a group out of routing at once; the groups roll side by side
(wave ``k`` holds the ``k``-th slice of every group), and hosts that do not change go in the first
wave. ``site.yml`` reads the waves as the serving play's host order and ``serial`` list
(``inferops.serving.rollout_plan`` lookup); ``inferops_serial`` replaces them with Ansible's own
batches of the inventory order.

A host that fails stops its group: the group's hosts in later waves are not converged (the
change that failed on one would fail on the next, and the group keeps the hosts it has). The
other groups go on while the failed hosts are at most ``max_fail_percentage`` of the run's hosts.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action
from ansible_collections.inferops.serving.plugins.plugin_utils._status import serving_rows


class RolloutError(ValueError):
    """A setting the rollout cannot use; the message names the variable and the fix."""


_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_amount(value, name):
    """``("count", n)`` or ``("percent", p)`` from an int, a digit string or ``"<p>%"``."""
    if isinstance(value, bool) or value is None:
        raise RolloutError("%s: got %r; expected a count (1) or a percentage of each model group ('25%%')" % (name, value))
    if isinstance(value, int):
        count = value
    else:
        text = str(value).strip()
        match = _PERCENT.match(text)
        if match:
            percent = float(match.group(1))
            if not 0 < percent <= 100:
                raise RolloutError("%s: got %r; a percentage must be above 0%% and at most 100%%" % (name, value))
            return ("percent", percent)
        if not text.isdigit():
            raise RolloutError("%s: got %r; expected a count (1) or a percentage of each model group ('25%%')"
                               % (name, value))
        count = int(text)
    if count < 1:
        raise RolloutError("%s: got %r; at least 1 host must be allowed to change at once (or the rollout "
                           "never moves)" % (name, value))
    return ("count", count)


def group_limit(size, amount):
    """How many changing hosts of a group of ``size`` hosts one wave may hold (at least 1)."""
    kind, number = amount
    if kind == "count":
        return max(1, int(number))
    return max(1, int(math.floor(size * number / 100.0 + 1e-9)))


def model_groups(hosts, groups):
    """``{group: [host, ...]}`` in the order of ``hosts``; a host with no group is a group of its own."""
    found = {}
    for host in hosts:
        found.setdefault(groups.get(host) or "host:%s" % host, []).append(host)
    return found


def waves(hosts, groups, max_unavailable=1, changing=None, name="inferops_max_unavailable"):
    """The waves (lists of hosts) ``hosts`` converge in.

    ``groups`` maps a host to its model group; ``changing`` is the hosts whose engine this
    converge stops (None: every host, as site.yml assumes before it has read the containers).
    Each host is in exactly one wave; the hosts that do not change are in the first; wave ``k``
    holds, of every group, its ``k``-th slice of at most ``group_limit`` changing hosts (in the
    order of ``hosts``).
    """
    amount = parse_amount(max_unavailable, name)
    hosts = list(dict.fromkeys(str(host) for host in hosts))
    changing = set(hosts) if changing is None else {str(host) for host in changing}
    result = []
    steady = [host for host in hosts if host not in changing]
    queues = []
    for members in model_groups(hosts, groups).values():
        moving = [host for host in members if host in changing]
        if moving:
            queues.append((moving, group_limit(len(members), amount)))
    index = 0
    while True:
        wave = [host for moving, limit in queues for host in moving[index * limit:(index + 1) * limit]]
        if index == 0:
            wave = steady + wave
        if not wave:
            break
        result.append(sorted(wave, key=hosts.index))
        index += 1
    return result


def changing_hosts(hosts, deployments, reads):
    """The hosts of ``hosts`` whose running engine this converge stops: ``container_action``'s
    ``replacing`` of each host's plan (``deployments``) and container read (``reads``: the
    deployment_state module's result, ``exists`` and ``container``).

    A host without a plan, or whose read failed or did not happen (unreachable, no Docker yet),
    stops no engine this run knows of: it is not counted (the server role's outage check still
    reads every wave's containers before anything changes, and refuses a model group's last host).
    A running container whose secrets' digest could not be read (container_action refuses to
    call them unchanged) counts as stopping: the converge may recreate it.
    """
    changing = []
    for host in hosts:
        deployment, read = deployments.get(host), reads.get(host)
        if not isinstance(deployment, Mapping) or not isinstance(read, Mapping) or "exists" not in read:
            continue
        if read.get("failed") or read.get("unreachable") or read.get("skipped"):
            continue
        try:
            replacing = container_action(deployment, read)["replacing"]
        except ValueError:
            state = (read.get("container") or {}).get("State") or {}
            replacing = bool(read.get("exists")) and bool(state.get("Running"))
        if replacing:
            changing.append(host)
    return changing


def ansible_batches(hosts, serial):
    """Ansible's own batches of ``hosts`` for a play's ``serial`` (a size, a percentage of all the
    hosts, at least 1, or a list of them, the last repeated; 0 or less: every host left), as
    ``PlaybookExecutor._get_serialized_batches`` makes them: what ``inferops_serial`` gives."""
    hosts = list(hosts)
    total = len(hosts)
    sizes = list(serial) if isinstance(serial, (list, tuple)) else [serial]
    result, index = [], 0
    while hosts:
        text = str(sizes[min(index, len(sizes) - 1)]).strip()
        try:
            size = (int(float(text[:-1]) / 100.0 * total) or 1) if text.endswith("%") else int(text)
        except ValueError:
            raise RolloutError("inferops_serial: got %r; expected a count, a percentage ('30%%') or a list of them"
                               % (serial,)) from None
        size = size if size > 0 else len(hosts)
        result.append(hosts[:size])
        hosts = hosts[size:]
        index += 1
    return result


def parse_percentage(value, name):
    """A failure percentage 0-100 from a number or ``"<p>%"``."""
    text = str(value).strip().rstrip("%").strip() if value is not None and not isinstance(value, bool) else ""
    try:
        percent = float(text)
    except ValueError:
        raise RolloutError("%s: got %r; expected a percentage of the run's serving hosts from 0 to 100 (34)"
                           % (name, value)) from None
    if not 0 <= percent <= 100:
        raise RolloutError("%s: got %r; expected a percentage of the run's serving hosts from 0 to 100 (34)"
                           % (name, value))
    return percent


def rollout_plan(hosts, groups, max_unavailable=1, serial=None, max_fail_percentage=34, changing=None, failed=()):
    """The serving play's rollout: ``{hosts, waves, serial, groups, wave_of, run, total,
    max_fail_percentage, by}``.

    ``hosts``: the run's serving hosts in the play's order (the serving pattern, the limit);
    ``failed``: those that failed already (their plan), left out of the waves but counted in
    ``total``; ``serial``: the operator's ``inferops_serial`` (None or empty: the waves).
    ``hosts`` of the result is the serving play's host order, ``serial`` the sizes of its batches
    (Ansible's ``serial`` keyword as a list), ``wave_of`` each host's wave from 0.
    """
    every = list(dict.fromkeys(str(host) for host in hosts))
    failed = {str(host) for host in failed or ()}
    hosts = [host for host in every if host not in failed]
    groups = {str(host): str(group) for host, group in (groups or {}).items() if group not in (None, "")}
    fail = parse_percentage(max_fail_percentage, "inferops_max_fail_percentage")
    if serial not in (None, "", []):
        batches = ansible_batches(hosts, serial)
        by = "inferops_serial"
    else:
        batches = waves(hosts, groups, max_unavailable, changing)
        by = "inferops_max_unavailable"
    order = [host for batch in batches for host in batch]
    return {
        "hosts": order,
        "waves": batches,
        "serial": [len(batch) for batch in batches],
        "groups": {host: groups.get(host) or "host:%s" % host for host in order},
        "wave_of": {host: index for index, batch in enumerate(batches) for host in batch},
        "run": every,
        "total": len(every),
        "max_fail_percentage": fail,
        "by": by,
    }


def halt_reason(plan, host, failed):
    """Why ``host`` must not converge now, or None: a host of its model group failed in an earlier
    wave, or more of the run's hosts failed than ``max_fail_percentage`` allows.

    ``failed``: the hosts of this run that failed (a planning failure included).
    """
    failed = sorted({str(name) for name in failed or ()})
    if host in failed:
        return None
    wave = plan["wave_of"].get(host, 0)
    group = plan["groups"].get(host) or "host:%s" % host
    earlier = [name for name in plan["hosts"]
               if name in failed and plan["groups"].get(name) == group and plan["wave_of"].get(name, 0) < wave]
    if earlier and not group.startswith("host:"):
        return ("not converged: %s of its model group %s failed earlier in this rollout, so the group's "
                "other hosts keep what they serve; fix the failure above and run site.yml again"
                % (", ".join(earlier), group))
    total = max(plan.get("total") or 0, len(plan["hosts"]))
    if total and len(failed) * 100.0 > plan["max_fail_percentage"] * total:
        return ("not converged: %d of the run's %d serving hosts failed (%s), more than "
                "inferops_max_fail_percentage=%g%% allows; fix them and run site.yml again"
                % (len(failed), total, ", ".join(failed), plan["max_fail_percentage"]))
    return None


def summary_rows(hosts, summaries, failures, held):
    """site.yml's summary rows: each host's ``server_summary`` (``_status.serving_rows``), its
    state replaced by ``NOT SERVED: <reason>`` for a host of ``failures`` ({host: reason}) and by
    ``NOT CONVERGED: <reason>`` for one of ``held`` (a host the rollout did not start)."""
    rows = serving_rows(hosts, summaries)
    for row in rows:
        if failures.get(row["host"]):
            row["state"] = "NOT SERVED: %s" % failures[row["host"]]
        elif held.get(row["host"]):
            row["state"] = "NOT CONVERGED (serves what it served before): %s" % held[row["host"]]
    return rows
