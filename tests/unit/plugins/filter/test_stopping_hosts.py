# SPDX-License-Identifier: GPL-3.0-or-later
"""stopping_hosts: the hosts of a batch whose running engine a converge stops (container_action's
`replacing` of each host's plan and the container the server role read), which the server role's
outage check reads from every host of the batch."""
from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.filter.stopping_hosts import FilterModule
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

stopping_hosts = FilterModule().filters()["stopping_hosts"]
LOCK = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "a" * 64}}}
PLAN = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101}, lock=LOCK)


def found(spec=None, running=True):
    labels = {PLAN["spec_label"]: PLAN["spec_sha256"] if spec is None else spec}
    return {"exists": True, "container": {"Config": {"Image": PLAN["spec"]["image"], "Labels": labels},
                                          "State": {"Running": running}}}


def host(current):
    return {"server_deployment": PLAN, "__server_current": current}


def test_only_a_running_container_that_differs_from_the_plan_is_stopped():
    hostvars = {
        "same": host(found()),                        # runs the plan: left alone
        "other-spec": host(found(spec="0" * 64)),     # running, another spec: swapped, stopped
        "stopped": host(found(spec="0" * 64, running=False)),  # nothing running to stop
        "none": host({"exists": False, "container": None}),    # nothing to stop
        "other-spec-2": host(found(spec="1" * 64)),
    }
    assert stopping_hosts(list(hostvars), hostvars) == ["other-spec", "other-spec-2"]


def test_hosts_without_a_plan_or_a_container_read_are_left_out_in_the_input_order():
    hostvars = {"b": host(found(spec="0" * 64)), "no-read": {"server_deployment": PLAN},
                "no-plan": {"__server_current": found(spec="0" * 64)}, "a": host(found(spec="0" * 64))}
    assert stopping_hosts(["b", "missing", "no-read", "no-plan", "a"], hostvars) == ["b", "a"]
    assert stopping_hosts([], hostvars) == [] and stopping_hosts(None, hostvars) == []


class Lazy(Mapping):
    """Stands for Ansible's lazy mappings (hostvars' values are templated when a key is read):
    counts the keys read, so a test sees what the filter reads of each host's plan and read."""

    reads = []

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        Lazy.reads.append(key)
        value = self._data[key]
        return Lazy(value) if isinstance(value, dict) else value

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


def test_it_reads_only_the_fields_the_decision_needs_of_each_host():
    current = found(spec="0" * 64)
    current["container"].update({"HostConfig": {"Binds": ["/srv/models:/models"] * 50},
                                 "NetworkSettings": {"Ports": {}}, "Mounts": [{"Source": "/x"}] * 50})
    hostvars = {name: Lazy(host(current)) for name in ("a", "b", "c")}
    Lazy.reads = []
    assert stopping_hosts(["a", "b", "c"], hostvars) == ["a", "b", "c"]
    # Not the plan's argv, environment or volumes, nor the inspect's HostConfig or Mounts: copying
    # them for every host of the batch, on every host, grew with the square of the batch.
    assert not {"HostConfig", "Mounts", "NetworkSettings", "argv", "env", "volumes"} & set(Lazy.reads)
    assert {"spec_label", "spec_sha256", "Labels", "Image", "Running"} <= set(Lazy.reads)
