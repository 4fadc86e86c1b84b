#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: deployment_state
short_description: Read or record a host's last known-good deployment, healing a broken state file
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - The state file holds C({schema_version, last_known_good, history}) for one serving container;
    the server role records a deployment there once it was proven, and a rollback returns to it.
  - C(schema_version) is the file's layout (1). A file without one (written before the layout had a
    version) is read as layout 1 and gets the version at its next record. A file of a later layout
    fails the task, naming the file and the fix, and is neither moved nor rewritten (it fails closed,
    no rollback from a state this module cannot read).
  - O(state=read) returns the last known-good deployment and the history. A missing or empty file
    means no last known-good. A file that is not valid JSON (or not the expected shape) also means
    no last known-good, with a warning naming the file; it is kept aside as
    C(<path>.corrupt-<UTC time>) so the next record writes a clean file. It never fails on a bad
    file's content (but for a later layout, above).
  - O(state=record) makes O(entry) the last known-good and prepends it to the history, keeping at
    most O(history) entries. It changes the file only when the entry's C(spec_sha256) differs from
    the current last known-good's, or when the same deployment was proven for a new container start
    (its C(started_at) differs; the last known-good and the newest history entry are then replaced,
    the history does not grow). The file is written atomically (a temporary file in the same
    directory, then a rename), mode C(0644); a missing parent directory is created with mode
    C(0755).
  - The values of every C(env) mapping in the returned entries are replaced by C(<hidden>) unless
    O(reveal_env=true), so the result can be printed. O(entry) is never returned.
  - With O(container), the same run also reads that container from the Docker daemon
    (O(docker_host), the Docker Engine API's inspect) and returns it as RV(exists) and
    RV(container), as M(community.docker.docker_container_info) does. The host's current
    container and its proven deployments are one read. The container's environment
    (C(Config.Env)) is left out unless O(reveal_env=true), for its secrets come from the env file.
  - With O(secrets_key), it returns RV(secrets_digest), an HMAC-SHA256 of O(secrets) (the files the
    container reads at its start, as the converge is about to write them) keyed with a host-local
    key, the file O(secrets_key) (64 hex characters, mode C(0600), generated once when it does not
    exist). The key never leaves the host and no secret is returned. The server role labels the
    container with the digest, so a changed secret replaces the container (Docker reads the env
    file only when it creates one). A key that cannot be read or written, is not C(0600), is not
    the running user's or is malformed fails the module (it never calls the secrets unchanged).
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
  - inferops.serving._docker.TIMEOUT
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written or moved; the result says what would change.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  path:
    description: The state file, e.g. C(/var/lib/inferops-serving/inferops-serving.json).
    type: path
    required: true
  state:
    description:
      - V(read) returns the recorded deployments; V(record) records O(entry).
    type: str
    choices: [read, record]
    default: read
  entry:
    description:
      - The deployment to record (O(state=record)); it must have a C(spec_sha256) string.
      - Typically C(profile), C(spec), C(image), C(digest), C(argv_sha256), C(spec_sha256),
        C(engine_version), C(validated_at) and C(evidence). Never put secrets in it.
    type: dict
  history:
    description: How many deployments the history keeps (O(state=record)).
    type: int
    default: 5
  reveal_env:
    description:
      - Return the entries with their C(env) values (for a rollback that redeploys them), and
        the container's C(Config.Env). Use C(no_log) on that task.
    type: bool
    default: false
  secrets:
    description:
      - The secret files the container reads at its start, a mapping of each path to its content
        (the server role's env file and secret files). Only their keyed digest is returned,
        RV(secrets_digest); the values are never returned or logged. Requires O(secrets_key).
    type: dict
  secrets_key:
    description:
      - The host-local key of RV(secrets_digest), e.g. C(/var/lib/inferops-serving/secrets-hmac.key);
        created (mode C(0600)) when it does not exist, except in check mode (the digest is then
        made with a throw-away key, so it matches no container).
    type: path
  container:
    description:
      - A container to read as well (its name or ID), e.g. the serving container of the
        deployment. Unset, no Docker daemon is asked.
    type: str
notes:
  - With C(-vvv) Ansible prints module arguments, O(entry) included; an entry holds the resolved
    profile and launch spec, never a secret (secrets travel only in the 0600 env file).
seealso:
  - module: inferops.serving.container_swap
"""

EXAMPLES = r"""
- name: Read the host's deployment state
  inferops.serving.deployment_state:
    path: /var/lib/inferops-serving/inferops-serving.json
  register: __server_state

- name: Read the serving container and the deployments the host proved, in one read
  inferops.serving.deployment_state:
    path: /var/lib/inferops-serving/inferops-serving.json
    container: inferops-serving
  register: __server_current

- name: The same read, with the keyed digest of the secrets the container is to read
  inferops.serving.deployment_state:
    path: /var/lib/inferops-serving/inferops-serving.json
    container: inferops-serving
    secrets:
      /etc/inferops-serving/inferops-serving.env: "{{ env_file_text }}"
    secrets_key: /var/lib/inferops-serving/secrets-hmac.key
  register: __server_current

- name: Record the deployment that was just proven
  inferops.serving.deployment_state:
    path: /var/lib/inferops-serving/inferops-serving.json
    state: record
    entry:
      spec_sha256: "{{ server_deployment.spec_sha256 }}"
      spec: "{{ server_deployment.spec }}"
      profile: "{{ server_deployment.profile }}"
      validated_at: "{{ now(utc=true, fmt='%Y-%m-%dT%H:%M:%SZ') }}"
    history: 5

- name: Read the deployment to roll back to, env values included
  inferops.serving.deployment_state:
    path: /var/lib/inferops-serving/inferops-serving.json
    reveal_env: true
  register: __server_rollback_state
  no_log: true
"""

RETURN = r"""
last_known_good:
  description:
    - The last known-good deployment (O(state=read)), or after the record (O(state=record));
      C({}) when there is none. C(env) values are C(<hidden>) unless O(reveal_env=true).
  returned: success
  type: dict
  sample: {spec_sha256: 3f1c..., image: "vllm/vllm-openai@sha256:3dbe...", validated_at: "2026-11-30T10:00:00Z"}
history:
  description: The recorded deployments, newest first (C(history[0]) is the last known-good).
  returned: success
  type: list
  elements: dict
spec_sha256:
  description: The last known-good's C(spec_sha256), or V(null) when there is none.
  returned: success
  type: str
  sample: 3f1c9a...
warning:
  description: Why the file was not usable, naming it, or V(null). Also emitted as a warning.
  returned: success
  type: str
  sample: >-
    /var/lib/inferops-serving/inferops-serving.json is not valid JSON (Expecting value: line 1 column 1 (char 0));
    treated as no last known-good and kept aside as /var/lib/inferops-serving/inferops-serving.json.corrupt-20261130T100000Z
corrupt_copy:
  description: Where the unusable file was kept aside (or would be, in check mode), or V(null).
  returned: success
  type: str
secrets_digest:
  description:
    - HMAC-SHA256 (hex) of O(secrets) with the host key O(secrets_key); V(null) when O(secrets) is
      empty. Never the secret, nor a plain hash of it.
  returned: when O(secrets_key) is set
  type: str
  sample: 9c1f...e2
secrets_key_state:
  description:
    - V(existing), V(created) (this run generated the key), V(missing) (check mode, no key yet) or
      V(unused) (no secret).
  returned: when O(secrets_key) is set
  type: str
  sample: existing
exists:
  description: Whether O(container) exists.
  returned: when O(container) is set
  type: bool
  sample: true
container:
  description:
    - The Docker Engine API's inspect of O(container) (as C(docker inspect) prints it), without
      C(Config.Env) unless O(reveal_env=true); V(null) when it does not exist.
  returned: when O(container) is set
  type: dict
  sample: {Id: 4c2b..., Config: {Image: "vllm/vllm-openai@sha256:3dbe...", Labels: {}}, State: {Running: true}}
"""

import datetime
import os
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils import _host_files, _secrets_digest, _state_file
from ansible_collections.inferops.serving.plugins.module_utils._docker_api import (
    DOCKER_COMMON_ARGS, DOCKER_TIMEOUT_ARGS, DockerClient, DockerError, find_container)


def _read(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def read_container(client, name, reveal_env=False):
    """``{"exists", "container"}`` of container ``name`` as docker_container_info returns them; the
    container's environment (``Config.Env``) left out unless ``reveal_env``."""
    info = find_container(client, name)
    if info is None:
        return {"exists": False, "container": None}
    if not reveal_env and isinstance(info.get("Config"), dict) and "Env" in info["Config"]:
        info["Config"] = dict((key, value) for key, value in info["Config"].items() if key != "Env")
    return {"exists": True, "container": info}


def _write(path, text):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory)
        os.chmod(directory, 0o755)
    _host_files.atomic_write(path, text.encode("utf-8"), 0o644)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["read", "record"], default="read"),
            entry=dict(type="dict"),
            history=dict(type="int", default=_state_file.DEFAULT_HISTORY),
            reveal_env=dict(type="bool", default=False),
            container=dict(type="str"),
            secrets=dict(type="dict", no_log=True),
            secrets_key=dict(type="path", no_log=False),
            **dict(DOCKER_COMMON_ARGS, **DOCKER_TIMEOUT_ARGS)
        ),
        required_if=[("state", "record", ("entry",))],
        required_by={"secrets": ("secrets_key",)},
        supports_check_mode=True,
    )
    path = module.params["path"]
    if os.path.isdir(path):
        module.fail_json(msg="path %s is a directory; expected the state file (e.g. %s/<container>.json)"
                             % (path, path.rstrip("/")))
    try:
        data = _read(path)
    except OSError as exc:
        module.fail_json(msg="cannot read the state file %s: %s" % (path, exc), exception=traceback.format_exc())
    try:
        state, problem = _state_file.parse(data)
    except _state_file.StateVersionError as exc:
        # Fail closed: neither kept aside nor rewritten, so no rollback starts from a state this
        # code cannot read and the newer release's history is kept.
        module.fail_json(msg="the state file %s was written by a later inferops.serving (%s): it is not read, moved "
                             "or rewritten, so there is no rollback from it. Run this host with the release that "
                             "wrote it (install that inferops.serving on the controller), or, to start a new history "
                             "of this host's deployments, move the file aside (mv %s %s.schema-%s) and run again."
                             % (path, exc, path, path, exc.version))
    result = dict(changed=False, warning=None, corrupt_copy=None)
    if problem:
        aside = _state_file.corrupt_path(path, datetime.datetime.now(datetime.timezone.utc))
        result["corrupt_copy"] = aside
        result["warning"] = ("%s is %s; treated as no last known-good and %s %s"
                             % (path, problem, "would be kept aside as" if module.check_mode else "kept aside as",
                                aside))
        module.warn(result["warning"])
        if not module.check_mode:
            try:
                os.replace(path, aside)
            except OSError as exc:
                module.fail_json(msg="cannot move the unusable state file %s aside to %s: %s" % (path, aside, exc),
                                 exception=traceback.format_exc())
        result["changed"] = True

    if module.params["state"] == "record":
        try:
            state, changed = _state_file.record(state, module.params["entry"], module.params["history"])
        except _state_file.StateError as exc:
            module.fail_json(msg="deployment_state: %s" % exc, **result)
        if changed and not module.check_mode:
            try:
                _write(path, _state_file.dump(state))
            except OSError as exc:
                module.fail_json(msg="cannot write the state file %s: %s" % (path, exc),
                                 exception=traceback.format_exc(), **result)
        result["changed"] = result["changed"] or changed

    view = state if module.params["reveal_env"] else _state_file.hide_env(state)
    result["last_known_good"] = view.get("last_known_good") or {}
    result["history"] = view.get("history") or []
    result["spec_sha256"] = result["last_known_good"].get("spec_sha256")
    if module.params["secrets_key"]:
        try:
            digest, key_state = _secrets_digest.host_digest(module.params["secrets_key"], module.params["secrets"] or {},
                                                            check_mode=module.check_mode)
        except (_secrets_digest.DigestKeyError, TypeError) as exc:
            module.fail_json(msg="deployment_state: cannot decide whether the container was created with "
                                 "today's secrets: %s" % exc, **result)
        result["secrets_digest"] = digest
        result["secrets_key_state"] = key_state
        result["changed"] = result["changed"] or key_state == "created"
    if module.params["container"]:
        try:
            client = DockerClient(module.params["docker_host"], timeout=module.params["docker_timeout"])
            result.update(read_container(client, module.params["container"], module.params["reveal_env"]))
        except DockerError as exc:
            module.fail_json(msg="cannot read the container %s: %s" % (module.params["container"], exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
