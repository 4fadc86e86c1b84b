# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/status.yml after a rollback, no lab: the inventory's lock still names the digest the
rollback left, the host runs the one it returned to, and the known-bad list holds the rollback's
record (the entry _rollback.record writes): the host's row says ROLLED BACK with the rollback and
how to end it, not DRIFT. Without the record, the same host is DRIFT.

The serving host is this machine (local connection); its Docker is the Docker Engine API double
(docker_engine_double.py) holding the container the rollback left running. No engine listens on
its port, so the row also says NOT SERVING: the state's first words are what is asserted.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml
from docker_engine_double import DockerEngine, container, serve
from role_runs import ROOT, server_host

LEFT, TO = "sha256:" + "b" * 64, "sha256:" + "a" * 64
RECORD = {"id": "rolled-back:serving:" + LEFT, "digest": LEFT, "hardware_group": "serving", "signature": "rolled_back",
          "symptom": "rolled back on spark-1: p99 doubled", "source": "playbooks/rollback.yml on spark-1, 2026-12-05T11:30:00Z",
          "rolled_back": {"host": "spark-1", "at": "2026-12-05T11:30:00Z", "reason": "p99 doubled",
                          "from": "vllm/vllm-openai@" + LEFT, "to": "vllm/vllm-openai@" + TO,
                          "file": "/inv/group_vars/all/known_bad_images.yml"}}


def status(tmp_path, known_bad):
    docker = DockerEngine({"engine": container("vllm/vllm-openai@" + TO, {"inferops.serving.spec-sha256": "1" * 64})})
    docker_host, stop = serve(docker, tmp_path / "docker.sock")
    host = server_host(tmp_path, docker_host, "gb10-nvfp4-mtp-latency", server_port=1,
                       inferops_serving_image_lock={"images": {"vllm/vllm-openai:cu130-nightly": {"digest": LEFT}}},
                       inferops_known_bad_images=known_bad)
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"spark-1": host}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    try:
        return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                               "playbooks/status.yml", "-i", str(tmp_path / "hosts.yml")], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300, check=False).stdout
    finally:
        stop()


def test_a_rolled_back_host_is_rolled_back_not_drift(tmp_path):
    out = status(tmp_path, [RECORD])
    assert re.search(r'"spark-1 +\|[^"]*\| ROLLED BACK: rolled back from vllm/vllm-openai@%s on spark-1 at '
                     r'2026-12-05T11:30:00Z \(p99 doubled\), hardware group serving; site\.yml refuses' % LEFT, out), \
        out[-4000:]
    assert "delete the entry with id 'rolled-back:serving:%s'" % LEFT in " ".join(out.split())
    assert not re.search(r'"spark-1 +\|[^"]*\| DRIFT: ', out)


def test_without_the_record_the_same_host_is_drift(tmp_path):
    out = status(tmp_path, [])
    assert re.search(r'"spark-1 +\|[^"]*\| DRIFT: runs vllm/vllm-openai@%s' % TO, out), out[-4000:]
