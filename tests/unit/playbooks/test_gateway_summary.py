# SPDX-License-Identifier: GPL-3.0-or-later
"""gateway.yml's "Summarise the gateway" play, as the playbook has it, on this machine: a row per
gateway that recorded its routing (URL, state, hosts in and out of routing), none for a gateway
that did not (check mode) or is outside the -l limit, and no table at all when no gateway has one.

No lab: the gateways are this machine (local connection). The gateway role's ``status`` entry
point is stood in for by a first play that sets ``gateway_status`` to what
``inferops.serving.gateway_routing`` returns for a LiteLLM answer of two hosts, one drained.
"""
from __future__ import annotations

import re

import pytest
from summary_plays import run_play

from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import gateway_routing

# /v1/model/info's shape as gateway_routing reads it (tests/unit/fixtures/gateway has a full answer).
MODEL_INFO = {"data": [{"model_name": "served", "model_info": {"inferops_host": host}} for host in ("spark-1", "spark-2")]}
DRAINED = {"hosts": {"spark-2": {"since": "2026-12-01T20:00:00Z", "by": "site.yml rolling swap"}}}


def summarise(tmp_path, recorded, *args):
    """Run the stand-in status read (gateways of ``recorded`` only) then gateway.yml's summary play."""
    status = {name: gateway_routing(name, "http://%s:4000/v1" % name, MODEL_INFO, drained=DRAINED) for name in recorded}
    read = {"name": "Stand in for the gateway role's status", "hosts": "gateway", "gather_facts": False, "tasks": [
        {"name": "Record the gateway's routing", "ansible.builtin.set_fact": {"gateway_status": "{{ status[inventory_hostname] }}"},
         "when": "inventory_hostname in status", "vars": {"status": status}}]}
    children = {"serving": {"hosts": {"spark-1": {}, "spark-2": {}}},
                "gateway": {"hosts": {name: {"gateway_port": port} for name, port in (("gw-01", 4000), ("gw-02", 4001))}}}
    result, table = run_play(tmp_path, "gateway.yml", "Summarise the gateway", read, children,
                             "Print the gateway summary", *args)
    assert result.returncode == 0 and "TASK [Print the gateway summary]" in result.stdout, result.stdout[-4000:]
    return table if table is not None else result.stdout[result.stdout.index("TASK [Print the gateway summary]"):]


@pytest.mark.parametrize("recorded, limit, gateways", [
    (("gw-01", "gw-02"), (), ["gw-01", "gw-02"]),
    (("gw-02",), (), ["gw-02"]),
    (("gw-01", "gw-02"), ("-l", "gw-02,spark-1"), ["gw-02"]),
])
def test_a_row_per_gateway_that_recorded_its_routing(tmp_path, recorded, limit, gateways):
    lines = summarise(tmp_path, recorded, *limit)
    rows = [[cell.strip() for cell in line.split(" | ")] for line in lines[2:] if not line.startswith(" ")]
    assert [row[0] for row in rows] == gateways
    assert rows[0][1] == "gateway (LiteLLM)" and rows[0][-1] == "routes to 1 of 2 hosts"
    assert rows[0][-2] == "http://%s:4000/v1" % gateways[0]
    assert lines[3].strip() == ("in routing=spark-1, out of routing=spark-2 (drained since 2026-12-01T20:00:00Z "
                                "by site.yml rolling swap)")


def test_no_table_when_no_gateway_recorded_its_routing(tmp_path):
    printed = summarise(tmp_path, ())
    assert isinstance(printed, str) and re.search(r"skipping: \[gw-01", printed), printed[-2000:]
