# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure, tune and gate on performance in the lab (issue 12).

One simulated DGX Spark (``bm-spark``, port 8151, the GB10 throughput profile: vLLM NVFP4 + MTP k=2,
max-num-seqs 32) made by tests/lab/fleet.yml from a temporary inventory (its lock, known-bad list
and tuned overlay live there, never in the repository's inventories), converged with site.yml, then:

* playbooks/benchmark.yml: a chat 512/256 sweep at concurrency 1 and 32, the figures within 10 % of
  seed 000's (24.2 single stream; 131.3 tok/s at 32, the simulator's calibration), the table and plot;
* playbooks/tune.yml with a TTFT objective that seed 000's data says fits 16 (mean TTFT 7.7 s at
  16, 9.1 s at 32; the simulator: 4.5 s and 9.3 s): candidates 8, 16, 32 at k=2, the overlay
  recommends 16, lints, then deploys with site.yml and is proven with the plan's derived
  expectations (max_num_seqs 16);
* playbooks/pin.yml -e inferops_pin_bench=true: a good nightly pinned with its figures (no baseline
  yet: recorded), a nightly 30 % slower (tests/lab/nightly.sh build VERSION slow_nightly 0.30)
  refused with both figures and on the known-bad list as slower_than_baseline, the canary back on
  the deployment before it; a nightly 5 % slower (within the 10 % threshold) pinned with its figures.

The load generator (AIPerf, .venv-loadgen) is created by scripts/loadgen-env on first use (3-5
minutes). Levels are the performance model's real speed (a request of 256 tokens takes ~70 s at 32
concurrent), so this file is long: about 60 minutes (benchmark ~22, tune ~20, pin ~18), estimated,
not measured, from the per-level cost measured by tests/bench (the level's duration + its warm-up
requests + up to 30 s of grace + 20-40 s of AIPerf's start).
INFEROPS_LAB_BENCH_SECONDS shortens the benchmark's levels (default 120).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "tests", "lab")
DOCKER = "/usr/bin/docker"
NIGHTLY = os.path.join(LAB, "nightly.sh")
TAG = "cu130-nightly"
IMAGE = "vllm/vllm-openai:" + TAG
HOST, PORT = "bm-spark", 8151
SECONDS = os.environ.get("INFEROPS_LAB_BENCH_SECONDS", "120")
# Seed 000's per-level detail, maxseq=32 row (guidellm 0.6.0, chat 512/256, output tok/s by client
# concurrency): 23.6 at 1, 47.1 at 4, 131.3 at 32.
SEED000 = {1: 23.6, 4: 47.1, 32: 131.3}

# About an hour in the lab: `make bench` runs it, `make test` does not (its short version is
# tests/bench/test_benchmark_playbook.py).
pytestmark = [pytest.mark.lab, pytest.mark.heavy]

GROUP_VARS = {
    "inferops_become": False,
    "lab_target_image": "inferops-lab/target:bookworm",
    "lab_hardware": "gb10",
    "container_toolkit_repository_url": "http://127.0.0.1:5080/libnvidia-container",
    "container_toolkit_version": "1.17.8-1",
    "container_toolkit_daemon_json_settings": {"storage-driver": "vfs", "iptables": False, "bridge": "none"},
    "server_registry_prefix": "127.0.0.1:5000",
    "server_network_mode": "host",
    "server_ready_timeout": 180,
    "server_request_timeout": 60,
    "preflight_disk_free_gib": 2,
    "preflight_disk_free_gib_cached": 1,
    "preflight_meminfo_path": "/etc/inferops-lab/meminfo",
    "server_profile": "gb10-nvfp4-mtp-throughput",
    "server_profile_overrides": {"args": {"host": "127.0.0.1"}},
    # The engines listen on this machine's loopback (host networking); the load generator runs here.
    "inferops_bench_address": "127.0.0.1",
}


def run(args, check=True, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s"
                             % (args, result.returncode, result.stdout[-6000:], result.stderr[-3000:]))
    return result


def playbook(inventory, path, *extra, check=True):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ["PATH"])
    return run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", inventory, path, *extra],
               check=check, cwd=ROOT, env=env)


def exec_on(host, script, check=True):
    return run([DOCKER, "exec", host, "bash", "-c", script], check=check)


def container_args(host):
    return exec_on(host, "docker inspect -f '{{json .Args}}' inferops-serving").stdout


def container_image(host):
    return exec_on(host, "docker inspect -f '{{.Config.Image}}' inferops-serving").stdout.strip()


def lock(inventory):
    with open(os.path.join(inventory, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["inferops_serving_image_lock"]["images"]


def known_bad(inventory):
    path = os.path.join(inventory, "group_vars", "all", "known_bad_images.yml")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["inferops_known_bad_images"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    run([os.path.join(LAB, "lab.sh"), "up"])
    run([os.path.join(ROOT, "scripts", "loadgen-env")], timeout=1800)
    original = run([NIGHTLY, "digest", TAG]).stdout.strip()
    inventory = str(tmp_path_factory.mktemp("bench-inventory"))
    os.makedirs(os.path.join(inventory, "group_vars", "all"))
    hosts = {"all": {"children": {"serving": {
        "vars": {"ansible_connection": "community.docker.docker"},
        "children": {"spark": {"hosts": {HOST: {"server_port": PORT}}}}}}}}
    with open(os.path.join(inventory, "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(hosts, handle)
    with open(os.path.join(inventory, "group_vars", "serving.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(GROUP_VARS, handle)
    shutil.copy(os.path.join(ROOT, "inventories", "lab", "group_vars", "all", "image_lock.yml"),
                os.path.join(inventory, "group_vars", "all", "image_lock.yml"))
    run([DOCKER, "rm", "-f", HOST], check=False)
    try:
        playbook(inventory, os.path.join(LAB, "fleet.yml"))
        playbook(inventory, "site.yml")
        yield inventory
    finally:
        run([NIGHTLY, "move", TAG, original], check=False)
        run([DOCKER, "rm", "-f", HOST], check=False)


def test_benchmark_reproduces_seed000s_curve(fleet, tmp_path):
    """About 22 minutes: 2 levels x 3 runs x (120 s + warm-up + grace + AIPerf's start)."""
    out = tmp_path / "results"
    result = playbook(fleet, "playbooks/benchmark.yml", "-e", "inferops_bench_levels=1,32",
                      "-e", "inferops_bench_runs=3", "-e", "inferops_bench_duration=" + SECONDS,
                      "-e", "inferops_bench_results_dir=%s/{host}" % out)
    host = out / HOST
    summary = json.loads((host / "summary.json").read_text())
    assert summary["runs_used"] == [2, 3] and summary["warmup_dropped"]
    got = {level["concurrency"]: level["output_tok_s"]["mean"] for level in summary["levels"]}
    for concurrency, seed in ((1, SEED000[1]), (32, SEED000[32])):
        assert abs(got[concurrency] / seed - 1) <= 0.10, (concurrency, got, SEED000)
    saturated = summary["levels"][-1]
    # Seed 000: KV-bound at 32 (68.9 % of the cache), MTP k=2 accepted 0.67 / 0.36 at temperature 1.0.
    assert 0.55 <= saturated["kv_cache_usage"]["mean"] <= 0.80
    assert len(saturated["acceptance_per_pos"]["mean"]) == 2
    table = (host / "table.md").read_text()
    assert table.startswith("Profile gb10-nvfp4-mtp-throughput (max-num-seqs 32)")
    assert "| 131.3 |" in table and "| 23.6 |" in table
    assert (host / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ASYNC POLL on %s" % HOST in result.stdout


def test_tune_recommends_16_for_a_ttft_objective_and_the_overlay_deploys(fleet, tmp_path):
    """About 20 minutes: 3 candidates (8, 16, 32 at k=2) deployed, each 2 runs x 60 s, then site.yml twice.

    The objective: median TTFT <= 8.5 s. Seed 000 measured 6.6 s at 8, 7.7 s at 16 and 9.1 s at 32
    (means at saturation); the simulator's calibration gives 2.3 s, 4.5 s and 9.3 s: 8 and 16 meet it,
    32 does not, and 16 has the more tok/s (seed 000: 99.6 against 73.5). 32's margin is ~9 % (the
    simulator's median, not its mean): if it passes, lower the bound towards 16's figure in tune.json."""
    overlay = os.path.join(fleet, "host_vars", HOST, "tuned.yml")
    result = playbook(fleet, "playbooks/tune.yml", "-l", HOST, "-e", "inferops_tune_ttft_p50_s=8.5",
                      "-e", "inferops_tune_max_num_seqs=8,16,32", "-e", "inferops_tune_k=2",
                      "-e", "inferops_tune_runs=2", "-e", "inferops_tune_duration=60",
                      "-e", "inferops_tune_results_dir=%s/{host}" % tmp_path)
    assert "max_num_seqs=16" in result.stdout
    with open(overlay, encoding="utf-8") as handle:
        written = yaml.safe_load(handle)
    overrides = written["server_profile_overrides"]
    assert overrides["args"]["max-num-seqs"] == 16 and overrides["args"]["host"] == "127.0.0.1"
    evidence = written["server_profile_overrides_evidence"]
    assert evidence["chosen"]["max_num_seqs"] == 16 and evidence["objective"] == {"ttft_p50_s": 8.5}
    assert [r["config"]["max_num_seqs"] for r in evidence["choose"]["rejected"]] == [32]
    decision = json.loads((tmp_path / HOST / "tune.json").read_text())
    assert len(decision["entries"]) == 3 and decision["failed"] == []
    # tune.yml returned the host to its inventory's deployment (max-num-seqs 32) ...
    assert '"--max-num-seqs","32"' in container_args(HOST).replace(" ", "")
    # ... and the overlay, read by the inventory now, deploys and is proven with the plan's expectations.
    # (site.yml's backend assertion checks the engine's log against expect.max_num_seqs = 16.)
    playbook(fleet, "site.yml", "-l", HOST)
    assert '"--max-num-seqs","16"' in container_args(HOST).replace(" ", "")
    os.remove(overlay)
    playbook(fleet, "site.yml", "-l", HOST)


def pin_bench(inventory, *extra, check=True):
    # The reference concurrency 4 (seed 000, maxseq=32: 47.1 tok/s): a 256-token request takes ~22 s,
    # so 30 s levels complete many; 3 runs, R1 the warm-up. About 4 minutes a pin.
    return playbook(inventory, "playbooks/pin.yml", "-e", "inferops_pin_image=" + IMAGE,
                    "-e", "inferops_pin_bench=true", "-e", "inferops_pin_bench_concurrency=4",
                    "-e", "inferops_pin_bench_duration=30", *extra, check=check)


def test_pin_refuses_a_nightly_30_percent_slower_and_pins_one_within_the_threshold(fleet):
    """About 18 minutes: three pins with a benchmark (a baseline, a refusal, an acceptance) and three
    image builds."""
    good = run([NIGHTLY, "build", "0.19.3rc3.dev1"]).stdout.strip()
    run([NIGHTLY, "move", TAG, good])
    first = pin_bench(fleet)
    assert "the lock has no baseline figures for this image" in first.stdout
    baseline = lock(fleet)[IMAGE]["evidence"]["bench"]
    assert lock(fleet)[IMAGE]["digest"] == good
    assert baseline["concurrency"] == 4 and abs(baseline["output_tok_s"] / SEED000[4] - 1) <= 0.10

    slow = run([NIGHTLY, "build", "0.19.3rc3.dev2", "slow_nightly", "0.30"]).stdout.strip()
    run([NIGHTLY, "move", TAG, slow])
    before = container_image(HOST)
    refused = pin_bench(fleet, check=False)
    assert refused.returncode != 0
    message = re.search(r"refused \(throughput\): output ([\d.]+) tok/s at concurrency 4 vs the baseline's ([\d.]+) tok/s",
                        refused.stdout)
    assert message, refused.stdout[-4000:]
    assert float(message.group(2)) == pytest.approx(baseline["output_tok_s"], abs=0.05)
    assert float(message.group(1)) < 0.9 * float(message.group(2))
    entries = [e for e in known_bad(fleet) if e.get("digest") == slow]
    assert entries and entries[0]["signature"] == "slower_than_baseline", known_bad(fleet)
    assert "vs the baseline's" in entries[0]["symptom"]
    assert lock(fleet)[IMAGE]["digest"] == good
    assert container_image(HOST) == before  # back on the deployment before the candidate

    close = run([NIGHTLY, "build", "0.19.3rc3.dev3", "slow_nightly", "0.05"]).stdout.strip()
    run([NIGHTLY, "move", TAG, close])
    pin_bench(fleet)
    entry = lock(fleet)[IMAGE]
    assert entry["digest"] == close
    assert entry["evidence"]["bench"]["verdict"].startswith("accepted: output")
    assert entry["evidence"]["bench"]["output_tok_s"] < baseline["output_tok_s"]
