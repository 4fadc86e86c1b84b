# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/tune.yml refuses to start without a latency objective, and names the candidates it would
deploy when given one with a k for a profile without draft tokens: both before anything is deployed
(a one-host inventory on a local connection; nothing here reaches a Docker engine)."""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def tune(tmp_path, *extra, profile_vars=None):
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"serving": {"hosts": {"spark-1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (inv / "group_vars" / "serving.yml").write_text(yaml.safe_dump(dict(
        {"server_profile": "gb10-nvfp4-mtp-throughput", "inferops_become": False}, **(profile_vars or {}))))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "playbooks/tune.yml", "-i", str(inv / "hosts.yml"),
                           "-e", "benchmark_tune_results_dir=%s/{host}" % tmp_path, *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_tune_without_an_objective_deploys_nothing_and_says_how(tmp_path):
    result = tune(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "No latency objective: give at least one bound, e.g. -e benchmark_tune_ttft_p99_s=8" in out
    assert "Deploy and measure" not in out and "tuned.yml" not in os.listdir(tmp_path)


def test_tune_refuses_bad_candidates_before_deploying(tmp_path):
    result = tune(tmp_path, "-e", "benchmark_tune_ttft_p99_s=8", "-e", "benchmark_tune_max_num_seqs=four")
    # As the YAML result format prints it on any ansible-core: folded lines, '' for a quote (<= 2.18).
    out = " ".join((result.stdout + result.stderr).replace("''", "'").split())
    assert result.returncode != 0
    assert "benchmark_tune_max_num_seqs: got 'four'; expected a list of whole numbers" in out
    assert "Deploy and measure" not in out
