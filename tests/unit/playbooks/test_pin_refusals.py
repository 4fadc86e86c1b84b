# SPDX-License-Identifier: GPL-3.0-or-later
"""The pin role's refusals as playbooks/pin.yml runs them, on a one-host inventory (local connection),
with test doubles for what needs Docker or a load generator:

- community.docker's pull, push and export: a collection of the same name (docker_image_pull answers
  with a new digest of the tag) placed before the real one on the collections path;
- the GPU: preflight_nvidia_smi names a path where nothing is installed, so the canary's proof fails
  in preflight (gpu_info), as it fails on a host that cannot run the candidate;
- the load generator: INFEROPS_LOADGEN_VENV is a directory whose ``bin/python`` writes the sweep's
  results.json at the throughput the test asks for (scripts/run-loadgen's shape).

A canary whose proof failed fails with the evidence and the lock stays as it was; a known-bad digest
is refused before anything is deployed; a benchmark slower than the lock's figures by more than
pin_perf_threshold fails the canary; one within it passes."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys

import yaml
from role_runs import collections_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TAG = "vllm/vllm-openai:cu130-nightly"
LOCKED = "sha256:" + "3d" * 32
NEW = "sha256:" + "5e" * 32
LOCK = {"inferops_serving_image_lock": {"images": {TAG: {
    "digest": LOCKED, "pinned_at": "2026-11-01T10:00:00Z",
    "evidence": {"bench": {"concurrency": 8, "output_tok_s": 100.0}}}}}}

PULL = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec=dict(name=dict(type="str"), tag=dict(type="str", default="latest"),
                                          pull=dict(type="str"), docker_host=dict(type="str"),
                                          platform=dict(type="str")), supports_check_mode=True)
module.exit_json(changed=False, actions=[], image={
    "Id": "sha256:" + "1d" * 32, "Os": "linux", "Architecture": "arm64",
    "RepoDigests": ["vllm/vllm-openai@%s"]})
''' % NEW
UNUSED = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={}, supports_check_mode=True)
module.fail_json(msg="this test double is not to be run")
'''
# scripts/run-loadgen sweep ... --out DIR: the results.json of 3 runs at the levels asked, at TOK_S.
LOADGEN = '''#!%s
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
levels = [int(level) for level in args[args.index("--levels") + 1].split(",")]
tok_s = float(os.environ["PIN_TEST_TOK_S"])
level = lambda concurrency: {"concurrency": concurrency, "output_tok_s": tok_s, "ttft_p50_s": 1.0, "ttft_p99_s": 1.5,
                             "itl_p50_ms": 60.0, "itl_p99_ms": 90.0, "requests_per_s": 1.0}
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "results.json"), "w") as handle:
    json.dump({"plan": {"workload": "chat", "levels": levels, "runs": 3, "seed": 1},
               "endpoint": {"url": "http://127.0.0.1:8101", "engine": "vllm", "model": "m"},
               "runs": [{"run": run, "levels": [level(c) for c in levels]} for run in (1, 2, 3)]}, handle)
''' % sys.executable


def executable(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def doubles(tmp_path):
    """The community.docker double and the load generator's venv double; their directories."""
    modules = tmp_path / "collections" / "ansible_collections" / "community" / "docker" / "plugins" / "modules"
    executable(modules / "docker_image_pull.py", PULL)
    for name in ("docker_image", "docker_image_export"):
        executable(modules / ("%s.py" % name), UNUSED)
    venv = tmp_path / "loadgen"
    executable(venv / "bin" / "python", LOADGEN)
    executable(venv / "bin" / "aiperf", "#!/bin/sh\nexit 0\n")
    with open(os.path.join(ROOT, "requirements-loadgen.txt"), "rb") as handle:
        (venv / ".requirements.sha256").write_text(hashlib.sha256(handle.read()).hexdigest() + "\n")
    return tmp_path / "collections", venv


def inventory(tmp_path, **host_vars):
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"spark-1": dict({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **host_vars)}}}))
    (inv / "group_vars" / "all" / "main.yml").write_text(yaml.safe_dump({
        "server_profile": "gb10-nvfp4-mtp-latency", "inferops_become": False,
        "preflight_nvidia_smi": str(tmp_path / "no-driver" / "nvidia-smi")}))
    (inv / "group_vars" / "all" / "image_lock.yml").write_text(yaml.safe_dump(LOCK))
    return inv


def run(tmp_path, inv, playbook, tok_s=None):
    collections, venv = doubles(tmp_path)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_COLLECTIONS_PATH=collections_path(collections),
               INFEROPS_LOADGEN_VENV=str(venv), PIN_TEST_TOK_S=str(tok_s or 0))
    command = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([command, str(playbook), "-i", str(inv / "hosts.yml")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    return result, " ".join((result.stdout + result.stderr).replace("''", "'").split())


def files(inv):
    return {path: (inv / "group_vars" / "all" / path).read_text()
            for path in sorted(os.listdir(inv / "group_vars" / "all"))}


def test_a_canary_whose_proof_failed_fails_and_the_lock_is_unchanged(tmp_path):
    inv = inventory(tmp_path)
    before = files(inv)
    result, out = run(tmp_path, inv, os.path.join(ROOT, "playbooks", "pin.yml"))
    assert result.returncode != 0, out[-3000:]
    assert "TASK [inferops.serving.pin : Fail the canary with the evidence]" in out, out[-3000:]
    assert "%s@%s failed on canary spark-1: " % (TAG, NEW) in out and "The lock is unchanged." in out
    assert "nvidia-smi not found on this host" in out
    # Nothing was mirrored, archived or locked, and a host that cannot run it says nothing about the image.
    assert "Write the lock with the validated digest" not in out and "Mirror the digest" not in out
    assert files(inv) == before
    assert "failed=1" in out


def test_a_known_bad_digest_is_refused_before_anything_is_deployed(tmp_path):
    inv = inventory(tmp_path)
    known_bad = [{"repository": "vllm/vllm-openai", "digest": NEW, "signature": "crash_under_soak",
                  "symptom": "Soak: died after 300 requests", "source": "playbooks/pin.yml on canary spark-2"}]
    (inv / "group_vars" / "all" / "known_bad_images.yml").write_text(yaml.safe_dump({"inferops_known_bad_images": known_bad}))
    before = files(inv)
    result, out = run(tmp_path, inv, os.path.join(ROOT, "playbooks", "pin.yml"))
    assert result.returncode != 0, out[-3000:]
    refusal = out.rsplit("TASK [inferops.serving.pin : Refuse a known-bad digest]", maxsplit=1)[-1]
    assert "fatal: [spark-1]: FAILED!" in refusal, out[-3000:]
    assert "%s now resolves to %s, which is on the known-bad list: " % (TAG, NEW) in refusal
    assert "crash_under_soak" in refusal and "Nothing was deployed; wait for a newer build of the tag." in refusal
    # Nothing was deployed: the proof (preflight first) never started.
    assert "Check the canary against the candidate" not in out and "preflight" not in out
    assert files(inv) == before


BENCH = """
- name: The pin role's benchmark of the candidate on spark-1
  hosts: serving
  gather_facts: false
  tasks:
    - name: Plan the deployment
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - name: Decide what to do with the tag's new digest
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: digest}
    - name: Benchmark it against the lock's figures
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: bench}
    - name: Say the candidate passed the benchmark
      ansible.builtin.debug: {msg: "benchmark passed: {{ __pin_bench.state }}"}
    - name: Write the lock with its figures
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: lock}
"""


def bench(tmp_path, tok_s):
    inv = inventory(tmp_path, pin_bench_concurrency=8, pin_bench_results_dir=str(tmp_path / "bench" / "{host}"))
    play = tmp_path / "bench.yml"
    play.write_text(BENCH)
    return run(tmp_path, inv, play, tok_s)


def test_a_candidate_slower_than_the_locks_figures_is_refused(tmp_path):
    result, out = bench(tmp_path, 70.0)
    assert result.returncode != 0, out[-3000:]
    refusal = out.rsplit("TASK [inferops.serving.pin : Refuse a slower digest]", maxsplit=1)[-1].split("PLAY RECAP")[0]
    assert "fatal: [spark-1]: FAILED!" in refusal, out[-3000:]
    assert "refused (throughput): output 70.0 tok/s at concurrency 8 vs the baseline's 100.0 tok/s (-30.0 %" in refusal
    assert "benchmark passed" not in out
    assert json.loads((tmp_path / "bench" / "spark-1" / "summary.json").read_text())["runs_used"] == [2, 3]


def test_a_candidate_within_the_threshold_passes_the_benchmark(tmp_path):
    result, out = bench(tmp_path, 95.0)
    assert result.returncode == 0, out[-3000:]
    assert "accepted: output 95.0 tok/s at concurrency 8 vs the baseline's 100.0 tok/s (-5.0 %" in out
    assert "benchmark passed: accepted" in out
    # Its figures are the next pin's baseline.
    entry = yaml.safe_load((tmp_path / "inv" / "group_vars" / "all" / "image_lock.yml").read_text())[
        "inferops_serving_image_lock"]["images"][TAG]
    bench_figures = entry["evidence"]["bench"]
    assert entry["digest"] == NEW and bench_figures["output_tok_s"] == 95.0 and bench_figures["concurrency"] == 8
    assert bench_figures["runs"] == 3 and bench_figures["verdict"].startswith("accepted: output 95.0 tok/s")


LOCK_PLAY = """
- name: The pin role's lock entry of the candidate on spark-1 (its tasks file alone; main runs it for 'lock')
  hosts: serving
  gather_facts: false
  tasks:
    - name: Plan the deployment
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - name: Decide what to do with the tag's new digest
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: digest}
    - name: Write the lock
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: lock}
"""


def test_the_lock_entry_records_the_candidate_and_keeps_the_baseline(tmp_path):
    inv = inventory(tmp_path)
    play = tmp_path / "lock.yml"
    play.write_text(LOCK_PLAY)
    result, out = run(tmp_path, inv, play)
    assert result.returncode == 0, out[-3000:]
    entry = yaml.safe_load((inv / "group_vars" / "all" / "image_lock.yml").read_text())[
        "inferops_serving_image_lock"]["images"][TAG]
    assert entry["digest"] == NEW and entry["previous_digest"] == LOCKED
    assert entry["evidence"]["canary"] == "spark-1" and entry["evidence"]["profile"] == "gb10-nvfp4-mtp-latency"
    assert entry["evidence"]["bench"] == {"concurrency": 8, "output_tok_s": 100.0}
    assert entry["platforms"]["linux/arm64"]["validated_on"] == "spark-1" and "mirror" not in entry
