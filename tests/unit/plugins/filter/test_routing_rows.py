# SPDX-License-Identifier: GPL-3.0-or-later
"""The routing_rows filter: the gateways as gateway_routing results, or as hosts whose gateway_status
it reads from hostvars (status.yml, gateway.yml)."""
from __future__ import annotations

from types import MappingProxyType

from ansible_collections.inferops.serving.plugins.filter.routing_rows import FilterModule
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import gateway_routing

routing_rows = FilterModule().filters()["routing_rows"]

URL = "http://127.0.0.1:4000/v1"
# The /v1/model/info shape gateway_routing reads: one deployment per host, under the served name.
MODEL_INFO = {"data": [{"model_name": "served", "model_info": {"id": "spark-1", "inferops_host": "spark-1"}}]}
READ = gateway_routing("gw-1", URL, MODEL_INFO)
UNREAD = gateway_routing("gw-2", URL, None, error="Status code was -1: Connection refused")
ROW = {"host": "spark-1", "ok": True, "state": "serving", "problems": [], "details": {}}


def test_read_from_hostvars_as_given_directly_in_the_order_of_the_hosts():
    hostvars = {"gw-2": {"gateway_status": UNREAD}, "gw-1": {"gateway_status": READ, "gateway_port": 4000}}
    assert routing_rows([ROW], ["gw-1", "gw-2"], hostvars) == routing_rows([ROW], [READ, UNREAD])
    assert [row["host"] for row in routing_rows([], ["gw-2", "gw-1"], hostvars)] == ["gw-2", "gw-1"]


def test_a_host_without_a_gateway_status_is_left_out():
    # spark-1 is in the play but no gateway; gw-3 was not read (check mode sets no gateway_status).
    hostvars = MappingProxyType({"spark-1": {"server_status": ROW}, "gw-1": MappingProxyType({"gateway_status": READ}),
                                 "gw-3": {}})
    rows = routing_rows([], ["spark-1", "gw-1", "gw-3", "gw-4"], hostvars)
    assert [row["host"] for row in rows] == ["gw-1"] and rows[0]["gateway"]
    assert routing_rows([], ["spark-1", "gw-3"], hostvars) == []


def test_without_hostvars_the_gateways_are_the_results():
    assert [row["host"] for row in routing_rows([ROW], [READ])] == ["spark-1", "gw-1"]
    assert routing_rows([ROW], []) == [ROW]
