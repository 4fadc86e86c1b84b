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
    folder, snapshot = stage(tmp_path / "hf" / "hub", manifest())
    state = tmp_path / "state"
    args = {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"), "manifest": manifest(), "state_dir": str(state)}
    failed, result = run_module(model_verify, args, check_mode=True)
    assert not failed and result["changed"] and result["read"]
    assert not state.exists()  # check mode writes nothing
    failed, result = run_module(model_verify, args)
    assert not failed and result["changed"] and result["read"] and result["files"] == 6
    # The marker is in the state directory, not in the tree the engine mounts.
    assert result["marker"] == str(state / "models--inferops-lab--tiny-chat.verified.json")
    assert sorted(os.listdir(folder)) == ["blobs", "snapshots"]
    marker = json.load(open(result["marker"]))
    assert marker[COMMIT]["manifest_sha256"] == result["manifest_sha256"]
    failed, result = run_module(model_verify, args)
    assert not failed and not result["changed"] and not result["read"]  # the no-op converge reads no weights
    flip_byte(os.path.realpath(os.path.join(snapshot, "model.safetensors")))
    failed, result = run_module(model_verify, args)
    assert failed and [p["path"] for p in result["problems"]] == ["model.safetensors"]
    assert result["msg"].startswith("%s@%s is not the pinned revision in %s: model.safetensors: sha256 "
                                    % (MODEL, COMMIT, snapshot))


def test_refuses_a_missing_snapshot_and_a_malformed_manifest(run_module, tmp_path):
    failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path), "manifest": manifest(),
                                               "marker": False})
    assert failed and "does not exist" in result["msg"]
    failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path), "marker": False,
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
        args = {"model": MODEL, "revision": COMMIT, "hub_cache": str(tmp_path / "hf" / "hub"), "allow_plain_http": True,
                "endpoint": "http://127.0.0.1:%d" % server.server_address[1], "state_dir": str(tmp_path / "state")}
        failed, result = run_module(model_cache_info, args, check_mode=True)
        assert not failed and not result["changed"] and result["source"] == "hub"
        assert result["manifest"] == manifest() and not result["staged"]
        assert result["space"]["total"] == result["space"]["needed"] == mc.total_bytes(manifest())
        stage(tmp_path / "hf" / "hub", manifest())
        run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"), "manifest": manifest(),
                                  "state_dir": str(tmp_path / "state")})
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
        failed, result = run_module(model_cache_info, args)
        assert result["copy_list"] == mc.copy_list(manifest())
        # Plain http without the operator's consent: refused before any request.
        requests = len(log.read_text().splitlines())
        failed, result = run_module(model_cache_info, dict(args, allow_plain_http=False))
        assert failed and "set model_cache_allow_plain_http: true" in result["msg"]
        assert result["msg"].startswith("model_cache_endpoint (endpoint): %s is plain http" % args["endpoint"])
        assert len(log.read_text().splitlines()) == requests
    finally:
        server.shutdown()


def test_a_marker_inside_the_mounted_tree_is_refused(run_module, tmp_path):
    stage(tmp_path / "hf" / "hub", manifest())
    for state in (tmp_path / "hf", tmp_path / "hf" / "hub" / "state"):
        failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"),
                                                   "manifest": manifest(), "state_dir": str(state)})
        assert failed and result["msg"].startswith("state_dir: %s is inside " % state), result["msg"]
        assert not state.joinpath("models--inferops-lab--tiny-chat.verified.json").exists()
    failed, result = run_module(model_verify, {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"),
                                               "manifest": manifest()})
    assert failed and "state_dir" in result["msg"]  # required with the marker


def test_a_file_the_manifest_does_not_list_is_refused_and_no_marker_written(run_module, tmp_path):
    _folder, snapshot = stage(tmp_path / "hf" / "hub", manifest())
    with open(os.path.join(snapshot, "chat_template.jinja"), "w") as handle:
        handle.write("{{ bos_token }}")
    args = {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"), "manifest": manifest(), "state_dir": str(tmp_path / "s")}
    failed, result = run_module(model_verify, args)
    assert failed and [p["path"] for p in result["problems"]] == ["chat_template.jinja"]
    assert "chat_template.jinja: not in the pinned revision's manifest" in result["msg"]
    assert not (tmp_path / "s").exists()


def test_a_marker_that_vouched_is_void_once_a_file_is_added(run_module, tmp_path):
    """A marker written for the exact snapshot no longer vouches once an extra file appears (the
    extra is checked on the fast path too), and the no-op converge reports it."""
    _folder, snapshot = stage(tmp_path / "hf" / "hub", manifest())
    args = {"model": MODEL, "hub_cache": str(tmp_path / "hf" / "hub"), "manifest": manifest(), "state_dir": str(tmp_path / "s")}
    assert not run_module(model_verify, args)[0]
    os.symlink("model.safetensors", os.path.join(snapshot, "model-00002-of-00002.safetensors"))
    failed, result = run_module(model_verify, args)
    assert failed and [p["path"] for p in result["problems"]] == ["model-00002-of-00002.safetensors"]
    failed, info = run_module(model_cache_info, {"model": MODEL, "revision": COMMIT, "hub_cache": str(tmp_path / "hf" / "hub"),
                                                 "manifest": manifest(), "state_dir": str(tmp_path / "s")})
    assert not failed and not info["staged"]


class RedirectingHub(object):
    """Stands for the Hub's ``GET /api/models/<repo>/revision/<commit>?blobs=true`` (the answer the
    lab's stand-in gives, ``hub_info()``) behind a redirect: the first origin answers 302 with the
    ``Location`` given, the second answers the JSON. Each records whether a request carried an
    ``Authorization`` header. Loopback only: 127.0.0.1 and 127.0.0.2 (or another port) are distinct
    origins."""

    def __init__(self, first_host, second_host, same_port=False):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.seen = []
        seen = self.seen

        class Second(BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append(("second", self.path, self.headers.get("Authorization")))
                body = json.dumps(hub_info()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class First(Second):
            def do_GET(self):
                if self.path.startswith("/moved/"):
                    return Second.do_GET(self)
                seen.append(("first", self.path, self.headers.get("Authorization")))
                self.send_response(302)
                self.send_header("Location", location + "/moved" + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.first = ThreadingHTTPServer((first_host, 0), First)
        self.second = self.first if same_port else ThreadingHTTPServer((second_host, 0), Second)
        location = "http://%s:%d" % (second_host, self.second.server_address[1])
        for server in dict.fromkeys((self.first, self.second)):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.url = "http://%s:%d" % (first_host, self.first.server_address[1])

    def shutdown(self):
        for server in dict.fromkeys((self.first, self.second)):
            server.shutdown()


def test_the_token_does_not_follow_a_redirect_to_another_origin(run_module, tmp_path):
    hub = RedirectingHub("127.0.0.1", "127.0.0.2")
    try:
        failed, result = run_module(model_cache_info, {"model": MODEL, "revision": COMMIT, "hub_cache": str(tmp_path),
                                                       "endpoint": hub.url, "allow_plain_http": True,
                                                       "token": "hf_secret_token"})
    finally:
        hub.shutdown()
    assert not failed and result["manifest"] == manifest(), result
    assert [(who, auth) for who, _path, auth in hub.seen] == [("first", "Bearer hf_secret_token"), ("second", None)]
    assert "hf_secret_token" not in json.dumps(result)


def test_the_token_follows_a_redirect_within_its_origin(run_module, tmp_path):
    hub = RedirectingHub("127.0.0.1", "127.0.0.1", same_port=True)
    try:
        failed, result = run_module(model_cache_info, {"model": MODEL, "revision": COMMIT, "hub_cache": str(tmp_path),
                                                       "endpoint": hub.url, "allow_plain_http": True,
                                                       "token": "hf_secret_token"})
    finally:
        hub.shutdown()
    assert not failed and result["manifest"] == manifest(), result
    assert [(who, auth) for who, _path, auth in hub.seen] == [("first", "Bearer hf_secret_token"),
                                                              ("second", "Bearer hf_secret_token")]
