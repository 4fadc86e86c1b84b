# SPDX-License-Identifier: GPL-3.0-or-later
"""A converge of the server role (its main entry point, as site.yml runs it) that would stop the
only host in the gateway's routing of a model group is refused before anything on the host
changes: run by ansible-playbook on this machine, the serving host's Docker behind the Docker
Engine API double (docker_engine_double.py), the gateway's state (its model groups, routing.json)
in a temporary directory, no lab.

The container runs an earlier deployment (another image, no plan label), so this converge replaces
it and stops its engine; the gateway routes the host's model group to this host only. The run
fails naming the group and the outage, and Docker saw no change (nothing pulled, created, stopped).
"""
from __future__ import annotations

import json

from docker_engine_double import DockerEngine, container, serve
from role_runs import LOCAL, run, server_host

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def converge(tmp_path, routing, *args):
    docker = DockerEngine({"engine": container("vllm/vllm-openai:earlier")})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    gateway_state = tmp_path / "gateway-state"
    gateway_state.mkdir()
    (gateway_state / "routing.json").write_text(json.dumps({"groups": routing}))
    serving = server_host(tmp_path, docker_host, "gb10-nvfp4-mtp-latency")
    inventory = {"all": {"children": {
        "serving": {"hosts": {"spark-1": serving}},
        "gateway": {"hosts": {"gw-01": dict(LOCAL, gateway_state_dir=str(gateway_state))}}}}}
    plays = [{"name": "Serve", "hosts": "serving", "gather_facts": False,
              "roles": [{"role": "inferops.serving.server"}]}]
    try:
        result = run(tmp_path, inventory, plays, *args)
    finally:
        stop()
    return result, docker, gateway_state


def test_stopping_a_model_groups_only_host_is_refused_before_anything_changes(tmp_path):
    result, docker, gateway_state = converge(tmp_path, {MODEL: ["spark-1"]})
    assert result.code != 0, result.output[-4000:]
    assert "model group %s has no other host in routing than spark-1" % MODEL in result.output, result.output[-4000:]
    assert docker.changes() == [] and docker.containers["engine"]["State"]["Running"]
    assert not [call for call in docker.calls if call[1] != "engine"], docker.calls  # no pull, no staged container
    assert not (gateway_state / "drained.json").exists()
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").glob("failed-*"))  # no rescue ran
