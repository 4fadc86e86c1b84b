# SPDX-License-Identifier: GPL-3.0-or-later
"""The front door (issue 22): the real LiteLLM proxy on lab-gateway, in front of inventories/lab.

site.yml converges the lab fleet with a master key and an engine API key for lab-spark (vLLM
enforces VLLM_API_KEY; the simulator does as vLLM does) from a 0600 vars file, at -vvv. Then,
through http://127.0.0.1:4000/v1 (lab-gateway shares the machine's network): /v1/models lists
both model groups (the Sparks' with two deployments, lab-spark and lab-spark-2), chat and completions pass through streamed and not to both engines (the
gateway sends lab-spark's key, lab-g7e has none), a request without the key gets 401. Neither
key appears in any output, in the gateway's argv (ps), its journal, or any file on lab-gateway
but the 0600 env file. A second run of the gateway play changes nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import yaml

import labkit

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "lab")
GATEWAY = "http://127.0.0.1:4000"
MASTER_KEY = "sk-lab-gateway-test-Master-5f3a9c1e"
ENGINE_KEY = "lab-engine-key-7b2d4e6f8a0c"
SPARK_MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def run(args, env=None, timeout=1800):
    base = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    base.update(env or {})
    return subprocess.run(args, cwd=ROOT, env=base, capture_output=True, text=True, timeout=timeout, check=False)


def playbook(path, *extra):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, path, *extra])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    return output


def on_gateway(command):
    result = run(["docker", "exec", "lab-gateway", "bash", "-c", command])
    assert result.returncode == 0, result.stderr
    return result.stdout


def call(path, body=None, key=MASTER_KEY, timeout=60):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(GATEWAY + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def converged(tmp_path_factory):
    secrets = tmp_path_factory.mktemp("gateway") / "secrets.yml"
    secrets.write_text(yaml.safe_dump({"gateway_master_key": MASTER_KEY,
                                       "server_secrets": {"VLLM_API_KEY": ENGINE_KEY}}))
    secrets.chmod(0o600)
    run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "tests/lab/fleet.yml"])
    outputs = {"site.yml -vvv": playbook("site.yml", "-e", "@%s" % secrets, "-vvv")}
    outputs["gateway.yml again"] = playbook("playbooks/gateway.yml", "-e", "@%s" % secrets)
    yield outputs
    # the lab fleet as shipped again (no engine key, the lab's master key)
    labkit.mark_fleet_shipped(playbook("site.yml"))


def groups():
    status, body = call("/v1/models")
    assert status == 200, body
    return {model["id"] for model in json.loads(body)["data"]}


def test_models_lists_every_group(converged):
    listed = groups()
    assert SPARK_MODEL in listed
    assert len(listed) == 2, listed  # the Sparks' and lab-g7e's served model names


def test_the_spark_group_has_both_sparks(converged):
    config = yaml.safe_load(on_gateway("cat /etc/inferops-gateway/config.yaml"))
    deployments = {entry["model_info"]["inferops_host"]: entry for entry in config["model_list"]}
    assert sorted(deployments) == ["lab-g7e", "lab-spark", "lab-spark-2"], sorted(deployments)
    assert {deployments[host]["model_name"] for host in ("lab-spark", "lab-spark-2")} == {SPARK_MODEL}
    assert deployments["lab-spark-2"]["litellm_params"]["api_base"] == "http://127.0.0.1:8103/v1"


def test_a_request_without_the_key_is_refused(converged):
    assert call("/v1/models", key=None)[0] == 401
    status, _body = call("/v1/chat/completions", {"model": SPARK_MODEL, "messages": [{"role": "user", "content": "hi"}]},
                         key=None)
    assert status == 401


def _stream(path, body):
    request = urllib.request.Request(GATEWAY + path, data=json.dumps(dict(body, stream=True)).encode(),
                                     headers={"content-type": "application/json",
                                              "authorization": "Bearer " + MASTER_KEY})
    chunks, done = [], False
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 200
        for raw in response:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                chunks.append(json.loads(line[6:]))
    return chunks, done


@pytest.mark.parametrize("kind", ["chat", "completions"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_requests_pass_through_to_every_group(converged, kind, stream):
    for model in sorted(groups()):
        if kind == "chat":
            path, body = "/v1/chat/completions", {"model": model, "max_tokens": 1024, "temperature": 0,
                                                  "messages": [{"role": "user", "content": "What is 2+2?"}]}
        else:
            path, body = "/v1/completions", {"model": model, "prompt": "Once upon", "max_tokens": 8}
        if stream:
            chunks, done = _stream(path, body)
            assert done and chunks, (model, chunks)
            assert all(chunk["model"] == model for chunk in chunks)
        else:
            status, reply = call(path, body)
            assert status == 200, (model, reply)
            answer = json.loads(reply)
            assert answer["model"] == model and answer["choices"], answer
            if kind == "chat":
                assert answer["choices"][0]["message"]["content"].strip().endswith("4"), answer
            else:
                assert answer["usage"]["completion_tokens"] == 8, answer


def test_second_run_changes_nothing(converged):
    recap = [line for line in converged["gateway.yml again"].splitlines() if line.startswith("lab-gateway")]
    assert recap and "changed=0" in recap[-1], recap


def test_the_fleets_targets_carry_the_critical_paths_cpu_weight(converged):
    """tests/lab/fleet.yml gives inventories/lab's targets lab_target_cpu_shares (8192)."""
    for host in sorted(labkit.lab_fleet_hosts()):
        shares = labkit.run([labkit.DOCKER, "inspect", "-f", "{{.HostConfig.CpuShares}}", host]).stdout.strip()
        assert shares == "8192", (host, shares)


def test_keys_are_in_no_output_argv_journal_or_file_but_the_env_file(converged):
    for where, text in converged.items():
        for key in (MASTER_KEY, ENGINE_KEY):
            assert key not in text, "%s shows a key" % where
    argv = on_gateway("ps -eo args")
    assert "litellm --config /etc/inferops-gateway/config.yaml" in argv
    assert MASTER_KEY not in argv and ENGINE_KEY not in argv
    journal = on_gateway("journalctl -u inferops-gateway --no-pager -o cat")
    assert MASTER_KEY not in journal and ENGINE_KEY not in journal
    holders = on_gateway("grep -rlF -e '%s' -e '%s' /etc /opt /var /usr/local /root /tmp /home 2>/dev/null || true"
                         % (MASTER_KEY, ENGINE_KEY)).split()
    assert holders == ["/etc/inferops-gateway/gateway.env"], holders
    mode = on_gateway("stat -c '%a %U' /etc/inferops-gateway/gateway.env /etc/inferops-gateway/config.yaml")
    assert mode.split("\n")[:2] == ["600 root", "644 root"]
    config = yaml.safe_load(on_gateway("cat /etc/inferops-gateway/config.yaml"))
    assert config["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"
    spark = [entry for entry in config["model_list"] if entry["model_info"]["id"] == "lab-spark"]
    assert spark[0]["litellm_params"]["api_key"] == "os.environ/GATEWAY_LAB_SPARK_VLLM_API_KEY"
    assert spark[0]["litellm_params"]["api_base"] == "http://127.0.0.1:8101/v1"
