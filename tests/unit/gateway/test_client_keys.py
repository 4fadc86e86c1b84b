# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 38 item 3: the gateway's client keys - the plan's checks and keys file
(plugins/plugin_utils/_gateway.py) and the hook LiteLLM loads (roles/gateway/files/inferops_auth.py),
loaded from its file as LiteLLM loads it; LiteLLM itself is not installed here (the real proxy is
tests/bench/test_gateway_keys_real_litellm.py). Issue 38 item 6: the 503's Retry-After."""
from __future__ import annotations

import asyncio
import datetime
import importlib.util
import json
import os

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FILES = os.path.join(ROOT, "roles", "gateway", "files")
MASTER = "sk-unit-master-key-0123456789abcdef"
KEY_A = "sk-client-a-0123456789abcdef0123456789"
KEY_A2 = "sk-client-a-rotated-0123456789abcdef0123"
KEY_B = "sk-client-b-0123456789abcdef0123456789"
NOW = datetime.datetime(2026, 12, 5, 12, 0, tzinfo=datetime.timezone.utc)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(FILES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def auth():
    return load("inferops_auth")


def plan(profile, port):
    return d.plan(profile, {"name": "inferops-serving", "port": port, "network_mode": "host", "secret_env": []})


SPARK = plan("gb10-nvfp4-mtp-throughput", 8101)
G7E = plan("g7e-fp8-sglang-eagle", 8102)
NVFP4, FP8 = SPARK["served_model_name"], G7E["served_model_name"]
HOSTVARS = {"spark-1": {"ansible_host": "10.0.0.11", "server_deployment": SPARK},
            "g7e-1": {"ansible_host": "10.0.0.21", "server_deployment": G7E, "server_ready_timeout": 600}}
SETTINGS = {"aliases": {"nemotron": NVFP4}}
GROUPS = {NVFP4: ["spark-1"], FP8: ["g7e-1"]}
ALIASES = {"nemotron": NVFP4}


def keys(*entries):
    return [dict(entry) for entry in entries]


A = {"name": "team-a-2026-11", "client": "team-a", "key": KEY_A, "models": ["nemotron"], "rpm": 60,
     "expires": "2027-01-31"}
A2 = {"name": "team-a-2026-12", "client": "team-a", "key": KEY_A2, "models": [NVFP4]}
B = {"name": "team-b", "key": KEY_B, "models": [FP8, NVFP4], "expires": "2027-06-30T12:00:00+02:00"}


# ---- the plan's checks ----

def test_valid_keys_expand_models_to_their_groups_aliases_and_normalise_expiry():
    entries, problems = g.check_client_keys(keys(A, A2, B), GROUPS, ALIASES, MASTER)
    assert problems == []
    by_name = {e["name"]: e for e in entries}
    assert by_name["team-a-2026-11"]["models"] == sorted([NVFP4, "nemotron"])  # an alias grants its group
    assert by_name["team-a-2026-12"]["models"] == sorted([NVFP4, "nemotron"])
    assert by_name["team-b"]["models"] == sorted([FP8, NVFP4, "nemotron"])
    assert by_name["team-a-2026-11"]["expires"] == "2027-01-31T00:00:00Z"
    assert by_name["team-b"]["expires"] == "2027-06-30T10:00:00Z"
    assert by_name["team-b"]["client"] == "team-b" and by_name["team-b"]["rpm"] is None


def test_a_yaml_date_is_an_expiry():
    entries, problems = g.check_client_keys([dict(A, expires=datetime.date(2027, 1, 31))], GROUPS, ALIASES, MASTER)
    assert problems == [] and entries[0]["expires"] == "2027-01-31T00:00:00Z"


@pytest.mark.parametrize("change, expected", [
    ({"key": "sk-short-0123456789"}, "gateway_client_keys[0] (team-a-2026-11).key: shorter than 32 characters"),
    ({"key": MASTER}, "gateway_client_keys[0] (team-a-2026-11).key: is the master key (gateway_master_key)"),
    ({"models": ["gpt-4"]}, "gateway_client_keys[0] (team-a-2026-11).models: gpt-4 is not served by the fleet"),
    ({"models": []}, "gateway_client_keys[0] (team-a-2026-11).models: got"),
    ({"expires": "next tuesday"}, "gateway_client_keys[0] (team-a-2026-11).expires: got the string 'next tuesday'; "
                                  "expected an ISO 8601 date or time"),
    ({"rpm": 0}, "gateway_client_keys[0] (team-a-2026-11).rpm: got the integer 0"),
    ({"name": "team a"}, "gateway_client_keys[0].name: got the string 'team a'"),
    ({"secret": 1}, "gateway_client_keys[0] (team-a-2026-11): unknown field secret"),
    ({"key": None}, "gateway_client_keys[0] (team-a-2026-11).key: missing or not a string"),
])
def test_each_problem_names_the_variable_the_entry_and_the_fix_never_the_key(change, expected):
    _entries, problems = g.check_client_keys([dict(A, **change)], GROUPS, ALIASES, MASTER)
    assert len(problems) == 1 and problems[0].startswith(expected), problems
    for secret in (KEY_A, MASTER, "sk-short-0123456789"):
        assert secret not in problems[0]


def test_duplicate_names_and_a_key_used_twice_are_refused():
    _entries, problems = g.check_client_keys(keys(A, dict(A2, name=A["name"]), dict(B, key=KEY_A)), GROUPS, ALIASES, MASTER)
    assert any("the name team-a-2026-11 is used twice" in p for p in problems)
    assert any(p.startswith("gateway_client_keys[2] (team-b).key: the same key as team-a-2026-11") for p in problems)
    assert not any(KEY_A in p for p in problems)


def test_not_a_list_is_refused_with_the_shape():
    _entries, problems = g.check_client_keys({"team-a": KEY_A}, GROUPS, ALIASES, MASTER)
    assert problems[0].startswith("gateway_client_keys: got") and "[{name: team-a-2026-12" in problems[0]
    assert KEY_A not in problems[0]


def test_the_plan_shows_the_keys_without_key_or_hash_and_loads_the_hook():
    result = g.gateway_plan(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, master_key=MASTER, client_keys=keys(A, B))
    text = json.dumps(result)
    assert KEY_A not in text and KEY_B not in text and MASTER not in text
    assert g.client_key_hash(MASTER, KEY_A) not in text
    assert [k["name"] for k in result["client_keys"]] == ["team-a-2026-11", "team-b"]
    assert result["key_problems"] == []
    config = result["config"]
    assert config["general_settings"]["custom_auth"] == "inferops_auth.user_api_key_auth"
    assert config["litellm_settings"]["callbacks"] == ["inferops_drain.drain_filter", "inferops_auth.usage"]


def test_without_client_keys_litellm_checks_the_master_key_itself():
    config = g.gateway_plan(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, master_key=MASTER)["config"]
    assert "custom_auth" not in config["general_settings"]
    assert config["litellm_settings"]["callbacks"] == ["inferops_drain.drain_filter"]


def test_the_plans_key_problems_carry_the_client_keys_problems():
    result = g.gateway_plan(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, master_key=MASTER,
                            client_keys=[dict(A, key="sk-too-short")])
    assert any(p.startswith("gateway_client_keys[0] (team-a-2026-11).key: shorter") for p in result["key_problems"])


def test_the_keys_file_holds_hashes_never_keys_and_is_stable():
    text = g.gateway_client_keys_file(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, MASTER, keys(B, A))
    assert KEY_A not in text and KEY_B not in text and MASTER not in text
    data = json.loads(text)
    assert data["format"] == g.CLIENT_KEYS_FORMAT and [k["name"] for k in data["keys"]] == ["team-a-2026-11", "team-b"]
    assert data["keys"][0]["hmac"] == g.client_key_hash(MASTER, KEY_A)
    assert text == g.gateway_client_keys_file(["g7e-1", "spark-1"], HOSTVARS, SETTINGS, MASTER, keys(A, B))
    # another master key, other hashes: the file alone does not let a guessed key be tested offline
    assert g.client_key_hash("sk-another-master-key-0123", KEY_A) != data["keys"][0]["hmac"]


def test_the_keys_file_is_refused_with_its_problems():
    with pytest.raises(g.GatewayError, match=r"gateway_client_keys\[0\] \(team-a-2026-11\).models: gpt-4"):
        g.gateway_client_keys_file(["spark-1"], HOSTVARS, SETTINGS, MASTER, [dict(A, models=["gpt-4"])])


# ---- the hook ----

def test_the_plan_and_the_hook_hash_alike(auth):
    assert auth.FORMAT == g.CLIENT_KEYS_FORMAT and auth.HASH_LABEL == g.CLIENT_KEY_HASH_LABEL
    assert auth.key_hash(auth.hash_secret(MASTER), KEY_A) == g.client_key_hash(MASTER, KEY_A)


def test_the_config_names_the_hooks_functions(auth):
    for dotted in (g.AUTH_HOOK, g.USAGE_CALLBACK):
        name, instance = dotted.split(".")
        assert name == "inferops_auth" and hasattr(auth, instance)


@pytest.fixture
def entries(auth, tmp_path):
    path = tmp_path / "client_keys.json"
    expired = dict(B, name="team-b-old", key="sk-client-b-old-0123456789abcdef01234", expires="2026-01-01")
    path.write_text(g.gateway_client_keys_file(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, MASTER, keys(A, A2, B, expired)))
    return auth.read_keys(str(path))


def decide(auth, entries, key, route="/v1/chat/completions", model=NVFP4):
    return auth.decide(key, MASTER, entries, route, model, NOW)


def test_a_client_key_works_for_its_models_and_both_keys_of_a_rotation_work(auth, entries):
    for key, model in ((KEY_A, "nemotron"), (KEY_A, NVFP4), (KEY_A2, NVFP4), (KEY_B, FP8)):
        who, entry = decide(auth, entries, key, model=model)
        assert who == "client" and model in entry["models"]
    assert decide(auth, entries, KEY_A)[1]["client"] == decide(auth, entries, KEY_A2)[1]["client"] == "team-a"
    assert decide(auth, entries, KEY_A, route="/v1/models", model=None)[0] == "client"


@pytest.mark.parametrize("key, route, model, status, says", [
    ("sk-unknown-0123456789abcdef0123456789", "/v1/chat/completions", NVFP4, 401, "unknown key"),
    ("", "/v1/chat/completions", NVFP4, 401, "unknown key"),
    (KEY_A, "/v1/chat/completions", FP8, 403, "may not use model " + FP8),
    (KEY_A, "/v1/chat/completions", None, 403, "may not use model (none given)"),
    (KEY_A, "/v1/model/info", None, 403, "may not call /v1/model/info"),
    (KEY_A, "/health", None, 403, "may not call /health"),
    ("sk-client-b-old-0123456789abcdef01234", "/v1/chat/completions", FP8, 401, "expired at 2026-01-01T00:00:00+00:00"),
])
def test_refusals(auth, entries, key, route, model, status, says):
    with pytest.raises(auth.Refused) as refused:
        decide(auth, entries, key, route, model)
    assert refused.value.status == status and says in refused.value.message
    assert KEY_A not in refused.value.message and MASTER not in refused.value.message


def test_the_master_key_stays_the_operators_on_every_route(auth, entries):
    assert decide(auth, entries, MASTER, route="/health", model=None) == ("admin", None)
    assert decide(auth, entries, MASTER, model=FP8) == ("admin", None)


def test_without_a_master_key_in_the_environment_nothing_is_accepted(auth, entries):
    with pytest.raises(auth.Refused):
        auth.decide(KEY_A, None, entries, "/v1/chat/completions", NVFP4, NOW)


def test_a_removed_key_is_refused_once_the_file_changed(auth, tmp_path):
    path = tmp_path / "client_keys.json"
    path.write_text(g.gateway_client_keys_file(["spark-1"], HOSTVARS, SETTINGS, MASTER, keys(A, A2)))
    current = auth.ClientKeys(str(path))
    assert decide(auth, current.current(), KEY_A)[0] == "client"
    tmp = tmp_path / "next.json"
    tmp.write_text(g.gateway_client_keys_file(["spark-1"], HOSTVARS, SETTINGS, MASTER, keys(A2)))
    os.replace(tmp, path)
    with pytest.raises(auth.Refused):
        decide(auth, current.current(), KEY_A)
    assert decide(auth, current.current(), KEY_A2)[0] == "client"


def test_an_unreadable_file_keeps_the_last_good_keys_and_none_before(auth, tmp_path):
    path = tmp_path / "client_keys.json"
    current = auth.ClientKeys(str(path))
    assert current.current() == []
    path.write_text("{half")
    assert current.current() == []
    path.write_text(g.gateway_client_keys_file(["spark-1"], HOSTVARS, SETTINGS, MASTER, keys(A)))
    assert [e["name"] for e in current.current()] == ["team-a-2026-11"]
    path.write_text("{half-written, another size")
    assert [e["name"] for e in current.current()] == ["team-a-2026-11"]


def test_bearer_prefix(auth):
    assert auth.bare_key("Bearer " + KEY_A) == KEY_A and auth.bare_key(KEY_A) == KEY_A and auth.bare_key(None) == ""


def test_usage_counts_each_client_keys_requests_and_tokens(auth, tmp_path, monkeypatch):
    path = tmp_path / "client_keys.json"
    path.write_text(g.gateway_client_keys_file(["spark-1"], HOSTVARS, SETTINGS, MASTER, keys(A, A2)))
    monkeypatch.setattr(auth, "KEYS", auth.ClientKeys(str(path)))
    clock = [1000.0]
    usage = auth.Usage(str(tmp_path / "usage.json"), clock=lambda: clock[0])

    def call(alias, ok=True, tokens=(3, 5, 8)):
        kwargs = {"litellm_params": {"metadata": {"user_api_key_alias": alias}}}
        response = {"usage": dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), tokens))}
        hook = usage.async_log_success_event if ok else usage.async_log_failure_event
        asyncio.run(hook(kwargs, response, None, None))

    call("team-a-2026-11")
    call("team-a-2026-12")
    call("team-a-2026-12", ok=False)
    call("litellm-internal-health-check")  # LiteLLM's own calls are no client's
    call(None)  # the master key
    usage.write(force=True)
    data = json.loads((tmp_path / "usage.json").read_text())
    assert data["keys"] == {
        "team-a-2026-11": {"client": "team-a", "requests": 1, "failures": 0, "prompt_tokens": 3, "completion_tokens": 5,
                           "total_tokens": 8},
        "team-a-2026-12": {"client": "team-a", "requests": 2, "failures": 1, "prompt_tokens": 3, "completion_tokens": 5,
                           "total_tokens": 8}}
    assert data["since"] == "1970-01-01T00:16:40Z"


# ---- item 6: Retry-After ----

def test_each_deployment_carries_its_expected_seconds_back():
    config = g.gateway_plan(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, master_key=MASTER)["config"]
    seconds = {e["model_info"]["id"]: e["model_info"]["inferops_retry_after"] for e in config["model_list"]}
    # no stop timeout in these plans: Docker's 10 s; the readiness cap: the host's, else the server role's default
    assert seconds == {"spark-1": 10 + g.SERVER_READY_TIMEOUT, "g7e-1": 10 + 600}
    with_stop = dict(SPARK, spec=dict(SPARK["spec"], stop_timeout=90))
    assert g.expected_back_seconds("spark-1", with_stop, "1200") == 1290


def test_a_bad_readiness_cap_is_refused_naming_it():
    with pytest.raises(g.GatewayError, match="g7e-1: server_ready_timeout got the string 'soon'"):
        g.gateway_plan(["g7e-1"], {"g7e-1": dict(HOSTVARS["g7e-1"], server_ready_timeout="soon")}, master_key=MASTER)


def test_the_readiness_default_is_the_server_roles():
    with open(os.path.join(ROOT, "roles", "server", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["server_ready_timeout"] == g.SERVER_READY_TIMEOUT


def test_the_drains_503_says_when_to_retry():
    drain = load("inferops_drain")
    config = g.gateway_plan(["spark-1", "g7e-1"], HOSTVARS, SETTINGS, master_key=MASTER)["config"]
    deployments = [e for e in config["model_list"] if e["model_name"] == FP8]
    filt = drain.DrainFilter("/nonexistent/drained.json")
    filt.drained.hosts = frozenset(["g7e-1"])
    filt.drained.current = lambda: frozenset(["g7e-1"])
    with pytest.raises(drain.ServiceUnavailableError) as err:
        asyncio.run(filt.async_filter_deployments(FP8, deployments, None))
    assert err.value.status_code == 503 and err.value.headers == {"Retry-After": "610"}
    assert drain.retry_after([{"model_info": {"inferops_retry_after": 1810}}, {"model_info": {"inferops_retry_after": 610}}]) == 610
    assert drain.retry_after([{"model_info": {}}]) is None


# ---- usage in gateway_status ----

def test_the_status_read_carries_each_keys_usage():
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import routing_from_reads
    read = {"status": 200, "json": {"data": [{"model_name": FP8, "model_info": {"inferops_host": "g7e-1"}}]}}
    text = json.dumps({"since": "2026-12-05T14:41:54Z", "updated": "2026-12-05T14:42:00Z",
                       "keys": {"team-b": {"client": "team-b", "requests": 2, "total_tokens": 12}}})
    status = routing_from_reads(read, "gw-01", "http://gw-01:4000/v1", None, text)
    assert status["ok"] and status["usage"]["keys"] == {"team-b": {"client": "team-b", "requests": 2, "total_tokens": 12}}
    assert routing_from_reads(read, "gw-01", "http://gw-01:4000/v1")["usage"] is None
    broken = routing_from_reads(read, "gw-01", "http://gw-01:4000/v1", None, "{half")
    assert broken["ok"] and broken["usage"]["problem"].startswith("the usage file is not")
