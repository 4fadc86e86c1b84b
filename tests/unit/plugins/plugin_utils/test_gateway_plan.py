# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's plan (the gateway_plan lookup): the configuration from the serving hosts' variables,
no secret in it; the env file apart; the routing plan of the gateway hosts from their own variables."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
KEY = "sk-lab-unit-test-master-key-0123"
ENGINE_KEY = "engine-key-0123456789"
SPARK = d.plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101, "network_mode": "host",
                                             "secret_env": ["VLLM_API_KEY"]})
G7E = d.plan("g7e-fp8-sglang-eagle", {"name": "inferops-serving", "port": 8102, "network_mode": "host"})
HOSTVARS = {
    "spark-1": {"server_deployment": SPARK, "ansible_host": "10.0.0.11", "server_secrets": {"VLLM_API_KEY": ENGINE_KEY},
                "server_summary": {"state": "serving"}},
    "g7e-1": {"server_deployment": G7E, "ansible_host": "10.0.0.21", "gateway_backend_address": "192.168.0.21",
              "server_summary": {"state": "serving"}, "server_failure": {"step": "smoke"}},
    "spark-2": {"server_deployment": SPARK},
    "gw-01": {"gateway_port": "4100", "gateway_listen_address": "0.0.0.0", "gateway_master_key": KEY,
              "gateway_allow_outage": "true", "gateway_drain_timeout": 30},
    "gw-02": {"gateway_drain": False, "gateway_state_dir": "/srv/gw"},
}


def test_the_plan_is_the_configuration_of_the_hosts_variables_with_no_secret():
    plan = g.gateway_plan(["spark-1", "g7e-1", "spark-2"], HOSTVARS, {"num_retries": 3}, "0.0.0.0", 4000, "gw.example",
                          master_key=KEY)
    backends = [{"host": b["host"], "address": b["address"], "deployment": b["deployment"]}
                for b in g.serving_backends(["spark-1", "g7e-1", "spark-2"], HOSTVARS)]
    expected = g.gateway_config(backends, {"num_retries": 3})
    assert {key: plan[key] for key in expected} == expected
    assert [(b["host"], b["address"], b["api_base"]) for b in plan["backends"]] == [
        ("spark-1", "10.0.0.11", "http://10.0.0.11:8101/v1"), ("g7e-1", "192.168.0.21", "http://192.168.0.21:8102/v1"),
        ("spark-2", "spark-2", "http://spark-2:8101/v1")]
    assert plan["client_url"] == "http://gw.example:4000/v1" and plan["local_url"] == "http://127.0.0.1:4000"
    assert plan["expect"] == sorted(plan["groups"]) + sorted(plan["aliases"])
    # Proven in this run and not failed after: the gateway puts them back in routing.
    assert plan["proven"] == ["spark-1"] and plan["hosts"] == ["spark-1", "g7e-1", "spark-2"]
    # spark-2's engine key is missing: named, never a value.
    assert plan["key_problems"] == ["spark-2: server_secrets.VLLM_API_KEY: missing or not a string; the gateway "
                                    "needs it (value not shown)"]
    text = json.dumps(plan)
    assert KEY not in text and ENGINE_KEY not in text


def test_the_env_file_is_apart_and_holds_the_keys():
    hosts = ["spark-1", "g7e-1"]
    text = g.gateway_env_file(hosts, HOSTVARS, {}, KEY)
    assert text == "LITELLM_MASTER_KEY=%s\nGATEWAY_SPARK_1_VLLM_API_KEY=%s\n" % (KEY, ENGINE_KEY)
    with pytest.raises(g.GatewayError) as refused:
        g.gateway_env_file(hosts, HOSTVARS, {}, "not-a-key")
    assert "gateway_master_key" in str(refused.value) and "not-a-key" not in str(refused.value)


def test_a_host_without_a_plan_is_named_with_the_fix():
    with pytest.raises(g.GatewayError, match="gw-01: no deployment plan"):
        g.gateway_plan(["spark-1", "gw-01"], HOSTVARS)


def test_the_addresses_alone_and_a_bad_port_named():
    assert g.gateway_address("127.0.0.1", "4000") == {"client_url": "http://127.0.0.1:4000/v1",
                                                      "local_url": "http://127.0.0.1:4000"}
    assert g.gateway_address("10.0.0.5", 4001, "gw") == {"client_url": "http://10.0.0.5:4001/v1",
                                                         "local_url": "http://10.0.0.5:4001"}
    with pytest.raises(g.GatewayError, match="gateway_port: got"):
        g.gateway_address("127.0.0.1", "http")


def test_the_routing_plan_reads_each_gateway_hosts_own_variables_with_the_roles_defaults():
    plan = g.routing_plan(["gw-01", "gw-02"], HOSTVARS)
    assert plan["gateways"] == [
        {"host": "gw-01", "state_dir": "/var/lib/inferops-gateway", "health_url": "http://127.0.0.1:4100/health",
         "service": "inferops-gateway", "drain": True, "drain_timeout": 30, "allow_outage": True},
        {"host": "gw-02", "state_dir": "/srv/gw", "health_url": "http://127.0.0.1:4000/health",
         "service": "inferops-gateway", "drain": False, "drain_timeout": 600, "allow_outage": False}]
    assert plan["draining"] == ["gw-01"] and plan["drain_timeout"] == 30
    assert g.routing_plan([], HOSTVARS) == {"gateways": [], "draining": [], "drain_timeout": 0}
    assert KEY not in json.dumps(plan)
    assert g.routing_master_keys(["gw-01", "gw-02"], HOSTVARS) == {"gw-01": KEY, "gw-02": None}


@pytest.mark.parametrize("name, value, message", [
    ("gateway_allow_outage", "maybe", "gw-9: gateway_allow_outage got the string 'maybe'; expected true or false"),
    ("gateway_drain_timeout", "10m", "gw-9: gateway_drain_timeout got the string '10m'; expected a whole number of seconds"),
    ("gateway_port", 0, "gw-9: gateway_port got 0; expected 1 or more"),
])
def test_a_bad_routing_setting_is_named_with_its_gateway(name, value, message):
    with pytest.raises(g.GatewayError) as refused:
        g.routing_plan(["gw-9"], {"gw-9": {name: value}})
    assert message in str(refused.value)


def test_the_routing_defaults_are_the_gateway_roles():
    with open(os.path.join(ROOT, "roles", "gateway", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert {name: defaults[name] for name in g.ROUTING_DEFAULTS} == g.ROUTING_DEFAULTS


# ansible-core's lookup loader in a fresh interpreter (as a task's worker finds the plugin): the
# collection loader it installs does not mix with this process's import of the working tree.
LOOKUPS = """
import json, sys
from ansible.errors import AnsibleLookupError
from ansible.plugins.loader import init_plugin_loader, lookup_loader
init_plugin_loader([sys.argv[1]])
plugin = lookup_loader.get("inferops.serving.gateway_plan")
calls = json.loads(sys.argv[2])
answers = []
for terms, options in calls["calls"]:
    try:
        answers.append({"value": plugin.run(terms, variables={"hostvars": calls["hostvars"]}, **options)[0]})
    except AnsibleLookupError as exc:
        answers.append({"error": str(exc)})
print(json.dumps(answers))
"""


def lookups(*calls):
    """Each ``(terms, options)`` of ``calls`` run by the lookup: ``{value}`` or ``{error}``."""
    argument = json.dumps({"hostvars": HOSTVARS, "calls": [[list(terms), options] for terms, options in calls]})
    result = subprocess.run([sys.executable, "-c", LOOKUPS, os.path.join(ROOT, ".collections"), argument],
                            capture_output=True, text=True, check=True, timeout=120)
    return json.loads(result.stdout.splitlines()[-1])


def test_the_lookup_gives_the_plan_the_secrets_apart_the_routing_plan_and_the_addresses():
    answers = lookups(((), {"hosts": ["spark-1"], "port": 4000, "master_key": KEY}),
                      ((), {"hosts": ["spark-1"], "master_key": KEY, "secrets": True}),
                      (("routing",), {"gateways": ["gw-01"]}),
                      (("routing",), {"gateways": ["gw-01"], "secrets": True}),
                      (("address",), {"listen_address": "0.0.0.0", "port": 4000, "host_address": "gw"}))
    assert answers[0]["value"] == json.loads(json.dumps(g.gateway_plan(["spark-1"], HOSTVARS, {}, "127.0.0.1", 4000,
                                                                       None, KEY)))
    assert answers[1]["value"] == g.gateway_env_file(["spark-1"], HOSTVARS, {}, KEY)
    assert answers[2]["value"] == g.routing_plan(["gw-01"], HOSTVARS)
    assert answers[3]["value"] == {"gw-01": KEY}
    assert answers[4]["value"] == {"client_url": "http://gw:4000/v1", "local_url": "http://127.0.0.1:4000"}


def test_the_lookups_errors_name_the_problem_and_carry_no_secret():
    unknown, bad_key = lookups((("everything",), {}),
                               ((), {"hosts": ["spark-1"], "master_key": "sk-this-is-no-good key", "secrets": True}))
    assert "expected one of gateway, routing, address" in unknown["error"]
    assert "gateway_master_key" in bad_key["error"] and "sk-this-is-no-good" not in bad_key["error"]
