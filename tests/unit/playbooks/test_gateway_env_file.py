# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's env file (the master key and the engines' keys) is written 0600, owned by root,
under no_log: the gateway role run in check mode on this machine (its configuration step, the
plan before it), every task's templated arguments recorded (role_runs.py): the task that writes the env file
(ansible.builtin.copy's dest, or an entry of a module writing several files) asks for it. Check mode because
the step also creates the proxy's system user and its systemd unit: a test must not; the
arguments are what the real run would be given."""
from __future__ import annotations

import json

from role_runs import LOCAL, run

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d

MASTER = "sk-unit-gateway-master-0123456789"
ENGINE_KEY = "sk-unit-engine-key-0123456789"


def entries(args, path):
    """The mappings of a task's arguments that write ``path`` (its dest, or an entry of a list of
    files such as inferops.serving.host_files' ``files``), wherever they are nested."""
    if isinstance(args, dict):
        if path in (args.get("dest"), args.get("path")):
            yield args
        for value in args.values():
            yield from entries(value, path)
    elif isinstance(args, list):
        for value in args:
            yield from entries(value, path)


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
    writes = [(record, entry) for record in result.records for entry in entries(record["args"], env_file)]
    assert len(writes) == 1, [record["args"] for record in result.records if record["action"] != "ansible.builtin.debug"]
    record, entry = writes[0]
    assert entry.get("mode") in ("0600", "600", 0o600), entry.get("mode")
    assert entry.get("owner") == "root" and record["no_log"]
    # The keys went into the file's content, never into the output.
    assert MASTER in json.dumps(entry) and ENGINE_KEY in json.dumps(entry)
    assert MASTER not in result.output and ENGINE_KEY not in result.output
    assert not config_dir.exists()  # check mode wrote nothing
