# SPDX-License-Identifier: GPL-3.0-or-later
"""site.yml's "Summarise the fleet" play, as the playbook has it, on this machine: one row per
serving host of the run in the inventory's order, a host that failed before the server role
recorded its summary included (NOT SERVED), a host outside the serving hosts or the -l limit left out.

No lab: the hosts are this machine (local connection). The server role's converge is stood in for
by a first play that records each host's ``server_summary`` with the keys the role's verify.yml
sets (or fails the host, as a converge that broke would), then the summary play, read from
playbooks/serving.yml (which site.yml imports), runs as it is.
"""
from __future__ import annotations


import pytest
from summary_plays import run_play

SUMMARY = {"profile": "gb10-nvfp4-mtp-latency", "engine": "vllm", "digest": "sha256:" + "0123456789abcdef" * 4,
           "container": "inferops-serving", "backends_expected": {"attention": "TRITON_ATTN", "moe": "marlin"},
           "backends_observed": {"attention": "TRITON_ATTN", "moe": "marlin"}, "backends_proven": 2,
           "ready_seconds": 41, "smoke_answer": "4", "smoke_latency_seconds": 0.25, "state": "serving"}


def summarise(tmp_path, *args):
    """Run the stand-in converge then site.yml's summary play; the summary's table lines."""
    converge = {"name": "Stand in for the serving play", "hosts": "serving", "gather_facts": False, "tasks": [
        {"name": "Fail as a broken converge would", "ansible.builtin.fail": {"msg": "broken"},
         "when": "converge_fails | default(false)"},
        {"name": "Record the host's serving summary", "ansible.builtin.set_fact": {
            "server_summary": dict(SUMMARY, url="http://{{ inventory_hostname }}:8000/v1")}}]}
    children = {"serving": {"hosts": {"spark-01": {}, "spark-02": {"converge_fails": True}, "g7e-01": {}}},
                "gateway": {"hosts": {"gw-01": {}}}}
    result, table = run_play(tmp_path, "serving.yml", "Summarise the fleet", converge, children,
                             "Print the serving summary", *args)
    assert table is not None, result.stdout[-4000:]
    return table


def rows(lines):
    """The cells of the table's host rows (not its header, separator or detail lines), in order."""
    return [[cell.strip() for cell in line.split(" | ")] for line in lines[2:] if not line.startswith(" ")]


@pytest.mark.parametrize("limit, hosts", [
    ((), ["spark-01", "spark-02", "g7e-01"]),
    (("-l", "gw-01,g7e-01,spark-02"), ["spark-02", "g7e-01"]),
])
def test_one_row_per_serving_host_of_the_run_in_inventory_order(tmp_path, limit, hosts):
    table = rows(summarise(tmp_path, *limit))
    assert [row[0] for row in table] == hosts
    table = {row[0]: row for row in table}
    assert table["spark-02"][-1] == "NOT SERVED: failed or not reached, see its errors above"
    assert table["g7e-01"] == ["g7e-01", "gb10-nvfp4-mtp-latency", "sha256:0123456789ab", "2/2 proven", "41 s",
                               '"4" in 0.25 s', "http://g7e-01:8000/v1", "serving"]
