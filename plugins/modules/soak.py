#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: soak
short_description: Hold an engine under sustained load and judge whether it survived
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Runs on the serving host. Keeps O(concurrency) chat completions in flight against the
    engine for O(minutes), each with a deadline, and reads the serving container's state from
    the Docker Engine API before and after (and the host-side watchdog's state file when given).
  - Fails when the engine died (the container stopped, or was restarted by Docker's restart
    policy or the watchdog), wedged (requests hung past their deadline), answered errors, or
    completed nothing; RV(kind) is the failure's signature (V(crash_under_soak),
    V(wedge_under_soak), V(errors_under_soak), V(no_progress)). C(playbooks/pin.yml) records a
    failing digest on the known-bad list with it.
  - Run it with C(async) and C(poll) so the operator sees the soak progress.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
attributes:
  check_mode:
    support: full
    details:
      - In check mode no request is sent; the result says the soak was skipped.
  diff_mode:
    support: none
  idempotent:
    support: N/A
    details:
      - It changes nothing on the host; it only loads the engine.
options:
  url:
    description: The engine's OpenAI chat completions URL (C(server_deployment.urls.chat)).
    type: str
    required: true
  model:
    description: The served model name (C(server_deployment.served_model_name)).
    type: str
    required: true
  api_key:
    description: The engine's API key, sent as a Bearer token when set (never returned or logged).
    type: str
  container:
    description: The serving container's name.
    type: str
    required: true
  minutes:
    description: How long to hold the load.
    type: float
    required: true
  concurrency:
    description: Requests in flight at once (the profile's concurrency, e.g. its max-num-seqs).
    type: int
    default: 8
  max_tokens:
    description: Tokens each request generates.
    type: int
    default: 64
  request_timeout:
    description: Seconds a request may take before it counts as hung.
    type: float
    default: 120
  watchdog_state:
    description: The host-side watchdog's state file, read after the soak as more evidence (optional).
    type: path
"""

EXAMPLES = r"""
- name: Soak the canary for 10 minutes at the profile's concurrency
  inferops.serving.soak:
    url: "{{ server_deployment.urls.chat }}"
    model: "{{ server_deployment.served_model_name }}"
    container: "{{ server_deployment.container }}"
    minutes: 10
    concurrency: 32
    watchdog_state: "{{ server_deployment.watchdog.state_file }}"
  async: 900
  poll: 15
"""

RETURN = r"""
kind:
  description: The failure's signature, or V(null) when the engine survived.
  returned: always
  type: str
  sample: crash_under_soak
stats:
  description: C(requests), C(ok), C(errors), C(timeouts), C(tokens), C(seconds), C(first_error).
  returned: always
  type: dict
evidence:
  description: The load's figures, the container's state before and after, the watchdog's verdict when it saw trouble.
  returned: always
  type: dict
"""

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.serving.plugins.module_utils._docker_api import DOCKER_COMMON_ARGS, DockerClient, DockerError, find_container
from ansible_collections.inferops.serving.plugins.module_utils._soak import soak_verdict


def _request(url, body, headers, timeout):
    """One completion: ``("ok", tokens)``, ``("timeout", why)`` or ``("error", why)``."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as answer:
            data = json.loads(answer.read().decode("utf-8"))
        return "ok", int((data.get("usage") or {}).get("completion_tokens") or 0)
    except (socket.timeout, TimeoutError):
        return "timeout", "no answer within %ss" % timeout
    except urllib.error.HTTPError as exc:
        return "error", "HTTP %s: %s" % (exc.code, exc.read()[:200].decode("utf-8", "replace"))
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (socket.timeout, TimeoutError)):
            return "timeout", "no answer within %ss" % timeout
        return "error", str(exc.reason)
    except (OSError, ValueError) as exc:
        return "error", str(exc)


def load(url, model, api_key, concurrency, seconds, max_tokens, timeout):
    """Keep ``concurrency`` requests in flight for ``seconds``; the counts."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    stats = {"requests": 0, "ok": 0, "errors": 0, "timeouts": 0, "tokens": 0, "first_error": None}
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def worker(index):
        n = 0
        while time.monotonic() < end:
            body = json.dumps({"model": model, "max_tokens": max_tokens, "temperature": 0.7,
                               "messages": [{"role": "user", "content": "Soak %d.%d: write a short story about a lighthouse." % (index, n)}]}).encode("utf-8")
            outcome, detail = _request(url, body, headers, timeout)
            n += 1
            with lock:
                stats["requests"] += 1
                if outcome == "ok":
                    stats["ok"] += 1
                    stats["tokens"] += detail
                else:
                    stats["errors" if outcome == "error" else "timeouts"] += 1
                    stats["first_error"] = stats["first_error"] or detail
            if outcome != "ok":
                time.sleep(1.0)

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + timeout + 30)
    stats["seconds"] = round(time.monotonic() - started, 1)
    return stats


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            model=dict(type="str", required=True),
            api_key=dict(type="str", no_log=True),
            container=dict(type="str", required=True),
            minutes=dict(type="float", required=True),
            concurrency=dict(type="int", default=8),
            max_tokens=dict(type="int", default=64, no_log=False),
            request_timeout=dict(type="float", default=120.0),
            watchdog_state=dict(type="path"),
            **DOCKER_COMMON_ARGS
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["minutes"] <= 0 or p["concurrency"] < 1 or p["max_tokens"] < 1 or p["request_timeout"] <= 0:
        module.fail_json(msg="soak: minutes and request_timeout must be > 0, concurrency and max_tokens >= 1 "
                             "(got minutes=%s, concurrency=%s, max_tokens=%s, request_timeout=%s)"
                             % (p["minutes"], p["concurrency"], p["max_tokens"], p["request_timeout"]))
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: no load sent", kind=None, stats={}, evidence={})
    client = DockerClient(p["docker_host"], timeout=30.0)
    try:
        before = find_container(client, p["container"]) or {}
        stats = load(p["url"], p["model"], p["api_key"], p["concurrency"], p["minutes"] * 60.0, p["max_tokens"],
                     p["request_timeout"])
        after = find_container(client, p["container"]) or {}
    except DockerError as exc:
        module.fail_json(msg="soak: cannot read container %s: %s" % (p["container"], exc))
    watchdog = None
    if p["watchdog_state"] and os.path.exists(p["watchdog_state"]):
        try:
            with open(p["watchdog_state"], encoding="utf-8") as handle:
                watchdog = json.load(handle)
        except (OSError, ValueError):
            watchdog = None
    verdict = soak_verdict(stats, before, after, watchdog)
    result = dict(changed=False, kind=verdict["kind"], stats=stats, evidence=verdict["evidence"], msg=verdict["message"])
    if not verdict["ok"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
