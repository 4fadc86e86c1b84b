# SPDX-License-Identifier: GPL-3.0-or-later
"""What the gateway's answers prove (plugins/module_utils/_gateway_read.py), from LiteLLM 1.106.12's
real answers (tests/unit/fixtures/gateway/, their source named there)."""
from __future__ import annotations

import json
import os

from ansible_collections.inferops.serving.plugins.module_utils import _gateway_read as gr
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import routing_from_reads

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures", "gateway")
URL, SERVICE = "http://127.0.0.1:4000", "inferops-gateway"
NVFP4, FP8 = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"


def answer(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)["answer"]


def test_the_listed_ids_are_litellms_model_groups():
    assert gr.listed_ids(answer("litellm-1.106.12-models.json")) == [NVFP4, FP8]
    assert gr.listed_ids({"detail": "x"}) == [] and gr.listed_ids(None) == []


def test_a_proxy_that_lists_every_group_and_refuses_without_the_key_is_proven():
    listed = gr.listed_ids(answer("litellm-1.106.12-models.json"))
    assert gr.proof_problems(URL, SERVICE, [NVFP4, FP8], 200, listed, 401) == []


def test_each_problem_is_named_with_the_fix():
    problems = gr.proof_problems(URL, SERVICE, [NVFP4, "nemotron"], 200, [NVFP4], 200)
    assert problems == [
        "The gateway on %s does not list nemotron (it lists %s); see journalctl -u %s." % (URL, NVFP4, SERVICE),
        "GET %s/v1/models without a key answered 200, not 401: the proxy serves anyone who reaches it "
        "(is gateway_master_key in its environment?); see journalctl -u %s." % (URL, SERVICE)]
    refused = gr.proof_problems(URL, SERVICE, [NVFP4], 400, [], 401,
                                gr.error_message(answer("litellm-1.106.12-wrong-key.json")))
    assert refused == ["GET %s/v1/models with gateway_master_key answered 400 (No connected db.), not 200: the proxy "
                       "does not take the key it was converged with (another run changed it?), or fails; "
                       "see journalctl -u %s." % (URL, SERVICE)]
    unanswered = gr.proof_problems(URL, SERVICE, [NVFP4], "ConnectionRefusedError: [Errno 111]", [], 401)
    assert "answered ConnectionRefusedError: [Errno 111], not 200" in unanswered[0]


def test_the_deployments_keep_only_name_and_host_and_route_as_the_full_answer_did():
    full = answer("litellm-1.106.12-model-info.json")
    read = gr.deployments_read(200, full)
    assert "litellm_params" not in json.dumps(read) and read["status"] == 200
    assert [d["model_info"]["inferops_host"] for d in read["json"]["data"]] == ["lab-spark", "lab-spark-2", "lab-g7e"]
    drained = json.dumps({"hosts": {"lab-spark-2": {"since": "2026-12-01T20:00:00Z", "by": "test"}}})
    uri_result = {"status": 200, "msg": "OK (1234 bytes)", "json": full}
    assert (routing_from_reads(read, "gw", URL + "/v1", drained)
            == routing_from_reads(uri_result, "gw", URL + "/v1", drained))


def test_a_read_that_failed_says_why():
    assert gr.deployments_read(None, None, "TimeoutError: timed out") == {"status": -1, "msg": "TimeoutError: timed out"}
    refused = gr.deployments_read(401, answer("litellm-1.106.12-401.json"))
    assert refused == {"status": 401, "msg": "HTTP Error 401: Authentication Error, No api key passed in."}
    state = routing_from_reads(refused, "gw", URL, None)
    assert not state["ok"] and "answered 401" in state["state"]
    wrong = gr.deployments_read(400, answer("litellm-1.106.12-wrong-key.json"))
    assert wrong == {"status": 400, "msg": "HTTP Error 400: No connected db."}
    assert "answered 400: HTTP Error 400: No connected db." in routing_from_reads(wrong, "gw", URL, None)["state"]
    odd = gr.deployments_read(200, {"unexpected": True})
    assert "json" not in odd and not routing_from_reads(odd, "gw", URL, None)["ok"]


def test_the_readiness_message_names_url_wait_last_answer_and_unit():
    assert gr.readiness_message(URL, 20, "HTTP 503", SERVICE) == (
        "The gateway on %s did not answer /health/readiness with 200 within 20 s (last: HTTP 503); "
        "see journalctl -u %s." % (URL, SERVICE))
    assert gr.parse_json(b"{\"a\": 1}") == {"a": 1} and gr.parse_json(b"\xff") is None and gr.parse_json(b"<html>") is None
