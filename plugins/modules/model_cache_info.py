#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: model_cache_info
short_description: What a pinned model revision holds, what the host's cache has of it, and whether the rest fits
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Reads the manifest of O(model) at O(revision) - each file's size and hash - from the Hub's API
    (C(/api/models/<model>/revision/<commit>?blobs=true) at O(endpoint)), or takes it from
    O(manifest) (the lock's, for a host that stays offline; then no request is made).
  - Compares it with the host's Hugging Face cache under O(hub_cache) - the blobs already complete,
    the partial downloads a resumed C(hf download) continues - and the free space of the cache's
    filesystem, and says whether the rest fits with O(reserve_bytes) to spare. The size is the
    repository's real size at that commit, never a fixed figure.
  - Says whether the snapshot is staged - every file present with its size and a verification
    marker of M(inferops.serving.model_verify) that vouches for it - so a converge skips the
    download without reading the weights.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
  - inferops.serving._attributes.ACTIONGROUP_SERVING
options:
  model:
    description: The Hub model id, V(org/name).
    type: str
    required: true
  revision:
    description: The 40-hex commit of the model.
    type: str
    required: true
  hub_cache:
    description: The huggingface_hub cache directory (C(HF_HOME)/hub); need not exist yet.
    type: path
    required: true
  endpoint:
    description: The Hub (or a mirror of it) the manifest is read from, as C(HF_ENDPOINT).
    type: str
    default: https://huggingface.co
  token:
    description: A Hub token for a gated or private repository (sent as a bearer token, never returned).
    type: str
  manifest:
    description:
      - The revision's manifest (C(revision), C(files)) from the lock; when set the Hub is not asked.
    type: dict
  reserve_bytes:
    description: Bytes kept free on the cache's filesystem on top of the download.
    type: int
    default: 0
  timeout:
    description: Seconds to wait for the Hub's answer.
    type: int
    default: 30
seealso:
  - module: inferops.serving.model_verify
"""

EXAMPLES = r"""
- name: Read what the pinned revision holds and what the cache has of it
  inferops.serving.model_cache_info:
    model: RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4
    revision: b2b9a6150f0d1d450d68b40993e4699b0cfbbab0
    hub_cache: /var/cache/inferops-serving/huggingface/hub
    reserve_bytes: 10737418240
  register: cache_info

- name: Refuse a download that does not fit
  ansible.builtin.assert:
    that: cache_info.space.ok
    fail_msg: "{{ cache_info.space.message }}"
"""

RETURN = r"""
manifest:
  description: The revision's files, each with C(size) and C(sha256) (LFS) or C(git_sha1).
  returned: success
  type: dict
  sample: {revision: 45291e135b1f7baf20b0369dffb1548912a0c868, files: {config.json: {size: 317, git_sha1: 580d310c2d211aca166288a207e972ced9bb0100}}}
manifest_sha256:
  description: The sha256 of the manifest's canonical JSON (what the lock records).
  returned: success
  type: str
source:
  description: Where the manifest came from, V(hub) or V(lock).
  returned: success
  type: str
space:
  description: C(ok), C(total), C(present), C(needed), C(free), C(reserve) (bytes) and a one-line C(message).
  returned: success
  type: dict
staged:
  description: Whether the snapshot is complete and a verification marker vouches for it (nothing to download or read).
  returned: success
  type: bool
snapshot:
  description: The snapshot directory of the revision.
  returned: success
  type: str
folder:
  description:
    - The repository's folder in the cache (C(models--<org>--<name>)), which holds its blobs and
      snapshots; what a copy from a peer transfers.
  returned: success
  type: str
  sample: /var/cache/inferops-serving/huggingface/hub/models--inferops-lab--tiny-chat
"""

import json
import os
import traceback
from urllib.parse import quote

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.inferops.serving.plugins.module_utils._model_cache import (
    COMMIT_RE,
    MARKER_NAME,
    ModelCacheError,
    check_manifest,
    manifest_from_info,
    manifest_sha256,
    marker_vouches,
    repo_folder,
    space_verdict,
    verify_snapshot,
)


def _blob_sizes(folder):
    blobs = os.path.join(folder, "blobs")
    if not os.path.isdir(blobs):
        return {}
    return {name: os.path.getsize(os.path.join(blobs, name)) for name in os.listdir(blobs)}


def _free_bytes(path):
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _hub_manifest(module, params):
    url = "%s/api/models/%s/revision/%s?blobs=true" % (params["endpoint"].rstrip("/"), params["model"],
                                                       quote(params["revision"], safe=""))
    headers = {"Accept": "application/json"}
    if params["token"]:
        headers["Authorization"] = "Bearer %s" % params["token"]
    try:
        response = open_url(url, headers=headers, timeout=params["timeout"], http_agent="inferops.serving")
        info = json.loads(response.read())
    except Exception as exc:  # open_url raises urllib's and Ansible's errors alike
        module.fail_json(msg="reading the manifest of %s@%s from %s failed: %s. Check model_cache_endpoint and the "
                             "host's access to it, or give the lock's manifest for an offline host"
                             % (params["model"], params["revision"], params["endpoint"], exc),
                         exception=traceback.format_exc())
    return manifest_from_info(info, params["revision"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            model=dict(type="str", required=True),
            revision=dict(type="str", required=True),
            hub_cache=dict(type="path", required=True),
            endpoint=dict(type="str", default="https://huggingface.co"),
            token=dict(type="str", no_log=True),
            manifest=dict(type="dict"),
            reserve_bytes=dict(type="int", default=0),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not COMMIT_RE.match(params["revision"]):
        module.fail_json(msg="revision: got %r; expected the 40-hex commit id (a branch or tag moves: pin the commit)"
                             % params["revision"])
    try:
        folder = repo_folder(params["hub_cache"], params["model"])
        if params["manifest"]:
            manifest, source = check_manifest(params["manifest"], "manifest (the lock's)"), "lock"
            if manifest["revision"] != params["revision"]:
                module.fail_json(msg="the lock's manifest is for %s, not the pinned revision %s; pin them together"
                                     % (manifest["revision"], params["revision"]))
        else:
            manifest, source = check_manifest(_hub_manifest(module, params), "the Hub's manifest"), "hub"
    except ModelCacheError as exc:
        module.fail_json(msg=str(exc))
    snapshot = os.path.join(folder, "snapshots", params["revision"])
    problems, fingerprint = verify_snapshot(snapshot, manifest, folder, fingerprint_only=True)
    marker = None
    try:
        with open(os.path.join(folder, MARKER_NAME), encoding="utf-8") as handle:
            marker = (json.load(handle) or {}).get(params["revision"])
    except (OSError, ValueError, AttributeError):
        marker = None
    staged = not problems and marker_vouches(marker, manifest, fingerprint)
    space = space_verdict(manifest, _blob_sizes(folder), _free_bytes(params["hub_cache"]), params["reserve_bytes"])
    module.exit_json(changed=False, manifest=manifest, manifest_sha256=manifest_sha256(manifest), source=source,
                     space=space, staged=staged, snapshot=snapshot, folder=folder)


if __name__ == "__main__":
    main()
