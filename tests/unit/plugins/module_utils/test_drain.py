# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's drain state and its decisions: which hosts are out, what an outage is, what is in flight."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _drain as drain

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
GROUPS = {MODEL: ["spark-1", "spark-2"], "openai/gpt-oss-120b": ["g7e-1"]}

# vLLM 0.19.1 /metrics (vllm/v1/metrics/loggers.py gauges), two engines' label sets as a DP deployment shows them.
VLLM_METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
"""
VLLM_NAMES = {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting"}
SGLANG_NAMES = {"running": "sglang:num_running_reqs", "waiting": "sglang:num_queue_reqs"}


@pytest.mark.parametrize("text", [None, "", "  \n"])
def test_no_state_file_is_nothing_drained(text):
    assert drain.parse_state(text) == {}


def test_state_round_trips():
    hosts = {"spark-1": {"since": "2026-12-01T20:00:00Z", "by": "site.yml swap"}}
    assert drain.parse_state(drain.state_text(hosts)) == hosts


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not JSON"),
    ('["spark-1"]', "expected a JSON object with a 'hosts' mapping, got list"),
    ('{"hosts": ["spark-1"]}', "expected a JSON object with a 'hosts' mapping"),
])
def test_a_bad_state_file_is_named_with_the_fix(text, problem):
    with pytest.raises(drain.DrainError) as err:
        drain.parse_state(text, "/var/lib/inferops-gateway/drained.json")
    assert str(err.value).startswith("/var/lib/inferops-gateway/drained.json: ")
    assert problem in str(err.value)


def test_routing_lists_each_groups_hosts():
    assert drain.parse_routing('{"groups": {"m": ["a", "b"]}}') == {"m": ["a", "b"]}
    with pytest.raises(drain.DrainError, match="each model group must list its hosts"):
        drain.parse_routing('{"groups": {"m": "a"}}')


def test_draining_keeps_the_first_entry_and_undraining_removes():
    first = drain.updated({}, drain=["spark-1"], by="site.yml swap", now="T1")
    assert first == {"spark-1": {"since": "T1", "by": "site.yml swap"}}
    assert drain.updated(first, drain=["spark-1"], by="rollback", now="T2") == first
    both = drain.updated(first, drain=["spark-2"], by="pin", now="T3")
    assert set(both) == {"spark-1", "spark-2"}
    assert drain.updated(both, undrain=["spark-1"]) == {"spark-2": {"since": "T3", "by": "pin"}}
    assert drain.updated(both, undrain=["spark-9"]) == both


@pytest.mark.parametrize("drained, stopping, expected", [
    ({}, ["spark-1"], []),  # spark-2 still serves the group
    ({}, ["spark-1", "spark-2"], [{"group": MODEL, "hosts": ["spark-1", "spark-2"]}]),  # one batch, both
    ({"spark-2": {}}, ["spark-1"], [{"group": MODEL, "hosts": ["spark-1"]}]),  # the other one is out already
    ({}, ["g7e-1"], [{"group": "openai/gpt-oss-120b", "hosts": ["g7e-1"]}]),  # a group's only host
    ({"g7e-1": {}}, ["g7e-1"], []),  # out already: no new outage (a rollback after a failed drain)
    ({}, ["lab-other"], []),
])
def test_an_outage_is_a_group_left_without_a_host_in_routing(drained, stopping, expected):
    assert drain.outages(GROUPS, drained, stopping) == expected


def test_the_outage_message_names_the_group_the_host_and_the_duration():
    message = drain.outage_message([{"group": "openai/gpt-oss-120b", "hosts": ["g7e-1"]}], 1830)
    assert "model group openai/gpt-oss-120b has no other host in routing than g7e-1" in message
    assert "expected up to 1830 s" in message
    assert "gateway_allow_outage: true" in message and "Nothing was changed" in message


@pytest.mark.parametrize("text, names, expected", [
    (VLLM_METRICS, VLLM_NAMES, 4),
    ("sglang:num_running_reqs 0.0\nsglang:num_queue_reqs 0.0\n", SGLANG_NAMES, 0),
    ("sglang:num_running_reqs 3.0\n", SGLANG_NAMES, 3),
    ("# an engine still loading\n", VLLM_NAMES, None),
    ("", VLLM_NAMES, None),
])
def test_in_flight_is_running_plus_waiting_from_the_plans_names(text, names, expected):
    assert drain.in_flight(text, names) == expected


# LiteLLM 1.106's /health with background_health_checks (litellm/proxy/health_check.py
# perform_health_check: each endpoint cleaned to its minimal display params, plus model_id).
HEALTH = {"healthy_endpoints": [{"model": "hosted_vllm/" + MODEL, "model_id": "spark-2"}],
          "unhealthy_endpoints": [{"model": "hosted_vllm/" + MODEL, "model_id": "spark-1", "exception_status": 503}],
          "healthy_count": 1, "unhealthy_count": 1}


def test_unhealthy_ids_are_the_deployments_model_ids():
    assert drain.unhealthy_ids(HEALTH) == {"spark-1"}
    assert drain.unhealthy_ids({}) == set() and drain.unhealthy_ids(None) == set()


@pytest.mark.parametrize("host, drained, health, expected", [
    ("spark-2", {}, HEALTH, [MODEL]),  # spark-1 is back in routing but the gateway still sees it unhealthy
    ("spark-1", {}, HEALTH, []),  # spark-2 is healthy
    ("spark-2", {}, {"healthy_endpoints": [], "unhealthy_endpoints": []}, []),  # no check yet: nothing known bad
    ("spark-2", {"spark-1": {}}, HEALTH, []),  # no other host in routing: the outage check's to decide
    ("g7e-1", {}, HEALTH, []),  # a group of one
])
def test_a_drain_waits_for_another_host_the_gateway_sees_healthy(host, drained, health, expected):
    assert drain.without_other_host(GROUPS, drained, host, health) == expected


def counter(tokens):
    """VLLM_METRICS (4 requests in flight) with vLLM's generation counter at ``tokens``."""
    return VLLM_METRICS + ("# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
                           "# TYPE vllm:generation_tokens_total counter\n"
                           "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %s\n" % tokens)


PLAN_NAMES = dict(VLLM_NAMES, generation_tokens="vllm:generation_tokens_total", tokens_counted="step")


@pytest.mark.parametrize("now, waited, names, stalled", [
    (counter(100.0), 60, PLAN_NAMES, True),     # nothing generated for a minute with 4 in flight: wedged
    (counter(100.0), 58, PLAN_NAMES, False),    # not a minute yet
    (counter(101.0), 600, PLAN_NAMES, False),   # one token since: it is working, wait on
    (counter(100.0), 600, dict(PLAN_NAMES, tokens_counted="finish"), False),  # SGLang counts at the end
    (counter(100.0), 600, VLLM_NAMES, False),   # no counter in the plan: no stall is seen
    (VLLM_METRICS, 600, PLAN_NAMES, False),     # the counter gone from the text: not proof of a stall
])
def test_a_wedged_engine_ends_the_drain_a_busy_one_does_not(now, waited, names, stalled):
    verdict = drain.drain_progress(now, names, counter(100.0), waited)
    assert verdict == {"in_flight": 4, "stalled": stalled, "done": stalled}


def test_the_drain_is_done_when_nothing_is_in_flight_and_never_stalls_without_a_first_read():
    idle = counter(100.0).replace("} 2.0", "} 0.0").replace("} 1.0", "} 0.0")
    assert drain.drain_progress(idle, PLAN_NAMES, counter(100.0), 0) == {"in_flight": 0, "stalled": False, "done": True}
    assert drain.drain_progress("", PLAN_NAMES) == {"in_flight": None, "stalled": False, "done": True}
    assert drain.drain_progress(counter(100.0), PLAN_NAMES, None, 600)["done"] is False
