# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/maintenance.yml takes hosts out of routing and back: without -e inferops_maintenance=out
or in, or without a -l naming the hosts (every serving host would leave routing), it stops before
it even connects (the hosts are SSH hosts on a loopback port nothing listens on); with both it goes
on to the named hosts only. ``out`` itself, on this machine against the Docker Engine API double
(docker_engine_double.py), stops the engine only when asked."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from docker_engine_double import DockerEngine, container, serve
from role_runs import run, server_host

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def maintenance(tmp_path, *args):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("serving:\n  hosts:\n"
                         + "".join("    spark-0%d:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                                   "      server_profile: gb10-nvfp4-mtp-latency\n" % n for n in (1, 2)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_RETRY_FILES_ENABLED="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "playbooks/maintenance.yml", "-i", str(inventory), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("step", [None, "drain", "OUT"])
def test_a_step_other_than_out_or_in_is_refused_naming_both(tmp_path, step):
    result = maintenance(tmp_path, "-l", "spark-01", *(["-e", "inferops_maintenance=%s" % step] if step else []))
    assert result.returncode != 0
    assert "run with -e inferops_maintenance=out (take the hosts out of routing) or -e inferops_maintenance=in" \
        in " ".join(result.stdout.split()), result.stdout
    assert "UNREACHABLE" not in result.stdout


@pytest.mark.parametrize("step", ["out", "in"])
def test_without_a_limit_every_host_is_refused_before_anything_is_touched(tmp_path, step):
    result = maintenance(tmp_path, "-e", "inferops_maintenance=%s" % step)
    assert result.returncode != 0
    assert "No -l: this would take every serving host (2) in or out of routing" in result.stdout, result.stdout
    assert "UNREACHABLE" not in result.stdout


def test_a_limit_and_a_step_go_on_to_the_named_hosts_only(tmp_path):
    result = maintenance(tmp_path, "-e", "inferops_maintenance=out", "-l", "spark-02")
    assert "No -l: this would" not in result.stdout and "run with -e inferops_maintenance" not in result.stdout
    assert "UNREACHABLE" in result.stdout and "spark-02" in result.stdout and "spark-01" not in result.stdout


def test_out_stops_the_engine_when_asked_and_keeps_it_otherwise(tmp_path):
    """``out`` on this machine (no gateway group: nothing to drain; no watchdog unit: nothing to
    hold) against the Docker Engine API double: with inferops_maintenance_stop_engine the serving
    container is stopped through the API, without it the engine keeps running."""
    for stop_engine, running in (("false", True), ("true", False)):
        docker = DockerEngine({"engine": container("vllm/vllm-openai:cu130-nightly")})
        socket = tmp_path / "docker.sock"
        docker_host, stop = serve(docker, socket)
        try:
            result = run(tmp_path, {"serving": {"hosts": {"spark-01": server_host(
                tmp_path, docker_host, "gb10-nvfp4-mtp-throughput")}}},
                [{"ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks", "maintenance.yml")}],
                "-l", "spark-01", "-e", "inferops_maintenance=out",
                "-e", "inferops_maintenance_stop_engine=%s" % stop_engine)
        finally:
            stop()
            socket.unlink()
        assert result.code == 0, result.output[-3000:]
        assert docker.containers["engine"]["State"]["Running"] is running, result.output[-2000:]
        assert "spark-01 is out of the gateway's routing, its watchdog held" in result.output
        assert ("its engine stopped" in result.output) is not running
