# SPDX-License-Identifier: GPL-3.0-or-later
"""container_action: the one home of "does the container found run this plan" (the server role's
fast path and status.yml's drift)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import (
    SECRETS_LABEL, container_action, plan_changes)
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


# ---- plan_changes: what a restart would change, for --check --diff ----

OLDER = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101},
             lock={"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "b" * 64}}},
             overrides={"args": {"max-num-seqs": 4, "enforce-eager": True}, "env": {"VLLM_LOGGING_LEVEL": "DEBUG"}})


def inspect_of(deployment, running=True):
    """The Engine API's inspect of the container ``deployment`` created, as deployment_state reads
    it (Config.Env left out; the image's own label beside the plan's)."""
    spec = deployment["spec"]
    return {"exists": True, "container": {
        "Config": {"Image": spec["image"], "Cmd": list(spec["command"]),
                   "Labels": dict(spec["labels"], **{"org.opencontainers.image.version": "0.19"})},
        "HostConfig": {"Binds": [v + ":rw" if v.count(":") == 1 else v for v in spec["volumes"]],
                       "NetworkMode": spec["network_mode"],
                       "PortBindings": {"8000/tcp": [{"HostIp": "", "HostPort": "8101"}]},
                       "RestartPolicy": {"Name": "on-failure", "MaximumRetryCount": spec["restart_retries"]},
                       "LogConfig": {"Type": "json-file", "Config": dict(spec["log_options"])}},
        "State": {"Running": running}}}


def test_the_plans_running_container_has_no_changes():
    assert container_action(PLAN, inspect_of(PLAN), changes=True)["changes"] == []
    assert "changes" not in container_action(PLAN, inspect_of(PLAN))


def test_an_older_plans_container_shows_the_flags_and_the_image_from_its_inspect():
    changes = container_action(PLAN, inspect_of(OLDER), changes=True)["changes"]
    assert changes == ["image vllm/vllm-openai@sha256:%s -> vllm/vllm-openai@sha256:%s" % ("b" * 64, "a" * 64),
                       "--max-num-seqs 4 -> 32", "--enforce-eager removed"], changes


def test_the_recorded_spec_of_the_running_container_also_names_the_env_without_values():
    current = inspect_of(OLDER)
    recorded = dict(OLDER["spec"], env={name: "<hidden>" for name in OLDER["spec"]["env"]})
    current["history"] = [{"spec_sha256": "0" * 64, "spec": PLAN["spec"]},
                          {"spec_sha256": OLDER["spec_sha256"], "spec": recorded}]
    changes = container_action(PLAN, current, changes=True)["changes"]
    assert "--max-num-seqs 4 -> 32" in changes and "env removed: VLLM_LOGGING_LEVEL" in changes, changes
    assert not [line for line in changes if "DEBUG" in line], changes


def test_a_flag_added_a_secret_name_and_a_mount_are_named():
    newer = plan("gb10-nvfp4-mtp-throughput",
                 {"name": "inferops-serving", "port": 8101, "secret_env": ["VLLM_API_KEY"],
                  "extra_volumes": ["/data:/data:ro"]},
                 lock=LOCK, overrides={"args": {"max-num-seqs": 16, "enable-prefix-caching": True}})
    current = inspect_of(PLAN)
    current["last_known_good"] = {"spec_sha256": PLAN["spec_sha256"], "spec": PLAN["spec"]}
    changes = plan_changes(newer, current)
    assert "--max-num-seqs 32 -> 16" in changes and "--enable-prefix-caching added" in changes, changes
    assert "secret env added: VLLM_API_KEY" in changes and "mount added: /data:/data:ro" in changes, changes
    assert not [line for line in changes if line.startswith("image")], changes


def test_a_rotated_secret_says_changed_never_its_value():
    """The secrets' keyed digest is no spec label: container_action names the change, plan_changes
    leaves the label alone (a container recreated for another reason keeps no stale line)."""
    action = container_action(KEYED, keyed(YESTERDAY), changes=True)
    assert action["changes"] == ["secrets: changed (their keyed digest differs; values never shown)"]
    assert YESTERDAY not in str(action["changes"]) and TODAY not in str(action["changes"])
    assert container_action(KEYED, keyed(TODAY), changes=True)["changes"] == []


def test_a_spec_key_digesting_the_secrets_says_changed_never_its_value():
    current = inspect_of(PLAN)
    current["history"] = [{"spec_sha256": PLAN["spec_sha256"], "spec": dict(PLAN["spec"], secrets_sha256="e" * 64)}]
    newer = dict(PLAN, spec=dict(PLAN["spec"], secrets_sha256="f" * 64), spec_sha256="1" * 64)
    current["container"]["Config"]["Labels"][PLAN["spec_label"]] = PLAN["spec_sha256"]
    assert plan_changes(newer, current) == ["secrets: changed"]


def test_no_record_and_nothing_visible_says_so():
    current = found(spec="0" * 64)  # the same image and labels, no Cmd, no mounts in the read
    current["container"]["Config"]["Labels"]["inferops.serving.profile"] = "gb10-nvfp4-mtp-throughput"
    changes = plan_changes(PLAN, current)
    assert changes == ["launch spec 000000000000 -> %s (the host has no record of the running spec to compare)"
                       % PLAN["spec_sha256"][:12]], changes


def test_no_container_and_a_stopped_one():
    assert plan_changes(PLAN, {"exists": False}) == ["no container inferops-serving: it is created and started"]
    assert container_action(PLAN, inspect_of(PLAN, running=False), changes=True)["changes"] == [
        "container inferops-serving is not running: it is started"]


def test_flags_with_equals_and_repeats_are_compared_by_name():
    old = dict(PLAN, spec=dict(PLAN["spec"], command=["serve", "m", "--a=1", "--b", "x", "--b", "y", "--c"]))
    new = dict(PLAN, spec=dict(PLAN["spec"], command=["serve", "n", "--a", "2", "--b", "x", "--b", "y"]),
               spec_sha256="1" * 64)
    current = inspect_of(old)
    current["container"]["Config"]["Labels"][PLAN["spec_label"]] = "2" * 64
    assert plan_changes(new, current) == ["command serve m -> serve n", "--a 1 -> 2", "--c removed"]


def test_the_digest_labels_left_out_are_the_plans():
    from ansible_collections.inferops.serving.plugins.plugin_utils import _container_action, _deployment, _profile

    assert set(_container_action._DIGEST_LABELS) == {_profile.SPEC_LABEL, _deployment.ARGV_LABEL}
