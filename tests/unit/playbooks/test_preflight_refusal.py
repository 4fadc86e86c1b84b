# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight role's refusal (tasks/host.yml) as site.yml runs it, on this machine: a profile that
fails its lint on a host that cannot serve it is refused with both reasons in one run (it used to
stop at the lint); a host that can serve its profile runs no refusal task (it is skipped).

gpu_info's result is given as the module returns it on the lab's hosts (the shapes of
tests/unit/plugins/plugin_utils/test_preflight_checks.py): no nvidia-smi is needed here.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# The nightly prefix of data/known_bad_images.yml (the GB10 field report's crash on the first MTP request).
KNOWN_BAD = "sha256:473de04c" + "0" * 56
GOOD = "sha256:" + "a" * 64
# gpu_info on the lab's GB10 and on the g7e's eight RTX PRO 6000.
GB10 = {"count": 1, "gpus": [{"index": 0, "name": "NVIDIA GB10", "compute_capability": "12.1",
                              "memory_total_mib": None, "driver_version": "580.95.05"}],
        "driver_version": "580.95.05", "unified_memory": True, "mem_total_kib": 127506252, "mem_available_kib": 123000000,
        "memory_fraction": 0.8, "memory_needed_kib": 102005001, "memory_short": False,
        "cache_disk": {"path": "/models", "free_kib": 300 * 1048576}, "model_cached": False,
        "container_running": False}
RTX = {"count": 8, "gpus": [{"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                             "compute_capability": "12.0", "memory_total_mib": 97887} for i in range(8)],
       "driver_version": "580.126.09", "unified_memory": False, "mem_total_kib": 2 * 1024 ** 3,
       "mem_available_kib": 2 * 1024 ** 3, "cache_disk": {"path": "/models", "free_kib": 300 * 1048576},
       "model_cached": False, "container_running": False}
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - ansible.builtin.include_role: {name: inferops.serving.preflight, tasks_from: lint}
    - ansible.builtin.include_role: {name: inferops.serving.preflight, tasks_from: host}
"""


def preflight(tmp_path, digest, gpu, **variables):
    (tmp_path / "play.yml").write_text(PLAY)
    extra = {"server_profile": "gb10-nvfp4-mtp-throughput", "server_model_cache_dir": "/models",
             "server_image_lock": {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": digest}}},
             "__preflight_gpu": gpu, "ansible_python_interpreter": sys.executable, **variables}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, str(tmp_path / "play.yml"), "-i", "localhost,", "-c", "local",
                           "-e", json.dumps(extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_known_bad_digest_on_the_wrong_hardware_is_refused_with_both_reasons_in_one_run(tmp_path):
    result = preflight(tmp_path, KNOWN_BAD, RTX)
    assert result.returncode != 0
    out = result.stdout
    assert "Profile gb10-nvfp4-mtp-throughput fails its lint on localhost:" in out, out[-3000:]
    assert "is on the known-bad list: cuda_illegal_memory_access" in out
    assert "localhost cannot serve profile gb10-nvfp4-mtp-throughput:" in out
    # ansible-core 2.18's YAML callback folds long lines
    assert "needs NVIDIA GB10 GPUs, nvidia-smi shows NVIDIA RTX PRO 6000" in " ".join(out.split())


def test_the_wrong_hardware_alone_names_only_the_host_checks(tmp_path):
    result = preflight(tmp_path, GOOD, RTX)
    assert result.returncode != 0
    assert "localhost cannot serve profile gb10-nvfp4-mtp-throughput:" in result.stdout, result.stdout[-3000:]
    assert "fails its lint on localhost" not in result.stdout


def test_a_host_that_can_serve_its_profile_skips_the_refusal(tmp_path):
    result = preflight(tmp_path, GOOD, GB10)
    assert result.returncode == 0, result.stdout[-3000:]
    block = result.stdout.split("TASK [inferops.serving.preflight : Check the host against profile")[1]
    assert re.match(r"[^\n]*\n(skipping: \[localhost\])", block), block[:500]
    recap = re.search(r"^localhost\s+: ok=(\d+)\s+changed=0\s+unreachable=0\s+failed=0\s+skipped=(\d+)",
                      result.stdout, re.M)
    assert recap, result.stdout[-2000:]


def test_a_digest_a_rollback_left_is_refused_naming_the_rollback_and_the_fix(tmp_path):
    # What playbooks/rollback.yml recorded in the inventory's known-bad list (plugins/plugin_utils/_rollback.py).
    entry = {"id": "rolled-back:gb10:" + GOOD, "digest": GOOD, "hardware_group": "gb10",
             "signature": "rolled_back", "symptom": "rolled back on spark-1: p99 doubled",
             "source": "playbooks/rollback.yml on spark-1, 2026-12-05T11:30:00Z",
             "rolled_back": {"host": "spark-1", "at": "2026-12-05T11:30:00Z", "reason": "p99 doubled",
                             "from": "vllm/vllm-openai@" + GOOD, "to": "vllm/vllm-openai@sha256:" + "c" * 64,
                             "file": "/inv/group_vars/all/known_bad_images.yml"}}
    result = preflight(tmp_path, GOOD, GB10, inferops_known_bad_images=[entry], inferops_hardware_group="gb10")
    # ansible-core 2.18 prints the message as a single-quoted YAML scalar (a quote inside it doubled).
    out = " ".join(result.stdout.split()).replace("''", "'")
    assert result.returncode != 0, out[-3000:]
    assert "localhost cannot serve profile gb10-nvfp4-mtp-throughput:" in out, out[-3000:]
    assert ("playbooks/rollback.yml rolled back from vllm/vllm-openai@%s on spark-1 at 2026-12-05T11:30:00Z "
            "(p99 doubled), hardware group gb10, so site.yml does not deploy it again" % GOOD) in out, out[-3000:]
    assert ("delete the entry with id 'rolled-back:gb10:%s' from inferops_known_bad_images in "
            "/inv/group_vars/all/known_bad_images.yml" % GOOD) in out
    assert "fails its lint on localhost" not in out
    # Another hardware group's record does not refuse this host.
    result = preflight(tmp_path, GOOD, GB10, inferops_known_bad_images=[entry], inferops_hardware_group="g7e")
    assert result.returncode == 0, result.stdout[-3000:]
