# SPDX-License-Identifier: GPL-3.0-or-later
"""container_action: the one home of "does the container found run this plan" (the server role's
fast path and status.yml's drift)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import SECRETS_LABEL, container_action
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
                      "starting": False, "secrets_changed": False, "labels": PLAN["spec"]["labels"], "drift": []}


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


# A plan whose container reads the engine's API key from its env file: the read carries the keyed
# digest of the secrets the converge is about to write (deployment_state's secrets_digest).
KEYED = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101, "secret_env": ["VLLM_API_KEY"]},
             lock=LOCK)
TODAY, YESTERDAY = "1" * 64, "2" * 64


def keyed(label, digest=TODAY, image=None):
    read = {"exists": True, "secrets_digest": digest,
            "container": {"Config": {"Image": image or KEYED["spec"]["image"],
                                     "Labels": dict({KEYED["spec_label"]: KEYED["spec_sha256"]},
                                                    **({SECRETS_LABEL: label} if label else {}))},
                          "State": {"Running": True}}}
    return read


def test_a_container_created_with_todays_secrets_is_left_alone():
    action = container_action(KEYED, keyed(TODAY))
    assert not action["differs"] and not action["starting"] and not action["secrets_changed"]
    assert action["labels"] == dict(KEYED["spec"]["labels"], **{SECRETS_LABEL: TODAY})


def test_a_rotated_secret_is_a_named_change_that_replaces_the_container():
    action = container_action(KEYED, keyed(YESTERDAY))
    assert action["secrets_changed"] and action["differs"] and action["swapping"] and action["replacing"]
    assert action["drift"] == ["secrets changed: server_secrets (or server_hf_token) differ from those the container "
                               "was created with; Docker reads them only when it creates a container, so site.yml "
                               "would recreate it"]
    # The container created in its place carries today's digest, and never a secret.
    assert action["labels"][SECRETS_LABEL] == TODAY


def test_a_container_without_the_digest_is_replaced():
    # Created by hand from the launch script, or before the digest existed: its secrets are unknown.
    action = container_action(KEYED, keyed(None))
    assert action["secrets_changed"] and action["replacing"]
    assert "carries no digest of them" in action["drift"][0]


def test_secrets_removed_from_the_plan_replace_a_container_created_with_some():
    read = found()
    read["container"]["Config"]["Labels"][SECRETS_LABEL] = YESTERDAY
    action = container_action(PLAN, read)
    assert action["secrets_changed"] and "the plan has none" in action["drift"][0]
    assert SECRETS_LABEL not in action["labels"]


@pytest.mark.parametrize("digest", [None, ""])
def test_a_read_without_the_digest_refuses_to_decide(digest):
    # Fail closed: a key that could not be read never makes the secrets "unchanged".
    with pytest.raises(ValueError, match="keyed digest of its secrets .*inferops-serving.env.* was not read"):
        container_action(KEYED, keyed(TODAY, digest=digest))
    with pytest.raises(ValueError, match="refusing rather than calling them unchanged"):
        container_action(KEYED, {"exists": False, "container": None})
