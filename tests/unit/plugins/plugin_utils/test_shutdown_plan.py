# SPDX-License-Identifier: GPL-3.0-or-later
"""How the plan stops the engine: vLLM's graceful --shutdown-timeout where the release has it (the
engine catalog), Docker's stop timeout longer than it, and a note wherever the stop is not graceful."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError

OPTIONS = {"name": "inferops-serving", "port": 8101, "network_mode": "host", "secret_env": [],
           "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 1024}}


@pytest.mark.parametrize("version, graceful", [
    ("0.17.1", False), ("0.18.0", True), ("0.19.2rc1.dev134", True), ("0.33.0", True), ("0.40.0", True)])
def test_vllm_is_stopped_gracefully_from_0_18(version, graceful):
    plan = d.shutdown_plan("vllm", version, {}, 60)
    assert plan["graceful"] is graceful and plan["add_flag"] is graceful
    assert plan["stop_timeout"] == (60 + d.STOP_MARGIN if graceful else None)
    if not graceful:
        assert plan["note"] == ("vLLM 0.17.1 has no --shutdown-timeout (from 0.18.0 on): in-flight requests are cut "
                                "at the stop (the gateway's drain waits for them to finish first)")


@pytest.mark.parametrize("engine, version, args, timeout, note", [
    ("sglang", "0.5.13", {}, 60, "SGLang has no graceful shutdown: its in-flight requests are cut at the stop"),
    ("vllm", None, {}, 60, "the lock gives no engine_version for this image"),
    ("vllm", "0.19.1", {}, 0, "server_shutdown_timeout is 0: in-flight requests are cut at the stop"),
    ("vllm", "0.19.1", {"shutdown-timeout": 0}, 60, "the profile sets --shutdown-timeout 0"),
])
def test_every_stop_that_is_not_graceful_says_why(engine, version, args, timeout, note):
    plan = d.shutdown_plan(engine, version, args, timeout)
    assert not plan["graceful"] and not plan["add_flag"] and plan["stop_timeout"] is None
    assert note in plan["note"]


def test_the_profiles_own_timeout_wins():
    plan = d.shutdown_plan("vllm", "0.19.1", {"shutdown_timeout": 300}, 60)
    assert plan == {"graceful": True, "timeout": 300, "flag": "shutdown-timeout", "add_flag": False,
                    "stop_timeout": 330, "note": None}


def test_the_plan_launches_vllm_with_it_and_docker_waits_longer():
    plan = d.plan("gb10-nvfp4-mtp-throughput", dict(OPTIONS, shutdown_timeout=60))
    argv = plan["spec"]["command"]
    assert argv[argv.index("--shutdown-timeout") + 1] == "60"
    assert plan["spec"]["stop_timeout"] == 90 and plan["shutdown"]["graceful"]
    assert "--stop-timeout 90" in plan["script"] and "--shutdown-timeout 60" in plan["script"]
    # the record of a deployment rebuilds the same container (rollback)
    assert d.from_record(d.record(plan))["spec_sha256"] == plan["spec_sha256"]


def test_without_the_option_the_container_is_as_before():
    """A record written before the option existed rebuilds to the container it recorded."""
    plan = d.plan("gb10-nvfp4-mtp-throughput", OPTIONS)
    assert "--shutdown-timeout" not in plan["spec"]["command"] and "stop_timeout" not in plan["spec"]
    assert "--stop-timeout" not in plan["script"]


def test_sglang_plans_no_flag_and_says_so():
    plan = d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, shutdown_timeout=60))
    assert "--shutdown-timeout" not in plan["spec"]["command"] and "stop_timeout" not in plan["spec"]
    assert plan["shutdown"]["note"].startswith("SGLang has no graceful shutdown")


@pytest.mark.parametrize("value", [-1, "soon", True, 3601])
def test_a_bad_timeout_names_the_variable(value):
    with pytest.raises(ProfileError, match="server_shutdown_timeout: got .*; expected a whole number from 0 to 3600"):
        d.plan("gb10-nvfp4-mtp-throughput", dict(OPTIONS, shutdown_timeout=value))
