# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine catalog orders real version strings and knows every flag the profiles and engine-facts use."""
from __future__ import annotations

import itertools

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as c
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import load_profile, profile_names

# Strictly increasing: each is < the next.
ORDERED = [
    "0.5.6", "0.5.6.post2", "0.5.7", "0.5.13", "0.5.19", "0.5.19.post1", "0.5.20rc1", "0.5.20",
    "0.17.0", "0.17.1", "0.19.0.dev5", "0.19.0rc1", "0.19.0", "0.19.1",
    "0.19.2rc1.dev134", "0.19.2rc1", "0.19.2", "0.19.2.post1", "0.20.0", "0.20.1rc1", "0.20.1", "0.33.0",
]


@pytest.mark.parametrize("lower, higher", list(itertools.combinations(ORDERED, 2)))
def test_versions_order_like_pep440(lower, higher):
    assert c.parse_version(lower) < c.parse_version(higher)
    assert c.parse_version(higher) > c.parse_version(lower)


@pytest.mark.parametrize("left, right", [
    ("0.19", "0.19.0"), ("v0.17.1", "0.17.1"), ("0.19.2rc1.dev134+gfe9c3d6c5", "0.19.2rc1.dev134"),
    ("0.5.6-post2", "0.5.6.post2"), ("0.20.1-rc1", "0.20.1rc1"),
])
def test_equal_spellings(left, right):
    assert c.parse_version(left) == c.parse_version(right)
    assert hash(c.parse_version(left)) == hash(c.parse_version(right))


def test_a_nightly_of_0_19_2_is_after_0_19_0_and_before_the_final():
    nightly = c.parse_version("0.19.2rc1.dev134")
    assert c.parse_version("0.19.0") <= nightly < c.parse_version("0.19.2")
    assert nightly.text == "0.19.2rc1.dev134"


@pytest.mark.parametrize("text", [None, "", "latest", "cu130-nightly", "0.19.x", "nightly-0.19"])
def test_unreadable_versions_raise(text):
    with pytest.raises(c.CatalogError):
        c.parse_version(text)


@pytest.mark.parametrize("version, first, last, expected", [
    ("0.19.2rc1.dev134", "0.19.0", None, True),
    ("0.19.0rc1", "0.19.0", None, False),  # a pre-release of the first version may lack it
    ("0.17.1", "0.19.0", None, False),
    ("0.5.19", "0.5.7", "0.5.19", True),
    ("0.5.19.post1", "0.5.7", "0.5.19", True),  # every build of the last release has it
    ("0.5.20rc1", "0.5.7", "0.5.19", False),
    ("0.5.20", "0.5.7", "0.5.19", False),
    ("0.31.2", None, "0.31", True),
    ("0.32.0", None, "0.31", False),
    ("0.5.6.post2", "0.5.7", None, False),
])
def test_version_in(version, first, last, expected):
    assert c.version_in(version, first, last) is expected


def _profile_flags():
    for name in profile_names():
        profile = load_profile(name)
        for flag in profile.get("args") or {}:
            yield profile["engine"], profile["image"]["engine_version"], flag


@pytest.mark.parametrize("engine, version, flag", sorted(set(_profile_flags())))
def test_every_shipped_profile_flag_is_catalogued_for_its_version(engine, version, flag):
    resolved = c.resolve_flag(engine, flag)
    assert resolved is not None, "%s --%s missing from the catalog" % (engine, flag)
    assert c.flag_available(resolved[1], version)


# The flag tables of engine-facts.md (sections 1.10, 2.4, 2.6).
ENGINE_FACTS_FLAGS = [
    ("vllm", f) for f in (
        "speculative-config spec-method spec-model spec-tokens moe-backend linear-backend attention-backend "
        "kv-cache-dtype mamba-ssm-cache-dtype mamba-cache-mode max-num-seqs max-num-batched-tokens "
        "max-cudagraph-capture-size enable-prefix-caching enable-chunked-prefill async-scheduling "
        "reasoning-parser tool-call-parser override-generation-config performance-mode "
        "fail-on-environ-validation").split()
] + [
    ("sglang", f) for f in (
        "speculative-moe-runner-backend fp8-gemm-backend fp4-gemm-backend moe-runner-backend "
        "mamba-scheduler-strategy mamba-radix-cache-strategy mamba-ssm-dtype reasoning-parser tool-call-parser "
        "schedule-policy enable-metrics speculative-algorithm speculative-num-steps speculative-eagle-topk "
        "speculative-num-draft-tokens speculative-draft-attention-backend linear-attn-backend kv-cache-dtype "
        "attention-backend disable-radix-cache max-running-requests").split()
]


@pytest.mark.parametrize("engine, flag", ENGINE_FACTS_FLAGS)
def test_engine_facts_flags_are_catalogued(engine, flag):
    assert flag in c.FLAGS[engine]


@pytest.mark.parametrize("engine, flag, version, present", [
    ("vllm", "moe-backend", "0.17.0", True),
    ("vllm", "moe-backend", "0.16.0", False),
    ("vllm", "linear-backend", "0.21.0", False),
    ("vllm", "linear-backend", "0.22.0", True),
    ("vllm", "spec-method", "0.22.0", True),
    ("sglang", "mamba-scheduler-strategy", "0.5.6.post2", False),
    ("sglang", "mamba-scheduler-strategy", "0.5.19", True),
    ("sglang", "mamba-scheduler-strategy", "0.5.20", False),
    ("sglang", "mamba-radix-cache-strategy", "0.5.13", False),
    ("sglang", "mamba-radix-cache-strategy", "0.5.14", True),
    ("sglang", "speculative-moe-runner-backend", "0.5.4", False),
    ("sglang", "fp8-gemm-backend", "0.5.7", True),
    ("sglang", "linear-attn-backend", "0.5.9", False),
])
def test_flag_ranges(engine, flag, version, present):
    assert c.flag_available(c.FLAGS[engine][flag], version) is present


@pytest.mark.parametrize("engine, written, canonical, negated, subkey", [
    ("vllm", "speculative_config", "speculative-config", False, None),
    ("vllm", "--max_num_seqs", "max-num-seqs", False, None),
    ("vllm", "no-enable-prefix-caching", "enable-prefix-caching", True, None),
    ("vllm", "speculative_config.num_speculative_tokens", "speculative-config", False, "num_speculative_tokens"),
    ("vllm", "sc", "speculative-config", False, None),
    ("sglang", "tp-size", "tp-size", False, None),
    ("sglang", "tensor-parallel-size", "tp-size", False, None),
])
def test_resolve_flag(engine, written, canonical, negated, subkey):
    resolved = c.resolve_flag(engine, written)
    assert resolved[0] == canonical and resolved[2] is negated and resolved[3] == subkey


@pytest.mark.parametrize("engine, written", [
    ("sglang", "moe_runner_backend"),  # SGLang has no underscore folding
    ("sglang", "no-enable-metrics"),
    ("vllm", "no-max-num-seqs"),  # only on/off flags have a no- form
    ("vllm", "moe-runner-backend"),  # SGLang's name, not vLLM's
])
def test_resolve_flag_unknown(engine, written):
    assert c.resolve_flag(engine, written) is None


@pytest.mark.parametrize("engine, typo, version, nearest", [
    ("vllm", "max-num-seq", "0.19.2rc1.dev134", "--max-num-seqs"),
    ("vllm", "atention-backend", "0.19.2rc1.dev134", "--attention-backend"),
    ("vllm", "moe_backed", "0.19.2rc1.dev134", "--moe-backend"),
    ("sglang", "moe_runner_backend", "0.5.13", "--moe-runner-backend"),
    ("sglang", "mamba-scheduler-strategy", "0.5.20", "--mamba-radix-cache-strategy"),
])
def test_suggest_flag(engine, typo, version, nearest):
    assert c.suggest_flag(engine, typo, version)[0] == nearest


@pytest.mark.parametrize("version, choice, allowed", [
    ("0.19.2rc1.dev134", "marlin", True), ("0.19.2rc1.dev134", "humming", False),
    ("0.25.0", "humming", True), ("0.27.0", "batched_triton", False), ("0.28.0", "batched_triton", True),
    ("0.33.0", "flashinfer_moe_ep_cutedsl", True), ("0.33.0", "bogus", False),
])
def test_vllm_moe_backend_choices(version, choice, allowed):
    assert c.value_known(c.VLLM_FLAGS["moe-backend"]["values"], choice, version)[0] is allowed


def test_value_patterns_and_normalisation():
    assert c.value_known(c.SGLANG_FLAGS["moe-runner-backend"]["values"], "lora_triton", "0.5.23")[0]
    assert not c.value_known(c.SGLANG_FLAGS["moe-runner-backend"]["values"], "marlin", "0.5.11")[0]
    assert c.normalise_value(c.VLLM_FLAGS["moe-backend"], "FlashInfer-Cutlass") == "flashinfer_cutlass"
    assert c.normalise_value(c.VLLM_FLAGS["attention-backend"], "triton_attn") == "TRITON_ATTN"


@pytest.mark.parametrize("engine, name, version, status", [
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.19.2rc1.dev134", "active"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.21.0", "active"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.22.0", "deprecated"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.23.1", "deprecated"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.24.0", "removed"),
    ("vllm", "VLLM_USE_FLASHINFER_MOE_FP4", "0.33.0", "removed"),
    ("vllm", "VLLM_FLASHINFER_ALLREDUCE_BACKEND", "0.33.0", "active"),
    ("vllm", "VLLM_NOT_A_THING", "0.19.0", "unknown"),
    ("vllm", "TOKENIZERS_PARALLELISM", "0.19.0", "foreign"),
    ("sglang", "SGLANG_DISABLE_DEEP_GEMM", "0.5.13", "active"),
    ("sglang", "VLLM_LOGGING_LEVEL", "0.5.13", "foreign"),
])
def test_env_status(engine, name, version, status):
    assert c.env_status(engine, name, version)[0] == status


@pytest.mark.parametrize("key, version, present", [
    ("moe_backend", "0.17.1", False), ("moe_backend", "0.19.0", True),
    ("attention_backend", "0.20.0", False), ("attention_backend", "0.21.0", True),
    ("kv_cache_dtype", "0.25.0", False), ("kv_cache_dtype", "0.26.0", True),
])
def test_speculative_keys(key, version, present):
    assert c.version_in(version, *c.VLLM_SPECULATIVE_KEYS[key]) is present


def test_reasoning_parsers():
    assert not c.version_in("0.17.0", *c.REASONING_PARSERS["vllm"]["nemotron_v3"])
    assert c.version_in("0.17.1", *c.REASONING_PARSERS["vllm"]["nemotron_v3"])
    assert c.version_in("0.5.9", *c.REASONING_PARSERS["sglang"]["nano_v3"])
    assert not c.version_in("0.5.10", *c.REASONING_PARSERS["sglang"]["nano_v3"])
    assert c.version_in("0.5.10", *c.REASONING_PARSERS["sglang"]["nemotron_3"])


def _all_versions():
    yield from c.CATALOGUED["vllm"] + c.CATALOGUED["sglang"]
    for flags in c.FLAGS.values():
        for spec in flags.values():
            yield from (v for v in (spec["first"], spec["last"], spec["deprecated"], spec["complete_until"]) if v)
            for first, last in (spec["values"] or {}).values():
                yield from (v for v in (first, last) if v)
    for env in c.ENV.values():
        for spec in env.values():
            yield from (v for v in (spec["first"], spec["deprecated"], spec["removed"]) if v)


def test_catalog_is_consistent():
    for version in _all_versions():
        c.parse_version(version)
    for engine, flags in c.FLAGS.items():
        for name, spec in flags.items():
            assert spec["replacement"] is None or spec["replacement"] in flags, name
            assert not (spec["boolean"] and spec["values"]), name
        for alias, (target, _first) in c.ALIASES[engine].items():
            assert target in flags, alias
    for engine, env in c.ENV.items():
        for name, spec in env.items():
            assert name.startswith(c.ENV_PREFIXES[engine]), name
            assert spec["replacement"] is None or spec["replacement"] in c.FLAGS[engine], name
