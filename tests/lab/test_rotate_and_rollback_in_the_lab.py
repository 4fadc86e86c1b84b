# SPDX-License-Identifier: GPL-3.0-or-later
"""Day two on the lab fleet of ``inventories/lab``: a rotated engine key, a rollback that sticks, a
status that names an unreachable gateway.

* Rotation: lab-spark (and lab-gateway) are converged with an API key (server_secrets
  VLLM_API_KEY, which the simulator enforces on /v1 as vLLM does), then with another. The engine must accept the new key
  and refuse the old one (Docker reads --env-file only when it creates a container: the container
  is recreated, labelled with the keyed digest of its secrets), the gateway must answer 2xx with
  the new key in its env file (lab-spark-2, not converged with a key, accepts any), and the watchdog (which reads the env file at each probe) must not
  have restarted the engine. The label is neither key nor a plain hash of the env file.
* Rollback: on a copy of the lab inventory (its known-bad file is the copy's), lab-spark is
  converged to a second spec (an env override), rolled back to the one before
  (``server_rollback_target=previous``); site.yml with the same inventory is then refused by
  preflight naming the rollback, the container is the rolled-back one still, and status.yml says
  ROLLED BACK, not DRIFT.
* Status with the gateway unreachable: in a copy of the inventory, lab-gateway's connection
  points at a container that does not exist, so every serving host keeps its row and the gateway's row says UNREACHABLE (or NOT READ) with the reason,
  never "object of type 'dict' has no attribute 'model_info'".
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import labkit
import pytest
import yaml

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SHIPPED = os.path.join(ROOT, "inventories", "lab")
OLD_KEY = "sk-lab-rotate-OLD-5b1e2c9d"
NEW_KEY = "sk-lab-rotate-NEW-83f0a4e7"
GATEWAY_KEY = "sk-inferops-lab-gateway-not-a-secret"  # inventories/lab/group_vars/gateway.yml
SPARK_MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
WATCHDOG_STATE = "/var/lib/inferops-serving/watchdog-inferops-serving.json"
SECRETS_LABEL = "inferops.serving.secrets-hmac"


def run(args, env=None, timeout=1800):
    base = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_FORCE_COLOR="0", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    base.update(env or {})
    return subprocess.run(args, cwd=ROOT, env=base, capture_output=True, text=True, timeout=timeout, check=False)


def playbook(inventory, path, *extra, ok=True):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", inventory, path, *extra])
    output = result.stdout + result.stderr
    if ok:
        assert result.returncode == 0, output[-6000:]
    return result.returncode, output


def on_host(host, command):
    result = run(["docker", "exec", host, "bash", "-c", command])
    assert result.returncode == 0, result.stderr
    return result.stdout


def status_code(host, url, key=None):
    """The HTTP status ``url`` answers on ``host`` (its loopback), with ``key`` as the bearer token."""
    header = "-H 'Authorization: Bearer %s'" % key if key else ""
    return int(on_host(host, "curl -s -o /dev/null -w '%%{http_code}' %s %s" % (header, url)).strip())


def restarts(host):
    text = on_host(host, "cat %s 2>/dev/null || echo '{}'" % WATCHDOG_STATE)
    state = json.loads(text or "{}")
    return [a for a in state.get("actions", []) if a.get("kind") == "restart" and a.get("result") != "intended"]


def labels(host):
    return json.loads(on_host(host, "docker inspect -f '{{json .Config.Labels}}' inferops-serving"))


def container_id(host):
    return on_host(host, "docker inspect -f '{{.Id}}' inferops-serving").strip()


def copy_inventory(tmp_path):
    copy = str(tmp_path / "lab")
    shutil.copytree(SHIPPED, copy)
    return copy


@pytest.fixture
def shipped_fleet_after():
    yield
    # The lab fleet as shipped again (no key, no override), marked so for the next module.
    _code, output = playbook(SHIPPED, "site.yml")
    labkit.mark_fleet_shipped(output)


def test_a_rotated_engine_key_reaches_the_engine_the_gateway_and_the_watchdog(shipped_fleet_after):
    secrets = {"server_secrets": {"VLLM_API_KEY": OLD_KEY}}
    _code, first = playbook(SHIPPED, "site.yml", "-l", "lab-spark,lab-gateway", "-e", json.dumps(secrets))
    before = labels("lab-spark")[SECRETS_LABEL]
    restarts_before = len(restarts("lab-spark"))

    secrets["server_secrets"]["VLLM_API_KEY"] = NEW_KEY
    _code, second = playbook(SHIPPED, "site.yml", "-l", "lab-spark,lab-gateway", "-e", json.dumps(secrets))
    for output in (first, second):
        assert OLD_KEY not in output and NEW_KEY not in output

    models = "http://127.0.0.1:8101/v1/models"
    assert status_code("lab-spark", models, NEW_KEY) == 200
    assert status_code("lab-spark", models, OLD_KEY) == 401
    # The gateway restarted with its new env file: every request 2xx, whichever host it routes to.
    chat = ("curl -s -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer %s' -H 'content-type: application/json' "
            "-d '{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"What is 2+2?\"}], "
            "\"max_tokens\": 8}' http://127.0.0.1:4000/v1/chat/completions" % (GATEWAY_KEY, SPARK_MODEL))
    answers = [int(on_host("lab-gateway", chat).strip()) for _ in range(6)]
    assert all(200 <= code < 300 for code in answers), answers
    # The watchdog took the new key from the env file: no restart of a healthy engine.
    assert len(restarts("lab-spark")) == restarts_before

    after = labels("lab-spark")[SECRETS_LABEL]
    assert after != before and len(after) == 64
    env_file = on_host("lab-spark", "cat /etc/inferops-serving/inferops-serving.env")
    for value in (OLD_KEY, NEW_KEY, env_file):
        assert after != value and after != hashlib.sha256(value.encode()).hexdigest()
    key = on_host("lab-spark", "stat -c '%a %U' /var/lib/inferops-serving/secrets-hmac.key").strip()
    assert key == "600 root"


def test_a_rollback_sticks_until_the_operator_changes_the_inventory(tmp_path, shipped_fleet_after):
    inventory = copy_inventory(tmp_path)
    playbook(inventory, "site.yml", "-l", "lab-spark,lab-gateway")
    # A second spec on the same image: an env override on lab-spark only.
    with open(os.path.join(SHIPPED, "group_vars", "spark.yml"), encoding="utf-8") as handle:
        overrides = yaml.safe_load(handle)["server_profile_overrides"]
    overrides = dict(overrides, env={"VLLM_LOGGING_LEVEL": "DEBUG"})
    os.makedirs(os.path.join(inventory, "host_vars"), exist_ok=True)
    with open(os.path.join(inventory, "host_vars", "lab-spark.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"server_profile_overrides": overrides}, handle)
    playbook(inventory, "site.yml", "-l", "lab-spark,lab-gateway")

    playbook(inventory, "playbooks/rollback.yml", "-l", "lab-spark", "-e", "server_rollback_target=previous",
             "-e", "server_rollback_reason='p99 latency doubled'")
    entries = yaml.safe_load(open(os.path.join(inventory, "group_vars", "all", "known_bad_images.yml"),
                                  encoding="utf-8"))["inferops_known_bad_images"]
    rolled = [e for e in entries if e.get("signature") == "rolled_back"]
    assert len(rolled) == 1 and rolled[0]["spec_sha256"] and rolled[0]["rolled_back"]["reason"] == "p99 latency doubled"
    serving = container_id("lab-spark")

    code, out = playbook(inventory, "site.yml", "-l", "lab-spark,lab-gateway", ok=False)
    flat = " ".join(out.split())
    assert code != 0
    assert "playbooks/rollback.yml rolled back from spec" in flat, flat[-4000:]
    assert "delete the entry with id '%s' from inferops_known_bad_images" % rolled[0]["id"] in flat
    assert container_id("lab-spark") == serving

    _code, status = playbook(inventory, "playbooks/status.yml", "-l", "lab-spark,lab-gateway", ok=False)
    assert re.search(r'"lab-spark +\|[^"]*\| ROLLED BACK: rolled back from spec ', status), status[-4000:]
    assert not re.search(r'"lab-spark +\|[^"]*\| DRIFT: ', status)


def test_status_names_an_unreachable_gateway_and_keeps_every_serving_row(tmp_path):
    inventory = copy_inventory(tmp_path)
    _code, output = playbook(SHIPPED, "site.yml")
    labkit.mark_fleet_shipped(output)
    hosts_file = os.path.join(inventory, "hosts.yml")
    with open(hosts_file, encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)
    # The gateway's connection goes to a container that does not exist: the host is unreachable.
    hosts["all"]["children"]["gateway"]["hosts"]["lab-gateway"] = {"ansible_host": "inferops-lab-no-such-gateway"}
    with open(hosts_file, "w", encoding="utf-8") as handle:
        yaml.safe_dump(hosts, handle)
    code, out = playbook(inventory, "playbooks/status.yml", ok=False)
    assert code != 0
    assert "model_info" not in out, out[-4000:]
    assert re.search(r'"lab-gateway +\| gateway \(LiteLLM\) +\|[^"]*\| NOT READ: (UNREACHABLE: )?', out), out[-4000:]
    for host in ("lab-spark", "lab-spark-2", "lab-g7e"):
        assert re.search(r'"%s +\|' % host, out), out[-4000:]
    assert re.search(r"routing=unknown on lab-gateway \(NOT READ: ", out), out[-4000:]
