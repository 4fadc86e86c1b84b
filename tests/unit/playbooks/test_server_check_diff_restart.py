# SPDX-License-Identifier: GPL-3.0-or-later
"""``site.yml --check --diff`` tells the operator, per host, whether its engine restarts on the real
run and why: the server role (its main entry point, as site.yml runs it) run by ansible-playbook on
this machine in check mode with diff, the serving host's Docker behind the Docker Engine API double
(docker_engine_double.py), no lab.

The container runs an older plan of the same profile: another image, ``--max-num-seqs 4`` where
the plan says 32, ``--enforce-eager`` that the plan no longer has, and that plan's spec label. The
role prints ``restart:`` with those lines, and Docker saw no change. Without ``--diff`` it prints
nothing of the kind. (The check run goes on to the pull's image read, which the double does not
serve; what comes after the line is other tests' business.)
"""
from __future__ import annotations

import re

from docker_engine_double import DockerEngine, container, serve
from role_runs import run, server_host

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

PROFILE = "gb10-nvfp4-mtp-throughput"  # max-num-seqs 32
# The role's plan options that shape the command: the engine's graceful shutdown (its default).
OLDER = plan(PROFILE, {"name": "engine", "port": 8101, "shutdown_timeout": 60},
             overrides={"args": {"max-num-seqs": 4, "enforce-eager": True}})


def converge(tmp_path, *args):
    older = container("vllm/vllm-openai:older", labels=OLDER["spec"]["labels"])
    older["Config"]["Cmd"] = list(OLDER["spec"]["command"])
    docker = DockerEngine({"engine": older})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    inventory = {"serving": {"hosts": {"spark-1": server_host(tmp_path, docker_host, PROFILE)}}}
    plays = [{"name": "Serve", "hosts": "serving", "gather_facts": False,
              "roles": [{"role": "inferops.serving.server"}]}]
    try:
        result = run(tmp_path, inventory, plays, "--check", *args)
    finally:
        stop()
    return result, docker


def debug_records(result):
    return [r for r in result.records if r["action"] == "ansible.builtin.debug" and "restart" in str(r["args"])]


def test_check_diff_prints_the_restart_and_the_changed_flags(tmp_path):
    result, docker = converge(tmp_path, "--diff")
    shown = re.findall(r'ok: \[spark-1\] => \{ "msg": "(restart: [^"]*)" \}', result.output)
    assert len(shown) == 1, result.output[-4000:]
    assert re.fullmatch(r"restart: image vllm/vllm-openai:older -> vllm/vllm-openai@sha256:[0-9a-f]{64}; "
                        r"--max-num-seqs 4 -> 32; --enforce-eager removed \(out of service up to \d+ s\)",
                        shown[0]), shown  # only what changed: not the flags the two plans share
    assert docker.changes() == [] and docker.containers["engine"]["State"]["Running"]


def test_check_without_diff_prints_no_restart_lines(tmp_path):
    result, docker = converge(tmp_path)
    assert "restart:" not in result.output and "no restart" not in result.output, result.output[-4000:]
    assert [r["status"] for r in debug_records(result)] == ["skipped"], debug_records(result)
    assert docker.changes() == []
