# SPDX-License-Identifier: GPL-3.0-or-later
"""A profile's model revision: its grammar, the engine flags that carry it, the lock and the plan."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p
from ansible_collections.inferops.serving.plugins.plugin_utils import _weights as w
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan, record

COMMIT = "b2b9a6150f0d1d450d68b40993e4699b0cfbbab0"
OTHER = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("revision, severity", [
    (COMMIT, None),
    ("main", "warning"), ("v1.0", "warning"), ("refs/pr/1", "warning"),
    (COMMIT[:7], "error"), (COMMIT.upper(), "error"), ("", "error"), ("main branch", "error"),
    ("a..b", "error"), ("main/", "error"), (1234567, "error"), (True, "error"), (None, "error"),
])
def test_revision_problem(revision, severity):
    problem = w.revision_problem(revision)
    assert (problem[0] if problem else None) == severity


def argv(profile):
    return p.container_argv(profile)


def pairs(words):
    return {words[i]: words[i + 1] for i, word in enumerate(words[:-1]) if word.startswith("--")}


FP8 = "9f80cb76c26738e29c4d4d7a30fe882f938a25a6"  # profiles/g7e-fp8-sglang.yml's pin


def test_an_unpinned_profile_renders_the_argv_it_rendered_before():
    # Every shipped profile is pinned now; an override that takes the pin away (revision: null) is
    # the unpinned case.
    assert p.load_profile("g7e-fp8-sglang")["revision"] == FP8
    profile = p.overlay(p.load_profile("g7e-fp8-sglang"), {"revision": None})
    assert profile.get("revision") is None  # overlay: a null removes the key
    assert not any("revision" in word for word in argv(profile))
    assert "HF_HUB_OFFLINE" not in p.launch_spec(profile)["env"]


def test_vllm_gets_every_revision_flag_and_the_mtp_drafter_the_same_commit():
    words = argv(p.load_profile("gb10-nvfp4-mtp-latency"))
    found = pairs(words)
    assert [found["--revision"], found["--tokenizer-revision"], found["--code-revision"]] == [COMMIT] * 3
    assert json.loads(found["--speculative_config"])["revision"] == COMMIT
    # Right after the model, before the profile's own flags.
    assert words[1:3] == ["--revision", COMMIT]


def test_vllm_a_separate_draft_gets_its_own_revision_and_a_dotted_key_is_kept():
    profile = p.overlay(p.load_profile("gb10-nvfp4-mtp-latency"), {
        "draft_revision": OTHER,
        "args": {"speculative_config": {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 2}}})
    assert json.loads(pairs(argv(profile))["--speculative_config"])["revision"] == OTHER
    dotted = p.overlay(profile, {"args": {"speculative_config.revision": COMMIT}})
    assert json.loads(pairs(argv(dotted))["--speculative_config"]).get("revision") is None
    assert pairs(argv(dotted))["--speculative_config.revision"] == COMMIT


def test_vllm_a_separate_tokenizer_keeps_its_own_revision():
    profile = p.overlay(p.load_profile("gb10-nvfp4-fallback"), {"args": {"tokenizer": "org/tok"}})
    assert "--tokenizer-revision" not in argv(profile)


def test_sglang_draft_revision_only_where_the_release_has_the_flag():
    eagle = p.overlay(p.load_profile("g7e-fp8-sglang-eagle"), {"revision": COMMIT})
    found = pairs(argv(eagle))
    assert found["--revision"] == COMMIT and found["--speculative-draft-model-revision"] == COMMIT
    old = p.overlay(eagle, {"image": {"engine_version": "0.5.1"}})  # the catalog: 0.5.1 lacks the flag
    assert "--speculative-draft-model-revision" not in argv(old) and pairs(argv(old))["--revision"] == COMMIT
    baseline = p.overlay(p.load_profile("g7e-fp8-sglang"), {"revision": COMMIT})
    assert "--speculative-draft-model-revision" not in argv(baseline)  # it does not speculate


def test_offline_follows_the_pin_unless_the_option_says_otherwise():
    pinned = p.load_profile("gb10-nvfp4-fallback")
    assert p.launch_spec(pinned)["env"]["HF_HUB_OFFLINE"] == "1"
    assert "HF_HUB_OFFLINE" not in p.launch_spec(pinned, {"hf_hub_offline": False})["env"]
    unpinned = p.overlay(p.load_profile("g7e-fp8-sglang"), {"revision": None})
    assert "HF_HUB_OFFLINE" not in p.launch_spec(unpinned)["env"]
    assert p.launch_spec(unpinned, {"hf_hub_offline": True})["env"]["HF_HUB_OFFLINE"] == "1"


def test_the_lock_pins_the_model_and_refuses_a_malformed_entry():
    lock = {"models": {"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": {"revision": OTHER}}}
    assert p.resolve_profile("g7e-fp8-sglang", lock=lock)["revision"] == OTHER
    with pytest.raises(p.ProfileError, match=r"lock entry models\['nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8'\] "
                                             r"needs a revision: the 40-hex commit id \(got 'main'\)"):
        p.resolve_profile("g7e-fp8-sglang",
                          lock={"models": {"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": {"revision": "main"}}})


def test_the_plan_and_the_state_record_carry_the_revision():
    deployment = plan("gb10-nvfp4-mtp-latency")
    assert deployment["weights"] == {
        "model": "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "revision": COMMIT, "pinned": True,
        "offline": True,
        "draft": {"model": "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "revision": COMMIT, "separate": False}}
    assert record(deployment)["model_revision"] == COMMIT
    assert plan("g7e-fp8-sglang")["weights"]["revision"] == FP8
    assert plan("g7e-fp8-sglang", overrides={"revision": None})["weights"]["pinned"] is False


def test_the_role_option_reaches_the_container_through_the_plan():
    assert "HF_HUB_OFFLINE" not in plan("gb10-nvfp4-fallback", {"hf_hub_offline": False})["spec"]["env"]
    assert plan("gb10-nvfp4-fallback", {"hf_hub_offline": None})["weights"]["offline"] is True
    assert plan("g7e-fp8-sglang", {"hf_hub_offline": True})["spec"]["env"]["HF_HUB_OFFLINE"] == "1"
