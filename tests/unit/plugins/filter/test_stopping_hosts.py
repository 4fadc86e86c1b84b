# SPDX-License-Identifier: GPL-3.0-or-later
"""stopping_hosts: the hosts of a batch whose running engine a converge stops (container_action's
`replacing` of each host's plan and the container the server role read), which the server role's
outage check reads from every host of the batch."""
from __future__ import annotations

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
