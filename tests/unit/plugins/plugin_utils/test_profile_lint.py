# SPDX-License-Identifier: GPL-3.0-or-later
"""Each lint rule fires on a minimally broken copy of a shipped profile; the shipped ones are clean."""
from __future__ import annotations

import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.serving.plugins.filter.profile_lint import FilterModule
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    ProfileError,
    load_profile,
    overlay,
    profile_names,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._lint_context import SEVERITIES
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import (
    RULE_IDS,
    RULES,
    errors,
    format_findings,
    lint_report,
    lint_profile,
    load_known_bad,
)

LATENCY = "gb10-nvfp4-mtp-latency"
FALLBACK = "gb10-nvfp4-fallback"
SGLANG = "g7e-fp8-sglang"
EAGLE = "g7e-fp8-sglang-eagle"
SEED_DIGEST = "sha256:3dbe092ec5b2cef63b6104d33fa75d6ce53a7870962529ada69f78bbbc38e776"
MTP_NO_NESTED = {"method": "mtp", "num_speculative_tokens": 2}

# Profiles whose seed gives no digest: the tag-only warning is honest there. The g7e profiles also
# carry the g7e field report's SGLANG_DISABLE_DEEP_GEMM=1, which no SGLang release reads (env-unknown warning).
TAG_ONLY = {FALLBACK, SGLANG, EAGLE}
SEED002_ENV = {SGLANG, EAGLE}
# The FP8 model's commit is named by no seed: the g7e profiles warn until the lead pins it.
COMMIT = "b2b9a6150f0d1d450d68b40993e4699b0cfbbab0"


def version(v):
    return {"image": {"engine_version": v}}


def merge(*deltas):
    result = {}
    for delta in deltas:
        result = overlay(result, delta)
    return result


def findings_for(base, delta=None, overrides=None, known_bad=None):
    profile = overlay(load_profile(base), delta or {})
    return lint_profile(profile, overrides=overrides, known_bad=known_bad)


def only(findings, rule):
    return [f for f in findings if f["rule"] == rule]


# (rule, base profile, delta laid over it, inventory overrides, severity, fragments of the message)
FIRES = [
    ("engine-unknown", LATENCY, {"engine": "tgi"}, None, "error", ["'tgi'", "sglang, vllm"]),
    ("engine-version-missing", LATENCY, version(None), None, "error", ["engine_version is missing"]),
    ("engine-version-missing", SGLANG, version("latest"), None, "error", ["'latest'"]),
    ("engine-version-uncatalogued", LATENCY, version("0.40.0"), None, "warning", ["vllm 0.17.0-0.33.0",
                                                                                  "judged against vLLM 0.33.0"]),
    ("image-digest-malformed", LATENCY, {"image": {"digest": SEED_DIGEST.upper()}}, None, "error",
     ["64 lowercase hex"]),
    ("image-digest-malformed", LATENCY, None, {"image": {"digest": "sha256:3dbe092e"}}, "error",
     ["inventory override image.digest"]),
    ("image-digest-known-bad", LATENCY, {"image": {"digest": "sha256:473de04c" + "0" * 56}}, None, "error",
     ["cuda_illegal_memory_access", "gb10-nvfp4-fallback"]),
    ("image-tag-only", LATENCY, {"image": {"digest": None}}, None, "warning",
     ["cu130-nightly", "pin the digest (playbooks/pin.yml)"]),
    ("flag-unknown", LATENCY, None, {"args": {"max-num-seqz": 8}}, "error",
     ["--max-num-seqz ", "inventory override args.max-num-seqz", "did you mean --max-num-seqs",
      "nor has vLLM 0.20.0"]),
    ("flag-unknown", LATENCY, version("0.40.0"), {"args": {"max-num-seqz": 8}}, "warning",
     ["judged against vLLM 0.33.0"]),
    ("flag-unknown", LATENCY, {"args": {"sc": MTP_NO_NESTED, "speculative_config": None}}, None, "error",
     ["ambiguous abbreviation", "--scheduling-policy"]),
    ("flag-unknown", LATENCY, {"args": {"tp": 1}}, None, "error",
     ["-tp is a short option", "write --tensor-parallel-size"]),
    ("flag-abbreviation", LATENCY, None, {"args": {"max-num-seq": 8}}, "warning",
     ["abbreviation of --max-num-seqs"]),
    ("flag-unknown", SGLANG, None, {"args": {"moe-runer-backend": "triton"}}, "error",
     ["--moe-runner-backend"]),
    ("flag-version", SGLANG, version("0.5.20"), None, "error",
     ["--mamba-scheduler-strategy exists in sglang 0.5.7-0.5.19", "use --mamba-radix-cache-strategy"]),
    ("flag-version", FALLBACK, {"args": {"linear-backend": "marlin"}}, None, "error",
     ["--linear-backend exists in vllm 0.22.0-0.33.0", "vLLM 0.17.1"]),
    ("flag-version", LATENCY, merge(version("0.19.0"), {"args": {"swap-space": 4}}), None, "error",
     ["--swap-space exists in vllm 0.17.0-0.17.1, not in vLLM 0.19.0"]),
    ("flag-unknown", SGLANG, {"image": {"engine_version": "0.5.20"},
                              "args": {"mamba-scheduler-strategy": None, "cuda-graph-max-bs": 160}}, None, "error",
     ["--cuda-graph-max-bs is an ambiguous abbreviation", "--cuda-graph-max-bs exists in sglang 0.5.1-0.5.19",
      "use --cuda-graph-max-bs-decode"]),
    ("flag-deprecated", SGLANG, version("0.5.14"), None, "warning",
     ["--mamba-scheduler-strategy is deprecated in SGLang 0.5.14", "gone in sglang 0.5.20",
      "use --mamba-radix-cache-strategy"]),
    ("flag-value", LATENCY, None, {"args": {"moe-backend": "bogus"}}, "error",
     ["--moe-backend", "bogus", "marlin, triton"]),
    ("flag-value", LATENCY, {"args": {"moe-backend": "humming"}}, None, "error",
     ["exists in vllm 0.21.0-0.33.0"]),
    ("flag-value", LATENCY, merge(version("0.19.0"), {"args": {"kv-cache-dtype": "nvfp4"}}), None, "error",
     ["--kv-cache-dtype nvfp4 exists in vllm 0.20.0-0.33.0, not in vLLM 0.19.0"]),
    ("flag-value", SGLANG, {"args": {"hybrid-kvcache-ratio": 0.5}}, None, "error",
     ["takes no value in SGLang 0.5.13"]),
    ("flag-value", SGLANG, {"args": {"mamba-scheduler-strategy": "extra_buffer_lazy"},
                            "image": {"engine_version": "0.5.12"}}, None, "error",
     ["extra_buffer_lazy exists in sglang 0.5.13-0.5.19"]),
    ("flag-value", LATENCY, {"args": {"trust-remote-code": "yes"}}, None, "error", ["on/off flag"]),
    ("flag-value", LATENCY, {"args": {"max-num-seqs": True}}, None, "error", ["needs a value"]),
    ("sglang-flag-underscore", SGLANG, None, {"args": {"moe_runner_backend": "triton"}}, "error",
     ["unrecognized arguments", "spell it --moe-runner-backend"]),
    ("vllm-speculative-config-key", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="triton", attention_backend="TRITON_ATTN")}},
     None, "error", ["'attention_backend' exists in vllm 0.21.0-0.33.0", "ValidationError"]),
    ("vllm-speculative-config-key", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="triton", disable_by_batch_size=8)}},
     None, "error", ["'disable_by_batch_size' is in no vLLM release 0.17.0-0.33.0"]),
    ("vllm-speculative-config-key", LATENCY, {"args": {"speculative_config": '{"method": "mtp",'}}, None,
     "error", ["not valid JSON"]),
    ("vllm-nvfp4-sm12x-moe-backend", LATENCY, {"args": {"moe-backend": None}}, None, "warning",
     ["sm_121", "auto-selects FLASHINFER_CUTLASS", "from vLLM 0.19.0", "moe-backend: marlin"]),
    ("vllm-nvfp4-sm12x-moe-backend", FALLBACK, None, {"args": {"moe-backend": "flashinfer_cutlass"}}, "error",
     ["--moe-backend flashinfer_cutlass", "FLASHINFER_CUTLASS runs NVFP4 MoE on sm_12x only from vLLM 0.19.0"]),
    ("vllm-nvfp4-sm12x-moe-backend", LATENCY, {"args": {"moe-backend": "flashinfer_trtllm"}}, None, "error",
     ["has no NVFP4 MoE kernel for sm_12x"]),
    ("vllm-mtp-marlin-draft-moe-backend", LATENCY, {"args": {"speculative_config": MTP_NO_NESTED}}, None,
     "error", ["ValueError", "add moe_backend: triton"]),
    ("vllm-mtp-marlin-draft-moe-backend", FALLBACK, {"args": {"speculative_config": MTP_NO_NESTED}}, None,
     "error", ["cannot start on vLLM 0.17.1", "gb10-nvfp4-fallback"]),
    ("vllm-mtp-marlin-draft-moe-backend", FALLBACK,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="triton")}}, None,
     "error", ["needs >= 0.19.0"]),
    ("vllm-mtp-marlin-draft-moe-backend", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="marlin")}}, None,
     "error", ["not an unquantized MoE backend", "use triton"]),
    ("vllm-mtp-attention-sm121", LATENCY, {"args": {"attention-backend": None}}, None, "error",
     ["auto-selection may pick FLASHINFER", "TRITON_ATTN"]),
    ("vllm-mtp-attention-sm121", LATENCY, None, {"args": {"attention_backend": "flashinfer"}}, "error",
     ["--attention-backend is FLASHINFER"]),
    ("vllm-mtp-drafter-attention", LATENCY, version("0.21.0"), None, "warning",
     ["does not inherit --attention-backend TRITON_ATTN", "attention_backend: TRITON_ATTN"]),
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY, None, {"args": {"enable-prefix-caching": True}}, "error",
     ["--enable-prefix-caching (set by the inventory override", "remove it"]),
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY, version("0.28.0"), None, "error",
     ["by default for hybrid models", "no-enable-prefix-caching: true"]),
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY, merge(version("0.28.0"), {"args": {"enable-prefix-caching": False}}),
     None, "error", ["renders nothing"]),
    ("sglang-spec-moe-runner-sm120", EAGLE, {"args": {"speculative-moe-runner-backend": None}}, None, "error",
     ["sm_120", "speculative-moe-runner-backend: triton"]),
    ("sglang-spec-radix-cache", EAGLE, {"args": {"disable-radix-cache": None}}, None, "error",
     ["disable-radix-cache: true"]),
    ("sglang-spec-max-running-requests", EAGLE, {"args": {"max-running-requests": None}}, None, "error",
     ["resets it to 48", "sglang 0.5.13 sglang/srt/arg_groups/speculative_hook.py:283",
      "set args.max-running-requests"]),
    ("sglang-spec-max-running-requests", EAGLE, {"image": {"engine_version": "0.5.23"}, "args": {
        "max-running-requests": None, "mamba-scheduler-strategy": None}}, None, "error",
     ["speculative_hook.py:1090"]),
    ("sglang-sm120-required-flags", SGLANG, {"args": {"fp8-gemm-backend": None}}, None, "error",
     ["--fp8-gemm-backend unset (auto)", "kernel_runtime.hpp:45", "fp8-gemm-backend: triton"]),
    ("sglang-sm120-required-flags", SGLANG, {"args": {"fp8-gemm-backend": "cutlass"}}, None, "error",
     ["CUTLASS FAIL, SM100/SM90-only gate"]),
    ("sglang-sm120-required-flags", SGLANG, {"args": {"moe-runner-backend": "deep_gemm"}}, None, "error",
     ["--moe-runner-backend deep_gemm", "moe-runner-backend: triton"]),
    ("sglang-sm120-required-flags", SGLANG, {"args": {"attention-backend": "trtllm_mha"}}, None, "error",
     ["trtllm_mha FAIL"]),
    ("sglang-sm120-required-flags", SGLANG, {"args": {"moe-runner-backend": "flashinfer_cutlass"}}, None,
     "warning", ["the g7e field report proved only triton"]),
    ("sglang-deepep-pcie", SGLANG, None, {"args": {"moe-a2a-backend": "deepep"}}, "error",
     ["PCIe", "DeepEP FAIL"]),
    ("sglang-hicache-mamba", SGLANG, {"args": {"enable-hierarchical-cache": True}}, None, "error",
     ["hybrid Mamba", "_insert_helper"]),
    ("sglang-eagle-mem-fraction", EAGLE, {"args": {"mem-fraction-static": "0.85"}}, None, "warning",
     ["OOMed at 0.85", "0.80"]),
    ("sglang-mamba-extra-buffer-nemotronh", SGLANG,
     merge(version("0.5.12"), {"args": {"mamba-scheduler-strategy": "extra_buffer"}}), None, "error",
     ["not supported for NemotronHForCausalLM", "use no_buffer"]),
    ("sglang-mamba-extra-buffer-nemotronh", SGLANG,
     merge(version("0.5.20"), {"args": {"mamba-scheduler-strategy": None,
                                        "mamba-radix-cache-strategy": "extra_buffer"}}), None, "warning",
     ["linear-attn-backend triton"]),
    ("sglang-mamba-extra-buffer-nemotronh", SGLANG,
     merge(version("0.5.20"), {"args": {"mamba-scheduler-strategy": None, "linear-attn-backend": "flashinfer",
                                        "mamba-radix-cache-strategy": "extra_buffer"}}), None, "error",
     ["--linear-attn-backend flashinfer"]),
    ("reasoning-parser-name", LATENCY, {"args": {"reasoning-parser": "nemotron_3"}}, None, "error",
     ["not a vLLM 0.19.2rc1.dev134 reasoning parser", "use nemotron_v3"]),
    ("reasoning-parser-name", LATENCY, version("0.17.0"), None, "error",
     ["nemotron_v3 exists in vllm >= 0.17.1", "no Nemotron-3 reasoning parser exists in vLLM 0.17.0"]),
    # SGLang's parser names are argparse choices (ReasoningParser.DetectorMap), in the catalog:
    ("flag-value", SGLANG, {"args": {"reasoning-parser": "nano_v3"}}, None, "error",
     ["nano_v3 exists in sglang 0.5.7-0.5.9", "use nemotron_3"]),
    ("flag-value", SGLANG, {"args": {"reasoning-parser": "super_v3"}}, None, "error",
     ["super_v3 is not a choice of SGLang 0.5.13", "use nemotron_3"]),
    ("flag-value", SGLANG, version("0.5.9"), None, "error", ["use nano_v3"]),
    ("flag-value", SGLANG, {"args": {"tool-call-parser": "nemotron_3"}}, None, "error",
     ["--tool-call-parser nemotron_3 is not a choice of SGLang 0.5.13", "qwen3_coder"]),
    ("flag-value", SGLANG, merge(version("0.5.23"), {"args": {"mamba-scheduler-strategy": None,
                                                              "cuda-graph-backend-decode": "piecewise"}}),
     None, "error", ["--cuda-graph-backend-decode piecewise is not a choice of SGLang 0.5.23",
                     "breakable, disabled, full"]),
    ("flag-value", LATENCY, merge(version("0.33.0"), {"args": {"mamba-backend": "mamba_ssm"}}), None, "error",
     ["--mamba-backend mamba_ssm is not a choice of vLLM 0.33.0", "CPU, FLASHINFER, TRITON"]),
    ("sglang-max-running-requests-burst", SGLANG, None, {"args": {"max-running-requests": 48}}, "warning",
     ["--max-running-requests (set by the inventory override", "burst"]),
    ("env-removed", LATENCY, version("0.24.0"), None, "error",
     ["VLLM_NVFP4_GEMM_BACKEND=marlin does nothing on vLLM 0.24.0", "--linear-backend marlin"]),
    ("env-removed", LATENCY, version("0.24.0"), None, "warning",
     ["VLLM_USE_FLASHINFER_MOE_FP4=0 does nothing", "--moe-backend marlin already says it"]),
    ("env-deprecated", LATENCY, version("0.22.0"), None, "warning",
     ["VLLM_NVFP4_GEMM_BACKEND is deprecated on vLLM 0.22.0", "does nothing from 0.24.0"]),
    ("env-unknown", LATENCY, None, {"env": {"VLLM_NVFP4_GEM_BACKEND": "marlin"}}, "warning",
     ["set by the inventory override env.VLLM_NVFP4_GEM_BACKEND", "did you mean VLLM_NVFP4_GEMM_BACKEND"]),
    ("env-unknown", SGLANG, {"env": {"SGLANG_ENABLE_JIT_DEEPGEM": "0"}}, None, "warning",
     ["did you mean SGLANG_ENABLE_JIT_DEEPGEMM"]),
    ("env-unknown", SGLANG, None, None, "warning",
     ["SGLANG_DISABLE_DEEP_GEMM is read by no SGLang release 0.5.1-0.5.23", "SGLANG_ENABLE_JIT_DEEPGEMM=0"]),
    ("env-unknown", LATENCY, {"env": {"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"}}, None, "warning",
     ["VLLM_ATTENTION_BACKEND is read by no vLLM release 0.17.0-0.33.0"]),
    ("env-removed", LATENCY, merge(version("0.24.0"), {"env": {"VLLM_FLASHINFER_MOE_BACKEND": "latency"}}), None,
     "warning", ["VLLM_FLASHINFER_MOE_BACKEND=latency does nothing on vLLM 0.24.0 (last read by vllm 0.23.0)",
                 "--moe-backend marlin already says it"]),
    ("env-value", LATENCY, {"env": {"VLLM_FLASHINFER_ALLREDUCE_BACKEND": "nccl"}}, None, "error",
     ["auto, mnnvl, trtllm"]),
    ("env-value", LATENCY, {"env": {"VLLM_NVFP4_GEMM_BACKEND": "b12x"}}, None, "error", ["marlin"]),
    # Weights pinned to a commit (issue 24): appended so the reviewed messages keep their keys.
    ("model-revision-malformed", LATENCY, {"revision": COMMIT[:12]}, None, "error",
     ["abbreviated commit", "full 40-hex id"]),
    ("model-revision-malformed", LATENCY, {"revision": COMMIT.upper()}, None, "error", ["uppercase"]),
    ("model-revision-malformed", LATENCY, None, {"revision": "main branch"}, "error",
     ["neither a commit id nor a valid branch"]),
    ("model-revision-malformed", LATENCY, {"revision": 1234567}, None, "error", ["as a string"]),
    ("model-revision-malformed", LATENCY,
     {"args": {"speculative_config": {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 2}},
      "draft_revision": "abc def"}, None, "error", ["draft_revision of org/draft"]),
    ("model-revision-branch", LATENCY, {"revision": "main"}, None, "warning", ["'main' is a branch or tag", "moves"]),
    ("model-revision-branch", SGLANG, {"revision": "v1.0"}, None, "warning", ["revision of nvidia/"]),
    ("model-revision-missing", SGLANG, {"revision": None}, None, "warning",
     ["revision of nvidia/NVIDIA-Nemotron-3-Super"]),
    ("model-revision-missing", EAGLE,
     {"revision": COMMIT, "args": {"speculative-draft-model-path": "org/draft"}}, None, "warning",
     ["draft_revision of org/draft is not set"]),
    ("model-revision-in-args", LATENCY, {"args": {"revision": COMMIT}}, None, "error", ["remove args.revision"]),
    ("model-revision-in-args", EAGLE, {"args": {"speculative-draft-model-revision": "main"}}, None, "error",
     ["speculative-draft-model-revision"]),
]


def _case_id(case):
    return "%s-%s" % (case[0], case[1])


@pytest.mark.parametrize("rule, base, delta, overrides, severity, fragments", FIRES,
                         ids=[_case_id(c) for c in FIRES])
def test_rule_fires_on_a_broken_copy(rule, base, delta, overrides, severity, fragments):
    hits = only(findings_for(base, delta, overrides), rule)
    assert hits, "rule %s did not fire" % rule
    matching = [f for f in hits if f["severity"] == severity and all(frag in f["message"] for frag in fragments)]
    assert matching, "no %s finding of %s contains %s: %s" % (severity, rule, fragments, hits)


def test_every_rule_has_a_firing_case():
    assert set(RULE_IDS) == {case[0] for case in FIRES}


# The same rule stays quiet on the near-miss that is fine.
QUIET = [
    ("vllm-mtp-marlin-draft-moe-backend", LATENCY,
     merge(version("0.33.0"), {"args": {"speculative_config": MTP_NO_NESTED}})),  # 0.33 exempts marlin
    ("vllm-mtp-marlin-draft-moe-backend", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="TRITON")}}),  # vLLM lower-cases it
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY,
     merge(version("0.28.0"), {"args": {"no-enable-prefix-caching": True}})),
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY, version("0.26.0")),  # hybrid opt-in until 0.27
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY, version("0.27.0")),
    ("vllm-prefix-caching-mtp-nemotronh", LATENCY,
     merge(version("0.33.0"), {"args": {"disable-prefix-caching": True}})),  # EnableDisableAction
    ("vllm-prefix-caching-mtp-nemotronh", FALLBACK, {"args": {"enable-prefix-caching": True}}),  # no MTP
    ("vllm-mtp-drafter-attention", LATENCY,
     merge(version("0.21.0"), {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="triton",
                                                                   attention_backend="TRITON_ATTN")}})),
    ("vllm-mtp-attention-sm121", FALLBACK, {"args": {"attention-backend": None}}),  # no MTP
    ("sglang-mamba-extra-buffer-nemotronh", SGLANG, {"args": {"mamba-scheduler-strategy": "extra_buffer"}}),
    ("sglang-max-running-requests-burst", SGLANG, {"description": "Latency.", "measured": {"x": 1}}),
    ("flag-unknown", LATENCY, {"args": {"no-async-scheduling": True, "async-scheduling": None}}),
    ("flag-unknown", LATENCY, {"args": {"speculative-config.num_speculative_tokens": 1, "tensor_parallel_size": 1}}),
    ("flag-unknown", LATENCY, {"args": {"nnodes": 2, "node-rank": 0, "master-addr": "10.0.0.1",
                                        "default-chat-template-kwargs": '{"enable_thinking": false}'}}),
    ("flag-unknown", SGLANG, {"args": {"speculative-draft-model": "x", "tensor-parallel-size": 8}}),
    ("flag-unknown", SGLANG, merge(version("0.5.23"), {"args": {"mamba-scheduler-strategy": None,
                                                                "cuda-graph-max-bs-decode": 160}})),
    ("flag-value", LATENCY, merge(version("0.22.0"), {"args": {"moe-backend": "flashinfer_b12x"}})),
    ("vllm-nvfp4-sm12x-moe-backend", LATENCY, merge(version("0.22.0"), {"args": {"moe-backend": "flashinfer_b12x"}})),
    ("sglang-spec-max-running-requests", EAGLE, None),  # the shipped profile states 48
    ("sglang-max-running-requests-burst", EAGLE, None),  # speculative: the cap is always there
    ("sglang-sm120-required-flags", SGLANG, None),
    # --fp8-gemm-backend exists in the seed's family (its --mamba-scheduler-strategy does not: 0.5.7+)
    ("flag-version", SGLANG, {"image": {"engine_version": "0.5.6.post2"}, "args": {"mamba-scheduler-strategy": None}}),
    ("flag-value", LATENCY, {"args": {"moe-backend": "MARLIN", "attention-backend": "triton_attn"}}),
    ("env-removed", LATENCY, version("0.23.1")),
    ("env-unknown", LATENCY, {"env": {"NCCL_DEBUG": "INFO"}}),
    ("reasoning-parser-name", SGLANG, {"args": {"reasoning-parser": "qwen3"}}),  # not ours to judge
    ("flag-value", SGLANG, {"args": {"reasoning-parser": "qwen3", "tool-call-parser": "qwen3_coder"}}),
    # vLLM 0.18.1+ maps --attention-backend auto (any case) to automatic selection
    ("flag-value", LATENCY, {"args": {"attention-backend": "auto"}}),
    ("flag-value", LATENCY, merge(version("0.33.0"), {"args": {"mamba-backend": "FlashInfer"}})),
    ("engine-version-uncatalogued", LATENCY, version("0.33.0")),
    ("env-unknown", SGLANG, {"env": {"SGLANG_DISABLE_DEEP_GEMM": None, "SGLANG_ENABLE_JIT_DEEPGEMM": "0"}}),
    # vLLM reads moe_backend lower-cased with '-' as '_' (vllm/model_executor/layers/fused_moe/oracle/)
    ("vllm-mtp-marlin-draft-moe-backend", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="flashinfer-cutlass")}}),
    ("sglang-max-running-requests-burst", SGLANG, {"description": "Latency.", "measured": {"x": 1},
                                                   "args": {"max-running-requests": 48}}),
    ("sglang-sm120-required-flags", SGLANG, {"hardware": {"compute_capability": "9.0"},
                                             "args": {"fp8-gemm-backend": None}}),  # H100: not SM120
    ("sglang-hicache-mamba", SGLANG, {"model": "org/Other-FP8", "args": {"enable-hierarchical-cache": True}}),
    ("flag-value", LATENCY, {"args": {"hf-token": True}}),  # an optional value: bare is fine
    ("env-value", LATENCY, {"env": {"VLLM_USE_FLASHINFER_MOE_FP4": True}}),  # YAML booleans: 1 and 0
    ("env-value", LATENCY, {"env": {"VLLM_USE_FLASHINFER_MOE_FP4": False}}),
]


@pytest.mark.parametrize("rule, base, delta", QUIET, ids=["%s-%s" % (c[0], i) for i, c in enumerate(QUIET)])
def test_rule_quiet_on_the_fine_near_miss(rule, base, delta):
    assert only(findings_for(base, delta), rule) == []


@pytest.mark.parametrize("name", profile_names())
def test_shipped_profiles_have_no_errors_and_only_documented_warnings(name):
    findings = lint_profile(name)
    assert errors(findings) == [], format_findings(findings)
    expected = (["image-tag-only"] if name in TAG_ONLY else []) \
        + (["env-unknown"] if name in SEED002_ENV else [])
    assert [f["rule"] for f in findings] == expected


def test_the_five_seed_profiles_ship():
    assert set(profile_names()) >= {LATENCY, "gb10-nvfp4-mtp-throughput", FALLBACK, SGLANG, EAGLE}


@pytest.mark.parametrize("case", FIRES[:12], ids=[_case_id(c) for c in FIRES[:12]])
def test_findings_are_complete(case):
    for finding in findings_for(case[1], case[2], case[3]):
        assert set(finding) == {"rule", "severity", "message", "reason", "source"}
        assert finding["severity"] in SEVERITIES
        assert finding["message"] and finding["reason"] and finding["source"]


def test_rule_table_carries_reason_and_source():
    assert len(set(RULE_IDS)) == len(RULES)
    for rule in RULES:
        assert rule["severity"] in SEVERITIES
        assert rule["reason"].endswith(".") and rule["source"]


def test_unknown_profile_name_lists_the_available_ones():
    with pytest.raises(ProfileError, match=r"unknown profile 'gb10-nvfp4-nope'; available profiles: .*%s" % LATENCY):
        lint_profile("gb10-nvfp4-nope")


def test_overrides_with_unknown_keys_are_refused():
    with pytest.raises(ProfileError, match="unknown keys"):
        lint_profile(LATENCY, overrides={"argz": {}})


def test_known_bad_default_is_the_collection_list():
    entries = load_known_bad()
    assert any(e.get("digest_prefix") == "sha256:473de04c" for e in entries)
    assert only(lint_profile(LATENCY, known_bad=[]), "image-digest-known-bad") == []


def test_known_bad_accepts_a_full_digest():
    bad = [{"repository": "vllm/vllm-openai", "digest": SEED_DIGEST, "signature": "engine_dead_on_mtp"}]
    hits = only(lint_profile(LATENCY, known_bad=bad), "image-digest-known-bad")
    assert hits and "engine_dead_on_mtp" in hits[0]["message"]
    other_repo = [dict(bad[0], repository="lmsysorg/sglang")]
    assert only(lint_profile(LATENCY, known_bad=other_repo), "image-digest-known-bad") == []


def test_known_bad_entry_without_a_digest_is_refused():
    with pytest.raises(ProfileError, match="digest or a digest_prefix"):
        lint_profile(LATENCY, known_bad=[{"signature": "x"}])


def test_a_known_bad_list_that_is_not_a_list_is_refused():
    with pytest.raises(ProfileError, match=r"^known_bad must be a list of \{repository, digest or digest_prefix"):
        lint_profile(LATENCY, known_bad={"digest": SEED_DIGEST})


def test_lint_profile_refuses_what_is_not_a_profile():
    with pytest.raises(ProfileError, match=r"^lint_profile needs a profile mapping or a profile name, not 'list'$"):
        lint_profile([LATENCY])


def test_rules_limits_the_run_to_those_rules():
    broken = overlay(load_profile(FALLBACK), {"args": {"moe-backend": "bogus"}})
    assert [f["rule"] for f in lint_profile(broken)] == ["image-tag-only", "flag-value",
                                                         "vllm-nvfp4-sm12x-moe-backend"]
    assert [f["rule"] for f in lint_profile(broken, rules=["flag-value"])] == ["flag-value"]
    assert [f["rule"] for f in lint_profile(broken, rules=["image-tag-only", "vllm-nvfp4-sm12x-moe-backend"])] == [
        "image-tag-only", "vllm-nvfp4-sm12x-moe-backend"]


def test_a_known_bad_file_with_an_entry_without_a_digest_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "known_bad_images.yml"
    path.write_text("known_bad_images:\n  - signature: crash_under_soak\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"^%s: entry \{'signature': 'crash_under_soak'\} needs a digest"
                                           % str(path).replace(".", r"\.")):
        load_known_bad(str(path))


def test_format_findings_reads_as_one_line_each():
    lines = format_findings(findings_for(LATENCY, {"args": {"moe-backend": "flashinfer_trtllm"}}))
    assert lines and lines[0].startswith("ERROR [vllm-nvfp4-sm12x-moe-backend] ")
    assert "(why: " in lines[0] and "; source: " in lines[0]


def test_lint_report_splits_failures_from_notes_in_the_format_findings_lines():
    findings = findings_for(LATENCY, {"args": {"moe-backend": "flashinfer_trtllm", "max-num-seqs": 4096,
                                               "attention-backend": "turboquant"}})
    severities = {f["severity"] for f in findings}
    assert severities == {"error", "warning"}, findings
    report = lint_report(findings)
    assert report["failures"] == format_findings([f for f in findings if f["severity"] == "error"])
    assert report["notes"] == format_findings([f for f in findings if f["severity"] == "warning"])
    strict = lint_report(findings, fail_on_warnings=True)
    assert strict == {"failures": format_findings(findings), "notes": []}
    assert lint_report([]) == {"failures": [], "notes": []}


def test_no_yaml_spells_a_finding_itself():
    """Issue 21: findings are printed through format_findings (profile_lint's report), Jinja only prints."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
    users = []
    for folder in ("roles", "playbooks"):
        for directory, _dirs, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith((".yml", ".yaml", ".j2")):
                    with open(os.path.join(directory, name), encoding="utf-8") as handle:
                        text = handle.read()
                    assert "(why: " not in text and ".reason" not in text, os.path.join(directory, name)
                    if "inferops.serving.profile_lint(" in text and "report=true" in text:
                        users.append(os.path.relpath(os.path.join(directory, name), root))
    assert sorted(users) == ["roles/preflight/vars/main.yml", "roles/server/tasks/show_launch.yml"]


def test_lint_report_prints_through_format_findings():
    report = lint_report([FINDING], fail_on_warnings=True)
    assert report == {"failures": ["WARNING [r] m (why: w; source: s)"], "notes": []}
    assert lint_report([FINDING]) == {"failures": [], "notes": ["WARNING [r] m (why: w; source: s)"]}


def test_the_filter_reports_the_lines_to_print_with_report():
    # The lint_report filter folded into profile_lint: report=true returns lint_report of the findings.
    overrides = {"args": {"moe-backend": "flashinfer_trtllm", "max-num-seqs": 4096, "attention-backend": "turboquant"}}
    findings = FILTER(LATENCY, overrides=overrides)
    assert FILTER(LATENCY, overrides=overrides, report=True) == lint_report(findings)
    assert FILTER(LATENCY, overrides=overrides, report="yes", fail_on_warnings="yes") == lint_report(
        findings, fail_on_warnings=True)
    assert FILTER(FALLBACK, report=True)["notes"] == format_findings(FILTER(FALLBACK))
    with pytest.raises(AnsibleFilterError, match="profile_lint report and fail_on_warnings take true or false"):
        FILTER(LATENCY, report="maybe")


# --- the filter ------------------------------------------------------------------------------
FILTER = FilterModule().filters()["profile_lint"]
FINDING = {"rule": "r", "severity": "warning", "message": "m", "reason": "w", "source": "s"}


def test_filter_lints_a_name_or_a_profile_with_the_collection_known_bad_list():
    assert [f["rule"] for f in FILTER(FALLBACK)] == ["image-tag-only"]
    bad = overlay(load_profile(LATENCY), {"image": {"digest": "sha256:473de04c" + "1" * 56}})
    assert only(FILTER(bad), "image-digest-known-bad")


def test_filter_adds_the_passed_known_bad_list_and_overrides():
    extra = [{"digest": SEED_DIGEST, "signature": "canary_failed"}]
    found = FILTER(load_profile(LATENCY), overrides={"args": {"max_num_seqz": 2}}, known_bad=extra)
    assert {"image-digest-known-bad", "flag-unknown"} <= {f["rule"] for f in found}


@pytest.mark.parametrize("call", [
    lambda: FILTER("no-such-profile"),
    lambda: FILTER(LATENCY, known_bad={"digest": SEED_DIGEST}),
    lambda: FILTER(LATENCY, overrides={"bogus": 1}),
])
def test_filter_errors_are_filter_errors(call):
    with pytest.raises(AnsibleFilterError):
        call()


def test_filter_finds_a_named_profile_in_extra_dirs(tmp_path):
    (tmp_path / "site-latency.yml").write_text(
        "name: site-latency\nextends: %s\nargs:\n  moe-backend: flashinfer_trtllm\n" % LATENCY, encoding="utf-8")
    found = FILTER("site-latency", profile_dirs=[str(tmp_path)])
    assert [f["rule"] for f in errors(found)] == ["vllm-nvfp4-sm12x-moe-backend"]


# --- every message, word for word ---------------------------------------------------------------
# The fragments above say what each message must name; this pins each whole message (and every
# other finding of the same profile, so a rule that fires where it should not shows up too).
# tests/unit/fixtures/lint_messages.json holds the reviewed text. After an intended change to a
# message, rewrite it with `PYTHONPATH=.collections python tests/unit/plugins/plugin_utils/test_profile_lint.py`
# and read the diff.
MESSAGES_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "lint_messages.json")
NO_FALLBACK_BAD = [{"digest": SEED_DIGEST}]  # no signature, symptom, source: the message says so
EXTRA = [
    # sm_121 is GB10; the same profile on sm_120 (g7e) is not the FlashInfer + MTP crash
    ("sm_120", LATENCY, {"hardware": {"compute_capability": "12.0"}, "args": {"attention-backend": None}}, None, None),
    ("sm_120-drafter", LATENCY, merge(version("0.21.0"), {"hardware": {"compute_capability": "12.0"}}), None, None),
    ("sm_121-attention-bare", LATENCY, {"args": {"attention-backend": True}}, None, None),
    ("sm_121-attention-flash-attn", LATENCY, {"args": {"attention-backend": "FLASH_ATTN"}}, None, None),
    ("dashed-flag-name", LATENCY, None, {"args": {"--max-num-seqz": 8}}, None),
    ("sglang-underscore-known", SGLANG, {"args": {"moe_runner_backend": "triton", "moe-runner-backend": None}},
     None, None),
    ("known-bad-bare-entry", LATENCY, None, None, NO_FALLBACK_BAD),
    ("known-bad-bare-entry-no-fallback", LATENCY, {"fallback": None}, None, NO_FALLBACK_BAD),
    ("reasoning-parser-bare", LATENCY, {"args": {"reasoning-parser": True}}, None, None),
    # (merge() would drop a null: these deltas are single mappings)
    ("spec-method-flags", LATENCY, {"image": {"engine_version": "0.22.0"}, "args": {
        "speculative_config": None, "spec-method": "mtp", "spec-tokens": 2}}, None, None),
    ("moe-env-without-flag", LATENCY, {"image": {"engine_version": "0.24.0"}, "args": {"moe-backend": None}},
     None, None),
    # several unknown flags, each reported; vLLM spells '_' as '-'
    ("unknown-flags-in-a-row", LATENCY, None, {"args": {"swap_space": 4, "max_num_seqz": 8, "zzzz-qqqq-xxxx": 1}},
     None),
    ("other-release-flags-in-a-row", LATENCY, None,
     {"args": {"swap_space": 4, "spec_method": "mtp", "zzzz-qqqq-xxxx": 1}}, None),
    ("no-reasoning-parser", LATENCY, {"args": {"reasoning-parser": None}}, None, None),
    ("fp8-vllm-on-sm121", LATENCY, {"model": "org/Some-Model-FP8", "args": {"moe-backend": None}}, None, None),
    ("moe-backend-auto", LATENCY, {"args": {"moe-backend": "auto"}}, None, None),
    ("auto-is-marlin-before-0.19", FALLBACK, {"args": {"moe-backend": None}}, None, None),
    ("mtp-with-another-moe-backend", LATENCY, {"args": {"moe-backend": "cutlass",
                                                        "speculative_config": MTP_NO_NESTED}}, None, None),
    ("no-mtp-drafter", FALLBACK, {"image": {"engine_version": "0.21.0"}}, None, None),
    ("prefix-caching-on-from-0.28", LATENCY, {"image": {"engine_version": "0.28.0"},
                                              "args": {"enable-prefix-caching": True}}, None, None),
    ("extra-buffer-with-triton", SGLANG, {"image": {"engine_version": "0.5.20"}, "args": {
        "mamba-scheduler-strategy": None, "linear-attn-backend": "triton",
        "mamba-radix-cache-strategy": "extra_buffer"}}, None, None),
    ("extra-buffer-not-nemotron", SGLANG, {"image": {"engine_version": "0.5.12"}, "model": "org/Other-FP8",
                                           "args": {"mamba-scheduler-strategy": "extra_buffer"}}, None, None),
    ("eagle-before-the-known-sources", EAGLE, {"image": {"engine_version": "0.5.1"},
                                               "args": {"max-running-requests": None}}, None, None),
    ("dashed-gemm-env-at-0.24", LATENCY, {"image": {"engine_version": "0.24.0"},
                                          "env": {"VLLM_NVFP4_GEMM_BACKEND": "flashinfer-cutlass"}}, None, None),
    ("no-digest-no-tag", LATENCY, {"image": {"digest": None, "tag": None}}, None, None),
    ("unnamed-profile", LATENCY, {"name": None, "engine": "tgi"}, None, None),
    # 0.19.2rc1.dev134 lies between 0.19.1 and 0.20.0: what 0.20.0 has is a warning, not an error
    ("nightly-upper-has-it", LATENCY, {"args": {"kv-cache-dtype": "nvfp4", "attention-backend": "turboquant",
                                                "mamba-backend": "triton", "speculative_config": dict(
                                                    MTP_NO_NESTED, moe_backend="triton",
                                                    synthetic_acceptance_length=2.0)}}, None, None),
    ("below-the-oldest-release", SGLANG, {"image": {"engine_version": "0.5.0"}}, {"args": {"max-num-seqz": 8}},
     None),
    # each flag is judged, whatever came before it
    ("skipped-flags-then-bad-ones", LATENCY, None, {"args": {"max-num": 8, "tp": 1, "zzzz-qqqq-xxxx": 1,
                                                             "hf-token": True, "scheduling-policy": "lifo"}}, None),
    ("ambiguous-with-history", SGLANG, {"args": {"nsa-prefill": "flashmla_sparse"}}, None, None),
    ("alias-bare", SGLANG, {"image": {"engine_version": "0.5.23"},
                            "args": {"mamba-scheduler-strategy": None, "tensor-parallel-size": True}}, None, None),
    ("deprecated-in-the-newest", LATENCY, {"image": {"engine_version": "0.33.0"},
                                           "args": {"log-config-file": "/etc/vllm/logging.json"}}, None, None),
    # an underscore spelling whose hyphenated one is no flag either; a sub-key of a flag that takes none
    ("sglang-underscore-typo", SGLANG, {"args": {"moe_runer_backend": "triton"}}, None, None),
    ("sglang-underscore-gone", SGLANG, {"image": {"engine_version": "0.5.20"}, "args": {
        "mamba-scheduler-strategy": None, "mamba_scheduler_strategy": "no_buffer", "cuda_graph_max_bs": 160}},
     None, None),
    ("sub-key-of-a-plain-flag", LATENCY, None, {"args": {"max-num-seqs.limit": 4, "swap-space": 4,
                                                         "zzzz-qqqq-xxxx": 1}}, None),
    ("sub-key-of-a-misspelt-flag", LATENCY, None, {"args": {"speculative-configs.method": "mtp"}}, None),
    ("sub-key-of-a-later-flag", LATENCY, None, {"args": {"watchdog-config.timeout_s": 600}}, None),
    ("sglang-underscore-version-unreadable", SGLANG,
     {"image": {"engine_version": "latest"}, "args": {"moe_runner_backend": "triton"}}, None, None),
    # speculative_config by dotted keys, after a broken JSON, not a mapping, a misspelt key
    ("spec-dotted-keys", LATENCY, {"args": {"speculative_config": None, "speculative-config.num_speculative_tokens": 2,
                                            "speculative-config.method": "mtp"}}, None, None),
    ("spec-broken-json-then-dotted", LATENCY, {"args": {"speculative_config": '{"method": "mtp",'}},
     {"args": {"speculative-config.disable_by_batch_size": 8}}, None),
    ("spec-not-a-mapping", LATENCY, {"args": {"speculative_config": "[2]"}}, None, None),
    ("spec-key-typo", LATENCY, {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backnd="triton")}}, None,
     None),
    ("spec-unreadable-version", LATENCY, {"image": {"engine_version": "latest"}}, None, None),
    ("spec-moe-backend-of-later-releases", LATENCY,
     {"args": {"speculative_config": dict(MTP_NO_NESTED, moe_backend="batched_triton")}}, None, None),
    # older than every NVFP4 MoE kernel for sm_12x: no empty "use one of"
    ("nvfp4-sm12x-before-any-kernel", LATENCY, merge(version("0.16.0"), {"args": {"moe-backend": "flashinfer_cutlass"}}),
     None, None),
    ("sglang-before-fp8-gemm-backend", SGLANG, {"image": {"engine_version": "0.5.6"}, "args": {
        "mamba-scheduler-strategy": None, "fp8-gemm-backend": None, "moe-runner-backend": "deep_gemm"}}, None, None),
    ("sglang-fp8-gemm-auto", SGLANG, {"args": {"fp8-gemm-backend": "auto"}}, None, None),
    ("sglang-deepep-v2", SGLANG, {"image": {"engine_version": "0.5.19"}}, {"args": {"moe-a2a-backend": "deepep_v2"}},
     None),
    # env vars: a replacement flag that sets nothing, inventory overrides, a nightly past the last reader,
    # a removed var with no facts, a misspelling with no near name, a var of later releases
    ("env-replacement-flag-sets-nothing", LATENCY, {"image": {"engine_version": "0.24.0"},
                                                    "args": {"moe-backend": True, "linear-backend": False}},
     None, None),
    ("env-removed-override", LATENCY, {"image": {"engine_version": "0.24.0"}},
     {"env": {"VLLM_NVFP4_GEMM_BACKEND": "cutlass"}}, None),
    ("env-deprecated-override", LATENCY, {"image": {"engine_version": "0.22.0"}},
     {"env": {"VLLM_NVFP4_GEMM_BACKEND": "bogus"}}, None),
    ("env-removed-nightly", LATENCY, {"image": {"engine_version": "0.24.1.dev3"}}, None, None),
    ("env-removed-no-facts", LATENCY, {"env": {"VLLM_FUSED_MOE_CHUNK_SIZE": "32768"}}, None, None),
    ("env-unknown-and-too-new", LATENCY, None, {"env": {"VLLM_ZZZZ_QQQQ": "1",
                                                        "VLLM_B12X_MOE_FP4_FORCE_A16": "1"}}, None),
    ("env-value-of-later-releases", LATENCY, {"env": {"VLLM_NVFP4_GEMM_BACKEND": "emulation"}}, None, None),
]


def _message_cases():
    cases = {}
    for index, (rule, base, delta, overrides, _severity, _fragments) in enumerate(FIRES):
        cases["fires-%02d-%s" % (index, rule)] = (base, delta, overrides, None)
    for index, (rule, base, delta) in enumerate(QUIET):
        cases["quiet-%02d-%s" % (index, rule)] = (base, delta, None, None)
    for name, base, delta, overrides, known_bad in EXTRA:
        cases["extra-" + name] = (base, delta, overrides, known_bad)
    return cases


def _messages(base, delta, overrides, known_bad):
    return [[f["rule"], f["severity"], f["message"]]
            for f in findings_for(base, delta, overrides, known_bad=known_bad)]


def test_every_finding_is_the_reviewed_text():
    with open(MESSAGES_FILE, encoding="utf-8") as handle:
        expected = json.load(handle)
    cases = _message_cases()
    assert sorted(expected) == sorted(cases)
    for name, case in sorted(cases.items()):
        assert _messages(*case) == expected[name], name


if __name__ == "__main__":
    with open(MESSAGES_FILE, "w", encoding="utf-8") as out:
        json.dump({name: _messages(*case) for name, case in sorted(_message_cases().items())}, out, indent=1,
                  ensure_ascii=False)
        out.write("\n")
