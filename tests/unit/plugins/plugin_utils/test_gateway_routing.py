# SPDX-License-Identifier: GPL-3.0-or-later
"""Which hosts a gateway routes to, and the status flags when that disagrees with what serves (issue 22)."""
from __future__ import annotations

import json
import os

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import (
    client_url, gateway_routing, routing_from_reads, routing_rows)

URL = "http://127.0.0.1:4000/v1"
FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gateway", "litellm-1.106.12-model-info.json")
SPARK = d.plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101, "network_mode": "host"})
G7E = d.plan("g7e-fp8-sglang-eagle", {"name": "inferops-serving", "port": 8102, "network_mode": "host"})
# The gateway's own configuration of three hosts (roles/gateway writes it; /v1/model/info lists the
# same model_list entries under "data", with LiteLLM's model_info fields added beside ours).
CONFIG = g.gateway_config([{"host": "spark-1", "address": "10.0.0.11", "deployment": SPARK},
                           {"host": "spark-2", "address": "10.0.0.12", "deployment": SPARK},
                           {"host": "g7e-1", "address": "10.0.0.21", "deployment": G7E}])["config"]
MODEL_INFO = {"data": [dict(entry, model_info=dict(entry["model_info"], db_model=False, max_tokens=None))
                       for entry in CONFIG["model_list"]]}
DRAINED = {"hosts": {"spark-2": {"since": "2026-12-01T20:00:00Z", "by": "site.yml rolling swap"}}}


def row(host, ok=True, state="serving"):
    return {"host": host, "ok": ok, "state": state, "problems": [] if ok else [state], "details": {"running": 0}}


def test_every_deployment_is_in_routing_without_a_drain_file():
    gateway = gateway_routing("gw-1", URL, MODEL_INFO, drained=None)
    assert gateway["ok"] and gateway["state"] == "routes to 3 of 3 hosts"
    assert gateway["in_routing"] == {"g7e-1": True, "spark-1": True, "spark-2": True}
    assert gateway["groups"][SPARK["served_model_name"]] == ["spark-1", "spark-2"]


def test_the_config_file_reads_as_the_live_answer():
    assert gateway_routing("gw-1", URL, CONFIG)["in_routing"] == gateway_routing("gw-1", URL, MODEL_INFO)["in_routing"]


def test_a_drained_host_is_out_of_routing_with_since_and_by():
    gateway = gateway_routing("gw-1", URL, MODEL_INFO, drained=DRAINED)
    assert gateway["state"] == "routes to 2 of 3 hosts"
    assert gateway["in_routing"]["spark-2"] is False
    assert gateway["drained"] == {"spark-2": "since 2026-12-01T20:00:00Z by site.yml rolling swap"}


def test_an_empty_drain_file_drains_nothing():
    assert all(gateway_routing("gw-1", URL, MODEL_INFO, drained={"hosts": {}})["in_routing"].values())


def test_a_gateway_not_read_is_not_ok_and_routing_is_unknown():
    gateway = gateway_routing("gw-1", URL, None, error="Status code was -1: Connection refused")
    assert not gateway["ok"] and gateway["in_routing"] == {}
    assert gateway["state"] == "NOT READ: Status code was -1: Connection refused"
    rows = routing_rows([row("spark-1")], [gateway])
    assert rows[0]["ok"] and rows[0]["state"] == "serving" and rows[0]["routing"] == {"gw-1": None}
    assert rows[0]["details"]["routing"].startswith("unknown on gw-1 (NOT READ: ")


def test_a_malformed_drain_file_is_named_and_routing_unknown():
    gateway = gateway_routing("gw-1", URL, MODEL_INFO, drained={"spark-2": True})
    assert not gateway["ok"] and "drain file is not readable" in gateway["state"] and gateway["in_routing"] == {}


def test_deployments_without_their_host_are_named():
    old = {"data": [{"model_name": "m", "model_info": {"id": "x"}}]}
    gateway = gateway_routing("gw-1", URL, old)
    assert not gateway["ok"] and gateway["state"].startswith("NO DEPLOYMENT names its serving host")


def test_a_serving_host_out_of_routing_is_flagged():
    gateway = gateway_routing("gw-1", URL, MODEL_INFO, drained=DRAINED)
    rows = routing_rows([row("spark-1"), row("spark-2"), row("g7e-1")], [gateway])
    flagged = rows[1]
    assert not flagged["ok"]
    assert flagged["state"] == ("serving but OUT OF ROUTING on gw-1 (drained since 2026-12-01T20:00:00Z by site.yml "
                                "rolling swap): no client request reaches it")
    assert flagged["details"] == {
        "running": 0, "routing": "out on gw-1: drained since 2026-12-01T20:00:00Z by site.yml rolling swap"}
    assert rows[0]["ok"] and rows[0]["state"] == "serving" and rows[0]["details"]["routing"] == "in on gw-1"


def test_a_serving_host_the_gateway_does_not_know_is_flagged():
    rows = routing_rows([row("spark-3")], [gateway_routing("gw-1", URL, MODEL_INFO)])
    assert not rows[0]["ok"] and rows[0]["routing"] == {"gw-1": False}
    assert "OUT OF ROUTING on gw-1 (no deployment of its configuration)" in rows[0]["state"]


def test_a_host_in_routing_that_does_not_serve_is_flagged():
    down = row("spark-1", ok=False, state="NOT SERVING: /health answered 503")
    rows = routing_rows([down], [gateway_routing("gw-1", URL, MODEL_INFO)])
    assert rows[0]["state"] == ("NOT SERVING: /health answered 503; IN ROUTING on gw-1 but not serving: the gateway "
                                "sends it requests that fail over or fail")
    assert len(rows[0]["problems"]) == 2


def test_a_drained_host_that_does_not_serve_is_consistent():
    down = row("spark-2", ok=False, state="NOT SERVING: /health answered 503")
    rows = routing_rows([down], [gateway_routing("gw-1", URL, MODEL_INFO, drained=DRAINED)])
    assert rows[0]["state"] == down["state"] and rows[0]["problems"] == down["problems"]


def test_each_gateway_has_a_row_with_its_url_and_hosts():
    rows = routing_rows([row("spark-1")], [gateway_routing("gw-1", URL, MODEL_INFO, drained=DRAINED)])
    assert rows[-1] == {"host": "gw-1", "ok": True, "profile": "gateway (LiteLLM)", "url": URL,
                        "state": "routes to 2 of 3 hosts", "problems": [], "gateway": True,
                        "details": {"in routing": "g7e-1 spark-1", "out of routing": "spark-2 (drained since "
                                    "2026-12-01T20:00:00Z by site.yml rolling swap)"}}


def test_no_gateway_leaves_the_rows_as_they_are():
    rows = [row("spark-1")]
    assert routing_rows(rows, []) == rows


def test_client_url_is_the_listen_address_or_the_host():
    assert client_url("127.0.0.1", 4000, "gw-1") == "http://127.0.0.1:4000/v1"
    assert client_url("0.0.0.0", 4000, "gw-1.example.com") == "http://gw-1.example.com:4000/v1"
    assert client_url("::", 4000, "fd00::5") == "http://[fd00::5]:4000/v1"
    assert client_url("10.0.0.5", "4000", "gw-1") == "http://10.0.0.5:4000/v1"


# The reads of roles/gateway/tasks/status.yml, as ansible.builtin.uri registers them.

def test_reads_of_a_gateway_that_answered():
    result = {"status": 200, "json": MODEL_INFO, "msg": "OK (unknown bytes)"}
    gateway = routing_from_reads(result, "gw-1", URL, '{"hosts": {"spark-2": {"since": "2026-12-01T20:00:00Z", '
                                                      '"by": "watchdog restart"}}}')
    assert gateway["state"] == "routes to 2 of 3 hosts" and gateway["in_routing"]["spark-2"] is False


def test_reads_of_a_gateway_that_did_not_answer():
    refused = {"status": -1, "msg": "Status code was -1 and not [200]: Request failed: <urlopen error [Errno 111] "
                                    "Connection refused>"}
    assert routing_from_reads(refused, "gw-1", URL)["state"] == (
        "NOT READ: GET /v1/model/info answered nothing: Status code was -1 and not [200]: Request failed: "
        "<urlopen error [Errno 111] Connection refused>")
    assert "refuses gateway_master_key" in routing_from_reads({"status": 401}, "gw-1", URL)["state"]


def test_a_drain_file_that_is_not_json_is_named():
    gateway = routing_from_reads({"status": 200, "json": MODEL_INFO}, "gw-1", URL, '{"hosts": ')
    assert not gateway["ok"] and "the drain file is not readable" in gateway["state"]


def test_a_read_that_failed_before_the_request_is_named():
    failed = {"failed": True, "msg": "Validation of arguments failed: missing required arguments: gateway_master_key"}
    assert routing_from_reads(failed, "gw-1", None)["state"] == (
        "NOT READ: the read failed: Validation of arguments failed: missing required arguments: gateway_master_key")
    unreachable = {"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection refused"}
    assert routing_from_reads(unreachable, "gw-1", None)["state"].startswith("NOT READ: UNREACHABLE: Failed to connect")


def test_the_real_answer_of_litellm_reads():
    # LiteLLM 1.106.12's /v1/model/info on lab-gateway (the fixture names its source): our
    # model_info keys survive beside the ~100 LiteLLM adds.
    with open(FIXTURE, encoding="utf-8") as handle:
        answer = json.load(handle)["answer"]
    gateway = gateway_routing("lab-gateway", URL, answer)
    assert gateway["in_routing"] == {"lab-g7e": True, "lab-spark": True, "lab-spark-2": True}
    assert gateway["groups"]["RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"] == ["lab-spark", "lab-spark-2"]


def test_an_unreachable_gateway_is_named_without_ansible_cores_prefix():
    # ansible-core 2.19 prefixes the unreachable result's message with "Task failed: ".
    unreachable = {"unreachable": True, "changed": False,
                   "msg": "Task failed: Failed to connect to the host via ssh: ssh: connect to host 127.0.0.1 port 1: "
                          "Connection refused"}
    gateway = routing_from_reads(unreachable, "gw-1", URL)
    assert not gateway["ok"] and gateway["in_routing"] == {}
    assert gateway["state"] == ("NOT READ: UNREACHABLE: Failed to connect to the host via ssh: ssh: connect to host "
                                "127.0.0.1 port 1: Connection refused")
