# SPDX-License-Identifier: GPL-3.0-or-later
"""deployment_state as a whole module: corrupt files heal, records are atomic, env values never returned."""
from __future__ import annotations

import json
import os
import stat

from ansible_collections.inferops.serving.plugins.modules import deployment_state

from docker_double import FakeDocker

ENTRY = {"spec_sha256": "c" * 64, "image": "vllm/vllm-openai@sha256:" + "d" * 64,
         "spec": {"name": "inferops-serving", "env": {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}},
         "profile": {"env": {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}}}


def test_missing_file_reads_as_no_state(run_module, tmp_path):
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json")})
    assert not failed and not result["changed"]
    assert result["last_known_good"] == {} and result["history"] == [] and result["spec_sha256"] is None
    assert result["warning"] is None


def test_truncated_file_reads_as_no_state_and_is_kept_aside(run_module, tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"last_known_good": {"spec_sha256": "ab')  # the review's truncated state (D7)
    failed, result = run_module(deployment_state, {"path": str(path)}, check_mode=True)
    assert not failed and result["last_known_good"] == {}
    assert result["warning"].startswith("%s is not valid JSON (Unterminated string" % path)
    assert "would be kept aside as %s.corrupt-" % path in result["warning"]
    assert path.exists() and os.listdir(tmp_path) == ["s.json"], "check mode moves nothing"

    failed, result = run_module(deployment_state, {"path": str(path)})
    assert not failed and result["changed"] and result["last_known_good"] == {}
    assert not path.exists()
    assert os.listdir(tmp_path) == [os.path.basename(result["corrupt_copy"])]
    assert "kept aside as %s" % result["corrupt_copy"] in result["warning"]
    assert (tmp_path / os.path.basename(result["corrupt_copy"])).read_text().startswith('{"last_known_good"')


def test_record_heals_a_corrupt_file(run_module, tmp_path):
    path = tmp_path / "s.json"
    path.write_bytes(b"\x00\x00garbage")
    failed, result = run_module(deployment_state, {"path": str(path), "state": "record", "entry": ENTRY})
    assert not failed and result["changed"] and result["warning"]
    assert json.loads(path.read_text())["last_known_good"] == ENTRY


def test_record_check_real_idempotent_and_atomic(run_module, tmp_path):
    path = tmp_path / "new" / "dir" / "s.json"
    args = {"path": str(path), "state": "record", "entry": ENTRY, "history": 2}
    failed, result = run_module(deployment_state, args, check_mode=True)
    assert not failed and result["changed"] and not path.parent.exists()

    failed, result = run_module(deployment_state, args)
    assert not failed and result["changed"]
    saved = json.loads(path.read_text())
    assert saved == {"schema_version": 1, "last_known_good": ENTRY, "history": [ENTRY]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o755
    assert os.listdir(path.parent) == ["s.json"], "no temporary file left"
    # env values are never returned unless asked for; the entry itself is not returned
    assert result["last_known_good"]["spec"]["env"] == {"VLLM_USE_FLASHINFER_MOE_FP4": "<hidden>"}
    assert "entry" not in result

    before = os.stat(path).st_mtime_ns
    failed, result = run_module(deployment_state, dict(args, entry=dict(ENTRY, validated_at="later")))
    assert not failed and not result["changed"] and os.stat(path).st_mtime_ns == before

    for digest in ("e" * 64, "f" * 64):
        run_module(deployment_state, dict(args, entry=dict(ENTRY, spec_sha256=digest)))
    saved = json.loads(path.read_text())
    assert [e["spec_sha256"] for e in saved["history"]] == ["f" * 64, "e" * 64]


def test_reveal_env(run_module, tmp_path):
    path = tmp_path / "s.json"
    run_module(deployment_state, {"path": str(path), "state": "record", "entry": ENTRY})
    failed, result = run_module(deployment_state, {"path": str(path), "reveal_env": True})
    assert result["last_known_good"] == ENTRY and result["spec_sha256"] == "c" * 64


def test_bad_entry_and_directory_fail_clearly(run_module, tmp_path):
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json"), "state": "record",
                                                   "entry": {"spec": {}}})
    assert failed and result["msg"] == ("deployment_state: entry needs a spec_sha256 (the launch spec's digest, "
                                        "a string); got keys spec")
    failed, result = run_module(deployment_state, {"path": str(tmp_path)})
    assert failed and result["msg"].startswith("path %s is a directory" % tmp_path)


# --- the container read (container=): the server role's one read of the host -------------------------
def _running(env):
    return {"srv": {"Id": "4c2b", "Image": "sha256:aaa", "State": {"Running": True, "StartedAt": "2026-12-04T10:00:00Z"},
                    "Config": {"Image": "vllm/vllm-openai@sha256:" + "d" * 64, "Labels": {"a": "b"}, "Env": env}}}


def test_reads_the_container_with_the_state_and_hides_its_environment(run_module, docker, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"last_known_good": ENTRY, "history": [ENTRY]}))
    fake, host = docker(FakeDocker(_running(["HF_TOKEN=hf_secret", "PATH=/usr/bin"])))
    failed, result = run_module(deployment_state, {"path": str(path), "container": "srv", "docker_host": host})
    assert not failed and not result["changed"]
    assert result["exists"] is True
    assert result["container"]["Config"] == {"Image": "vllm/vllm-openai@sha256:" + "d" * 64, "Labels": {"a": "b"}}
    assert result["container"]["State"]["StartedAt"] == "2026-12-04T10:00:00Z"
    assert "hf_secret" not in json.dumps(result)
    assert result["spec_sha256"] == "c" * 64
    assert [(m, n, a) for m, n, a, _q in fake.calls] == [("GET", "srv", "json")], "a read, nothing else"


def test_reveal_env_returns_the_containers_environment(run_module, docker, tmp_path):
    _fake, host = docker(FakeDocker(_running(["HF_TOKEN=hf_secret"])))
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json"), "container": "srv",
                                                   "docker_host": host, "reveal_env": True})
    assert not failed and result["container"]["Config"]["Env"] == ["HF_TOKEN=hf_secret"]


def test_a_missing_container_is_not_an_error(run_module, docker, tmp_path):
    _fake, host = docker(FakeDocker({}))
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json"), "container": "srv",
                                                   "docker_host": host}, check_mode=True)
    assert not failed and result["exists"] is False and result["container"] is None
    assert result["last_known_good"] == {}


def test_without_container_no_daemon_is_asked(run_module, tmp_path):
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json"),
                                                   "docker_host": "unix://%s/missing.sock" % tmp_path})
    assert not failed and "exists" not in result and "container" not in result


def test_an_unreachable_daemon_fails_naming_the_container(run_module, tmp_path):
    failed, result = run_module(deployment_state, {"path": str(tmp_path / "s.json"), "container": "srv",
                                                   "docker_host": "unix://%s/missing.sock" % tmp_path})
    assert failed
    assert result["msg"].startswith("cannot read the container srv: cannot reach the Docker daemon at unix://")


# ---- the file's layout (schema_version) ----

# The layout before it had a version: the real output of the module as 0.1.0 wrote it before its
# release (two records of the server role's entry, plan record and proof, made by that code).
UNVERSIONED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "fixtures", "state", "deployment-state-unversioned.json")


def test_a_file_of_the_unversioned_layout_is_read_and_versioned_at_its_next_record(run_module, tmp_path):
    path = tmp_path / "inferops-serving.json"
    with open(UNVERSIONED, encoding="utf-8") as handle:
        text = handle.read()
    old = json.loads(text)
    assert "schema_version" not in old and len(old["history"]) == 2
    path.write_text(text)
    failed, result = run_module(deployment_state, {"path": str(path), "reveal_env": True})
    assert not failed and not result["changed"] and result["warning"] is None, result
    assert result["last_known_good"] == old["last_known_good"] and result["history"] == old["history"]
    assert result["spec_sha256"] == old["last_known_good"]["spec_sha256"]
    assert path.read_text() == text, "a read leaves the file as it is"

    # Recording the same deployment changes nothing (the file stays as it was, readable).
    failed, result = run_module(deployment_state, {"path": str(path), "state": "record",
                                                   "entry": old["last_known_good"]})
    assert not failed and not result["changed"] and path.read_text() == text

    failed, result = run_module(deployment_state, {"path": str(path), "state": "record", "entry": ENTRY})
    assert not failed and result["changed"]
    saved = json.loads(path.read_text())
    assert saved["schema_version"] == 1
    assert saved["history"] == [ENTRY] + old["history"] and saved["last_known_good"] == ENTRY


def test_a_file_of_a_later_layout_is_refused_naming_the_file_and_the_fix(run_module, tmp_path):
    path = tmp_path / "inferops-serving.json"
    text = json.dumps({"schema_version": 2, "deployments": [{"spec_sha256": "c" * 64}]})
    path.write_text(text)
    for args, check_mode in (({}, True), ({}, False), ({"state": "record", "entry": ENTRY}, False)):
        failed, result = run_module(deployment_state, dict(args, path=str(path)), check_mode=check_mode)
        assert failed, result
        assert result["msg"].startswith("the state file %s was written by a later inferops.serving (its schema_version "
                                        "is 2; this inferops.serving reads layouts up to 1)" % path), result["msg"]
        assert "there is no rollback from it" in result["msg"] and "mv %s %s.schema-2" % (path, path) in result["msg"]
        assert "last_known_good" not in result
    assert path.read_text() == text and os.listdir(tmp_path) == [path.name], "neither moved nor rewritten"
