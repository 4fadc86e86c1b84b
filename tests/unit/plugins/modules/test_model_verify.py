# SPDX-License-Identifier: GPL-3.0-or-later
"""model_verify and model_cache_info on a real cache layout; model_cache_info asks the lab's Hub stand-in."""
from __future__ import annotations

import importlib.util
import json
import os

from ansible_collections.inferops.serving.plugins.module_utils import _model_cache as mc
from ansible_collections.inferops.serving.plugins.modules import model_cache_info, model_verify
from ansible_collections.inferops.serving.tests.unit.plugins.module_utils.test_model_cache import (
    COMMIT,
    MODEL,
    flip_byte,
    hub_info,
    stage,
)

HUB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lab", "hub")


def manifest():
    return mc.manifest_from_info(hub_info(), COMMIT)


def test_verifies_then_trusts_its_marker_until_a_file_changes(run_module, tmp_path):
    folder, snapshot = stage(tmp_path, manifest())
    args = {"model": MODEL, "hub_cache": str(tmp_path), "manifest": manifest()}
    failed, result = run_module(model_verify, args, check_mode=True)
    assert not failed and result["changed"] and result["read"]
    assert not os.path.exists(os.path.join(folder, mc.MARKER_NAME))  # check mode writes nothing
    failed, result = run_module(model_verify, args)
    assert not failed and result["changed"] and result["read"] and result["files"] == 6
    marker = json.load(open(os.path.join(folder, mc.MARKER_NAME)))
    assert marker[COMMIT]["manifest_sha256"] == result["manifest_sha256"]
    failed, result = run_module(model_verify, args)
    assert not failed and not result["changed"] and not result["read"]  # the no-op converge reads no weights
    flip_byte(os.path.realpath(os.path.join(snapshot, "model.safetensors")))
    failed, result = run_module(model_verify, args)
    assert failed and [p["path"] for p in result["problems"]] == ["model.safetensors"]
    assert result["msg"].startswith("%s@%s is not the pinned revision in %s: model.safetensors: sha256 "
                                    % (MODEL, COMMIT, snapshot))


def test_refuses_a_missing_snapshot_and_a_malformed_manifest(run_module, tmp_path):
    failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path), "manifest": manifest()})
    assert failed and "does not exist" in result["msg"]
    failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path),
                                               "manifest": {"revision": "main"}})
    assert failed and result["msg"] == "manifest: expected {revision: <40-hex commit>, files: {...}}"


def test_a_local_dir_copy(run_module, tmp_path):
    _folder, snapshot = stage(tmp_path / "cache", manifest())
    local = tmp_path / "local"
    local.mkdir()
    for name in os.listdir(snapshot):
        (local / name).write_bytes(open(os.path.join(snapshot, name), "rb").read())
    failed, result = run_module(model_verify, {"model": MODEL, "local_dir": str(local), "manifest": manifest(),
                                               "marker": False})
    assert not failed and result["read"] and not result["changed"]


def hub_standin():
    spec = importlib.util.spec_from_file_location("hub_standin", os.path.join(HUB_DIR, "hub_standin.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cache_info_reads_the_manifest_from_the_hub_and_says_what_is_staged(run_module, tmp_path):
    log = tmp_path / "requests.jsonl"
    server = hub_standin().serve(os.path.join(HUB_DIR, "repos"), request_log=str(log))
    try:
        args = {"model": MODEL, "revision": COMMIT, "hub_cache": str(tmp_path / "hub"),
                "endpoint": "http://127.0.0.1:%d" % server.server_address[1]}
        failed, result = run_module(model_cache_info, args, check_mode=True)
        assert not failed and not result["changed"] and result["source"] == "hub"
        assert result["manifest"] == manifest() and not result["staged"]
        assert result["space"]["total"] == result["space"]["needed"] == mc.total_bytes(manifest())
        stage(tmp_path / "hub", manifest())
        run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path / "hub"), "manifest": manifest()})
        failed, result = run_module(model_cache_info, args)
        assert result["staged"] and result["space"]["needed"] == 0
        requests = len(log.read_text().splitlines())
        # Offline, from the lock's manifest: no request at all.
        failed, result = run_module(model_cache_info, dict(args, manifest=manifest(), endpoint="http://127.0.0.1:9"))
        assert not failed and result["staged"] and result["source"] == "lock"
        assert len(log.read_text().splitlines()) == requests
        failed, result = run_module(model_cache_info, dict(args, revision="0" * 40))
        assert failed and "reading the manifest of %s@%s" % (MODEL, "0" * 40) in result["msg"]
        failed, result = run_module(model_cache_info, dict(args, revision="main"))
        assert failed and "expected the 40-hex commit id" in result["msg"]
    finally:
        server.shutdown()
