#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: gateway_drain
short_description: Take serving hosts out of the gateway's routing, or put them back
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Runs on a gateway host (C(delegate_to)) of the C(inferops.serving.gateway) role. Marks the
    hosts O(hosts) drained (O(state=drained)) or in routing again (O(state=routed)) in the drain
    state file C(<state_dir>/drained.json), which the gateway's LiteLLM callback reads at each
    routing decision, so a drained host's deployments get no new request.
  - Before it drains, it reads the gateway's model groups (C(<state_dir>/routing.json), written
    by the role with the proxy's configuration) and refuses, changing nothing, when a group would
    be left without a host in routing (an outage for the gateway's clients), unless
    O(allow_outage). Run the task in check mode (C(check_mode=true)) to ask only that question.
  - The state file is read, changed and replaced (a temporary file, then a rename) under an
    exclusive lock, so hosts drained at the same time by parallel tasks are all recorded.
  - A gateway host without C(routing.json) has not been configured by the role yet (it routes
    nothing), so there is nothing to drain and nothing changes.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
    details:
      - Nothing is written; the outage check runs and the result says what would change.
  diff_mode:
    support: full
    details:
      - The drain state file before and after.
  idempotent:
    support: full
    details:
      - A host already drained keeps its entry (since, by); a host in routing is not written again.
options:
  hosts:
    description: The serving hosts' inventory names (the C(inferops_host) of their deployments).
    type: list
    elements: str
    required: true
  state:
    description: V(drained) takes the hosts out of routing, V(routed) puts them back.
    type: str
    choices: [drained, routed]
    default: drained
  state_dir:
    description: The gateway's state directory (the role's C(gateway_state_dir)).
    type: path
    default: /var/lib/inferops-gateway
  by:
    description: What drains the hosts (recorded, shown by status), for example V(site.yml swap).
    type: str
    default: inferops.serving
  allow_outage:
    description: Drain even when a model group is left without a host in routing.
    type: bool
    default: false
  expected_seconds:
    description: How long the hosts are expected to be out, for the outage message.
    type: int
  health_url:
    description:
      - The proxy's C(/health) on the gateway host (LiteLLM's last background health check). With
        O(state=drained), after the outage check and before anything is written (in check mode
        too, it is a read), wait until the gateway sees another healthy host in routing for each
        model group of O(hosts), asking every 5 s for up to O(health_timeout) seconds; RV(waiting)
        lists the groups still without one when the time ran out. A host out of routing already,
        a gateway not configured, or O(allow_outage) skip the wait.
    type: str
  master_key:
    description: The gateway's master key, sent to O(health_url) as a bearer token. Never in a result.
    type: str
  health_timeout:
    description: Seconds the wait for another healthy host lasts at most.
    type: int
    default: 600
seealso:
  - name: The gateway role
    description: roles/gateway/README.md, section Drain.
    link: https://github.com/inferops/inferops.serving/blob/main/roles/gateway/README.md
"""

EXAMPLES = r"""
- name: Take the host out of the gateway's routing
  inferops.serving.gateway_drain:
    hosts: ["{{ inventory_hostname }}"]
    by: site.yml swap
    expected_seconds: 900
  delegate_to: "{{ item }}"
  loop: "{{ groups['gateway'] }}"

- name: Refuse an outage and wait until the gateway sees another healthy host, changing nothing
  inferops.serving.gateway_drain:
    hosts: ["{{ inventory_hostname }}"]
    health_url: http://127.0.0.1:4000/health
    master_key: "{{ gateway_master_key }}"
    health_timeout: 600
  check_mode: true
  delegate_to: "{{ item }}"
  loop: "{{ groups['gateway'] }}"

- name: Put it back once the new engine is proven
  inferops.serving.gateway_drain:
    hosts: ["{{ inventory_hostname }}"]
    state: routed
  delegate_to: "{{ item }}"
  loop: "{{ groups['gateway'] }}"
"""

RETURN = r"""
drained:
  description: Every host out of routing after the task (in check mode, as it would be), with since and by.
  returned: always
  type: dict
  sample: {spark-1: {since: "2026-12-01T20:15:02Z", by: site.yml swap}}
groups:
  description: The gateway's model groups and their hosts (routing.json); empty when the gateway is not configured.
  returned: always
  type: dict
  sample: {RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4: [spark-1, spark-2]}
previously_drained:
  description: Every host that was out of routing before the task.
  returned: always
  type: dict
  sample: {}
outages:
  description: The groups this drain leaves without a host in routing (allowed with O(allow_outage)).
  returned: always
  type: list
  elements: dict
  sample: [{group: RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4, hosts: [spark-1]}]
waiting:
  description:
    - With O(health_url), the model groups of O(hosts) for which the gateway still saw no other
      healthy host in routing when O(health_timeout) ran out; empty when every group has one. The
      task decides what that means (the C(inferops.serving.routing) role fails, changing nothing).
  returned: always
  type: list
  elements: str
  sample: [RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4]
health_answered:
  description: With O(health_url), whether its last read answered JSON; null without O(health_url) or when no wait was needed.
  returned: always
  type: bool
"""

import datetime
import fcntl
import http.client
import json
import os
import socket
import time
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils import _host_files
from ansible_collections.inferops.serving.plugins.module_utils._bounded_http import bounded_request
from ansible_collections.inferops.serving.plugins.module_utils._drain import (
    ROUTING_FILE,
    STATE_FILE,
    DrainError,
    outage_message,
    outages,
    parse_routing,
    parse_state,
    read_text,
    state_text,
    updated,
    without_other_host,
)

# Seconds between two reads of the proxy's /health while waiting, and the most one read may take.
HEALTH_EVERY = 5
HEALTH_READ_TIMEOUT = 30


def _health(url, key):
    """The proxy's /health answer (a dict), or None when it did not answer JSON."""
    try:
        status, body = bounded_request("GET", url, headers={"Authorization": "Bearer " + (key or "")},
                                       timeout=HEALTH_READ_TIMEOUT)
    except (OSError, http.client.HTTPException, socket.timeout):
        return None
    if status != 200:
        return None
    try:
        answer = json.loads(body.decode("utf-8"))
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def wait_for_other_hosts(url, key, groups, drained, hosts, timeout, sleep=time.sleep, clock=time.monotonic):
    """``(waiting groups, answered)``: read ``url`` every HEALTH_EVERY s until each model group of
    ``hosts`` has another host in routing the gateway sees healthy, for at most ``timeout`` s."""
    deadline = clock() + max(0, timeout)
    while True:
        health = _health(url, key)
        waiting = sorted({group for host in hosts for group in without_other_host(groups, drained, host, health or {})})
        if health is not None and not waiting:
            return [], True
        remaining = deadline - clock()
        if remaining <= 0:
            return waiting, health is not None
        sleep(min(HEALTH_EVERY, remaining))


def _wait_healthy(module, params, groups, result, state_path):
    """Before the state file's lock is taken (the wait lasts up to health_timeout): the outage
    check first (no wait for a refused drain), then the wait; exits, changing nothing, when a
    group still has no other healthy host."""
    try:
        before = parse_state(read_text(state_path), state_path)
    except DrainError as exc:
        module.fail_json(msg=str(exc), **result)
    result["previously_drained"] = before
    result["outages"] = outages(groups, before, params["hosts"])
    if result["outages"]:
        result["drained"] = before
        module.fail_json(msg=outage_message(result["outages"], params["expected_seconds"]), **result)
    waiting_for = [host for host in params["hosts"] if host not in before]
    if not groups or not waiting_for:
        return
    result["waiting"], result["health_answered"] = wait_for_other_hosts(
        params["health_url"], params["master_key"], groups, before, waiting_for, params["health_timeout"])
    if result["waiting"] or not result["health_answered"]:
        result["drained"] = before
        module.exit_json(msg="the gateway sees no other healthy host in routing for %s: nothing drained"
                         % (", ".join(result["waiting"]) or "the model groups (its /health did not answer)"), **result)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            hosts=dict(type="list", elements="str", required=True),
            state=dict(type="str", choices=["drained", "routed"], default="drained"),
            state_dir=dict(type="path", default="/var/lib/inferops-gateway"),
            by=dict(type="str", default="inferops.serving"),
            allow_outage=dict(type="bool", default=False),
            expected_seconds=dict(type="int"),
            health_url=dict(type="str"),
            master_key=dict(type="str", no_log=True),
            health_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    params = module.params
    state_dir = params["state_dir"]
    state_path, routing_path = os.path.join(state_dir, STATE_FILE), os.path.join(state_dir, ROUTING_FILE)
    result = dict(changed=False, drained={}, previously_drained={}, groups={}, outages=[], waiting=[],
                  health_answered=None)
    routing_text = read_text(routing_path)
    if routing_text is None:
        result["msg"] = "%s: the gateway is not configured yet (it routes nothing): nothing to drain" % routing_path
        module.exit_json(**result)
    try:
        groups = parse_routing(routing_text, routing_path)
    except DrainError as exc:
        module.fail_json(msg=str(exc), **result)
    result["groups"] = groups
    if params["state"] == "drained" and params["health_url"] and not params["allow_outage"]:
        _wait_healthy(module, params, groups, result, os.path.join(state_dir, STATE_FILE))
    lock = None
    try:
        if not module.check_mode:
            lock = open(os.path.join(state_dir, ".drained.lock"), "a", encoding="utf-8")
            fcntl.flock(lock, fcntl.LOCK_EX)
        before_text = read_text(state_path)
        before = parse_state(before_text, state_path)
        result["previously_drained"] = before
        if params["state"] == "drained":
            result["outages"] = outages(groups, before, params["hosts"])
            if result["outages"] and not params["allow_outage"]:
                result["drained"] = before
                module.fail_json(msg=outage_message(result["outages"], params["expected_seconds"]), **result)
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            after = updated(before, drain=params["hosts"], by=params["by"], now=now)
        else:
            after = updated(before, undrain=params["hosts"])
        result["drained"] = after
        result["changed"] = after != before
        if result["changed"]:
            if module._diff:
                result["diff"] = dict(before=before_text or "", after=state_text(after),
                                      before_header=state_path, after_header=state_path)
            if not module.check_mode:
                # 0644: read by the proxy's own user.
                _host_files.atomic_write(state_path, state_text(after).encode("utf-8"), 0o644)
    except DrainError as exc:
        module.fail_json(msg=str(exc), **result)
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (state_path, exc), exception=traceback.format_exc(), **result)
    finally:
        if lock is not None:
            lock.close()
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
