#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: model_verify
short_description: Verify a model's staged files against its revision's hashes, before the engine starts
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Checks every file of O(manifest) in the snapshot of O(model) at its revision in the Hugging Face
    cache under O(hub_cache) (or in O(local_dir)) - the sha256 of an LFS file, the git blob sha1 of
    any other, and its size - and fails naming each file that is missing, a dangling symlink, a link
    out of the repository's own cache folder (a copy made of symlinks to another tree), truncated, or
    different by one byte. It only reads, so nothing on the host changes before the verdict.
  - On success it records a verification marker (C(.inferops-verified.json) in the repository's
    cache folder) keyed by the revision and the manifest's sha256, with each file's size and mtime.
    A later run whose marker matches and whose files kept their size and mtime does not read the
    weights again (a no-op converge costs a stat per file); any rewrite of a file changes its mtime
    and brings the full check back.
  - The manifest comes from the Hub (M(inferops.serving.model_cache_info)) or from the lock, for
    hosts that stay offline.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.ACTIONGROUP_SERVING
attributes:
  check_mode:
    support: full
    details:
      - The files are verified in check mode too (a read); the marker is not written.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  model:
    description: The Hub model id, V(org/name).
    type: str
    required: true
  manifest:
    description:
      - What the revision holds - C(revision) (the 40-hex commit) and C(files), a mapping of each path
        to C(size) and C(sha256) (LFS files) or C(git_sha1) (the others), as
        M(inferops.serving.model_cache_info) returns it in RV(inferops.serving.model_cache_info#module:manifest).
    type: dict
    required: true
  hub_cache:
    description:
      - The huggingface_hub cache directory (C(HF_HOME)/hub) holding C(models--<org>--<name>/snapshots/<commit>).
      - Exactly one of O(hub_cache) and O(local_dir).
    type: path
  local_dir:
    description: A plain directory holding the repository's files (C(hf download --local-dir)).
    type: path
  marker:
    description: Record (and trust) the verification marker. V(false) reads every file on every run.
    type: bool
    default: true
seealso:
  - module: inferops.serving.model_cache_info
notes:
  - A flipped byte that keeps the file's size and was written without changing its mtime (C(touch -r))
    is not caught while the marker vouches for the file; run with O(marker=false) to read everything.
"""

EXAMPLES = r"""
- name: Verify the staged weights before the engine starts
  inferops.serving.model_verify:
    model: RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4
    hub_cache: /var/cache/inferops-serving/huggingface/hub
    manifest: "{{ cache_info.manifest }}"

- name: Verify a copy without trusting the marker
  inferops.serving.model_verify:
    model: inferops-lab/tiny-chat
    local_dir: /srv/models/tiny-chat
    manifest: "{{ lookup('ansible.builtin.file', 'tiny-chat.manifest.json') | from_json }}"
    marker: false
"""

RETURN = r"""
snapshot:
  description: The directory that was verified.
  returned: always
  type: str
  sample: /var/cache/inferops-serving/huggingface/hub/models--org--name/snapshots/b2b9a6150f0d1d450d68b40993e4699b0cfbbab0
revision:
  description: The commit verified.
  returned: always
  type: str
manifest_sha256:
  description: The sha256 of the manifest (what the lock records).
  returned: always
  type: str
files:
  description: How many files the manifest has.
  returned: always
  type: int
bytes:
  description: Their total size.
  returned: always
  type: int
read:
  description: Whether the files were read and hashed (false when the marker vouched for them).
  returned: success
  type: bool
problems:
  description: Each file that failed, with C(path) and C(problem).
  returned: failure
  type: list
  elements: dict
  sample: [{path: model-00001-of-00017.safetensors, problem: "a dangling symlink (-> ../../blobs/ab12...)"}]
"""

import json
import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.serving.plugins.module_utils._model_cache import (
    MARKER_NAME,
    ModelCacheError,
    check_manifest,
    format_problems,
    manifest_sha256,
    marker_record,
    marker_vouches,
    repo_folder,
    total_bytes,
    verify_snapshot,
)


def _where(params, manifest):
    """``(snapshot, allowed root, marker path)`` for the cache or the local dir."""
    if params["local_dir"]:
        root = params["local_dir"]
        return root, root, os.path.join(root, MARKER_NAME)
    folder = repo_folder(params["hub_cache"], params["model"])
    return os.path.join(folder, "snapshots", manifest["revision"]), folder, os.path.join(folder, MARKER_NAME)


def _read_marker(path, revision):
    try:
        with open(path, encoding="utf-8") as handle:
            return (json.load(handle) or {}).get(revision)
    except (OSError, ValueError, AttributeError):
        return None


def _write_marker(path, revision, record):
    try:
        with open(path, encoding="utf-8") as handle:
            markers = json.load(handle)
        if not isinstance(markers, dict):
            markers = {}
    except (OSError, ValueError):
        markers = {}
    markers[revision] = record
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(markers, handle, indent=1, sort_keys=True)
    os.replace(temporary, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            model=dict(type="str", required=True),
            manifest=dict(type="dict", required=True),
            hub_cache=dict(type="path"),
            local_dir=dict(type="path"),
            marker=dict(type="bool", default=True),
        ),
        required_one_of=[("hub_cache", "local_dir")],
        mutually_exclusive=[("hub_cache", "local_dir")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        manifest = check_manifest(params["manifest"])
        snapshot, allowed, marker_path = _where(params, manifest)
    except ModelCacheError as exc:
        module.fail_json(msg=str(exc))
    revision = manifest["revision"]
    result = {"snapshot": snapshot, "revision": revision, "manifest_sha256": manifest_sha256(manifest),
              "files": len(manifest["files"]), "bytes": total_bytes(manifest), "changed": False}
    try:
        if params["marker"]:
            problems, fingerprint = verify_snapshot(snapshot, manifest, allowed, fingerprint_only=True)
            if not problems and marker_vouches(_read_marker(marker_path, revision), manifest, fingerprint):
                module.exit_json(read=False, **result)
        problems, fingerprint = verify_snapshot(snapshot, manifest, allowed)
    except OSError as exc:
        module.fail_json(msg="reading %s failed: %s" % (snapshot, exc), exception=traceback.format_exc(), **result)
    if problems:
        module.fail_json(msg=format_problems(problems, "%s@%s is not the pinned revision in %s"
                                             % (params["model"], revision, snapshot))
                         + ". Nothing was started: re-stage it (the model_cache role, or hf download --revision %s)"
                         % revision, problems=problems, **result)
    if params["marker"]:
        result["changed"] = True
        if not module.check_mode:
            try:
                _write_marker(marker_path, revision, marker_record(manifest, fingerprint))
            except OSError as exc:
                module.fail_json(msg="writing the verification marker %s failed: %s" % (marker_path, exc), **result)
    module.exit_json(read=True, **result)


if __name__ == "__main__":
    main()
