#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: toolkit_info
short_description: Read what the container_toolkit role still has to do on a host
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Reads, in one module run and without changing anything, the installed versions and dpkg
    selections of the toolkit packages, the apt repository file, the apt pin file, whether
    merging the nvidia runtime into C(daemon.json) would change it, whether Docker runs and
    is enabled, and the SHA-256 of the installed signing key; returns the role's steps that are
    not done yet, each with its reason.
  - The container_toolkit role runs only those steps, so a converge that changes nothing skips
    the package, repository and daemon tasks without running their modules.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
    details:
      - Read-only; it runs in check mode too.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  packages:
    description: The toolkit packages, all to be at O(version).
    type: list
    elements: str
    required: true
  version:
    description: The toolkit version the packages must have.
    type: str
    required: true
  hold:
    description: Whether the packages must be on hold (else on install).
    type: bool
    default: true
  manage_repository:
    description: Whether the role manages the apt repository (then O(repository) is compared).
    type: bool
    default: true
  repository_file:
    description: The deb822 C(.sources) file of the repository.
    type: path
    default: /etc/apt/sources.list.d/nvidia-container-toolkit.sources
  repository:
    description: The fields the repository file must have (C(Types), C(URIs), C(Suites), C(Architectures), C(Signed-By)).
    type: dict
    default: {}
  keyring:
    description:
      - The repository's signing key file. Its SHA-256 is returned as RV(keyring_sha256) when it is a
        regular file owned by root with mode C(0644), as the role installs it; the role skips the
        key's install when the downloaded key has that digest.
    type: path
  key_url:
    description:
      - The repository's signing key URL. When given, the key is downloaded here (a read, in check
        mode too) and returned as RV(key_content), so the role compares it with the installed key
        and checks its fingerprint without a task of its own; a download that fails fails the module,
        naming the URL, as does an answer larger than 1 MiB.
    type: str
    version_added: 0.1.0
  key_timeout:
    description: Seconds the key's download may take.
    type: int
    default: 30
    version_added: 0.1.0
  preferences_path:
    description: The apt pin file.
    type: path
    default: /etc/apt/preferences.d/nvidia-container-toolkit
  preferences:
    description: The pin file's text as the role renders it.
    type: str
    required: true
  prerequisites:
    description: Packages the role's modules need on the host (python3-debian, python3-requests).
    type: list
    elements: str
    default: []
  docker_packages:
    description: Packages any of which is a Docker engine.
    type: list
    elements: str
    default: [docker.io, docker-ce, docker-engine, moby-engine]
  docker_package:
    description: The Docker engine package the role installs when none is; empty when the role does not install one.
    type: str
    default: ""
  docker_service:
    description: The Docker service's systemd name.
    type: str
    default: docker
  daemon_json_path:
    description: Docker's daemon configuration file.
    type: path
    default: /etc/docker/daemon.json
  daemon_json_settings:
    description: The settings the role merges into O(daemon_json_path).
    type: dict
    default: {}
seealso:
  - module: inferops.serving.docker_daemon_json
"""

EXAMPLES = r"""
- name: Read what the toolkit role still has to do
  inferops.serving.toolkit_info:
    packages: [nvidia-container-toolkit, nvidia-container-toolkit-base, libnvidia-container-tools, libnvidia-container1]
    version: 1.17.8-1
    preferences: "{{ lookup('ansible.builtin.template', 'etc/apt/preferences.d/nvidia-container-toolkit.j2') }}"
    daemon_json_settings:
      runtimes: {nvidia: {path: nvidia-container-runtime, args: []}}
  register: toolkit

- name: Install the toolkit packages
  ansible.builtin.apt:
    name: nvidia-container-toolkit=1.17.8-1
  when: "'install' in toolkit.steps"
"""

RETURN = r"""
steps:
  description:
    - The role's steps not done yet, in order (V(prerequisites), V(key), V(repository), V(pin),
      V(install), V(hold), V(daemon_json), V(docker_install), V(docker_start)).
    - V(key) when the key downloaded from O(key_url) is not the installed O(keyring) (by its
      SHA-256, RV(keyring_sha256)), with O(manage_repository).
  returned: success
  type: list
  elements: str
  sample: [install, hold]
reasons:
  description: Why each step is needed.
  returned: success
  type: dict
  sample: {install: "want 1.18.0-1, have nvidia-container-toolkit 1.17.8-1"}
converged:
  description: Whether nothing is left to do.
  returned: success
  type: bool
installed:
  description: The installed version of each package asked about (toolkit, prerequisites, Docker engines).
  returned: success
  type: dict
  sample: {nvidia-container-toolkit: 1.17.8-1, docker.io: 20.10.24+dfsg1-1+deb12u1+b6}
docker_installed:
  description: Whether a Docker engine package is installed.
  returned: success
  type: bool
apt_lists:
  description: How many apt package lists the host has (none on a fresh minimal image).
  returned: success
  type: int
keyring_sha256:
  description:
    - The hex SHA-256 of O(keyring); null when it is missing, not a regular file, not owned by
      root:root or not mode C(0644) (the role's install then runs), or when O(keyring) is not given.
  returned: success
  type: str
  sample: 8f2e0c3b5d7a9e1f4c6b8a0d2e4f6a8c0b2d4e6f8a0c2e4b6d8f0a2c4e6b8d0f
key_content:
  description: The signing key downloaded from O(key_url), as text (an ASCII-armored key).
  returned: when O(key_url) is given
  type: str
"""

import glob
import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.urls import fetch_url
from ansible_collections.inferops.serving.plugins.module_utils._daemon_json import DaemonJsonError, merge_text
from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import scrub
from ansible_collections.inferops.serving.plugins.module_utils._toolkit import (
    parse_deb822,
    installed_key_sha256,
    parse_dpkg_query,
    toolkit_steps,
)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


# A signing key is a few KiB; an answer larger than this is not one (a hostile or broken server).
MAX_KEY_BYTES = 1024 * 1024


def download_key(module, url, timeout):
    """The key's text from ``url``; fails the module, naming the URL, unless it answers 200 with at
    most MAX_KEY_BYTES."""
    response, info = fetch_url(module, url, method="GET", timeout=timeout)
    if info.get("status") != 200 or response is None:
        module.fail_json(msg=scrub("the repository signing key %s could not be downloaded: HTTP %s %s"
                                   % (url, info.get("status"), info.get("msg", ""))))
    body = response.read(MAX_KEY_BYTES + 1)
    if len(body) > MAX_KEY_BYTES:
        module.fail_json(msg=scrub("the repository signing key %s is larger than %d bytes: not a signing key; "
                                   "check container_toolkit_repository_key_url" % (url, MAX_KEY_BYTES)))
    return to_text(body, errors="surrogate_or_strict")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", required=True),
            version=dict(type="str", required=True),
            hold=dict(type="bool", default=True),
            manage_repository=dict(type="bool", default=True),
            repository_file=dict(type="path", default="/etc/apt/sources.list.d/nvidia-container-toolkit.sources"),
            repository=dict(type="dict", default={}),
            keyring=dict(type="path"),
            # A public URL; one with credentials in it is masked in the failure (secret shapes).
            key_url=dict(type="str", no_log=False),
            key_timeout=dict(type="int", default=30),
            preferences_path=dict(type="path", default="/etc/apt/preferences.d/nvidia-container-toolkit"),
            preferences=dict(type="str", required=True),
            prerequisites=dict(type="list", elements="str", default=[]),
            docker_packages=dict(type="list", elements="str",
                                 default=["docker.io", "docker-ce", "docker-engine", "moby-engine"]),
            docker_package=dict(type="str", default=""),
            docker_service=dict(type="str", default="docker"),
            daemon_json_path=dict(type="path", default="/etc/docker/daemon.json"),
            daemon_json_settings=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    names = list(dict.fromkeys(p["packages"] + p["prerequisites"] + p["docker_packages"]))
    dpkg_query = module.get_bin_path("dpkg-query", required=True)
    # Exit status 1 when some package is unknown; the known ones are still listed.
    rc, out, err = module.run_command([dpkg_query, "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"] + names)
    if rc not in (0, 1):
        module.fail_json(msg="dpkg-query failed (rc %d): %s" % (rc, (err or out).strip()))
    packages = parse_dpkg_query(out)
    repository = _read(p["repository_file"])
    daemon_text = _read(os.path.realpath(p["daemon_json_path"]))
    try:
        _before, _after, daemon_changes = merge_text((daemon_text or "").encode("utf-8"), p["daemon_json_settings"])
    except DaemonJsonError as exc:
        module.fail_json(msg="%s is not a usable Docker daemon configuration (%s); fix or move it, then run again"
                             % (p["daemon_json_path"], exc))
    systemctl = module.get_bin_path("systemctl")
    active = enabled = False
    if systemctl:
        active = module.run_command([systemctl, "is-active", "--quiet", p["docker_service"]])[0] == 0
        enabled = module.run_command([systemctl, "is-enabled", "--quiet", p["docker_service"]])[0] == 0
    fields = parse_deb822(repository) if repository is not None else None
    observed = {
        "packages": packages,
        "repository": fields,
        "signed_by_exists": bool(fields and fields.get("Signed-By") and os.path.isfile(fields["Signed-By"])),
        "preferences": _read(p["preferences_path"]),
        "daemon_json_changes": daemon_changes,
        "docker_active": active,
        "docker_enabled": enabled,
        "apt_lists": len(glob.glob("/var/lib/apt/lists/*_Packages*")),
    }
    key_content = download_key(module, p["key_url"], p["key_timeout"]) if p["key_url"] else None
    observed["keyring_sha256"] = installed_key_sha256(p["keyring"])
    observed["key_sha256"] = hashlib.sha256(key_content.encode("utf-8")).hexdigest() if key_content is not None else None
    wanted = {k: p[k] for k in ("packages", "version", "hold", "manage_repository", "repository", "preferences",
                                "prerequisites", "docker_packages", "docker_package")}
    decided = toolkit_steps(observed, wanted)
    result = dict(changed=False, steps=decided["steps"], reasons=decided["reasons"], converged=not decided["steps"],
                  installed={name: packages[name]["version"] for name in names if name in packages},
                  docker_installed=any(name in packages for name in p["docker_packages"]),
                  apt_lists=observed["apt_lists"], keyring_sha256=observed["keyring_sha256"])
    if key_content is not None:
        result["key_content"] = key_content
    module.exit_json(**result)


if __name__ == "__main__":
    main()
