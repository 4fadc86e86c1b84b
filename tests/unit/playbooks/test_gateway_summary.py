# SPDX-License-Identifier: GPL-3.0-or-later
"""gateway.yml's "Summarise the gateway" play, as the playbook has it, on this machine: a row per
gateway that recorded its routing (URL, state, hosts in and out of routing), none for a gateway
that did not (check mode) or is outside the -l limit, and no table at all when no gateway has one.

No lab: the gateways are this machine (local connection). The gateway role's ``status`` entry
point is stood in for by a first play that sets ``gateway_status`` to what
``inferops.serving.gateway_routing`` returns for a LiteLLM answer of two hosts, one drained.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import gateway_routing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# /v1/model/info's shape as gateway_routing reads it (tests/unit/fixtures/gateway has a full answer).
MODEL_INFO = {"data": [{"model_name": "served", "model_info": {"inferops_host": host}} for host in ("spark-1", "spark-2")]}
DRAINED = {"hosts": {"spark-2": {"since": "2026-12-01T20:00:00Z", "by": "site.yml rolling swap"}}}


def summarise(tmp_path, recorded, *args):
    """Run the stand-in status read (gateways of ``recorded`` only) then gateway.yml's summary play."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": local, "children": {
        "serving": {"hosts": {"spark-1": {}, "spark-2": {}}},
        "gateway": {"hosts": {name: {"gateway_port": port} for name, port in (("gw-01", 4000), ("gw-02", 4001))}}}}},
        sort_keys=False))
    with open(os.path.join(ROOT, "playbooks", "gateway.yml"), encoding="utf-8") as handle:
        summary_play = [play for play in yaml.safe_load(handle) if play["name"] == "Summarise the gateway"]
    status = {name: gateway_routing(name, "http://%s:4000/v1" % name, MODEL_INFO, drained=DRAINED) for name in recorded}
    read = {"name": "Stand in for the gateway role's status", "hosts": "gateway", "gather_facts": False, "tasks": [
        {"name": "Record the gateway's routing", "ansible.builtin.set_fact": {"gateway_status": "{{ status[inventory_hostname] }}"},
         "when": "inventory_hostname in status", "vars": {"status": status}}]}
    playbook = tmp_path / "gateway-summary.yml"
    playbook.write_text(yaml.safe_dump([read] + summary_play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook),
                             "-i", str(inventory)] + list(args), cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    out = result.stdout
    assert result.returncode == 0 and "TASK [Print the gateway summary]" in out, out[-4000:]
    printed = out[out.index("TASK [Print the gateway summary]"):]
    match = re.search(r'"msg": (\[.*?\n    \])', printed, re.S)
    return json.loads(match.group(1)) if match else printed


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
