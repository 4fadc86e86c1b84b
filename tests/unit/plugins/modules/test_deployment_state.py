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


# ---- the keyed digest of the secrets the container reads at its start ----

SECRET = "sk-unit-rotate-Key-3f9a0c"
ENV_FILE = "/etc/inferops-serving/inferops-serving.env"


def digest_args(tmp_path, value=SECRET):
    return {"path": str(tmp_path / "s.json"), "secrets_key": str(tmp_path / "state" / "secrets-hmac.key"),
            "secrets": {ENV_FILE: "VLLM_API_KEY=%s\n" % value}}


def test_the_secrets_digest_is_keyed_stable_and_follows_the_secret(run_module, tmp_path):
    import hashlib
    key = tmp_path / "state" / "secrets-hmac.key"
    failed, first = run_module(deployment_state, digest_args(tmp_path))
    assert not failed and first["secrets_key_state"] == "created" and first["changed"]
    # The key: generated once, 0600, the running user's (root under become), never returned.
    info = os.stat(key)
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert key.read_text().strip() not in json.dumps(first)
    digest = first["secrets_digest"]
    assert len(digest) == 64 and SECRET not in json.dumps(first)
    # Neither the secret nor a plain hash of it, of the file, or of the canonical material.
    text = "VLLM_API_KEY=%s\n" % SECRET
    plain = {hashlib.sha256(v.encode()).hexdigest() for v in (SECRET, text, json.dumps([[ENV_FILE, text]]),
                                                              json.dumps([[ENV_FILE, text]], separators=(",", ":")))}
    assert digest != SECRET and digest not in plain

    failed, again = run_module(deployment_state, digest_args(tmp_path))
    assert not failed and not again["changed"] and again["secrets_key_state"] == "existing"
    assert again["secrets_digest"] == digest
    failed, rotated = run_module(deployment_state, digest_args(tmp_path, value="sk-unit-rotate-Key-NEW"))
    assert not failed and rotated["secrets_digest"] != digest


def test_another_hosts_key_gives_another_digest(run_module, tmp_path):
    failed, one = run_module(deployment_state, digest_args(tmp_path / "a"))
    failed, two = run_module(deployment_state, digest_args(tmp_path / "b"))
    assert one["secrets_digest"] != two["secrets_digest"]


def test_check_mode_writes_no_key_and_its_digest_matches_nothing(run_module, tmp_path):
    failed, result = run_module(deployment_state, digest_args(tmp_path), check_mode=True)
    assert not failed and result["secrets_key_state"] == "missing" and not result["changed"]
    assert not (tmp_path / "state").exists()
    failed, real = run_module(deployment_state, digest_args(tmp_path))
    assert real["secrets_digest"] != result["secrets_digest"]


def test_no_secret_no_key_and_no_digest(run_module, tmp_path):
    args = dict(digest_args(tmp_path), secrets={})
    failed, result = run_module(deployment_state, args)
    assert not failed and result["secrets_digest"] is None and result["secrets_key_state"] == "unused"
    assert not (tmp_path / "state").exists()


def test_a_key_that_cannot_be_trusted_or_read_fails_closed(run_module, tmp_path):
    key = tmp_path / "state" / "secrets-hmac.key"
    failed, result = run_module(deployment_state, digest_args(tmp_path))
    assert not failed
    os.chmod(key, 0o644)
    failed, result = run_module(deployment_state, digest_args(tmp_path))
    assert failed and "secrets_digest" not in result
    assert "is mode 0644, not 0600" in result["msg"] and "remove %s" % key in result["msg"]
    assert result["msg"].startswith("deployment_state: cannot decide whether the container was created with today's")
    key.write_text("not hex\n")
    os.chmod(key, 0o600)
    failed, result = run_module(deployment_state, digest_args(tmp_path))
    assert failed and "is not 64 hex characters" in result["msg"]
    os.unlink(key)
    os.symlink(tmp_path / "elsewhere", key)
    failed, result = run_module(deployment_state, digest_args(tmp_path))
    assert failed and "cannot read the secrets' digest key" in result["msg"]
    assert SECRET not in json.dumps(result)


def test_a_key_that_cannot_be_written_fails_closed(run_module, tmp_path):
    # A file where the state directory should be: no key can be read nor created.
    (tmp_path / "state").write_text("")
    failed, result = run_module(deployment_state, digest_args(tmp_path))
    assert failed and "cannot read the secrets' digest key" in result["msg"] and "Not a directory" in result["msg"]
    assert "secrets_digest" not in result
    # A parent that cannot be made a directory: the key cannot be written.
    args = dict(digest_args(tmp_path), secrets_key=str(tmp_path / "state" / "sub" / "secrets-hmac.key"))
    from ansible_collections.inferops.serving.plugins.module_utils import _secrets_digest
    import pytest
    with pytest.raises(_secrets_digest.DigestKeyError, match="cannot write the secrets' digest key"):
        _secrets_digest.create_key(str(tmp_path / "state" / "secrets-hmac.key"))
    failed, result = run_module(deployment_state, args)
    assert failed and "secrets' digest key" in result["msg"]


def test_the_secret_values_are_a_no_log_option():
    # Ansible masks a no_log option's values in the invocation and in any result string.
    import inspect
    source = inspect.getsource(deployment_state.main)
    assert 'secrets=dict(type="dict", no_log=True)' in source


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
