# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/rollback.yml's record (the server role's rollback entry point), on this machine against
the Docker Engine API double (docker_engine_double.py), no lab: before it acts, a rollback writes
what it leaves - the image digest the container ran - as known-bad for the host's hardware group in
the inventory's inferops_known_bad_images (the file the pin writes, through inventory_entry), with
the time and the reason, keeping the file's other entries.

The host's state records the latency profile (the role's own state entry point); its container
runs another digest. The double implements no image pull nor container create, so the rollback
then fails at its pull: the record, written before, is what is asserted (that site.yml's preflight
refuses it is tests/unit/playbooks/test_preflight_refusal.py; ROLLED BACK in status is
tests/unit/plugins/plugin_utils/test_rollback.py).
"""
from __future__ import annotations

import yaml
from docker_engine_double import DockerEngine, container, serve
from role_runs import run, server_host

LEFT = "sha256:" + "b" * 64
PIN_ENTRY = {"repository": "vllm/vllm-openai", "digest": "sha256:" + "c" * 64, "signature": "cuda_illegal_memory_access",
             "symptom": "a pin's entry", "source": "playbooks/pin.yml on canary spark-2, 2026-12-01T00:00:00Z"}


def rollback(tmp_path, *args):
    docker = DockerEngine({})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    host = server_host(tmp_path, docker_host, "gb10-nvfp4-mtp-latency", server_rollback_reason="p99 latency doubled",
                       server_rollback_known_bad_file=str(tmp_path / "inv" / "known_bad_images.yml"))
    try:
        record = [{"name": "Record", "hosts": "serving", "gather_facts": False, "tasks": [
            {"name": "Plan", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "resolve"}},
            {"name": "Record it as proven", "ansible.builtin.include_role": {"name": "inferops.serving.server",
                                                                             "tasks_from": "state"}}]}]
        assert run(tmp_path, {"serving": {"hosts": {"spark-1": host}}}, record).code == 0
        docker.containers["engine"] = container("vllm/vllm-openai@" + LEFT, {"inferops.serving.spec-sha256": "0" * 64})
        plays = [{"name": "Roll back", "hosts": "serving", "gather_facts": False, "tasks": [
            {"name": "Roll back", "ansible.builtin.include_role": {"name": "inferops.serving.server",
                                                                   "tasks_from": "rollback"}}]}]
        return run(tmp_path, {"serving": {"hosts": {"spark-1": host}}}, plays, *args)
    finally:
        stop()


def test_a_rollback_records_the_digest_it_leaves_before_it_acts(tmp_path):
    known_bad = tmp_path / "inv" / "known_bad_images.yml"
    known_bad.parent.mkdir()
    known_bad.write_text(yaml.safe_dump({"inferops_known_bad_images": [PIN_ENTRY]}))
    result = rollback(tmp_path)
    # The double cannot pull: the rollback stops there, after the record.
    assert "Pull the recorded image by digest" in result.output, result.output[-4000:]
    entries = yaml.safe_load(known_bad.read_text())["inferops_known_bad_images"]
    assert entries[0] == PIN_ENTRY and len(entries) == 2
    entry = entries[1]
    assert entry["digest"] == LEFT and entry["hardware_group"] == "serving" and entry["signature"] == "rolled_back"
    assert entry["id"] == "rolled-back:serving:" + LEFT
    assert entry["rolled_back"]["reason"] == "p99 latency doubled" and entry["rolled_back"]["host"] == "spark-1"
    assert entry["rolled_back"]["from"] == "vllm/vllm-openai@" + LEFT
    assert entry["rolled_back"]["file"] == str(known_bad)
    assert entry["rolled_back"]["at"].endswith("Z")


def test_check_mode_writes_no_record(tmp_path):
    result = rollback(tmp_path, "--check")
    assert "Record the deployment it leaves as known-bad" in result.output, result.output[-4000:]
    assert not (tmp_path / "inv" / "known_bad_images.yml").exists()
