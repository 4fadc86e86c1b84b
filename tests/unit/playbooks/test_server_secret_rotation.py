# SPDX-License-Identifier: GPL-3.0-or-later
"""A rotated engine key replaces the container (Docker reads --env-file only when it creates one):
the server role's main entry point, as site.yml runs it, on this machine against the Docker Engine
API double (docker_engine_double.py), no lab.

A first play reads, with the role's own variables, the keyed digest of the secrets
(deployment_state, the host key generated in the role's state directory) and keeps the plan's
image and labels: the container ``engine`` then carries them, as one the role created with that
key. The gateway routes the host's model group to this host only, so a converge that would stop
its engine is refused by the outage check, before anything changes: that refusal is the
observable sign of "this converge replaces the container". With the same key the converge does
not replace it (check mode: "unchanged"); with a rotated key it does ("secrets changed"). The key
values are in no output.
"""
from __future__ import annotations

import json
import os
import stat

from docker_engine_double import DockerEngine, container, serve
from role_runs import LOCAL, run, server_host

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
OLD, NEW = "sk-unit-rotation-OLD-5e1d", "sk-unit-rotation-NEW-9a7c"


def created_with(tmp_path, docker_host, key):
    """The plan's image and the labels the role gives a container created with ``key``."""
    serving = server_host(tmp_path, docker_host, "gb10-nvfp4-mtp-latency", server_secrets={"VLLM_API_KEY": key})
    plays = [{"name": "Read the digest", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "Plan", "ansible.builtin.include_role": {"name": "inferops.serving.server", "tasks_from": "resolve",
                                                          "public": True}},
        {"name": "Digest", "inferops.serving.deployment_state": {
            "path": "{{ __server_state_file }}", "container": "{{ server_deployment.container }}",
            "docker_host": "{{ server_docker_host }}", "secrets": "{{ __server_secret_material }}",
            "secrets_key": "{{ __server_secrets_key }}"}, "register": "read"},
        {"name": "Keep", "ansible.builtin.copy": {
            "dest": str(tmp_path / "created.json"), "mode": "0600",
            "content": "{{ {'image': server_deployment.spec.image, 'labels': (server_deployment"
                       " | inferops.serving.container_action(read)).labels} | to_json }}"}}]}]
    result = run(tmp_path, {"serving": {"hosts": {"spark-1": serving}}}, plays)
    assert result.code == 0, result.output[-4000:]
    return json.loads((tmp_path / "created.json").read_text())


def converge(tmp_path, key):
    tmp_path.mkdir(exist_ok=True)
    docker = DockerEngine({})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    try:
        made = created_with(tmp_path, docker_host, OLD)
        docker.containers["engine"] = container(made["image"], labels=made["labels"])
        gateway_state = tmp_path / "gateway-state"
        gateway_state.mkdir(exist_ok=True)
        (gateway_state / "routing.json").write_text(json.dumps({"groups": {MODEL: ["spark-1"]}}))
        serving = server_host(tmp_path, docker_host, "gb10-nvfp4-mtp-latency", server_secrets={"VLLM_API_KEY": key})
        inventory = {"all": {"children": {
            "serving": {"hosts": {"spark-1": serving}},
            "gateway": {"hosts": {"gw-01": dict(LOCAL, gateway_state_dir=str(gateway_state))}}}}}
        plays = [{"name": "Serve", "hosts": "serving", "gather_facts": False,
                  "roles": [{"role": "inferops.serving.server"}]}]
        result = run(tmp_path, inventory, plays, "--check", "--tags", "server_run")
    finally:
        stop()
    return made, result, docker


def test_the_host_key_is_private_and_the_label_is_no_secret(tmp_path):
    made, result, _docker = converge(tmp_path, OLD)
    key = tmp_path / "state" / "secrets-hmac.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    label = made["labels"]["inferops.serving.secrets-hmac"]
    assert len(label) == 64 and OLD not in json.dumps(made) and key.read_text().strip() not in result.output


def test_the_same_key_leaves_the_container_and_a_rotated_key_replaces_it(tmp_path):
    _made, same, docker = converge(tmp_path / "same", OLD)
    assert same.code == 0, same.output[-4000:]
    assert "has no other host in routing" not in same.output
    assert docker.changes() == []

    _made, rotated, docker = converge(tmp_path / "rotated", NEW)
    assert rotated.code != 0, rotated.output[-4000:]
    assert "model group %s has no other host in routing than spark-1" % MODEL in rotated.output, rotated.output[-4000:]
    assert docker.changes() == [] and docker.containers["engine"]["State"]["Running"]
    for output in (same.output, rotated.output):
        assert OLD not in output and NEW not in output
