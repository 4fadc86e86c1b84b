#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: container_log
short_description: Save the end of a container's log to a private file on its host
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Reads the last O(lines) lines of a container's log through the Docker Engine API (stdout and
    stderr in the order the container wrote them, every start the log still holds, as
    C(docker logs --tail) prints them) and writes them to O(dest), mode C(0600) (a log may quote
    requests), replacing the file atomically.
  - The server role keeps a failed deployment's log with it as evidence; M(inferops.serving.backend_assert)
    reads the failure's signature from the saved file (O(inferops.serving.backend_assert#module:log_path)).
  - Fails when the daemon cannot be reached or knows no such container; nothing is written then.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
  - inferops.serving._docker.TIMEOUT
attributes:
  check_mode:
    support: full
    details:
      - The log is read and nothing is written; C(changed) says whether O(dest) would change.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - A second run writes nothing while the log's last lines are the same.
options:
  container:
    description: The container's name or ID.
    type: str
    required: true
  dest:
    description:
      - The file to write. Its directory must exist. An existing file is replaced (mode C(0600),
        owned by the user the module runs as).
    type: path
    required: true
  lines:
    description: How many of the log's last lines to keep.
    type: int
    default: 1000
seealso:
  - module: inferops.serving.backend_assert
"""

EXAMPLES = r"""
- name: Keep the failed container's log
  inferops.serving.container_log:
    container: inferops-serving
    dest: /var/lib/inferops-serving/failed-inferops-serving-20261205T101500Z.log
    lines: 5000
    docker_timeout: 60
  register: saved
  failed_when: false

- name: Read the failure signature from the saved log
  inferops.serving.backend_assert:
    log_path: /var/lib/inferops-serving/failed-inferops-serving-20261205T101500Z.log
  when: saved.saved | default(false)
"""

RETURN = r"""
dest:
  description: The file written (or that would be, in check mode).
  returned: success
  type: str
saved:
  description: Whether O(dest) holds the log's lines now (false in check mode when it would change).
  returned: success
  type: bool
lines:
  description: How many lines the log gave (at most O(lines)).
  returned: success
  type: int
  sample: 5000
"""

import os
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils._docker_api import (
    DOCKER_COMMON_ARGS, DOCKER_TIMEOUT_ARGS, DockerClient, DockerError)


def log_text(lines):
    """The saved file's bytes: one line each, as ``docker logs`` prints them."""
    return "".join(line + "\n" for line in lines).encode("utf-8")


def write_private(dest, data):
    """Write ``data`` to ``dest`` with mode 0600: a temporary file beside it, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest) or ".", prefix=".%s." % os.path.basename(dest))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            dest=dict(type="path", required=True),
            lines=dict(type="int", default=1000),
            **dict(DOCKER_COMMON_ARGS, **DOCKER_TIMEOUT_ARGS)
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["lines"] < 1:
        module.fail_json(msg="lines must be 1 or more, not %d" % params["lines"])
    if params["docker_timeout"] < 1:
        module.fail_json(msg="docker_timeout must be 1 or more seconds, not %d" % params["docker_timeout"])
    dest = params["dest"]
    if os.path.isdir(dest):
        module.fail_json(msg="dest %s is a directory; name the file to write" % dest)
    try:
        client = DockerClient(params["docker_host"], timeout=float(params["docker_timeout"]))
        tty = bool((client.inspect(params["container"]).get("Config") or {}).get("Tty"))
        lines = client.log_tail(params["container"], params["lines"], tty=tty, timestamps=False)
    except DockerError as exc:
        hint = " (is the container created?)" if exc.status == 404 else ""
        module.fail_json(msg="%s%s" % (exc, hint), exception=traceback.format_exc())
    data = log_text(lines)
    try:
        with open(dest, "rb") as handle:
            same = handle.read() == data and (os.stat(dest).st_mode & 0o777) == 0o600
    except OSError:
        same = False
    result = dict(changed=not same, dest=dest, lines=len(lines), saved=same)
    if same or module.check_mode:
        module.exit_json(**result)
    try:
        write_private(dest, data)
    except OSError as exc:
        module.fail_json(msg="cannot write dest %s: %s" % (dest, exc), exception=traceback.format_exc(), **result)
    result["saved"] = True
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
