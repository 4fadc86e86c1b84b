# SPDX-License-Identifier: GPL-3.0-or-later
"""container_action: the one home of "does the container found run this plan" (the server role's
fast path and status.yml's drift)."""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

LOCK = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "a" * 64}}}
PLAN = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101}, lock=LOCK)


def found(image=None, spec=None, running=True):
    labels = {PLAN["spec_label"]: PLAN["spec_sha256"] if spec is None else spec}
    return {"exists": True, "container": {"Config": {"Image": image or PLAN["spec"]["image"], "Labels": labels},
                                          "State": {"Running": running, "Status": "running" if running else "exited"}}}


def test_the_plans_running_container_is_left_alone():
    action = container_action(PLAN, found())
    assert action == {"exists": True, "running": True, "differs": False, "swapping": False, "replacing": False,
                      "starting": False, "drift": []}


def test_no_container_is_created_and_started():
    action = container_action(PLAN, {"exists": False, "container": None})
    assert action["differs"] and action["starting"] and not action["swapping"] and not action["replacing"]
    assert action["drift"] == ["no container inferops-serving"]


def test_a_stopped_container_of_the_plan_is_only_started():
    action = container_action(PLAN, found(running=False))
    assert action["starting"] and not action["differs"] and not action["swapping"] and not action["replacing"]


def test_another_spec_is_swapped_in_replacing_the_running_one():
    action = container_action(PLAN, found(spec="0" * 64))
    assert action["differs"] and action["swapping"] and action["replacing"] and action["starting"]
    assert "not created from this inventory's plan (spec 000000000000" in action["drift"][0]


def test_the_plans_label_on_another_image_is_not_the_plans_container():
    # A container replaced by hand from the launch script with another digest keeps the spec label.
    other = "127.0.0.1:5000/vllm/vllm-openai@sha256:" + "b" * 64
    action = container_action(PLAN, found(image=other))
    assert action["differs"] and action["swapping"]
    assert action["drift"] == ["runs %s, the inventory (lock) says %s" % (other, PLAN["spec"]["image"])]


def test_a_stopped_container_of_another_spec_is_swapped_but_nothing_running_is_replaced():
    action = container_action(PLAN, found(spec="0" * 64, running=False))
    assert action["swapping"] and not action["replacing"] and action["starting"]
