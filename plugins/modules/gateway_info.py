#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: gateway_info
short_description: Prove the gateway's LiteLLM proxy and read which deployments it routes to
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Runs on a gateway host of the C(inferops.serving.gateway) role, against the proxy on its
    loopback. In one call, with O(prove), it waits up to O(wait) seconds for C(/health/readiness) to
    answer 200, then checks that C(GET /v1/models) with the master key lists every name of
    O(expect) and that the same request without a key is refused with 401; then reads the
    proxy's deployments (C(GET /v1/model/info)) and the drain file, what
    P(inferops.serving.gateway_routing#filter) decides the routing from.
  - A proxy not ready within O(wait) is no failure of this call; RV(ready) is false and RV(msg)
    says what it answered last (the role retries the call, a line each O(wait) seconds, up to
    C(gateway_ready_timeout)). A proxy that answers but does not prove what O(prove) asks fails,
    naming each problem.
  - Without O(prove) (the role's C(status) entry point) it only reads; a proxy that does not
    answer is no failure, RV(model_info) carries the error for P(inferops.serving.gateway_routing#filter).
  - Of each deployment only its C(model_name) and C(model_info.inferops_host) are returned, never
    its C(litellm_params) (the engines' keys). The master key is never returned.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
  - inferops.serving._attributes.ACTIONGROUP_SERVING
options:
  url:
    description: The proxy's URL on the gateway host, without C(/v1) (the role's loopback URL).
    type: str
    required: true
  master_key:
    description: The proxy's master key (C(gateway_master_key)).
    type: str
    required: true
  prove:
    description: Wait for readiness and check the listed model groups and the refusal without a key.
    type: bool
    default: false
  expect:
    description: The model groups and aliases C(GET /v1/models) must list (with O(prove)).
    type: list
    elements: str
    default: []
  wait:
    description: Seconds this call waits for C(/health/readiness) to answer 200 (with O(prove)), asking every 2 s.
    type: int
    default: 20
  timeout:
    description: Seconds each request may take.
    type: int
    default: 30
  drain_file:
    description: The gateway's drain file (C(<gateway_state_dir>/drained.json)).
    type: path
    required: true
  service:
    description: The proxy's systemd unit, named in the messages (C(journalctl -u)).
    type: str
    default: inferops-gateway
seealso:
  - name: The gateway role
    description: roles/gateway/README.md.
    link: https://github.com/inferops/inferops.serving/blob/main/roles/gateway/README.md
"""

EXAMPLES = r"""
- name: Prove the gateway and read its routing
  inferops.serving.gateway_info:
    url: http://127.0.0.1:4000
    master_key: "{{ gateway_master_key }}"
    prove: true
    expect: [RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4, nemotron]
    drain_file: /var/lib/inferops-gateway/drained.json
  register: read
  until: read.ready
  retries: 9
  delay: 0

- name: Decide the gateway's routing
  ansible.builtin.set_fact:
    gateway_status: >-
      {{ read.model_info | inferops.serving.gateway_routing(inventory_hostname, 'http://gw-01:4000/v1',
         drained=read.drained) }}
"""

RETURN = r"""
ready:
  description: Whether C(/health/readiness) answered 200 within O(wait) (always true without O(prove)).
  returned: always
  type: bool
  sample: true
listed:
  description: The ids C(GET /v1/models) lists with the master key (with O(prove), once ready).
  returned: always
  type: list
  elements: str
  sample: [RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4, nemotron]
model_info:
  description:
    - The read of C(GET /v1/model/info) in the shape of a registered C(ansible.builtin.uri) result
      (C(status), C(msg), C(json)), each deployment reduced to C(model_name) and
      C(model_info.inferops_host); C(status) -1 when nothing answered. Not read while not ready.
  returned: always
  type: dict
  sample: {status: 200, msg: OK, json: {data: [{model_name: nemotron, model_info: {inferops_host: spark-1}}]}}
drained:
  description: The drain file's text; null when there is none.
  returned: always
  type: str
  sample: '{"hosts": {}}'
msg:
  description: What was proven, or why the proxy is not ready yet.
  returned: always
  type: str
  sample: http://127.0.0.1:4000/v1 serves RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4, nemotron
"""

import http.client
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils._bounded_http import bounded_request
from ansible_collections.inferops.serving.plugins.module_utils._drain import read_text
from ansible_collections.inferops.serving.plugins.module_utils._gateway_read import (
    deployments_read,
    error_message,
    listed_ids,
    parse_json,
    proof_problems,
    readiness_message,
)


def _get(url, key, timeout):
    """``(status, body, None)``, or ``(None, None, error)`` when nothing answered."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    try:
        status, body = bounded_request("GET", url, headers=headers, timeout=timeout)
        return status, body, None
    except (OSError, http.client.HTTPException, socket.timeout) as exc:
        return None, None, "%s: %s" % (type(exc).__name__, exc)


def _wait_ready(url, wait, timeout):
    """``(ready, what it answered last)``, asking every 2 s for ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        status, _body, error = _get(url + "/health/readiness", None, min(timeout, max(1.0, deadline - time.monotonic())))
        if status == 200:
            return True, "200"
        last = error if status is None else "HTTP %s" % status
        if time.monotonic() + 2 > deadline:
            return False, last
        time.sleep(2)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            master_key=dict(type="str", required=True, no_log=True),
            prove=dict(type="bool", default=False),
            expect=dict(type="list", elements="str", default=[]),
            wait=dict(type="int", default=20),
            timeout=dict(type="int", default=30),
            drain_file=dict(type="path", required=True),
            service=dict(type="str", default="inferops-gateway"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    url = params["url"].rstrip("/")
    if not url.startswith("http://"):
        module.fail_json(msg="url: %r is not an http:// URL; give the proxy's URL on the gateway host, "
                             "for example http://127.0.0.1:4000" % params["url"])
    for name in ("wait", "timeout"):
        if params[name] < 1:
            module.fail_json(msg="%s: %d is not a number of seconds; give 1 or more" % (name, params[name]))
    result = dict(changed=False, ready=True, listed=[], model_info={}, drained=None)
    key, timeout = params["master_key"], params["timeout"]
    if params["prove"]:
        ready, last = _wait_ready(url, params["wait"], timeout)
        if not ready:
            result["ready"] = False
            module.exit_json(msg=readiness_message(url, params["wait"], last, params["service"]), **result)
        models_status, body, error = _get(url + "/v1/models", key, timeout)
        answer = parse_json(body) if body is not None else None
        result["listed"] = listed_ids(answer) if models_status == 200 else []
        unauthenticated_status, _body, unauthenticated_error = _get(url + "/v1/models", None, timeout)
        problems = proof_problems(url, params["service"], params["expect"],
                                  models_status if models_status is not None else error, result["listed"],
                                  unauthenticated_status if unauthenticated_status is not None else unauthenticated_error,
                                  error_message(answer))
        if problems:
            module.fail_json(msg=" ".join(problems), **result)
        proven = "%s/v1 serves %s" % (url, ", ".join(result["listed"]))
    else:
        proven = "%s: deployments and drain file read" % url
    status, body, error = _get(url + "/v1/model/info", key, timeout)
    result["model_info"] = deployments_read(status, parse_json(body) if body is not None else None, error)
    try:
        result["drained"] = read_text(params["drain_file"])
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (params["drain_file"], exc), **result)
    module.exit_json(msg=proven, **result)


def main():
    run_module()


if __name__ == "__main__":
    main()
