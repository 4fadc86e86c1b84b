#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: host_files
short_description: Keep a set of small files and directories on a host, in one round trip
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Ensures each entry of O(files), in order, is a directory, a file with the given content, or
    absent, with its mode and owner. A file is replaced atomically (a temporary file in the same
    directory, then a rename) and only when its content, mode or owner differ.
  - One call for all of a role's small files (its directories, launch script, systemd units, the
    watchdog's program and configuration); a converge that changes nothing costs one module run
    where a copy or template task per file costs two or three.
  - A path of the wrong kind (a directory where a file is wanted, a symlink, a device) fails the
    task naming it before anything is written.
  - Not for secrets - the result lists paths and what changed, and O(files) (content included)
    is printed by C(-vvv); write secrets with a task of their own under C(no_log).
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written; the result says what would change.
  diff_mode:
    support: full
    details:
      - The diff shows each changed file's content before and after.
  idempotent:
    support: full
options:
  files:
    description:
      - The entries, applied in order (list a directory before the files in it).
      - C(path) (absolute), C(state) (V(file), V(directory) or V(absent); default V(file)),
        C(content) (a file's text), C(mode) (an octal string such as V('0644'); required unless
        absent), C(owner) and C(group) (names; default V(root)).
      - C(keep_existing) (a directory only; default V(true)) - an existing directory's mode and
        owner are left as found, so a shared directory (node_exporter's textfile directory, a model
        cache) keeps its other writers; V(false) gives them back to the entry's (a directory the
        role alone owns). A directory that is created always gets the entry's.
    type: list
    elements: dict
    required: true
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
- name: Write the role's files
  inferops.serving.host_files:
    files:
      - {path: /usr/local/lib/inferops-serving, state: directory, mode: "0755", keep_existing: false}
      - {path: /var/lib/node_exporter/textfile_collector, state: directory, mode: "0755"}
      - path: /usr/local/lib/inferops-serving/inferops-serving.sh
        content: "{{ server_deployment.script }}"
        mode: "0755"
      - {path: /etc/inferops-serving/inferops-serving.env, state: absent}
  register: files

- name: Reload systemd when a unit changed
  ansible.builtin.systemd_service:
    daemon_reload: true
  when: "'/etc/systemd/system/inferops-serving@.service' in files.changed_paths"
"""

RETURN = r"""
changed_paths:
  description: The paths that were (in check mode, would be) created, replaced, changed or removed.
  returned: success
  type: list
  elements: str
  sample: [/usr/local/lib/inferops-serving/inferops-serving.sh]
files:
  description: Each entry's C(path), C(action) (V(none), V(write), V(mkdir), V(remove), V(attributes)) and C(reasons).
  returned: success
  type: list
  elements: dict
  sample: [{path: /usr/local/lib/inferops-serving/inferops-serving.sh, action: write, reasons: [content]}]
"""

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.serving.plugins.module_utils._host_files import (
    FilesError,
    atomic_write,
    normalise,
    observe,
    plan_files,
)


def _ids(module, wanted):
    ids = {}
    for entry in wanted:
        key = (entry["owner"], entry["group"])
        if key in ids or entry["state"] == "absent":
            continue
        try:
            ids[key] = (pwd.getpwnam(entry["owner"]).pw_uid, grp.getgrnam(entry["group"]).gr_gid)
        except KeyError as exc:
            module.fail_json(msg="%s: no such user or group on this host (%s); set owner/group to existing names"
                             % (entry["path"], exc))
    return ids


def main():
    module = AnsibleModule(
        argument_spec=dict(files=dict(type="list", elements="dict", required=True)),
        supports_check_mode=True,
    )
    try:
        wanted = normalise(module.params["files"])
        ids = _ids(module, wanted)
        observed = {entry["path"]: observe(entry["path"], read_content=entry["state"] == "file") for entry in wanted}
        steps = plan_files(wanted, observed, ids)
    except FilesError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (exc.filename, exc.strerror))
    changed = [step["path"] for step in steps if step["action"] != "none"]
    diff = []
    by_path = {entry["path"]: entry for entry in wanted}
    for step in steps:
        entry = by_path[step["path"]]
        if module._diff and step["action"] in ("write", "remove") and entry["state"] != "directory":
            before = observed[step["path"]].get("content")
            diff.append({"before_header": step["path"], "after_header": step["path"],
                         "before": before.decode("utf-8", "replace") if before is not None else "",
                         "after": entry["content"] if entry["state"] == "file" else ""})
    if not module.check_mode:
        for step in steps:
            entry = by_path[step["path"]]
            path, action = step["path"], step["action"]
            try:
                if action == "mkdir":
                    os.makedirs(path, exist_ok=True)
                if action == "write":
                    uid, gid = ids[(entry["owner"], entry["group"])]
                    atomic_write(path, entry["content"].encode("utf-8"), entry["mode"], uid, gid)
                elif action in ("mkdir", "attributes"):
                    uid, gid = ids[(entry["owner"], entry["group"])]
                    os.chmod(path, entry["mode"])
                    os.chown(path, uid, gid)
                elif action == "remove":
                    os.unlink(path)
            except OSError as exc:
                module.fail_json(msg="%s: cannot %s it: %s (changed so far: %s)"
                                 % (path, action, exc.strerror, ", ".join(changed[:changed.index(path)]) or "nothing"),
                                 changed_paths=changed[:changed.index(path)], files=steps)
    result = dict(changed=bool(changed), changed_paths=changed, files=steps)
    if diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
