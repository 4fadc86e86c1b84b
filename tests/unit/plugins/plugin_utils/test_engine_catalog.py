# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine catalog: real version strings order like PEP 440, the stored data is what the generator reads
from the releases' source, and the look-ups answer as the engines' parsers do."""
from __future__ import annotations

import gzip
import importlib.machinery
import importlib.util
import itertools
import os
import tarfile

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as c

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


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "engine_src")


def _generator():
    """scripts/engine-catalog as a module (it has no .py suffix)."""
    path = os.path.join(ROOT, "scripts", "engine-catalog")
    loader = importlib.machinery.SourceFileLoader("engine_catalog_script", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# The source files the generator reads, for two stored releases (tar.xz of the wheel's .py files).
@pytest.mark.parametrize("engine, version", [("vllm", "0.19.0"), ("sglang", "0.5.6.post2")])
def test_the_stored_data_is_what_the_generator_reads_from_the_release_source(engine, version, tmp_path):
    with tarfile.open(os.path.join(FIXTURES, "%s-%s.tar.xz" % (engine, version))) as archive:
        archive.extractall(tmp_path, filter="data")
    generator = _generator()
    text = generator.dumps(generator.catalog(engine, version, str(tmp_path)))
    with gzip.open(os.path.join(c.CATALOG_DIR, "%s-%s.json.gz" % (engine, version)), "rt", encoding="utf-8") as handle:
        assert text == handle.read()


def test_the_data_covers_every_release_of_the_range():
    # pip index versions vllm / sglang (2026-11-30): every release 0.17.0-0.33.0 and 0.5.1-0.5.23.
    assert len(c.releases("vllm")) == 25 and len(c.releases("sglang")) == 42


def test_the_data_covers_the_releases_the_issue_names():
    assert {"0.17.0", "0.19.0", "0.19.1", "0.24.0", "0.28.0", "0.33.0"} <= set(c.releases("vllm"))
    assert {"0.5.1", "0.5.6.post2", "0.5.13", "0.5.19", "0.5.20", "0.5.23"} <= set(c.releases("sglang"))
    assert c.covered_range("vllm") == ("0.17.0", "0.33.0")
    assert c.covered_range("sglang") == ("0.5.1", "0.5.23")
    total = sum(os.path.getsize(os.path.join(c.CATALOG_DIR, f)) for f in os.listdir(c.CATALOG_DIR))
    assert total < 1.5e6


@pytest.mark.parametrize("engine, version, release, exact, upper", [
    ("vllm", "0.19.0", "0.19.0", True, None),
    ("vllm", "0.19", "0.19.0", True, None),
    ("vllm", "0.19.2rc1.dev134", "0.19.1", False, "0.20.0"),
    ("vllm", "0.27.1", "0.27.1", True, None),
    ("vllm", "0.27.2rc1", "0.27.1", False, "0.28.0"),
    ("vllm", "0.40.0", "0.33.0", False, None),
    ("vllm", "0.16.0", "0.17.0", False, None),
    ("sglang", "0.5.6.post2", "0.5.6.post2", True, None),
    ("sglang", "0.5.13.post1", "0.5.13.post1", True, None),
    ("sglang", "0.5.13.post2", "0.5.13.post1", False, "0.5.14"),
])
def test_nearest_release(engine, version, release, exact, upper):
    found, is_exact = c.nearest_release(engine, version)
    assert (found.version, is_exact) == (release, exact)
    nxt = c.next_release(engine, version) if not exact and c.parse_version(found.version) < c.parse_version(version) \
        else None
    assert (nxt.version if nxt else None) == upper


# What the releases' parsers accept (checked against the real parsers: see scripts/engine-catalog).
@pytest.mark.parametrize("engine, version, written, form, canonical", [
    ("vllm", "0.19.0", "max_num_seqs", "flag", "max-num-seqs"),
    ("vllm", "0.19.0", "no-enable-prefix-caching", "negation", "enable-prefix-caching"),
    ("vllm", "0.19.0", "disable-prefix-caching", "unknown", None),
    ("vllm", "0.33.0", "disable-prefix-caching", "negation", "enable-prefix-caching"),
    ("vllm", "0.33.0", "disable-chunked-prefill", "negation", "enable-chunked-prefill"),
    ("vllm", "0.19.0", "speculative_config.num_speculative_tokens", "flag", "speculative-config"),
    ("vllm", "0.19.0", "max-num-seqs.x", "unknown", None),  # dotted keys only for JSON options
    ("vllm", "0.19.0", "nnodes", "flag", "nnodes"),
    ("vllm", "0.19.0", "max-num-seq", "abbreviation", "max-num-seqs"),
    ("vllm", "0.19.0", "sc", "ambiguous", None),  # --sc: a profile cannot write vLLM's -sc
    ("vllm", "0.19.0", "tp", "short_only", "tensor-parallel-size"),
    ("vllm", "0.19.0", "swap-space", "unknown", None),
    ("vllm", "0.17.1", "swap-space", "flag", "swap-space"),  # gone in 0.18
    ("sglang", "0.5.13", "tp-size", "alias", "tensor-parallel-size"),
    ("sglang", "0.5.23", "tensor-parallel-size", "alias", "tp-size"),
    ("sglang", "0.5.13", "speculative-draft-model", "alias", "speculative-draft-model-path"),
    ("sglang", "0.5.13", "moe_runner_backend", "unknown", None),
    ("sglang", "0.5.23", "cuda-graph-max-bs-decode", "flag", "cuda-graph-max-bs-decode"),
    ("sglang", "0.5.23", "cuda-graph-max-bs", "ambiguous", None),
    ("sglang", "0.5.19", "cuda-graph-max-bs", "flag", "cuda-graph-max-bs"),
    ("sglang", "0.5.23", "enable-hicache", "alias", "enable-hierarchical-cache"),
])
def test_resolve(engine, version, written, form, canonical):
    resolved = c.resolve(c.release(engine, version), written)
    assert resolved["form"] == form
    assert resolved["canonical"] == canonical


@pytest.mark.parametrize("engine, version, flag, kind", [
    ("vllm", "0.19.0", "headless", "none"), ("vllm", "0.19.0", "disable-log-stats", "none"),
    ("vllm", "0.19.0", "hf-token", "optional"), ("vllm", "0.19.0", "max-num-seqs", "one"),
    ("sglang", "0.5.7", "hybrid-kvcache-ratio", "optional"), ("sglang", "0.5.8", "hybrid-kvcache-ratio", "none"),
])
def test_value_kinds(engine, version, flag, kind):
    assert c.release(engine, version).flags[flag]["value"] == kind


@pytest.mark.parametrize("engine, flag, value, first, last", [
    ("vllm", "kv-cache-dtype", "nvfp4", "0.20.0", "0.33.0"),
    ("vllm", "kv-cache-dtype", "float16", "0.18.0", "0.33.0"),
    ("vllm", "moe-backend", "flashinfer_b12x", "0.22.0", "0.33.0"),
    ("vllm", "moe-backend", "humming", "0.21.0", "0.33.0"),
    ("vllm", "moe-backend", "batched_triton", "0.27.0", "0.33.0"),
    ("vllm", "moe-backend", "aiter_mega_moe", "0.32.0", "0.33.0"),
    ("vllm", "mamba-ssm-cache-dtype", "bfloat16", "0.22.0", "0.33.0"),
    ("vllm", "attention-backend", "TREE_ATTN", "0.17.0", "0.20.2"),
    ("vllm", "moe-backend", "MARLIN", "0.17.0", "0.33.0"),  # vLLM lower-cases it
])
def test_value_ranges_from_the_data(engine, flag, value, first, last):
    present = c.value_releases(engine, flag, value)
    assert (present[0], present[-1]) == (first, last)


def test_speculative_keys_from_the_data():
    assert c.speculative_key_releases("moe_backend")[0] == "0.19.0"
    assert c.speculative_key_releases("attention_backend")[0] == "0.21.0"
    assert c.speculative_key_releases("disable_by_batch_size") == []
    assert c.speculative_key_releases("speculative_token_tree")[-1] == "0.20.2"


@pytest.mark.parametrize("engine, name, version, status", [
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.19.2rc1.dev134", "active"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.21.0", "active"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.22.0", "deprecated"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.23.0", "deprecated"),
    ("vllm", "VLLM_NVFP4_GEMM_BACKEND", "0.24.0", "removed"),
    ("vllm", "VLLM_USE_FLASHINFER_MOE_FP4", "0.33.0", "removed"),
    ("vllm", "VLLM_FLASHINFER_ALLREDUCE_BACKEND", "0.33.0", "active"),
    ("vllm", "VLLM_ATTENTION_BACKEND", "0.19.0", "unknown"),
    ("vllm", "VLLM_NOT_A_THING", "0.19.0", "unknown"),
    ("vllm", "TOKENIZERS_PARALLELISM", "0.19.0", "foreign"),
    ("sglang", "SGLANG_DISABLE_DEEP_GEMM", "0.5.13", "unknown"),
    ("sglang", "SGLANG_ENABLE_JIT_DEEPGEMM", "0.5.13", "active"),
    ("sglang", "VLLM_LOGGING_LEVEL", "0.5.13", "foreign"),
])
def test_env_status(engine, name, version, status):
    assert c.env_status(engine, name, version)[0] == status


def test_suggestions_name_the_real_replacement():
    assert c.suggest_flag(c.release("vllm", "0.19.0"), "max-num-seqz")[0] == "--max-num-seqs"
    assert c.suggest_flag(c.release("sglang", "0.5.20"), "mamba-scheduler-strategy")[0] == \
        "--mamba-radix-cache-strategy"
    assert c.suggest_flag(c.release("sglang", "0.5.20"), "cuda-graph-max-bs")[0] == "--cuda-graph-max-bs-decode"


def test_normalise_value():
    rel = c.release("vllm", "0.19.0")
    assert c.normalise_value(rel.flags["moe-backend"], "FlashInfer-Cutlass") == "flashinfer_cutlass"
    assert c.normalise_value(rel.flags["attention-backend"], "triton_attn") == "TRITON_ATTN"


def test_reasoning_parsers():
    assert not c.version_in("0.17.0", *c.REASONING_PARSERS["vllm"]["nemotron_v3"])
    assert c.version_in("0.17.1", *c.REASONING_PARSERS["vllm"]["nemotron_v3"])
    # SGLang's come from the release data (argparse choices = ReasoningParser.DetectorMap's keys):
    # NanoV3Detector was registered as nano_v3 in 0.5.7-0.5.9 and renamed nemotron_3 in 0.5.10.
    assert "sglang" not in c.REASONING_PARSERS
    assert c.value_releases("sglang", "reasoning-parser", "nano_v3") == ["0.5.7", "0.5.8", "0.5.8.post1", "0.5.9"]
    nemotron_3 = c.value_releases("sglang", "reasoning-parser", "nemotron_3")
    assert nemotron_3[0] == "0.5.10" and nemotron_3[-1] == "0.5.23"
    assert c.value_releases("sglang", "reasoning-parser", "super_v3") == []


def test_hand_written_facts_are_consistent_with_the_data():
    for (engine, old), (new, source) in c.REPLACEMENTS.items():
        assert c.option_releases(engine, "--" + old) and c.option_releases(engine, "--" + new) and source
    for engine, facts in c.ENV_FACTS.items():
        for name, fact in facts.items():
            assert name.startswith(c.ENV_PREFIXES[engine]) and fact["source"], name
            if fact["replacement"]:
                assert c.option_releases(engine, "--" + fact["replacement"]), name
    for version in c.SGLANG_SPEC_RESET_SOURCE:
        assert version in c.releases("sglang")
