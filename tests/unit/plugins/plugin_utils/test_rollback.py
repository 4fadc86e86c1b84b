# SPDX-License-Identifier: GPL-3.0-or-later
"""A rollback changes the desired state (plugins/plugin_utils/_rollback.py): what it records of the
deployment it leaves, and how preflight, status and the lint read that record."""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.plugin_utils import _rollback
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._preflight import host_checks
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import lint_profile
from ansible_collections.inferops.serving.plugins.plugin_utils._status import host_status

BAD, GOOD = "sha256:" + "b" * 64, "sha256:" + "a" * 64
OPTIONS = {"name": "inferops-serving", "port": 8101, "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 64}}


def planned(digest):
    return plan("gb10-nvfp4-mtp-throughput", OPTIONS,
                lock={"images": {"vllm/vllm-openai:cu130-nightly": {"digest": digest}}})


TO, LEFT = planned(GOOD), planned(BAD)
NOW = "2026-12-05T11:30:00Z"
FILE = "/srv/inventories/prod/group_vars/all/known_bad_images.yml"


def running(deployment, spec=None):
    """deployment_state's read of a container created from ``deployment`` (its image and spec label)."""
    return {"exists": True, "container": {"Config": {"Image": deployment["spec"]["image"], "Labels": {
        deployment["spec_label"]: spec or deployment["spec_sha256"]}}, "State": {"Running": True}}}


def recorded(current=None, to=None, reason="p99 latency doubled"):
    return _rollback.record(running(LEFT) if current is None else current, TO if to is None else to, "spark-1", "gb10",
                            NOW, reason, FILE)


def test_the_digest_it_left_is_recorded_for_the_hardware_group_with_time_and_reason():
    decision = recorded()
    assert decision["state"] == "record"
    entry = decision["entry"]
    assert entry["digest"] == BAD and entry["hardware_group"] == "gb10" and "spec_sha256" not in entry
    assert entry["id"] == "rolled-back:gb10:%s" % BAD and entry["signature"] == "rolled_back"
    assert entry["rolled_back"] == {"host": "spark-1", "at": NOW, "reason": "p99 latency doubled",
                                    "from": LEFT["spec"]["image"], "to": TO["spec"]["image"], "file": FILE}
    assert entry["source"] == "playbooks/rollback.yml on spark-1, %s" % NOW
    # The known-bad list's shape: it passes the lint's validation (a digest).
    lint_profile(TO["profile"], known_bad=[entry])


def test_the_same_image_with_another_spec_records_the_spec_not_the_image():
    decision = recorded(running(TO, spec="f" * 64))
    entry = decision["entry"]
    assert decision["state"] == "record" and entry["spec_sha256"] == "f" * 64 and entry["digest"] == GOOD
    # The image it returns to is not refused; a plan with the spec it left would be.
    assert _rollback.matches(TO, [entry], "gb10") == []
    assert _rollback.matches(dict(TO, spec_sha256="f" * 64), [entry], "gb10") == [entry]


def test_nothing_is_recorded_without_a_container_or_when_it_already_runs_the_target():
    assert recorded({"exists": False, "container": None})["state"] == "none"
    assert recorded(running(TO))["state"] == "none"


def test_a_container_naming_neither_digest_nor_spec_is_unrecordable():
    current = {"exists": True, "container": {"Config": {"Image": "vllm/vllm-openai:cu130-nightly", "Labels": {}}}}
    decision = recorded(current)
    assert decision["state"] == "unrecordable" and decision["entry"] is None
    assert "cannot record what it left, so site.yml may redeploy it" in decision["message"]


def test_no_reason_is_said_so():
    assert recorded(reason="  ")["entry"]["rolled_back"]["reason"] == "no reason given (server_rollback_reason)"


def test_preflight_refuses_the_plan_it_left_on_that_group_only_naming_the_rollback_and_the_fix():
    entry = recorded()["entry"]
    options = {"known_bad": [entry], "groups": ["serving", "gb10"]}
    refused = [c for c in host_checks(LEFT, {}, options) if c["name"] == "not rolled back"]
    assert len(refused) == 1 and not refused[0]["ok"]
    message = refused[0]["message"]
    assert "playbooks/rollback.yml rolled back from %s on spark-1 at %s (p99 latency doubled)" % (
        LEFT["spec"]["image"], NOW) in message
    assert "so site.yml does not deploy it again" in message
    assert "pin another digest (playbooks/pin.yml, or the image's entry in inferops_serving_image_lock)" in message
    assert "delete the entry with id 'rolled-back:gb10:%s' from inferops_known_bad_images in %s" % (BAD, FILE) in message
    # Another hardware group, or the deployment it returned to: not refused.
    assert all(c["ok"] for c in host_checks(LEFT, {}, dict(options, groups=["serving", "g7e"]))
               if c["name"] == "not rolled back")
    assert all(c["ok"] for c in host_checks(LEFT, {}, dict(options, groups=["gb10"], hardware_group="g7e"))
               if c["name"] == "not rolled back")
    assert [c["ok"] for c in host_checks(TO, {}, options) if c["name"] == "not rolled back"] == [True]


def test_the_profile_lint_leaves_a_rollback_record_to_the_host_checks():
    # The entry is a hardware group's: the lint (profile-wide) does not refuse the digest everywhere.
    entry = recorded()["entry"]
    findings = lint_profile(LEFT["profile"], known_bad=[entry])
    assert not [f for f in findings if f["rule"] == "image-digest-known-bad"]
    plain = dict((k, v) for k, v in entry.items() if k != "rolled_back")
    assert [f for f in lint_profile(LEFT["profile"], known_bad=[plain]) if f["rule"] == "image-digest-known-bad"]


ANSWER = {"status": 200, "elapsed": 0, "json": {"choices": [{"message": {"content": " 4 "}}]}}


def test_status_says_rolled_back_not_drift_and_how_to_end_it():
    entry = recorded()["entry"]
    # The inventory still plans LEFT; the host runs TO, where the rollback returned it.
    status = host_status("spark-1", LEFT, running(TO), {}, {"status": 200}, ANSWER, "", None,
                         known_bad=[entry], groups=["serving", "gb10"])
    assert status["ok"], status
    assert status["state"].startswith("ROLLED BACK: rolled back from %s on spark-1 at %s (p99 latency doubled), "
                                      "hardware group gb10; site.yml refuses the inventory's plan until you pin "
                                      "another digest" % (LEFT["spec"]["image"], NOW)), status["state"]
    assert "DRIFT" not in status["state"] and status["drift"]
    # Without the record, the same host is DRIFT; a rolled-back host that does not answer is not OK.
    assert host_status("spark-1", LEFT, running(TO), {}, {"status": 200}, ANSWER, "")["state"].startswith("DRIFT: ")
    down = host_status("spark-1", LEFT, running(TO), {}, {"status": 503}, {}, "", None, known_bad=[entry],
                       groups=["gb10"])
    assert not down["ok"] and down["state"].startswith("ROLLED BACK: ") and "; NOT SERVING: /health answered 503" in \
        down["state"]
