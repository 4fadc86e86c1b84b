# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/gateway/files/inferops_drain.py: the LiteLLM callback that leaves drained hosts out of routing.

Loaded from its file as LiteLLM loads it (a module beside config.yaml); LiteLLM itself is not
installed here, so its CustomLogger base is the file's fallback. The deployments are shaped as
LiteLLM 1.106's router hands them to ``async_filter_deployments`` (model_list entries).
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._drain import state_text, updated
from ansible_collections.inferops.serving.plugins.plugin_utils._gateway import DRAIN_CALLBACK

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PATH = os.path.join(ROOT, "roles", "gateway", "files", "inferops_drain.py")
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def deployment(host):
    return {"model_name": MODEL, "litellm_params": {"model": "hosted_vllm/" + MODEL},
            "model_info": {"id": host, "inferops_host": host, "mode": "chat"}}


@pytest.fixture
def module():
    spec = importlib.util.spec_from_file_location("inferops_drain", PATH)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def write(path, hosts):
    path.write_text(state_text(updated({}, drain=hosts, by="test", now="2026-12-01T20:00:00Z")))


def test_the_config_names_this_files_instance(module):
    name, instance = DRAIN_CALLBACK.split(".")
    assert os.path.basename(PATH) == name + ".py" and hasattr(module, instance)


def test_drained_hosts_get_no_new_request(module, tmp_path):
    state = tmp_path / "drained.json"
    write(state, ["spark-1"])
    callback = module.DrainFilter(str(state))
    chosen = asyncio.run(callback.async_filter_deployments(MODEL, [deployment("spark-1"), deployment("spark-2")],
                                                           messages=None))
    assert [d["model_info"]["inferops_host"] for d in chosen] == ["spark-2"]


def test_no_state_file_routes_every_host(module, tmp_path):
    callback = module.DrainFilter(str(tmp_path / "drained.json"))
    both = [deployment("spark-1"), deployment("spark-2")]
    assert asyncio.run(callback.async_filter_deployments(MODEL, both, None)) == both


def test_the_file_is_read_again_only_when_it_changed(module, tmp_path):
    state = tmp_path / "drained.json"
    write(state, ["spark-1"])
    reads = []

    def read(path):
        reads.append(path)
        return module.read_drained(path)

    hosts = module.DrainedHosts(str(state), read=read)
    assert hosts.current() == {"spark-1"} and hosts.current() == {"spark-1"}
    assert len(reads) == 1
    write(state, ["spark-1", "spark-2"])  # another size
    assert hosts.current() == {"spark-1", "spark-2"} and len(reads) == 2
    tmp = tmp_path / "next.json"
    write(tmp, [])
    os.rename(tmp, state)  # the module's atomic replace: a new inode
    assert hosts.current() == frozenset() and len(reads) == 3


@pytest.mark.parametrize("damage", ["{half", '{"hosts": ["x"]}', None])
def test_an_unreadable_file_keeps_the_last_good_state(module, tmp_path, caplog, damage):
    state = tmp_path / "drained.json"
    write(state, ["spark-1"])
    hosts = module.DrainedHosts(str(state))
    assert hosts.current() == {"spark-1"}
    if damage is None:
        state.unlink()
    else:
        state.write_text(damage)
    with caplog.at_level(logging.WARNING, logger="inferops_drain"):
        assert hosts.current() == {"spark-1"}
    assert "keeping the drained hosts ['spark-1']" in caplog.text


def test_the_drain_file_comes_from_the_units_environment(module, tmp_path, monkeypatch):
    monkeypatch.setenv(module.DRAIN_FILE_ENV, str(tmp_path / "x.json"))
    assert module.DrainFilter().drained.path == str(tmp_path / "x.json")
    monkeypatch.delenv(module.DRAIN_FILE_ENV)
    assert module.DrainFilter().drained.path == module.DEFAULT_DRAIN_FILE


def test_the_module_state_format_is_what_the_callback_reads(module, tmp_path):
    state = tmp_path / "drained.json"
    state.write_text(json.dumps({"hosts": {"g7e-1": {"since": "x", "by": "undeploy"}}}))
    assert module.read_drained(str(state)) == {"g7e-1"}


def test_a_group_with_every_host_drained_gets_a_503_naming_it(module, tmp_path):
    """LiteLLM's own answer to an empty list is 429 "No deployments available": the filter says 503 instead."""
    state = tmp_path / "drained.json"
    write(state, ["spark-1", "spark-2"])
    callback = module.DrainFilter(str(state))
    with pytest.raises(module.ServiceUnavailableError) as caught:
        asyncio.run(callback.async_filter_deployments(MODEL, [deployment("spark-2"), deployment("spark-1")], None))
    assert caught.value.status_code == 503
    assert ("model group %s has no host in the gateway's routing: spark-1, spark-2 drained" % MODEL) in str(caught.value)


def test_an_empty_list_from_the_router_is_passed_on(module, tmp_path):
    """No deployment offered (all cooled down): LiteLLM's own answer, not the drain's."""
    state = tmp_path / "drained.json"
    write(state, ["spark-1"])
    assert asyncio.run(module.DrainFilter(str(state)).async_filter_deployments(MODEL, [], None)) == []
