#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: container_swap
short_description: Replace a running container with one created beforehand, in the shortest outage
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Swaps the container O(name) for the container O(staged), which was created (not started)
    while O(name) still served, for example with C(community.docker.docker_container) and
    C(state=present). Creating a container is the slow part of a replacement (seconds, on some
    storage drivers); this module leaves only the stop and the start in the outage.
  - "In one call, through the Docker Engine API: stop O(name) if it runs, start O(staged), remove
    O(name), rename O(staged) to O(name). The outage is the stop and the start; removing and
    renaming happen while the new container is already starting."
  - When O(staged) does not start (Docker refuses it, for example a missing device driver),
    O(staged) is removed, O(name) is started again if it was running, and the module fails with
    Docker's answer.
  - When O(staged) does not exist there is nothing to swap and nothing changes.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
  - inferops.serving._docker.TIMEOUT
attributes:
  check_mode:
    support: full
    details:
      - Returns the steps it would take in RV(actions).
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - After a swap O(staged) no longer exists, so a second run changes nothing.
options:
  name:
    description: The container being replaced, and the name the staged container takes.
    type: str
    required: true
  staged:
    description: The replacement, created and not started.
    type: str
    required: true
  stop_timeout:
    description:
      - Seconds O(name) gets to exit after C(SIGTERM) before it is killed.
      - When not set, the container's own stop timeout (C(docker create --stop-timeout), else 10).
      - The call that stops O(name) may take this much longer than O(docker_timeout).
    type: int
notes:
  - Containers that hold a port or GPU memory can not run side by side, which is why the old one
    is stopped before the new one starts rather than after.
seealso:
  - module: community.docker.docker_container
  - name: Docker Engine API, containers
    description: The start, stop, delete and rename endpoints.
    link: https://docs.docker.com/reference/api/engine/version/v1.43/#tag/Container
"""

EXAMPLES = r"""
- name: Create the replacement while the old server still serves
  community.docker.docker_container:
    name: inferops-serving-next
    image: vllm/vllm-openai@sha256:9915714d78c81c6eebc5f1be31510911d81b999eb04a862a02a40b36ccd51e9d
    command: [--model, nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4]
    state: present

- name: Swap it in
  inferops.serving.container_swap:
    name: inferops-serving
    staged: inferops-serving-next
    stop_timeout: 30
  register: swap
"""

RETURN = r"""
actions:
  description: The steps taken (in check mode, the steps it would take), in order.
  returned: always
  type: list
  elements: str
  sample: [stop inferops-serving, start inferops-serving-next, remove inferops-serving, rename inferops-serving-next to inferops-serving]
replaced:
  description: The container that was replaced, V(null) when there was none.
  returned: always
  type: dict
  contains:
    id:
      description: Its ID.
      type: str
    image:
      description: Its image.
      type: str
  sample: {id: 1f3c0d7a..., image: "sha256:42e5e9b2..."}
container:
  description: The ID of the container now called O(name), V(null) when nothing was swapped (or in check mode).
  returned: always
  type: str
  sample: 8b21e0c4...
timings:
  description: Seconds each step took; C(outage) is stop plus start, the part of the outage this module is responsible for.
  returned: changed and not in check mode
  type: dict
  sample: {stop: 0.41, start: 0.12, remove: 0.37, rename: 0.03, outage: 0.53}
"""

import time
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils._docker_api import (
    DOCKER_COMMON_ARGS, DOCKER_TIMEOUT_ARGS, DockerClient, DockerError, find_container)


def plan_swap(name, staged, current, replacement):
    """The steps swapping ``replacement`` in for ``current`` (container inspect dicts, or None).

    Returns a list of ``(action, container[, new_name])`` tuples: stop the current container if
    it runs, start the replacement unless it runs already, remove the current one, rename.
    Nothing to do without a replacement.
    """
    if replacement is None:
        return []
    steps = []
    if current is not None and current.get("State", {}).get("Running"):
        steps.append(("stop", name))
    if not replacement.get("State", {}).get("Running"):
        steps.append(("start", staged))
    if current is not None:
        steps.append(("remove", name))
    steps.append(("rename", staged, name))
    return steps


def describe(step):
    """``stop inferops-serving``, ``rename a to b``."""
    return "%s %s" % (step[0], step[1]) + (" to %s" % step[2] if len(step) > 2 else "")


def run_steps(client, steps, stop_timeout, clock=time.time):
    """Carry out ``steps``; returns the seconds each took. A failed start is undone (see module doc)."""
    timings = {}
    stopped = []
    for step in steps:
        action, container = step[0], step[1]
        started = clock()
        if action == "stop":
            client.stop(container, stop_timeout)
            stopped.append(container)
        elif action == "start":
            try:
                client.start(container)
            except DockerError as exc:
                raise DockerError(str(exc) + undo_start(client, container, stopped), exc.status)
        elif action == "remove":
            client.remove(container)
        else:
            client.rename(container, step[2])
        timings[action] = round(clock() - started, 3)
    timings["outage"] = round(timings.get("stop", 0.0) + timings.get("start", 0.0), 3)
    return timings


def undo_start(client, staged, stopped):
    """Remove the replacement that did not start and restart what was stopped; the sentence saying so."""
    notes = []
    try:
        client.remove(staged)
        notes.append("the replacement %s was removed" % staged)
    except DockerError as exc:
        notes.append("removing the replacement failed too: %s" % exc)
    for container in stopped:
        try:
            client.start(container)
            notes.append("%s was started again" % container)
        except DockerError as exc:
            notes.append("%s could NOT be started again: %s" % (container, exc))
    return "; " + ", ".join(notes)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            staged=dict(type="str", required=True),
            stop_timeout=dict(type="int"),
            **dict(DOCKER_COMMON_ARGS, **DOCKER_TIMEOUT_ARGS)
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["name"] == params["staged"]:
        module.fail_json(msg="name and staged are both %r: the staged container needs a name of its own "
                             "(for example %s-next)" % (params["name"], params["name"]))
    if params["stop_timeout"] is not None and params["stop_timeout"] < 0:
        module.fail_json(msg="stop_timeout must be 0 or more seconds, not %d" % params["stop_timeout"])
    if params["docker_timeout"] < 1:
        module.fail_json(msg="docker_timeout must be 1 or more seconds, not %d" % params["docker_timeout"])
    client = DockerClient(params["docker_host"], timeout=float(params["docker_timeout"]))
    try:
        current = find_container(client, params["name"])
        replacement = find_container(client, params["staged"])
    except DockerError as exc:
        module.fail_json(msg=str(exc), exception=traceback.format_exc())

    steps = plan_swap(params["name"], params["staged"], current, replacement)
    result = dict(
        changed=bool(steps), actions=[describe(step) for step in steps], container=None,
        replaced=dict(id=current["Id"], image=current.get("Image")) if steps and current else None)
    if not steps:
        result["msg"] = "no staged container %s: nothing to swap" % params["staged"]
        module.exit_json(**result)
    if module.check_mode:
        module.exit_json(**result)
    stop_timeout = params["stop_timeout"]
    if stop_timeout is None:
        stop_timeout = (current or {}).get("Config", {}).get("StopTimeout") or 10
    try:
        result["timings"] = run_steps(client, steps, stop_timeout)
    except DockerError as exc:
        module.fail_json(msg="swapping %s for %s failed: %s" % (params["name"], params["staged"], exc),
                         exception=traceback.format_exc(), **result)
    result["container"] = replacement["Id"]
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
