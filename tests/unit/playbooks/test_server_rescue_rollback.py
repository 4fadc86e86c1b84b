# SPDX-License-Identifier: GPL-3.0-or-later
"""A failed deployment step rolls the host back (the server role's tasks/rescue.yml, as main.yml's
rescue runs it): run by ansible-playbook on this machine against the Docker Engine API double
(docker_engine_double.py), no lab.

The host's state records a last known-good deployment (the latency profile, written by the role's
own state entry point) and its container still runs it (the double's ``engine``, with that plan's
image and spec label). A converge to the throughput profile fails at a deployment step (a fail
task stands for it, inside a block whose rescue is the role's rescue.yml): the host is failed with
the original evidence AND returned to its last known-good, which already runs, so nothing is
stopped or removed. The rescue also looks for the failed swap's staged container (absent here).
"""
from __future__ import annotations

import json
import os

import pytest
from docker_engine_double import DockerEngine, container, serve
from role_runs import run, server_host

# The role's rescue creates its state directory owned by root (rescue.yml), as on a serving host.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the server role's rescue chowns its state directory to root")

FAILED = "the engine image could not be pulled: manifest unknown (stands for any failed deployment step)"


def plan_and_record(tmp_path):
    """First run: the latency profile planned and recorded as the last known-good (state.yml);
    returns the plan's spec as the container it started would carry it."""
    docker = DockerEngine({})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    plays = [{"name": "Record a last known-good", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "Plan", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "resolve"}},
        {"name": "Record it as proven", "ansible.builtin.include_role": {"name": "inferops.serving.server",
                                                                         "tasks_from": "state"}},
        {"name": "Keep what its container carries", "ansible.builtin.copy": {
            "dest": str(tmp_path / "spec.json"), "mode": "0600",
            "content": "{{ {'image': server_deployment.spec.image, 'label': server_deployment.spec_label,"
                       " 'sha': server_deployment.spec_sha256} | to_json }}"}}]}]
    try:
        result = run(tmp_path, {"serving": {"hosts": {"spark-1": server_host(tmp_path, docker_host,
                                                                             "gb10-nvfp4-mtp-latency")}}}, plays)
    finally:
        stop()
    assert result.code == 0, result.output[-4000:]
    return json.loads((tmp_path / "spec.json").read_text())


def test_a_failed_deployment_is_rolled_back_to_the_last_known_good(tmp_path):
    recorded = plan_and_record(tmp_path)
    (tmp_path / "docker.sock").unlink()
    docker = DockerEngine({"engine": container(recorded["image"], {recorded["label"]: recorded["sha"]})})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    state_file = tmp_path / "state" / "engine.json"
    before = state_file.read_text()
    plays = [{"name": "Converge to another profile", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "Plan", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "resolve"}},
        {"name": "Deploy", "block": [
            {"name": "Read the host as the role's converge does", "inferops.serving.deployment_state": {
                "path": str(state_file), "container": "engine", "docker_host": docker_host},
             "register": "__server_current"},
            {"name": "Pull the new image", "ansible.builtin.fail": {"msg": FAILED}}],
         "rescue": [{"name": "Roll back", "ansible.builtin.include_role": {"name": "inferops.serving.server",
                                                                           "tasks_from": "rescue"}}]}]}]
    try:
        result = run(tmp_path, {"serving": {"hosts": {"spark-1": server_host(tmp_path, docker_host,
                                                                             "gb10-nvfp4-mtp-throughput")}}}, plays)
    finally:
        stop()
    assert result.code != 0, result.output[-4000:]
    assert "failed at 'Pull the new image' [check_failed: Pull the new image]: " + FAILED in result.output, \
        result.output[-4000:]
    assert ("Rolled back to the last known-good %s (gb10-nvfp4-mtp-latency), serving." % recorded["image"]
            in result.output), result.output[-4000:]
    # The last known-good ran all along: read, not stopped, replaced or removed; its record kept.
    assert docker.changes() == [] and "engine" in docker.containers
    assert [call[:3] for call in docker.calls if call[1] == "engine"].count(("GET", "engine", "json")) >= 2
    assert state_file.read_text() == before
