# SPDX-License-Identifier: GPL-3.0-or-later
"""Secrets never leave their channel (issue 10), on the lab fleet of ``inventories/lab``.

lab-spark is converged with a Hugging Face token (server_hf_token) and an API key
(server_secrets VLLM_API_KEY, which the simulator enforces on /v1 as vLLM does), once with
``-vvv`` and once with the ``ansible.posix.json`` stdout callback (what AWX/ARA-style recorders
see), then its container is replaced by hand and ``rollback.yml -vvv`` returns it. Neither value
may appear in any output, in the host's launch script, state files, watchdog configuration,
container labels or argv, or in the inventory's lock; the 0600 env file holds the API key, and the
smoke test passing proves the API key reached the engine and the role's requests. The token is
not in the container's Config.Env: a 0600 file mounted read-only, named by HF_TOKEN_PATH (issue 25).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "lab")
TOKEN = "hf_LabSecretToken1234567890abcdef"
API_KEY = "sk-lab-ApiKey-0987654321zyxw"
SECRETS = json.dumps({"server_hf_token": TOKEN, "server_secrets": {"VLLM_API_KEY": API_KEY}})


def run(args, env=None, timeout=1800):
    base = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    base.update(env or {})
    return subprocess.run(args, cwd=ROOT, env=base, capture_output=True, text=True, timeout=timeout, check=False)


def playbook(path, *extra, env=None):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, path, "-l", "lab-spark", *extra], env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    return output


def assert_no_secret(where, text):
    for secret in (TOKEN, API_KEY):
        assert secret not in text, "%s shows a secret value" % where


def on_host(command):
    result = run(["docker", "exec", "lab-spark", "bash", "-c", command])
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def converged():
    run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "tests/lab/fleet.yml"])
    outputs = {"converge -vvv": playbook("site.yml", "-e", SECRETS, "-vvv")}
    outputs["converge, json callback"] = playbook("site.yml", "-e", SECRETS, "-v",
                                                  env={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    yield outputs
    playbook("site.yml")  # the lab host as shipped again (no secrets)
    assert "VLLM_API_KEY" not in on_host("cat /usr/local/lib/inferops-serving/inferops-serving.sh; "
                                         "ls /etc/inferops-serving")


def test_no_output_shows_a_secret(converged):
    for where, text in converged.items():
        assert_no_secret(where, text)
    assert '"failures": 0' in converged["converge, json callback"]


def test_the_env_file_is_the_only_place_on_the_host(converged):
    env_file = on_host("stat -c '%a %U' /etc/inferops-serving/inferops-serving.env; "
                       "cat /etc/inferops-serving/inferops-serving.env")
    mode, content = env_file.split("\n", 1)
    assert mode == "600 root"
    assert content == "VLLM_API_KEY=%s\n" % API_KEY
    # The token as a file (issue 25): vLLM reads it through HF_TOKEN_PATH, out of Config.Env.
    token_file = on_host("stat -c '%a %U' /etc/inferops-serving/inferops-serving.hf_token; "
                         "cat /etc/inferops-serving/inferops-serving.hf_token")
    assert token_file == "600 root\n%s" % TOKEN
    script = on_host("cat /usr/local/lib/inferops-serving/inferops-serving.sh")
    assert "--env-file /etc/inferops-serving/inferops-serving.env" in script
    assert_no_secret("the launch script", script)
    assert_no_secret("the state and watchdog files",
                     on_host("cat /var/lib/inferops-serving/*.json /etc/inferops-serving/watchdog-*.json"))
    inspect = json.loads(on_host("docker inspect inferops-serving"))[0]
    assert_no_secret("the container's labels, command and args",
                     json.dumps([inspect["Config"]["Labels"], inspect["Config"]["Cmd"], inspect["Args"]]))
    assert TOKEN not in json.dumps(inspect["Config"]["Env"])
    assert "HF_TOKEN_PATH=/run/secrets/hf_token" in inspect["Config"]["Env"]
    assert on_host("docker exec inferops-serving cat /run/secrets/hf_token") == TOKEN
    with open(os.path.join(INVENTORY, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        assert_no_secret("the lock", handle.read())


def test_a_rollback_with_secrets_shows_none(converged):
    # Replaced by hand (the same script without its env file and with another spec label), then
    # returned to the last known-good.
    on_host("sed -e 's|--env-file [^ ]*||' -e 's|spec-sha256=[0-9a-f]*|spec-sha256=by-hand|' "
            "/usr/local/lib/inferops-serving/inferops-serving.sh > /tmp/no-env.sh && "
            "docker rm -f inferops-serving >/dev/null && bash /tmp/no-env.sh >/dev/null")
    output = playbook("playbooks/rollback.yml", "-e", SECRETS, "-vvv")
    assert_no_secret("rollback -vvv", output)
    assert "Replace the failed container with the recorded one" in output
    inspect = json.loads(on_host("docker inspect inferops-serving"))[0]
    env = inspect["Config"]["Env"]
    assert "VLLM_API_KEY=%s" % API_KEY in env and "HF_TOKEN_PATH=/run/secrets/hf_token" in env
    assert TOKEN not in json.dumps(env)


MISPLACED = "sk-lab-Misplaced-5555aaaa"


@pytest.mark.parametrize("verbosity", [[], ["-v"]], ids=["default verbosity", "-v"])
def test_a_secret_in_profile_args_with_a_newline_appears_nowhere(verbosity):
    """Issue 25: the launch script's refusal of the newline quoted the value (default verbosity)
    and, without the newline, ``-v`` printed the whole plan with it; the plan now refuses it first."""
    overrides = json.dumps({"server_profile_overrides": {"args": {"host": "127.0.0.1",
                                                                  "api-key": MISPLACED + "\nsecond-line"}}})
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "site.yml", "-l", "lab-spark",
                  "-e", overrides, *verbosity])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-6000:]
    assert "args.api-key" in output and "server_secrets: {VLLM_API_KEY: <value>}" in output, output[-6000:]
    for part in (MISPLACED, MISPLACED[:12], "second-line"):
        assert part not in output, "%s shows the misplaced secret" % " ".join(["site.yml"] + verbosity)


# Issue 25, finding 5 (audit): secrets of other shapes under names that are no secret's. With a
# newline, the launch script's check quoted them; without one, they were planned into the launch
# script (and -v). The plan now refuses them by their shape first, naming the field and the kind.
SK_REFUSAL = "args.served-model-name holds what looks like an OpenAI or Anthropic API key (sk-...)"
URL_REFUSAL = "env.MY_DB_URL holds what looks like a password in a URL (its user:password@ part)"
INNOCENT = [
    ({"args": {"host": "127.0.0.1", "served-model-name": "sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc\nx"}}, SK_REFUSAL,
     "sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc"),
    ({"args": {"host": "127.0.0.1"}, "env": {"MY_DB_URL": "postgres://u:p4ss-Lab77@db/x\n"}}, URL_REFUSAL,
     "postgres://u:p4ss-Lab77@db/x"),
    ({"args": {"host": "127.0.0.1", "served-model-name": "sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc"}}, SK_REFUSAL,
     "sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc"),
    ({"args": {"host": "127.0.0.1"}, "env": {"MY_DB_URL": "postgres://u:p4ss-Lab77@db/x"}}, URL_REFUSAL,
     "postgres://u:p4ss-Lab77@db/x"),
]


# At -v only: it prints all that the default verbosity prints and more (the test above runs both).
@pytest.mark.parametrize("verbosity", [["-v"]], ids=["-v"])
@pytest.mark.parametrize("overrides, refusal, secret", INNOCENT,
                         ids=["sk- key in served-model-name, newline", "URL password in env, newline",
                              "sk- key in served-model-name", "URL password in env"])
def test_a_secret_of_another_shape_under_an_innocent_name_appears_nowhere(overrides, refusal, secret, verbosity):
    extra = json.dumps({"server_profile_overrides": overrides})
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "site.yml", "-l", "lab-spark",
                  "-e", extra, *verbosity])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-6000:]
    assert refusal in output, output[-6000:]
    for part in (secret, secret[:12], secret[-10:], "p4ss-Lab77", "4f9Qw2Lx8Z"):
        assert part not in output, "%s shows the misplaced secret" % " ".join(["site.yml"] + verbosity)
