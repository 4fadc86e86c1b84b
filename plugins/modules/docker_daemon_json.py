#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: docker_daemon_json
short_description: Merge settings into Docker's daemon.json, keeping every other key
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Deep-merges O(settings) into the Docker daemon configuration file O(path). Objects are
    merged key by key at every depth, so a new entry under C(runtimes) leaves the other
    runtimes alone. Any other value replaces the current one. Keys the mapping does not
    name are never touched.
  - A V(null) value removes that key.
  - Creates the file (and its directory) when it is missing.
  - When O(path) is a symbolic link, the file it points to is updated and the link is kept.
  - Refuses, with a message and without touching the file, a file that is not UTF-8, not valid
    JSON, nested absurdly deep, or that holds NaN, Infinity or a number out of float range
    (dockerd rejects all of these too); numbers Docker accepts are written back as numbers.
  - Does not restart Docker; notify a handler on RV(ignore:changed).
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the whole file before and after, as JSON.
  idempotent:
    support: full
options:
  path:
    description: The daemon configuration file.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description:
      - The mapping merged into the file.
    type: dict
    required: true
  backup:
    description:
      - Keep a timestamped copy of the file before changing it.
    type: bool
    default: false
notes:
  - The file is replaced atomically and keeps its owner and mode; a new file gets mode C(0644)
    whatever the umask.
seealso:
  - name: Docker daemon configuration file
    description: The keys C(dockerd) reads from C(daemon.json).
    link: https://docs.docker.com/reference/cli/dockerd/#daemon-configuration-file
  - module: community.docker.docker_host_info
"""

EXAMPLES = r"""
- name: Register the NVIDIA runtime, keeping the other settings
  inferops.serving.docker_daemon_json:
    settings:
      runtimes:
        nvidia:
          path: nvidia-container-runtime
          args: []
    backup: true
  notify: Restart Docker

- name: Stop making nvidia the default runtime
  inferops.serving.docker_daemon_json:
    settings:
      default-runtime: null
"""

RETURN = r"""
settings:
  description: The whole configuration after the merge (what the file holds, or would hold in check mode).
  returned: success
  type: dict
  sample:
    storage-driver: overlay2
    runtimes:
      nvidia:
        path: nvidia-container-runtime
        args: []
target:
  description: The file written when O(path) is a symbolic link (the link's target); else O(path).
  returned: success
  type: str
  sample: /etc/docker/daemon.json
backup_file:
  description: The copy made before the change.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/docker/daemon.json.12345.2026-06-09@10:00:00~
"""

import os
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils._daemon_json import (
    DaemonJsonError,
    dump,
    merge_text,
)


def _write(module, path, text):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    new = not os.path.exists(path)
    fd, tmp = tempfile.mkstemp(prefix=".daemon.json.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        module.atomic_move(tmp, path)
        if new:
            # atomic_move gives a new file the umask's mode; dockerd's file is world-readable.
            os.chmod(path, 0o644)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict", required=True),
            backup=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    # A symlinked daemon.json (configuration management, a shared mount) keeps its link: the
    # file it points to is the one read and written.
    path = os.path.realpath(module.params["path"])
    exists = os.path.exists(path)
    try:
        data = b""
        if exists:
            with open(path, "rb") as handle:
                data = handle.read()
        before, after, changed = merge_text(data, module.params["settings"])
        text = dump(after)
    except DaemonJsonError as exc:
        module.fail_json(msg="%s is not a usable Docker daemon configuration (%s); fix or move it, "
                             "then run again" % (path, exc))
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (path, exc), exception=traceback.format_exc())

    result = dict(changed=changed, settings=after, target=path)
    if module._diff:
        result["diff"] = dict(before=dump(before) if exists else "", after=text,
                              before_header=path, after_header=path)
    if changed and not module.check_mode:
        if module.params["backup"] and exists:
            result["backup_file"] = module.backup_local(path)
        try:
            _write(module, path, text)
        except OSError as exc:
            module.fail_json(msg="cannot write %s: %s" % (path, exc), exception=traceback.format_exc())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
