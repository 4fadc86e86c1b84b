#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: inventory_entry
short_description: Merge one entry into an inventory variables file under a lock (image lock, known-bad list)
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Reads the YAML variables file O(path), merges one entry and writes it back in one step while
    holding an exclusive lock, so several canaries (or several runs of C(playbooks/pin.yml))
    writing to the same file each keep their entry. Run it on the controller, with
    C(delegate_to) set to C(localhost).
  - With O(key), the entry is deep-merged into C(<variable>.<section>[key]) (a mapping, e.g. the
    image lock's C(images)); nested mappings merge key by key, a V(null) removes a key.
  - With O(match), C(<variable>[.<section>]) is a list and the item whose O(match) field equals the
    entry's is replaced (else the entry is appended), e.g. the known-bad list matched on C(digest).
  - Every other variable and key of the file is kept. A missing file, and its missing parent
    directories (for example C(group_vars/all/)), are created.
  - The lock is C(fcntl.flock) on the sidecar file C(.<file name>.lock) beside O(path) (a dotfile,
    which Ansible's vars loader ignores); the file is written to a temporary dotfile in the same
    directory and renamed over O(path).
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the whole file before and after.
  idempotent:
    support: full
options:
  path:
    description: The inventory variables file, e.g. C(inventories/prod/group_vars/all/image_lock.yml).
    type: path
    required: true
  variable:
    description: The top-level variable that holds the entries, e.g. C(inferops_serving_image_lock).
    type: str
    required: true
  section:
    description: The key inside O(variable) that holds the entries, e.g. C(images); omit when the variable itself does.
    type: str
  key:
    description: The entry's key in a mapping of entries, e.g. C(vllm/vllm-openai:cu130-nightly). Exclusive with O(match).
    type: str
  match:
    description: In a list of entries, the field that identifies an entry, e.g. C(digest). Exclusive with O(key).
    type: str
  entry:
    description: The entry to merge.
    type: dict
    required: true
  header:
    description:
      - Comment written at the top of the file (each line gets C(# )). When omitted, the file's
        existing leading comment is kept.
    type: str
  mode:
    description: The file's mode.
    type: raw
    default: "0644"
  lock_timeout:
    description: Seconds to wait for the lock before failing.
    type: int
    default: 60
requirements:
  - PyYAML (on the controller, where Ansible already has it)
notes:
  - The YAML is rewritten from data; comments other than the leading header are not kept.
"""

EXAMPLES = r"""
- name: Record the validated digest in the inventory's lock
  inferops.serving.inventory_entry:
    path: "{{ inventory_dir }}/group_vars/all/image_lock.yml"
    variable: inferops_serving_image_lock
    section: images
    key: "{{ __pin_image }}"
    entry: "{{ __pin_entry }}"
    header: |
      Written by playbooks/pin.yml: digests validated on a canary. Edit by re-running pin.yml.
  delegate_to: localhost
  become: false

- name: Record the failing digest in the known-bad list
  inferops.serving.inventory_entry:
    path: "{{ inventory_dir }}/group_vars/all/known_bad_images.yml"
    variable: inferops_known_bad_images
    match: digest
    entry: "{{ __pin_known_bad_entry }}"
  delegate_to: localhost
  become: false
"""

RETURN = r"""
entry:
  description: The entry as the file holds it after the merge.
  returned: success
  type: dict
  sample: {digest: "sha256:3dbe...", engine_version: 0.19.2rc1.dev134}
path:
  description: The file written (or that would be, in check mode).
  returned: success
  type: str
"""

import errno
import fcntl
import os
import time
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.inferops.serving.plugins.module_utils import _host_files
from ansible_collections.inferops.serving.plugins.module_utils._inventory_file import (
    InventoryFileError,
    header_of,
    merge,
    render,
)

try:
    import yaml
except ImportError:  # pragma: no cover - Ansible's controller always has PyYAML
    yaml = None
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None

    class IndentedDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """yaml's SafeDumper with a mapping's sequences indented (``key:\n  - item``), as yamllint's
        default ``indentation`` rule and ansible-lint's production profile want an inventory file."""

        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)


def dump_indented(data, **kwargs):
    """yaml.safe_dump of ``data`` with :class:`IndentedDumper`."""
    return yaml.dump(data, Dumper=IndentedDumper, **kwargs)


def lock_path(path):
    """The sidecar lock file: ``.<name>.lock`` beside ``path`` (the vars loader skips dotfiles)."""
    return os.path.join(os.path.dirname(path), ".%s.lock" % os.path.basename(path))


class _Lock:
    """An exclusive ``flock`` on ``lock_path(path)``, waited for up to ``timeout`` seconds."""

    def __init__(self, path, timeout):
        self.path, self.timeout, self.fd = lock_path(path), timeout, None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(self.fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    raise TimeoutError("another process held the lock %s for more than %d s (lock_timeout)"
                                       % (self.path, self.timeout)) from None
                time.sleep(0.05)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _mode(module, value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value), 8)
    except ValueError:
        module.fail_json(msg="mode: got %r; expected an octal mode such as '0644'" % (value,))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            variable=dict(type="str", required=True),
            section=dict(type="str"),
            key=dict(type="str", no_log=False),
            match=dict(type="str"),
            entry=dict(type="dict", required=True),
            header=dict(type="str"),
            mode=dict(type="raw", default="0644"),
            lock_timeout=dict(type="int", default=60),
        ),
        mutually_exclusive=[("key", "match")],
        required_one_of=[("key", "match")],
        supports_check_mode=True,
    )
    if yaml is None:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    params = module.params
    path = params["path"]
    mode = _mode(module, params["mode"])
    directory = os.path.dirname(path) or "."
    if os.path.isdir(path):
        module.fail_json(msg="path %s is a directory; expected a YAML variables file in it" % path)
    if not module.check_mode and not os.path.isdir(directory):
        try:
            os.makedirs(directory)
            os.chmod(directory, 0o755)
        except OSError as exc:
            module.fail_json(msg="cannot create the directory %s for %s: %s" % (directory, path, exc))

    def step():
        text = _read(path)
        try:
            data = yaml.safe_load(text) if text else None
        except yaml.YAMLError as exc:
            module.fail_json(msg="%s is not valid YAML (%s); fix or move it, then run again"
                                 % (path, str(exc).replace("\n", " ")))
        try:
            new, entry = merge(data, params["variable"], params["entry"], key=params["key"],
                               section=params["section"], match=params["match"])
        except InventoryFileError as exc:
            module.fail_json(msg="cannot merge the entry into %s: %s" % (path, exc))
        header = params["header"] if params["header"] is not None else header_of(text)
        after = render(new, header, dump_indented)
        changed = (data or {}) != new or text is None
        if changed and not module.check_mode:
            _host_files.atomic_write(path, after.encode("utf-8"), mode)
        return dict(changed=changed, entry=entry, path=path,
                    diff=dict(before=text or "", after=after if changed else (text or ""),
                              before_header=path, after_header=path))

    try:
        if module.check_mode:  # reads only; no lock file is created
            result = step()
        else:
            with _Lock(path, params["lock_timeout"]):
                result = step()
    except OSError as exc:
        module.fail_json(msg="cannot update %s: %s" % (path, exc), exception=traceback.format_exc())
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
