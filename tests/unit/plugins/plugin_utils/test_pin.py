# SPDX-License-Identifier: GPL-3.0-or-later
"""_pin: the pin role's decisions (canaries, the digest and what to do with it, the failure and its
known-bad entry, the lock entry), formerly Jinja in playbooks/pin.yml and playbooks/tasks/pin_*.yml;
and a new revision of the model (pin_model_revision) and its lock entry."""
from __future__ import annotations

import pytest
from ansible_collections.inferops.serving.plugins.plugin_utils import _pin
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

NIGHTLY = "vllm/vllm-openai:cu130-nightly"
NEW, OLD = "sha256:" + "5e" * 32, "sha256:" + "3d" * 32
# the GB10 field report's bad nightly, by the prefix data/known_bad_images.yml records
BAD = "sha256:473de04c" + "0" * 56
PLAN = plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101})
LOCK = {"images": {NIGHTLY: {"digest": OLD, "pinned_at": "2026-11-01T10:00:00Z",
                             "platforms": {"linux/arm64": {"digest": OLD}},
                             "evidence": {"bench": {"output_tok_s": 50.0, "concurrency": 4}}}}}


def pulled(digest, prefix=""):
    return {"image": {"Id": "sha256:" + "1d" * 32, "Os": "linux", "Architecture": "arm64",
                      "RepoDigests": ["other/repo@sha256:" + "00" * 32, "%svllm/vllm-openai@%s" % (prefix, digest)]}}


def host(name, image=NIGHTLY, groups=("serving", "gb10"), hardware_group=None, canary=False):
    return {"host": name, "image": image, "groups": list(groups), "hardware_group": hardware_group, "canary": canary}


# ---- canaries ----

def test_one_canary_per_hardware_group_and_image_the_first_host_unless_one_is_marked():
    hosts = [host("spark-1"), host("spark-2", canary=True), host("g7e-1", groups=["serving", "g7e"]),
             host("g7e-2", groups=["serving", "g7e"]), host("spark-3", image="lmsysorg/sglang:latest")]
    assert _pin.canaries(hosts) == ["spark-2", "g7e-1", "spark-3"]


def test_the_hardware_group_variable_wins_over_the_inventory_groups():
    hosts = [host("a", hardware_group="rack-1"), host("b", hardware_group="rack-2"), host("c", groups=["serving"])]
    assert _pin.canaries(hosts) == ["a", "b", "c"]
    assert _pin.hardware_group(["serving"]) == "serving"


def test_only_the_hosts_of_the_image_asked_for():
    hosts = [host("spark-1"), host("spark-2", image="lmsysorg/sglang:latest")]
    assert _pin.canaries(hosts, "lmsysorg/sglang:latest") == ["spark-2"]


def test_an_image_no_host_deploys_is_refused_with_the_images_in_use():
    with pytest.raises(_pin.PinError, match=r"pin_image=vllm/vllm-openai:v0.11 is the image of no host in serving: "
                                            r".*use lmsysorg/sglang:latest, vllm/vllm-openai:cu130-nightly;"):
        _pin.canaries([host("a"), host("b", image="lmsysorg/sglang:latest")], "vllm/vllm-openai:v0.11")


# ---- the digest and what to do with it ----

def test_the_pulled_digest_through_the_registry_prefix_is_new():
    target = _pin.target(PLAN, pull=pulled(NEW, "127.0.0.1:5000/"), lock=LOCK, prefix="127.0.0.1:5000")
    assert target["name"] == "127.0.0.1:5000/" + NIGHTLY
    assert target["digest"] == NEW and not target["pinned"] and target["known_bad"] == []
    assert target["current"]["digest"] == OLD and target["platform"] == "linux/arm64"
    assert target["overrides"] == {"image": {"digest": NEW}}


def test_a_digest_of_another_registry_is_not_taken():
    assert _pin.target(PLAN, pull=pulled(NEW, "mirror.example:5000/"), prefix="127.0.0.1:5000")["digest"] == ""


def test_the_locked_digest_is_nothing_new():
    assert _pin.target(PLAN, pull=pulled(OLD), lock=LOCK)["pinned"]


def test_check_mode_reads_the_registry_not_the_local_image():
    target = _pin.target(PLAN, pull={"skipped": True}, remote={"digest": NEW}, lock=LOCK, check_mode=True)
    assert target["digest"] == NEW and not target["pinned"]


def test_a_known_bad_digest_is_refused_by_the_collections_list_and_the_inventorys():
    assert _pin.target(PLAN, pull=pulled(BAD))["known_bad"]
    inventory = [{"repository": "vllm/vllm-openai", "digest": NEW, "signature": "crash_under_soak",
                  "symptom": "died under load", "source": "pin"}]
    found = _pin.target(PLAN, pull=pulled(NEW), known_bad=inventory)["known_bad"]
    assert len(found) == 1 and "crash_under_soak" in found[0]


def test_the_hosts_overrides_are_kept_under_the_digest():
    target = _pin.target(PLAN, pull=pulled(NEW), overrides={"args": {"max-num-seqs": 8}, "image": {"tag": "x"}})
    assert target["overrides"] == {"args": {"max-num-seqs": 8}, "image": {"tag": "x", "digest": NEW}}


def test_the_archive_is_named_by_repository_tag_and_digest():
    target = _pin.target(PLAN, pull=pulled(NEW), archive_dir="/var/lib/inferops-images/")
    assert target["archive"] == "/var/lib/inferops-images/vllm_vllm-openai_cu130-nightly_%s.tar" % NEW[7:19]


# ---- the failure and its known-bad entry ----

TARGET = _pin.target(PLAN, pull=pulled(NEW), lock=LOCK)
CRASH = {"kind": "cuda_illegal_memory_access", "failed_task": "Wait for the engine", "line": "CUDA error: illegal",
         "message": "the engine died", "log": "/var/log/x.log"}


def test_a_crash_in_the_server_role_is_recorded_with_its_log_line():
    out = _pin.failed(TARGET, "spark-1", "2026-12-01T10:00:00Z", "/inv/known_bad.yml", "boom", server_failure=CRASH)
    assert out["known_bad_entry"] == {
        "repository": "vllm/vllm-openai", "digest": NEW, "tag": "cu130-nightly", "platform": "linux/arm64",
        "signature": "cuda_illegal_memory_access", "symptom": "Wait for the engine: CUDA error: illegal",
        "source": "playbooks/pin.yml on canary spark-1, 2026-12-01T10:00:00Z", "evidence_log": "spark-1:/var/log/x.log"}
    assert out["message"] == ("%s@%s failed on canary spark-1: boom Recorded in /inv/known_bad.yml as "
                              "cuda_illegal_memory_access. The lock is unchanged." % (NIGHTLY, NEW))


def test_a_failed_pull_says_nothing_about_the_image():
    pull = dict(CRASH, kind="registry_unreachable", failed_task="Pull the image by digest")
    out = _pin.failed(TARGET, "spark-1", "now", "kb.yml", "no registry", server_failure=pull)
    assert out["known_bad_entry"] is None and "Recorded" not in out["message"]
    assert _pin.failed(TARGET, "spark-1", "now", "kb.yml", "refused")["known_bad_entry"] is None


def test_the_soak_failure_wins_over_the_server_roles():
    soak = {"failed": True, "kind": "crash_under_soak", "msg": "the engine died under sustained load"}
    entry = _pin.failed(TARGET, "spark-1", "now", "kb.yml", "x", server_failure=CRASH, soak=soak)["known_bad_entry"]
    assert entry["signature"] == "crash_under_soak" and entry["symptom"] == "Soak: the engine died under sustained load"
    assert entry["evidence_log"] == "spark-1:none"


def test_a_slower_digest_points_at_the_controllers_results():
    bench = {"accepted": False, "signature": "slower_than_baseline", "message": "30 % slower"}
    entry = _pin.failed(TARGET, "spark-1", "now", "kb.yml", bench=bench, bench_dir="/r/pin-1/spark-1")["known_bad_entry"]
    assert entry["signature"] == "slower_than_baseline" and entry["evidence_log"] == "controller:/r/pin-1/spark-1/results.json"
    accepted = {"accepted": True, "signature": None, "message": "ok"}
    assert _pin.failure(CRASH, None, accepted) == CRASH


def test_a_long_symptom_is_cut_at_a_word():
    long = dict(CRASH, line=None, message="word " * 100)
    symptom = _pin.known_bad_entry(long, TARGET, "h", "now")["symptom"]
    assert symptom.endswith("...") and len(symptom) <= len("Wait for the engine: ") + 300


# ---- the lock entry ----

SUMMARY = {"engine_version": "0.19.3rc1.dev8", "backends_observed": {"moe": "marlin"}, "ready_seconds": 42,
           "smoke_answer": "4"}


def test_the_lock_entry_keeps_the_previous_digest_platforms_and_baseline():
    entry = _pin.lock_update(TARGET, PLAN, "spark-1", "2026-12-01T10:00:00Z", summary=SUMMARY,
                             spec_evidence={"drafts": 5}, soak={"skipped": True})
    assert entry["digest"] == NEW and entry["previous_digest"] == OLD and entry["engine_version"] == "0.19.3rc1.dev8"
    assert entry["platforms"] == {"linux/arm64": {"digest": NEW, "image_id": "sha256:" + "1d" * 32,
                                                  "validated_on": "spark-1", "validated_at": "2026-12-01T10:00:00Z"}}
    assert entry["evidence"]["bench"] == LOCK["images"][NIGHTLY]["evidence"]["bench"]
    assert entry["evidence"]["soak"] is None and entry["evidence"]["speculative"] == {"drafts": 5}
    assert "mirror" not in entry and "archive" not in entry


def test_the_engine_version_falls_back_to_the_engines_answer():
    assert _pin.lock_update(TARGET, PLAN, "h", "now", version="0.20.0")["engine_version"] == "0.20.0"


def test_a_benchmark_replaces_the_figures_and_nulls_what_it_did_not_measure():
    gate = {"accepted": True, "message": "accepted", "figures": {"output_tok_s": 52.0, "concurrency": 4}}
    entry = _pin.lock_update(TARGET, PLAN, "h", "now", bench=gate, bench_run={"workload": "chat", "runs": "2",
                                                                              "duration": "40"})
    assert entry["evidence"]["bench"] == {"output_tok_s": 52.0, "concurrency": 4, "acceptance_per_pos": None,
                                          "accept_length": None, "kv_cache_usage": None, "workload": "chat",
                                          "runs": 2, "duration_s": 40, "measured_at": "now", "verdict": "accepted"}


def test_the_soak_mirror_and_archive_are_recorded():
    target = _pin.target(PLAN, pull=pulled(NEW), archive_dir="/var/lib/inferops-images")
    pushed = {"image": {"RepoDigests": ["127.0.0.1:5000/mirror/vllm/vllm-openai@" + OLD]}}
    entry = _pin.lock_update(target, PLAN, "spark-1", "now", soak={"stats": {"ok": 30}}, soak_minutes="0.5",
                             mirror="127.0.0.1:5000/mirror/", pushed=pushed)
    assert entry["evidence"]["soak"] == {"minutes": 0.5, "stats": {"ok": 30}}
    assert entry["mirror"] == "127.0.0.1:5000/mirror/vllm/vllm-openai@" + OLD
    assert entry["archive"] == "spark-1:" + target["archive"]
    assert _pin.mirror_reference("m/", "r", NEW, {}) == "m/r@" + NEW


def test_a_host_pattern_is_not_a_hardware_group():
    hosts = [host("a", groups=["serving", "gb10"]), host("b", groups=["serving", "g7e"])]
    assert _pin.canaries(hosts, pattern="serving:!lab") == ["a", "b"]
    with pytest.raises(_pin.PinError, match="no host in serving:!lab"):
        _pin.canaries(hosts, "x/y:z", pattern="serving:!lab")


# ---- a new revision of the model (pin_model_revision) ----

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
REV_OLD, REV_NEW = "b2b9a6150f0d1d450d68b40993e4699b0cfbbab0", "c" * 40
MODEL_LOCK = {"models": {MODEL: {"revision": REV_OLD, "manifest": {"revision": REV_OLD, "files": {
    "config.json": {"size": 10, "git_sha1": "1" * 40},
    "model-00001-of-00017.safetensors": {"size": 100, "sha256": "a" * 64}}}}}}
STAGED = {"manifest": {"revision": REV_NEW, "files": {"config.json": {"size": 11, "git_sha1": "2" * 40},
                                                      "model.safetensors": {"size": 90, "sha256": "b" * 64}}},
          "manifest_sha256": "d" * 64, "staged": True}


def test_a_new_revision_is_laid_over_the_hosts_overrides_for_the_canary():
    decided = _pin.model_target(PLAN, REV_NEW, lock=MODEL_LOCK, overrides={"args": {"host": "127.0.0.1"}})
    assert decided["model"] == MODEL and decided["current"]["revision"] == REV_OLD
    assert not decided["pinned"] and not decided["skip"]
    assert decided["overrides"] == {"args": {"host": "127.0.0.1"}, "revision": REV_NEW}
    assert _pin.model_target(PLAN, REV_OLD, lock=MODEL_LOCK)["pinned"]
    assert _pin.model_target(PLAN, REV_NEW, model="nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")["skip"]


@pytest.mark.parametrize("revision, fragment", [
    ("main", "'main' is a branch or tag name"),
    ("b2b9a61", "looks like an abbreviated commit"),
    ("", "is empty"),
])
def test_a_revision_that_is_not_a_commit_is_refused_before_anything_changes(revision, fragment):
    with pytest.raises(_pin.PinError, match="pin_model_revision") as raised:
        _pin.model_target(PLAN, revision, lock=MODEL_LOCK)
    assert fragment in str(raised.value) and "40-hex commit" in str(raised.value)


def test_the_models_lock_entry_holds_exactly_the_verified_manifest():
    decided = _pin.model_target(PLAN, REV_NEW, lock=MODEL_LOCK)
    entry = _pin.model_lock_entry(decided, PLAN, "spark-1", "2026-12-01T10:00:00Z", cache_info=STAGED,
                                  summary={"ready_seconds": 12.5, "smoke_answer": "4"})
    assert entry["revision"] == REV_NEW and entry["previous_revision"] == REV_OLD
    assert entry["manifest_sha256"] == "d" * 64
    # The previous revision's shards are nulled: the deep merge into the lock removes them.
    assert entry["manifest"]["files"] == dict(STAGED["manifest"]["files"], **{"model-00001-of-00017.safetensors": None})
    assert entry["evidence"]["canary"] == "spark-1" and entry["evidence"]["ready_seconds"] == 12.5
    assert entry["evidence"]["profile"] == "gb10-nvfp4-mtp-latency"


def test_the_lock_is_not_written_for_a_staging_of_another_commit():
    decided = _pin.model_target(PLAN, REV_NEW, lock=MODEL_LOCK)
    with pytest.raises(_pin.PinError, match="the canary staged %s, not the candidate %s" % (REV_OLD, REV_NEW)):
        _pin.model_lock_entry(decided, PLAN, "spark-1", "now", cache_info={"manifest": MODEL_LOCK["models"][MODEL]["manifest"]})
    with pytest.raises(_pin.PinError, match="staged nothing, not the candidate"):
        _pin.model_lock_entry(decided, PLAN, "spark-1", "now", cache_info={})


# ---- the named states the role acts on ----

def test_the_targets_state_in_the_order_the_role_acts_on_it():
    none = _pin.target(PLAN, pull={"image": {"RepoDigests": []}}, host="spark-1")
    assert none["state"] == "no_digest"
    assert none["message"] == ("%s on spark-1 has no repository digest ([]): it was not pulled from a registry."
                               % none["name"])
    pinned = _pin.target(PLAN, pull=pulled(OLD), lock=LOCK)
    assert pinned["state"] == "pinned"
    assert pinned["message"] == "%s is still %s, pinned 2026-11-01T10:00:00Z: nothing new." % (NIGHTLY, OLD)
    bad = _pin.target(PLAN, pull=pulled(BAD), lock=LOCK, check_mode=False)
    assert bad["state"] == "known_bad"
    assert bad["message"].startswith("%s now resolves to %s, which is on the known-bad list: " % (NIGHTLY, BAD))
    assert bad["message"].endswith("Nothing was deployed; wait for a newer build of the tag.")
    # A known-bad digest is refused in check mode too, before the report.
    assert _pin.target(PLAN, remote={"digest": BAD}, check_mode=True)["state"] == "known_bad"
    check = _pin.target(PLAN, remote={"digest": NEW, "media_type": "m", "url": "http://r/v2/x"}, lock=LOCK,
                        check_mode=True, host="spark-1", lock_file="/inv/lock.yml")
    assert check["state"] == "check"
    assert check["message"] == ("%s now points to %s (m, read from http://r/v2/x); the lock has %s, pinned "
                                "2026-11-01T10:00:00Z. Without --check: deploy it on canary spark-1, prove it, and "
                                "record it in /inv/lock.yml." % (NIGHTLY, NEW, OLD))
    first = _pin.target(PLAN, remote={"digest": NEW, "media_type": "m", "url": "u"}, check_mode=True)
    assert "the lock has no digest for it. Without --check" in first["message"]
    assert TARGET["state"] == "prove"


def test_a_failed_canary_fails_and_returns_only_a_proven_candidate():
    out = _pin.failed(TARGET, "spark-1", "now", "kb.yml", "boom", server_failure=CRASH)
    assert out["state"] == "failed" and out["rollback"] is False
    assert _pin.failed(TARGET, "spark-1", "now", "kb.yml", "slow", proven=True)["rollback"] is True


def test_the_lock_is_written_only_for_a_proven_candidate_nothing_refused():
    assert _pin.outcome(TARGET, proven=True)["state"] == "lock"
    assert _pin.outcome(TARGET, proven=True, bench={"accepted": True, "message": "accepted: x"})["state"] == "lock"
    failed = _pin.outcome(TARGET, proven=True, failed_=_pin.failed(TARGET, "h", "now", "kb.yml", "boom"))
    assert failed == {"state": "failed",
                      "message": "%s@%s failed on the canary: the lock is not written" % (NIGHTLY, NEW)}
    refused = _pin.outcome(TARGET, proven=True, bench={"accepted": False, "message": "refused (throughput): x"})
    assert refused["state"] == "refused" and "refused (throughput): x; the lock is not written" in refused["message"]
    assert _pin.outcome(TARGET)["state"] == "unproven"
    assert _pin.outcome(TARGET, proven=False, bench={"accepted": True, "message": "m"})["state"] == "unproven"


def test_the_model_targets_state_and_message():
    skip = _pin.model_target(PLAN, REV_NEW, model="other/model", lock=MODEL_LOCK)
    assert skip["state"] == "skip" and skip["message"] == "%s: the canary deploys it, not other/model" % MODEL
    pinned = _pin.model_target(PLAN, REV_OLD, lock=MODEL_LOCK)
    assert pinned["state"] == "pinned" and pinned["message"] == "%s: the lock holds %s already: nothing new" % (
        MODEL, REV_OLD)
    check = _pin.model_target(PLAN, REV_NEW, check_mode=True, host="spark-1", lock_file="/inv/lock.yml")
    assert check["state"] == "check" and check["message"] == (
        "%s: the lock has no revision. Without --check: stage %s on canary spark-1, verify it, deploy and prove it, "
        "and record it in /inv/lock.yml" % (MODEL, REV_NEW))
    assert _pin.model_target(PLAN, REV_NEW, lock=MODEL_LOCK)["state"] == "prove"
    decided = _pin.model_target(PLAN, REV_NEW, lock=MODEL_LOCK)
    assert _pin.model_failed(decided, "spark-1", "task failed", {"message": "the engine died"})["message"] == (
        "%s@%s failed on canary spark-1: the engine died The lock is unchanged." % (MODEL, REV_NEW))
    assert "spark-1: task failed The lock" in _pin.model_failed(decided, "spark-1", "task failed")["message"]


# ---- where the fleet's lock and known-bad list live (fleet_file) ----

def lock_beside(directory):
    path = directory / "group_vars" / "all" / _pin.LOCK_NAME
    path.parent.mkdir(parents=True)
    path.write_text("inferops_serving_image_lock: {}\n")
    return str(path)


def test_the_lock_is_beside_the_first_source_whichever_source_defined_the_canary(tmp_path):
    fleet, cloud = tmp_path / "fleet", tmp_path / "cloud"
    fleet.mkdir()
    cloud.mkdir()
    (cloud / "g7e.aws_ec2.yml").write_text("plugin: amazon.aws.aws_ec2\n")
    sources = [str(fleet), str(cloud / "g7e.aws_ec2.yml")]
    assert _pin.fleet_file(_pin.LOCK_NAME, sources) == str(fleet / "group_vars" / "all" / "image_lock.yml")
    assert _pin.fleet_file(_pin.KNOWN_BAD_NAME, sources) == str(fleet / "group_vars" / "all" / "known_bad_images.yml")
    # A file source's group_vars are its directory's, as Ansible's vars loader reads them; a host list has none.
    assert _pin.fleet_file(_pin.LOCK_NAME, ["a,b,", str(cloud / "g7e.aws_ec2.yml"), str(fleet)]) == \
        str(cloud / "group_vars" / "all" / "image_lock.yml")


def test_an_existing_lock_beside_any_source_is_the_one_written(tmp_path):
    fleet, cloud = tmp_path / "fleet", tmp_path / "cloud"
    fleet.mkdir()
    existing = lock_beside(cloud)
    assert _pin.fleet_file(_pin.LOCK_NAME, [str(fleet), str(cloud)]) == existing
    assert _pin.fleet_file(_pin.LOCK_NAME, [str(fleet), str(cloud)], given="/srv/lock.yml") == "/srv/lock.yml"


def test_two_locks_that_shadow_each_other_are_refused_naming_both_and_the_fix(tmp_path):
    first, second = lock_beside(tmp_path / "fleet"), lock_beside(tmp_path / "cloud")
    with pytest.raises(_pin.PinError) as refused:
        _pin.fleet_file(_pin.LOCK_NAME, [str(tmp_path / "fleet"), str(tmp_path / "cloud")])
    message = str(refused.value)
    assert message.startswith("pin_lock_file: 2 files set inferops_serving_image_lock and shadow each other: %s, %s."
                              % (first, second))
    assert "Merge them into %s, delete the others" % first in message and "set pin_lock_file" in message
    # The operator's choice decides even then.
    assert _pin.fleet_file(_pin.LOCK_NAME, [str(tmp_path / "fleet"), str(tmp_path / "cloud")], given=second) == second


def test_no_source_that_can_hold_the_lock_is_refused():
    with pytest.raises(_pin.PinError, match=r"pin_known_bad_file: none of the inventory sources \(\['a,b,'\]\)"):
        _pin.fleet_file(_pin.KNOWN_BAD_NAME, ["a,b,"])
