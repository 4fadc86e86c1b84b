# SPDX-License-Identifier: GPL-3.0-or-later
"""site.yml rolls the serving fleet per model group by default, and a failing host does not hide
the fleet: the plan play, the serving play (its hold, reach and rescue) and the summary play of
playbooks/serving.yml and playbooks/site.yml's last play, as the playbooks have them, on this machine
(local connection; site_rollout_plays.py says what stands in for the roles, the gateway and the
monitoring). Each host's plan is the real one, from the shipped profiles: the Sparks serve one
model (one model group), the g7e hosts another.
"""
from __future__ import annotations

import json
import re

from site_rollout_plays import run_site

SPARKS = {"spark-1": {}, "spark-2": {}, "spark-3": {}}


def fleet(g7e):
    return {"serving": {"children": {
        "spark": {"vars": {"server_profile": "gb10-nvfp4-mtp-throughput"}, "hosts": SPARKS},
        "g7e": {"vars": {"server_profile": "g7e-fp8-sglang"}, "hosts": g7e}}},
        "gateway": {"hosts": {"gw-1": {}}}, "monitoring": {"hosts": {"spark-1": {}}}}


def rows(stdout):
    """The summary table's host rows: {host: state} (the last cell)."""
    block = stdout.split("TASK [Print the serving summary]")[1]
    lines = json.loads(re.search(r'"msg": (\[.*?\n    \])', block, re.S).group(1))
    return {line.split(" | ")[0].strip(): line.split(" | ")[-1] for line in lines[2:] if not line.startswith(" ")}


def test_one_host_of_a_model_group_at_a_time_the_groups_side_by_side_whatever_the_forks(tmp_path):
    """No -e: two model groups (3 Sparks, spark-3 already running its plan; 2 g7e) roll in two waves,
    the unchanged spark-3 in the first; the failed g7e-1 holds g7e-2, the Sparks go on; the summary
    names the failure, the gateway and monitoring run, the run fails."""
    children = fleet({"g7e-1": {"converge_fails": True}, "g7e-2": {}})
    children["serving"]["children"]["spark"]["hosts"] = dict(SPARKS, **{"spark-3": {"unchanged": True}})
    result, batches, ran = run_site(tmp_path, children, "--forks", "1")
    out = result.stdout
    assert "2 wave(s) by inferops_max_unavailable: spark-1, spark-3, g7e-1 | spark-2, g7e-2" in out, out[-3000:]
    # (g7e-2, held, left its wave before the roles' stand-in ran)
    first = ["spark-1", "spark-3", "g7e-1"]
    assert {host: record["batch"] for host, record in batches.items()} == {
        "spark-1": first, "spark-3": first, "g7e-1": first, "spark-2": ["spark-2"]}
    assert all(record["facts"] for record in batches.values())  # the reach read the facts the roles use
    table = rows(out)
    assert table["g7e-1"] == "NOT SERVED: Stand in for a converge that broke: g7e-1: the engine answered 5 to 2+2"
    assert table["g7e-2"].startswith("NOT CONVERGED (serves what it served before): not converged: g7e-1 of its "
                                     "model group nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 failed earlier")
    assert ran == {"gateway": ["gw-1"], "monitoring": ["spark-1"]}
    assert result.returncode == 2
    recap = dict(re.findall(r"^(\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=(\d+)", out, re.M))
    assert recap == {"spark-1": "0", "spark-2": "0", "spark-3": "0", "g7e-1": "1", "g7e-2": "1", "gw-1": "0"}
    assert "g7e-1: NOT SERVED: Stand in for a converge that broke" in out


def test_inferops_serial_overrides_the_waves_and_a_clean_run_passes(tmp_path):
    result, batches, ran = run_site(tmp_path, fleet({"g7e-1": {}, "g7e-2": {}}), "-e", "inferops_serial=2")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "3 wave(s) by inferops_serial: spark-1, spark-2 | spark-3, g7e-1 | g7e-2" in result.stdout
    assert {host: record["batch"] for host, record in batches.items()} == {
        "spark-1": ["spark-1", "spark-2"], "spark-2": ["spark-1", "spark-2"], "spark-3": ["spark-3", "g7e-1"],
        "g7e-1": ["spark-3", "g7e-1"], "g7e-2": ["g7e-2"]}
    assert ran == {"gateway": ["gw-1"], "monitoring": ["spark-1"]}


def test_an_unreachable_host_alone_in_its_wave_does_not_end_the_run(tmp_path):
    """spark-2 is reached over ssh at a port nothing answers on: its row says so, spark-3 (its group's
    next wave) is held, not taken out beside a host that is down, and the gateway and monitoring
    plays run (an unreachable host alone in its batch used to end the playbook there). 2 failures
    of 4 hosts are more than 34 %: nothing after them would start either."""
    sparks = dict(SPARKS, **{"spark-2": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
                                         "ansible_ssh_common_args": "-o ConnectTimeout=3"}})
    # g7e-9's plan fails (a profile that does not exist): its row says why, it is in no wave.
    children = fleet({"g7e-9": {"server_profile": "g7e-no-such-profile"}})
    children["serving"]["children"]["spark"]["hosts"] = sparks
    result, batches, ran = run_site(tmp_path, children, "-e", "inferops_max_unavailable=1")
    assert sorted(batches) == ["spark-1"], result.stdout[-3000:]
    assert "3 wave(s) by inferops_max_unavailable: spark-1 | spark-2 | spark-3" in result.stdout
    table = rows(result.stdout)
    assert table["spark-2"].startswith("NOT SERVED: Fail when the host cannot be reached: spark-2 is unreachable")
    assert "not converged: spark-2 of its model group" in table["spark-3"]
    assert table["g7e-9"].startswith("NOT SERVED: ") and "g7e-no-such-profile" in table["g7e-9"], table["g7e-9"]
    assert ran == {"gateway": ["gw-1"], "monitoring": ["spark-1"]}
    assert result.returncode == 2


def test_playbooks_serving_yml_alone_fails_the_run_for_a_failed_host(tmp_path):
    """Without playbooks/site.yml (ansible-playbook playbooks/serving.yml), its own last play fails it."""
    children = {"serving": {"children": {"spark": {"vars": {"server_profile": "gb10-nvfp4-mtp-throughput"},
                                                   "hosts": {"spark-1": {"converge_fails": True}, "spark-2": {}}}}}}
    result, batches, ran = run_site(tmp_path, children, alone=True)
    assert result.returncode == 2 and ran == {}, result.stdout[-3000:]
    assert sorted(batches) == ["spark-1"]  # spark-2, its group's next wave, held
    tail = result.stdout[result.stdout.index("PLAY [Fail the run when a serving host failed (this playbook alone)]"):]
    assert "spark-1: NOT SERVED: Stand in for a converge that broke" in tail
    assert "spark-2: NOT CONVERGED: not converged: spark-1 of its model group" in tail
