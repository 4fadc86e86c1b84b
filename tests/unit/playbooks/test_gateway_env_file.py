# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's env file (the master key and the engines' keys) is written 0600, owned by root,
under no_log: the gateway role run in check mode on this machine (its configuration step, the
plan before it), every task's templated arguments recorded (role_runs.py). Check mode because
the step also creates the proxy's system user and its systemd unit: a test must not; the
arguments are what the real run would be given."""
from __future__ import annotations

import json

from role_runs import LOCAL, run

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d

MASTER = "sk-unit-gateway-master-0123456789"
ENGINE_KEY = "sk-unit-engine-key-0123456789"


def test_the_env_file_is_written_0600_root_and_hidden(tmp_path):
    config_dir, state_dir = tmp_path / "etc", tmp_path / "state"
    plan = d.plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101, "network_mode": "host",
                                             "secret_env": ["VLLM_API_KEY"]})
    inventory = {"all": {"children": {
        "serving": {"hosts": {"spark-1": dict(LOCAL, server_deployment=json.loads(json.dumps(plan)),
                                              server_secrets={"VLLM_API_KEY": ENGINE_KEY})}},
        "gateway": {"hosts": {"gw-01": dict(LOCAL, gateway_config_dir=str(config_dir), gateway_state_dir=str(state_dir),
                                            gateway_master_key=MASTER)}}}}}
    plays = [{"name": "Gateway", "hosts": "gateway", "gather_facts": False,
              "roles": [{"role": "inferops.serving.gateway"}]}]
    result = run(tmp_path, inventory, plays, "--check", "--tags", "gateway_configure")
    assert result.code == 0, result.output[-4000:]
    env_file = str(config_dir / "gateway.env")
    writes = [r for r in result.records if r["args"].get("dest") == env_file]
    assert len(writes) == 1, [r["args"].get("dest") for r in result.records]
    write = writes[0]
    assert write["args"].get("mode") in ("0600", "600", 0o600), write["args"].get("mode")
    assert write["args"].get("owner") == "root" and write["no_log"]
    # The keys went into the file's content, never into the output.
    assert MASTER in json.dumps(write["args"]) and ENGINE_KEY in json.dumps(write["args"])
    assert MASTER not in result.output and ENGINE_KEY not in result.output
    assert not config_dir.exists()  # check mode wrote nothing
