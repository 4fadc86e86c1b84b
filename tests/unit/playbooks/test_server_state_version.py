# SPDX-License-Identifier: GPL-3.0-or-later
"""A host state file of a later layout than this collection reads (its ``schema_version``) is
refused, fail closed: the server role's ``rollback`` entry point (playbooks/rollback.yml) and its
converge (main, as site.yml runs it) fail naming the file and the fix, before anything on the host
changes, and leave the file as it is. Run by ansible-playbook on this machine, the host's Docker
behind the Docker Engine API double (docker_engine_double.py), no lab.

The rollback's read is ``no_log`` (it reads the env values to redeploy them): the refusal must
still be shown, not hidden.
"""
from __future__ import annotations

import json
import re

import pytest
from docker_engine_double import DockerEngine, container, serve
from role_runs import run, server_host

LATER = {"schema_version": 2, "deployments": [{"spec_sha256": "c" * 64, "note": "a layout of a later release"}]}


@pytest.mark.parametrize("entry", ["rollback", "main"])
def test_a_state_file_of_a_later_layout_is_refused_before_anything_changes(tmp_path, entry):
    docker = DockerEngine({"engine": container("vllm/vllm-openai:earlier")})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    state_file = tmp_path / "state" / "engine.json"
    state_file.parent.mkdir()
    state_file.write_text(json.dumps(LATER))
    plays = [{"name": "Use the host's state", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "The server role's %s" % entry,
         "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": entry}}]}]
    try:
        result = run(tmp_path, {"serving": {"hosts": {"spark-1": server_host(tmp_path, docker_host,
                                                                             "gb10-nvfp4-mtp-latency")}}}, plays)
    finally:
        stop()
    assert result.code != 0, result.output[-4000:]
    # In the failed result itself (ansible-core 2.18 prints no more than the result of a no_log task).
    assert re.search(r'FAILED! => \{[^}]*"msg": "the state file %s was written by a later inferops.serving \(its '
                     r'schema_version is 2; this inferops.serving reads layouts up to 1\)' % re.escape(str(state_file)),
                     result.output), result.output[-4000:]
    assert "there is no rollback from it" in result.output and "mv %s %s.schema-2" % (state_file, state_file) \
        in result.output
    assert json.loads(state_file.read_text()) == LATER and sorted(p.name for p in state_file.parent.iterdir()) == [
        "engine.json"]
    assert docker.changes() == [] and docker.containers["engine"]["State"]["Running"]
