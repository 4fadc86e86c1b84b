# SPDX-License-Identifier: GPL-3.0-or-later
"""The pin_plan lookup (over plugins/plugin_utils/_pin.py, whose decisions tests/unit/plugins/plugin_utils/
test_pin.py covers): each step answers with the state the pin role acts on, from the values a task
passes it (strings where Ansible templates strings, none where a fact is undefined)."""
from __future__ import annotations

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.inferops.serving.plugins.lookup import pin_plan as lookup_plugin
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

C.config.initialize_plugin_configuration_definitions(
    "lookup", "pin_plan", yaml.safe_load(lookup_plugin.DOCUMENTATION)["options"])

NIGHTLY = "vllm/vllm-openai:cu130-nightly"
NEW = "sha256:" + "5e" * 32
PLAN = plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101})
PULL = {"image": {"Id": "sha256:" + "1d" * 32, "Os": "linux", "Architecture": "arm64",
                  "RepoDigests": ["vllm/vllm-openai@" + NEW]}}


def pin_plan(step, **options):
    """What lookup('inferops.serving.pin_plan', step, **options) answers."""
    lookup = lookup_plugin.LookupModule()
    lookup._load_name = "pin_plan"
    return lookup.run([step], {}, **options)[0]


def test_canaries_and_the_refusal_of_an_image_no_host_deploys():
    hosts = [{"host": "spark-1", "image": NIGHTLY, "groups": ["serving"], "hardware_group": None, "canary": False}]
    assert pin_plan("canaries", hosts=hosts, image="") == ["spark-1"]
    with pytest.raises(AnsibleLookupError, match="pin_plan canaries: pin_image=x:y is the image of no host in lab"):
        pin_plan("canaries", hosts=hosts, image="x:y", pattern="lab")


def test_a_proven_candidate_goes_from_target_to_lock_entry():
    target = pin_plan("target", deployment=PLAN, pull=PULL, remote={"skipped": True}, check_mode=False,
                      host="spark-1", lock_file="/inv/lock.yml")
    assert target["state"] == "prove" and target["digest"] == NEW
    assert pin_plan("outcome", target=target, proven=True, failed=None, bench=None)["state"] == "lock"
    entry = pin_plan("lock_entry", target=target, deployment=PLAN, host="spark-1", now="2026-12-01T10:00:00Z",
                     soak_minutes="0", version=None, spec_evidence=None, bench=None,
                     bench_run={"workload": "chat", "runs": "3", "duration": "60"}, mirror="", pushed={})
    assert entry["digest"] == NEW and entry["evidence"]["canary"] == "spark-1" and "mirror" not in entry


def test_a_failed_canary_is_never_locked():
    target = pin_plan("target", deployment=PLAN, pull=PULL)
    failed = pin_plan("failed", target=target, host="spark-1", now="now", known_bad_file="kb.yml",
                      message="the proof failed", server_failure={}, soak={}, bench=None, bench_dir=None, proven=False)
    assert failed["state"] == "failed" and failed["known_bad_entry"] is None and not failed["rollback"]
    assert failed["message"].endswith("failed on canary spark-1: the proof failed The lock is unchanged.")
    assert pin_plan("outcome", target=target, proven=True, failed=failed)["state"] == "failed"
    refused = {"accepted": False, "state": "refused", "message": "refused (throughput): slower"}
    assert pin_plan("outcome", target=target, proven=True, bench=refused)["state"] == "refused"


def test_a_step_it_does_not_know_is_refused():
    with pytest.raises(AnsibleLookupError, match="pin_plan: name one of canaries, target"):
        pin_plan("pin_target")


def test_rolled_back_records_what_a_rollback_leaves_for_the_hosts_hardware_group():
    left = "vllm/vllm-openai@" + NEW
    current = {"exists": True, "container": {"Config": {"Image": left, "Labels": {PLAN["spec_label"]: "0" * 64}}}}
    # As the task passes them: group_names, inferops_hardware_group undefined (none).
    decision = pin_plan("rolled_back", deployment=PLAN, current=current, host="spark-1", now="2026-12-05T11:30:00Z",
                        reason="p99 doubled", groups=["serving", "gb10"], hardware_group=None,
                        known_bad_file="/inv/group_vars/all/known_bad_images.yml")
    assert decision["state"] == "record"
    assert decision["entry"]["digest"] == NEW and decision["entry"]["hardware_group"] == "gb10"
    assert decision["entry"]["rolled_back"]["file"] == "/inv/group_vars/all/known_bad_images.yml"
    given = pin_plan("rolled_back", deployment=PLAN, current=current, host="spark-1", groups=["serving", "gb10"],
                     hardware_group="spark-lab")
    assert given["entry"]["hardware_group"] == "spark-lab"
    assert pin_plan("rolled_back", deployment=PLAN, current={"exists": False})["state"] == "none"


def test_files_are_the_same_for_every_canary_and_two_locks_are_refused(tmp_path):
    fleet, cloud = tmp_path / "fleet", tmp_path / "cloud"
    (fleet / "group_vars" / "all").mkdir(parents=True)
    (cloud / "group_vars" / "all").mkdir(parents=True)
    (cloud / "g7e.aws_ec2.yml").write_text("plugin: amazon.aws.aws_ec2\n")
    sources = [str(fleet), str(cloud / "g7e.aws_ec2.yml")]
    assert pin_plan("files", sources=sources, lock_path="", known_bad_path="/srv/bad.yml") == {
        "lock_file": str(fleet / "group_vars" / "all" / "image_lock.yml"), "known_bad_file": "/srv/bad.yml"}
    for directory in (fleet, cloud):
        (directory / "group_vars" / "all" / "image_lock.yml").write_text("inferops_serving_image_lock: {}\n")
    with pytest.raises(AnsibleLookupError, match="pin_plan files: pin_lock_file: 2 files set inferops_serving_image_lock"):
        pin_plan("files", sources=sources)
