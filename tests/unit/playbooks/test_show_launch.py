# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/show_launch.yml as a user runs it: no host, a script that diffs clean against the seed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.serving.tests.unit.launch_scripts import (
    flag_pairs,
    parse_docker_run,
    without_graceful_stop,
    without_weights_pin,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SEEDS = os.path.join(ROOT, "tests", "unit", "fixtures", "seed_scripts")


def show_launch(*extra):
    # JSON results: a message is one line on every ansible-core (YAML wraps it by version).
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    # Without -i, no inventory: ansible.cfg's default is the lab's, whose lock (written by lab.sh up)
    # pins the lab Hub's model commits, which a profile's script must not depend on.
    inventory = [] if "-i" in extra else ["-i", ","]
    return subprocess.run([playbook, "playbooks/show_launch.yml"] + inventory + list(extra), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_writes_the_seed_launch_script(tmp_path):
    dest = tmp_path / "launch.sh"
    result = show_launch("-e", "profile=gb10-nvfp4-mtp-throughput", "-e", "dest=%s" % dest)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.access(dest, os.X_OK)
    ours = without_graceful_stop(without_weights_pin(parse_docker_run(dest.read_text())))
    with open(os.path.join(SEEDS, "docker-vllm-nemotron-3-super-120b-nvfp4-mtp-throughput.sh.txt")) as handle:
        theirs = parse_docker_run(handle.read())
    assert flag_pairs(ours["argv"]) == flag_pairs(theirs["argv"])
    bash = subprocess.run(["bash", "-n", str(dest)], capture_output=True, text=True, check=False)
    assert bash.returncode == 0, bash.stderr


def test_without_a_profile_lists_them_one_per_line():
    # The README: "lists the profiles". A listing is not a failure (it used to exit 2).
    result = show_launch()
    assert result.returncode == 0, result.stdout
    assert "\ng7e-fp8-sglang\ng7e-fp8-sglang-eagle\ngb10-nvfp4-fallback\ngb10-nvfp4-mtp-latency\n" in result.stdout


def test_a_hosts_script_prints_as_a_script_to_paste(tmp_path):
    # Outside the repository the default callback prints results as JSON: the script used to come
    # out as a JSON list ("\t--gpus all \\"). The host is never contacted (nothing listens on port 1).
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("serving:\n  hosts:\n    spark-01:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                         "      server_profile: gb10-nvfp4-mtp-latency\n")
    dest = tmp_path / "launch.sh"
    written = show_launch("-i", str(inventory), "-e", "host=spark-01", "-e", "dest=%s" % dest)
    assert written.returncode == 0, written.stdout
    printed = show_launch("-i", str(inventory), "-e", "host=spark-01")
    assert printed.returncode == 0, printed.stdout
    script = dest.read_text()
    assert "\t--gpus all \\\n" in script
    assert script in printed.stdout


def test_unknown_profile_is_refused_with_the_list():
    result = show_launch("-e", "profile=gb10-latency")
    assert result.returncode != 0
    assert "unknown profile 'gb10-latency'; available profiles:" in result.stdout


@pytest.mark.parametrize("overrides,expected", [
    ('{"overrides": {"args": {"max-num-seqs": 8}}}', "--max-num-seqs 8"),
    ('{"overrides": {"args": {"max_num_seqs": 8}}}', "--max-num-seqs 8"),
])
def test_overrides_reach_the_script(tmp_path, overrides, expected):
    dest = tmp_path / "launch.sh"
    result = show_launch("-e", "profile=gb10-nvfp4-mtp-latency", "-e", "dest=%s" % dest, "-e", overrides)
    assert result.returncode == 0, result.stdout
    assert expected in dest.read_text()


def test_lint_error_stops_before_writing(tmp_path):
    dest = tmp_path / "launch.sh"
    result = show_launch("-e", "profile=gb10-nvfp4-mtp-latency", "-e", "dest=%s" % dest,
                         "-e", '{"overrides": {"args": {"max-num-seqz": 8}}}')
    assert result.returncode != 0
    assert "max-num-seqs" in result.stdout  # the nearest real flag is suggested
    assert not dest.exists()
