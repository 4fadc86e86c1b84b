# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's LiteLLM configuration, derived from the serving hosts' real deployment plans."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g

KEY = "sk-lab-unit-test-master-key-0123"
ENGINE_KEY = "engine-key-0123456789"


def plan(profile, port, secret_env=(), overrides=None):
    return d.plan(profile, {"name": "inferops-serving", "port": port, "network_mode": "host",
                            "secret_env": list(secret_env)}, overrides=overrides)


def backend(host, deployment, address="10.0.0.%d"):
    return {"host": host, "address": address % (len(host) % 200) if "%d" in address else address,
            "deployment": deployment}


SPARK = plan("gb10-nvfp4-mtp-throughput", 8101, secret_env=["VLLM_API_KEY"])
SPARK_LATENCY = plan("gb10-nvfp4-mtp-latency", 8103)
G7E = plan("g7e-fp8-sglang-eagle", 8102)
FLEET = [
    {"host": "spark-1", "address": "10.0.0.11", "deployment": SPARK},
    {"host": "spark-2", "address": "10.0.0.12", "deployment": SPARK_LATENCY},
    {"host": "g7e-1", "address": "10.0.0.21", "deployment": G7E},
]


def test_one_group_per_served_name_one_deployment_per_host():
    result = g.gateway_config(FLEET)
    spark_name = SPARK["served_model_name"]
    assert result["groups"] == {spark_name: ["spark-1", "spark-2"], G7E["served_model_name"]: ["g7e-1"]}
    entries = {e["model_info"]["id"]: e for e in result["config"]["model_list"]}
    assert entries["spark-1"]["model_name"] == spark_name
    assert entries["spark-1"]["litellm_params"]["api_base"] == "http://10.0.0.11:8101/v1"
    assert entries["spark-2"]["litellm_params"]["api_base"] == "http://10.0.0.12:8103/v1"
    assert entries["g7e-1"]["litellm_params"] == {"model": "hosted_vllm/" + G7E["served_model_name"],
                                                  "api_base": "http://10.0.0.21:8102/v1"}


def test_each_deployment_names_its_serving_host():
    # The contract the drain and status read: model_info {id: a stable id, inferops_host: the host}.
    infos = [e["model_info"] for e in g.gateway_config(FLEET)["config"]["model_list"]]
    assert sorted((i["id"], i["inferops_host"]) for i in infos) == [
        ("g7e-1", "g7e-1"), ("spark-1", "spark-1"), ("spark-2", "spark-2")]
    assert g.gateway_config(list(reversed(FLEET)))["config"]["model_list"] == g.gateway_config(FLEET)["config"]["model_list"]


def test_engine_key_is_an_env_reference_never_a_value():
    result = g.gateway_config(FLEET)
    params = {e["model_info"]["id"]: e["litellm_params"] for e in result["config"]["model_list"]}
    assert params["spark-1"]["api_key"] == "os.environ/GATEWAY_SPARK_1_VLLM_API_KEY"
    assert "api_key" not in params["spark-2"]  # no VLLM_API_KEY in its secrets: the engine has no key
    assert result["key_env"] == {"GATEWAY_SPARK_1_VLLM_API_KEY": {"host": "spark-1", "secret": "VLLM_API_KEY"}}
    assert result["config"]["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"
    text = g.gateway_env_text(result["key_env"], {"spark-1": {"VLLM_API_KEY": ENGINE_KEY}}, KEY)
    assert text == "LITELLM_MASTER_KEY=%s\nGATEWAY_SPARK_1_VLLM_API_KEY=%s\n" % (KEY, ENGINE_KEY)
    assert KEY not in json.dumps(result) and ENGINE_KEY not in json.dumps(result)


def test_router_settings_retry_elsewhere_with_long_timeouts():
    router = g.gateway_config(FLEET)["config"]["router_settings"]
    assert router["num_retries"] == 2 and router["allowed_fails"] == 0 and router["cooldown_time"] == 30
    assert router["timeout"] == 600 and router["stream_timeout"] == 120
    assert router["enable_health_check_routing"] is True
    general = g.gateway_config(FLEET, {"health_check_interval": 10})["config"]["general_settings"]
    assert general["background_health_checks"] is True and general["health_check_interval"] == 10


def test_extra_served_names_and_operator_aliases_route_to_the_group():
    names = {"args": {"served-model-name": ["nemotron-super", "nemotron"]}}
    spark = plan("gb10-nvfp4-mtp-throughput", 8101, overrides=names)
    result = g.gateway_config([backend("spark-1", spark, "127.0.0.1")], {"aliases": {"default": "nemotron-super"}})
    assert result["groups"] == {"nemotron-super": ["spark-1"]}
    aliases = result["config"]["router_settings"]["model_group_alias"]
    assert aliases == {"default": "nemotron-super", "nemotron": "nemotron-super"}


@pytest.mark.parametrize("settings, message", [
    ({"aliases": {"x": "no-such-model"}}, "gateway_model_aliases.x: no-such-model is not a served model name"),
    ({"timeout": 0}, "gateway_timeout: got 0"),
    ({"num_retries": "two"}, "gateway_num_retries: got"),
    ({"routing_strategy": "round-robin"}, "gateway_routing_strategy: got"),
    ({"retries": 1}, "unknown gateway settings retries"),
])
def test_bad_settings_name_the_variable(settings, message):
    with pytest.raises(g.GatewayError, match=message):
        g.gateway_config(FLEET, settings)


def test_alias_that_a_host_serves_is_refused():
    with pytest.raises(g.GatewayError, match="also the served model name"):
        g.gateway_config(FLEET, {"aliases": {G7E["served_model_name"]: SPARK["served_model_name"]}})


def test_a_group_of_two_checkpoints_is_refused():
    other = plan("gb10-nvfp4-mtp-throughput", 8101, overrides={"args": {"served-model-name": "shared"}})
    g7e = plan("g7e-fp8-sglang-eagle", 8102, overrides={"args": {"served-model-name": "shared"}})
    with pytest.raises(g.GatewayError, match="model group shared: spark-1 serves .* but g7e-1 serves"):
        g.gateway_config([backend("spark-1", other, "h1"), backend("g7e-1", g7e, "h2")])


@pytest.mark.parametrize("backends, message", [
    ([], "no serving host to front"),
    ([{"host": "spark-1", "address": "h", "deployment": None}], "spark-1: no deployment plan"),
    ([{"host": "spark-1", "address": "http://h", "deployment": SPARK}], "spark-1: gateway_backend_address got"),
    ([backend("spark-1", SPARK, "h"), backend("spark-1", SPARK, "h")], "spark-1: listed twice"),
])
def test_bad_backends_are_refused(backends, message):
    with pytest.raises(g.GatewayError, match=message):
        g.gateway_config(backends)


@pytest.mark.parametrize("master_key, secrets, message", [
    (None, {}, "gateway_master_key: missing"),
    ("lab-key-without-prefix", {}, "beginning with 'sk-'"),
    ("sk-short", {}, "12 or more characters"),
    ('sk-has"quote-0123', {}, "gateway_master_key: the value has a character"),
    (KEY, {}, r"spark-1: server_secrets.VLLM_API_KEY: missing"),
    (KEY, {"spark-1": {"VLLM_API_KEY": "a b$c"}}, r"spark-1: server_secrets.VLLM_API_KEY: the value"),
])
def test_env_file_refuses_bad_keys_without_showing_them(master_key, secrets, message):
    key_env = g.gateway_config(FLEET)["key_env"]
    with pytest.raises(g.GatewayError, match=message) as error:
        g.gateway_env_text(key_env, secrets, master_key)
    assert "quote-0123" not in str(error.value) and "a b$c" not in str(error.value)
    problems = g.gateway_env_problems(key_env, secrets, master_key)
    assert problems and all("quote-0123" not in p and "a b$c" not in p for p in problems)


def test_no_problems_with_good_keys():
    key_env = g.gateway_config(FLEET)["key_env"]
    assert g.gateway_env_problems(key_env, {"spark-1": {"VLLM_API_KEY": ENGINE_KEY}}, KEY) == []


def test_same_inputs_same_config():
    assert g.gateway_config(list(reversed(FLEET))) == g.gateway_config(FLEET)


def test_each_deployment_names_its_host_for_the_drain_filter():
    """Issue 22's contract: every deployment carries model_info {id, inferops_host}, and LiteLLM
    loads the drain filter that matches drained.json's hosts against inferops_host."""
    config = g.gateway_config(FLEET)["config"]
    assert {(e["model_info"]["id"], e["model_info"]["inferops_host"]) for e in config["model_list"]} == {
        ("spark-1", "spark-1"), ("spark-2", "spark-2"), ("g7e-1", "g7e-1")}
    assert config["litellm_settings"]["callbacks"] == ["inferops_drain.drain_filter"]
