# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Which flags, flag values, env vars and speculative_config keys exist in which engine version.

One home for the version facts the profile lint needs, for vLLM (0.17 - 0.33) and SGLang
(0.5.1 - 0.5.23). The ranges come from ../shared/research/engine-facts.md (sections 1.2, 1.4,
1.6, 1.10 for vLLM; 2.3, 2.4, 2.6 for SGLang), which read the released wheels. Where that page
gives no range, a flag is listed with ``first=None`` ("present in every catalogued version, not
checked per version"): the lint then only checks that the flag exists at all.

Ranges are ``(first, last)``, both inclusive and both optional:

* ``first`` compares with full PEP 440 ordering, so a dev or rc build of the first release is
  still *before* it (``0.19.0rc1.dev5 < 0.19.0``): a nightly cut before the release may lack it.
* ``last`` compares on the release numbers only, so every build of that release (``0.5.19rc1``,
  ``0.5.19.post1``) still has it, and the next release (``0.5.20rc1`` included) does not.
"""
from __future__ import annotations

import difflib
import fnmatch
import functools
import re

ENGINES = ("vllm", "sglang")
# The releases engine-facts.md read; versions outside get a warning from the lint.
CATALOGUED = {"vllm": ("0.17.0", "0.33"), "sglang": ("0.5.1", "0.5.23")}
SOURCE = {"vllm": "engine-facts.md section 1.10", "sglang": "engine-facts.md section 2.6"}


class CatalogError(ValueError):
    """A version string that cannot be ordered."""


_VERSION_RE = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))|-(?P<post_implicit>\d+))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


@functools.total_ordering
class EngineVersion:
    """An engine version ordered like PEP 440: ``0.19.2rc1.dev134 < 0.19.2rc1 < 0.19.2 < 0.19.2.post1``.

    The local part (``+gfe9c3d6c5``) is kept in ``text`` but does not take part in ordering.
    """

    __slots__ = ("text", "release", "pre", "post", "dev")

    def __init__(self, text):
        match = _VERSION_RE.match(str(text))
        if not match:
            raise CatalogError("cannot read %r as an engine version (expected e.g. 0.19.2rc1.dev134, 0.5.13, "
                               "0.5.6.post2)" % (text,))
        self.text = str(text).strip()
        self.release = tuple(int(part) for part in match.group("release").split("."))
        pre_l = match.group("pre_l")
        self.pre = (_PRE_RANK[pre_l.lower()], int(match.group("pre_n") or 0)) if pre_l else None
        post = match.group("post") if match.group("post") is not None else match.group("post_implicit")
        self.post = int(post or 0) if post is not None else None
        self.dev = int(match.group("dev") or 0) if match.group("dev") is not None else None

    def _key(self):
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
        elif self.pre is None:
            pre = (3, 0)  # a final release sorts after its pre-releases
        else:
            pre = self.pre
        post = -1 if self.post is None else self.post
        dev = (1, 0) if self.dev is None else (0, self.dev)
        return (tuple(release), pre, post, dev)

    def __eq__(self, other):
        if not isinstance(other, EngineVersion):
            other = parse_version(other)
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, EngineVersion):
            other = parse_version(other)
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "EngineVersion(%r)" % self.text

    def __str__(self):
        return self.text

    def release_at_most(self, last):
        """True when this version's release numbers are <= ``last``'s (any build of ``last`` counts)."""
        last = parse_version(last)
        width = len(last.release)
        mine = (self.release + (0,) * width)[:width]
        return mine <= last.release


def parse_version(text):
    """``text`` as an :class:`EngineVersion`; raises :class:`CatalogError` if it is not a version."""
    if isinstance(text, EngineVersion):
        return text
    if text is None or str(text).strip() == "":
        raise CatalogError("no engine version given")
    return EngineVersion(text)


def version_in(version, first=None, last=None):
    """Whether ``version`` lies in the inclusive range ``first`` .. ``last`` (see the module doc)."""
    version = parse_version(version)
    if first is not None and version < parse_version(first):
        return False
    if last is not None and not version.release_at_most(last):
        return False
    return True


def range_text(first=None, last=None):
    """A range as people write it: ``0.5.7-0.5.19``, ``>= 0.19.0``, ``<= 0.5.19``, ``all versions``."""
    if first and last:
        return "%s-%s" % (first, last)
    if first:
        return ">= %s" % first
    if last:
        return "<= %s" % last
    return "all catalogued versions"


def catalogued(engine, version):
    """Whether engine-facts.md read releases around ``version`` (outside: facts are extrapolated)."""
    first, last = CATALOGUED[engine]
    return version_in(version, first, last)


def _spec(first=None, last=None, values=None, complete_until=None, boolean=False, norm=None,
          deprecated=None, replacement=None, optional_value=False, source=None):
    return {"first": first, "last": last, "values": values, "complete_until": complete_until,
            "boolean": boolean, "norm": norm, "deprecated": deprecated, "replacement": replacement,
            "optional_value": optional_value, "source": source}


def _many(names, **kwargs):
    return {name: _spec(**kwargs) for name in names.split()}


def _vals(names, first=None, last=None):
    return {name: (first, last) for name in names.split()}


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------
_VLLM_MOE_BACKENDS = {}
_VLLM_MOE_BACKENDS.update(_vals("auto triton deep_gemm cutlass flashinfer_trtllm flashinfer_cutlass "
                                "flashinfer_cutedsl marlin aiter", "0.17.0"))
_VLLM_MOE_BACKENDS.update(_vals("deep_gemm_mega_moe emulation", "0.20.0"))
_VLLM_MOE_BACKENDS.update(_vals("flashinfer_b12x humming triton_unfused flydsl hpc", "0.25.0"))
_VLLM_MOE_BACKENDS.update(_vals("batched_triton", "0.28.0"))
# In 0.33's --help but not in 0.28's list; the release between that added each was not checked.
_VLLM_MOE_BACKENDS.update(_vals("b12x aiter_mega_moe aiter_triton_mxfp4_bf16 aiter_triton_mxfp4_mxfp4 "
                                "flashinfer_moe_ep_mega_deep_gemm rdna3", "0.29.0"))
_VLLM_MOE_BACKENDS.update(_vals("flashinfer_moe_ep_cutedsl", "0.32.0"))

# What the unquantized (BF16) MoE oracle accepts: the MTP draft of the NVFP4 checkpoint is
# unquantized, so speculative_config.moe_backend must be one of these (engine-facts 1.2).
VLLM_UNQUANTIZED_MOE_BACKENDS = {}
VLLM_UNQUANTIZED_MOE_BACKENDS.update(_vals("triton flashinfer_trtllm flashinfer_cutlass aiter", "0.17.0"))
VLLM_UNQUANTIZED_MOE_BACKENDS.update(_vals("batched_triton", "0.28.0"))

_VLLM_KV_CACHE_DTYPES = {}
_VLLM_KV_CACHE_DTYPES.update(_vals("auto bfloat16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla", "0.17.0"))
_VLLM_KV_CACHE_DTYPES.update(_vals("float16", "0.19.0"))
_VLLM_KV_CACHE_DTYPES.update(_vals("int8_per_token_head fp8_per_token_head nvfp4", "0.22.0"))
_VLLM_KV_CACHE_DTYPES.update(_vals("nvfp4_ds_mla", "0.33.0"))

_VLLM_LINEAR_BACKENDS = _vals(
    "auto cutlass flashinfer_cutlass flashinfer_cutedsl flashinfer_trtllm flashinfer_cudnn flashinfer_b12x "
    "b12x marlin humming triton deep_gemm torch aiter machete fbgemm conch exllama emulation xpu xpu_woq",
    "0.22.0")

_VLLM_ATTENTION_BACKENDS = _vals(
    "FLASH_ATTN FLASHINFER TRITON_ATTN FLEX_ATTENTION TREE_ATTN CPU_ATTN FLASHMLA FLASHMLA_SPARSE CUTLASS_MLA "
    "FLASHINFER_MLA TRITON_MLA FLASH_ATTN_MLA ROCM_ATTN ROCM_AITER_FA ROCM_AITER_MLA "
    "ROCM_AITER_UNIFIED_ATTN TORCH_SDPA NO_ATTENTION")

VLLM_FLAGS = {}
# Frontend and engine flags without a per-version range in engine-facts.md (present 0.17-0.33).
VLLM_FLAGS.update(_many(
    "host port uds uvicorn-log-level api-key served-model-name chat-template chat-template-content-format "
    "response-role ssl-keyfile ssl-certfile ssl-ca-certs ssl-cert-reqs root-path middleware allowed-origins "
    "allowed-methods allowed-headers lora-modules tool-call-parser tool-parser-plugin tool-server "
    "log-config-file max-log-len api-server-count config model runner convert tokenizer tokenizer-mode seed "
    "revision code-revision tokenizer-revision hf-config-path hf-overrides max-model-len quantization "
    "max-logprobs logprobs-mode override-generation-config generation-config model-impl load-format "
    "download-dir model-loader-extra-config ignore-patterns distributed-executor-backend "
    "pipeline-parallel-size tensor-parallel-size data-parallel-size data-parallel-size-local "
    "data-parallel-address data-parallel-rpc-port data-parallel-start-rank data-parallel-rank "
    "data-parallel-backend decode-context-parallel-size eplb-config all2all-backend "
    "max-parallel-loading-workers worker-cls worker-extension-cls block-size gpu-memory-utilization "
    "kv-cache-memory-bytes swap-space num-gpu-blocks-override prefix-caching-hash-algo cpu-offload-gb "
    "mamba-cache-dtype mamba-block-size limit-mm-per-prompt mm-processor-kwargs mm-processor-cache-gb "
    "media-io-kwargs mm-encoder-tp-mode max-loras max-lora-rank max-cpu-loras lora-dtype "
    "otlp-traces-endpoint collect-detailed-traces max-num-batched-tokens max-num-seqs "
    "max-num-partial-prefills max-long-partial-prefills long-prefill-token-threshold scheduler-cls "
    "kv-transfer-config kv-events-config compilation-config additional-config structured-outputs-config "
    "reasoning-parser reasoning-parser-plugin max-cudagraph-capture-size cudagraph-capture-sizes "
    "optimization-level show-hidden-metrics-for-version logits-processors io-processor-plugin "
    "safetensors-load-strategy pt-load-map-location override-attention-dtype expert-placement-strategy "
    "dbo-decode-token-threshold dbo-prefill-token-threshold kv-offloading-size kv-offloading-backend",
    source=SOURCE["vllm"]))
VLLM_FLAGS.update(_many(
    "trust-remote-code enforce-eager enable-prefix-caching enable-chunked-prefill async-scheduling "
    "enable-auto-tool-choice disable-log-stats enable-log-requests enable-expert-parallel enable-eplb "
    "disable-custom-all-reduce enable-lora skip-tokenizer-init disable-sliding-window disable-cascade-attn "
    "enable-sleep-mode calculate-kv-scales enable-prompt-tokens-details disable-fastapi-docs "
    "enable-server-load-tracking enable-force-include-usage disable-uvicorn-access-log headless "
    "enable-prompt-embeds disable-hybrid-kv-cache-manager enable-dbo fully-sharded-loras "
    "return-tokens-as-token-ids disable-frontend-multiprocessing enable-request-id-headers "
    "enable-tokenizer-info-endpoint enable-log-outputs data-parallel-hybrid-lb data-parallel-external-lb "
    "disable-chunked-mm-input use-tqdm-on-load enable-ssl-refresh allow-credentials "
    "aggregate-engine-logging kv-sharing-fast-prefill enable-multimodal-encoder-data-parallel",
    boolean=True, source=SOURCE["vllm"]))
VLLM_FLAGS.update({
    "hf-token": _spec(optional_value=True, source=SOURCE["vllm"]),
    "dtype": _spec(values=_vals("auto half float16 bfloat16 float float32"), source=SOURCE["vllm"]),
    "scheduling-policy": _spec(values=_vals("fcfs priority"), source=SOURCE["vllm"]),
    "speculative-config": _spec(source="engine-facts.md section 1.10 (JSON; keys in VLLM_SPECULATIVE_KEYS)"),
    "moe-backend": _spec(first="0.17.0", values=_VLLM_MOE_BACKENDS, norm="lower_underscore",
                         source="engine-facts.md sections 1.2 and 1.10"),
    "linear-backend": _spec(first="0.22.0", values=_VLLM_LINEAR_BACKENDS, norm="lower_underscore",
                            source="engine-facts.md section 1.10 (values as of 0.33)"),
    "attention-backend": _spec(values=_VLLM_ATTENTION_BACKENDS, complete_until="0.16", norm="upper",
                               source="engine-facts.md section 1.4 (case-insensitive enum name)"),
    "kv-cache-dtype": _spec(values=_VLLM_KV_CACHE_DTYPES, complete_until="0.21",
                            source="engine-facts.md section 1.10"),
    "mamba-ssm-cache-dtype": _spec(values=dict(_vals("auto float32 float16"), bfloat16=("0.20.0", None)),
                                   source="engine-facts.md section 1.10"),
    "mamba-cache-mode": _spec(values=dict(_vals("align none"), all=(None, "0.31")),
                              source="engine-facts.md section 1.10"),
    "spec-method": _spec(first="0.22.0", source="engine-facts.md section 1.10"),
    "spec-model": _spec(first="0.22.0", source="engine-facts.md section 1.10"),
    "spec-tokens": _spec(first="0.22.0", source="engine-facts.md section 1.10"),
    "performance-mode": _spec(first="0.17.0", source="engine-facts.md section 1.10"),
    "fail-on-environ-validation": _spec(first="0.17.0", boolean=True, source="engine-facts.md section 1.10"),
})
# Short spellings vLLM accepts for a flag: alias -> (flag, first version).
VLLM_ALIASES = {"sc": ("speculative-config", "0.19.0"), "O": ("optimization-level", None),
                "tp": ("tensor-parallel-size", None), "pp": ("pipeline-parallel-size", None),
                "dp": ("data-parallel-size", None), "q": ("quantization", None)}

# Keys of --speculative-config: key -> (first, last). vLLM's config classes forbid unknown keys
# (pydantic extra="forbid"): a key older than the image is a ValidationError at startup.
VLLM_SPECULATIVE_KEYS = {
    "method": (None, None), "model": (None, None), "num_speculative_tokens": (None, None),
    "quantization": (None, None), "draft_tensor_parallel_size": (None, None),
    "disable_padded_drafter_batch": (None, None), "revision": (None, None), "code_revision": (None, None),
    "max_model_len": (None, None), "prompt_lookup_max": (None, None), "prompt_lookup_min": (None, None),
    "disable_by_batch_size": (None, None), "speculative_token_tree": (None, None),
    "moe_backend": ("0.19.0", None),
    "attention_backend": ("0.21.0", None),
    "kv_cache_dtype": ("0.26.0", None),
}
# vLLM releases where --moe-backend marlin also reaches the unquantized MTP draft MoE and fails
# unless speculative_config.moe_backend is set; 0.33 exempts marlin (vllm#56964, engine-facts 1.2).
VLLM_MARLIN_REACHES_DRAFT = (None, "0.32")
# Prefix caching is on by default for hybrid (Mamba) models from this release (engine-facts 1.6).
VLLM_HYBRID_PREFIX_CACHING_DEFAULT_ON = "0.26.0"
# The drafter stops inheriting --attention-backend from this release (engine-facts 1.4).
VLLM_DRAFTER_OWN_ATTENTION = "0.21.0"

# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------
_SGLANG_MOE_RUNNERS = {}
_SGLANG_MOE_RUNNERS.update(_vals("auto deep_gemm triton triton_kernel flashinfer_trtllm flashinfer_cutlass "
                                 "flashinfer_mxfp4 flashinfer_cutedsl cutlass"))
_SGLANG_MOE_RUNNERS.update(_vals("marlin", "0.5.12"))
# In 0.5.23's list, not in 0.5.9's; the release between that added each was not checked.
_SGLANG_MOE_RUNNERS.update(_vals("experimental_sgl_trtllm flashinfer_trtllm_routed flashinfer_megamoe aiter "
                                 "humming experimental_sgl_marlin lora_* hpc_ops megamoe intel_xpu", "0.5.10"))

SGLANG_FLAGS = {}
SGLANG_FLAGS.update(_many(
    "model-path tokenizer-path tokenizer-mode load-format model-loader-extra-config context-length revision "
    "model-impl host port warmups nccl-port dtype quantization quantization-param-path kv-cache-dtype "
    "mem-fraction-static max-running-requests max-queued-requests max-total-tokens chunked-prefill-size "
    "max-prefill-tokens schedule-conservativeness page-size hybrid-kvcache-ratio swa-full-tokens-ratio "
    "device tp-size pp-size max-micro-batch-size stream-interval random-seed "
    "constrained-json-whitespace-pattern watchdog-timeout dist-timeout download-dir base-gpu-id gpu-id-step "
    "log-level log-level-http log-requests-level crash-dump-folder bucket-time-to-first-token "
    "bucket-inter-token-latency bucket-e2e-request-latency decode-log-interval kv-events-config api-key "
    "served-model-name weight-version chat-template completion-template file-storage-path reasoning-parser "
    "tool-call-parser tool-server dp-size load-balance-method dist-init-addr nnodes node-rank "
    "json-model-override-args preferred-sampling-params max-lora-rank lora-target-modules lora-paths "
    "max-loras-per-batch lora-backend attention-backend prefill-attention-backend decode-attention-backend "
    "sampling-backend grammar-backend mm-attention-backend speculative-draft-model-path "
    "speculative-draft-model-revision speculative-num-steps speculative-eagle-topk "
    "speculative-num-draft-tokens speculative-accept-threshold-single speculative-accept-threshold-acc "
    "speculative-token-map speculative-attention-mode ep-size moe-a2a-backend flashinfer-mxfp4-moe-precision "
    "deepep-mode ep-num-redundant-experts eplb-algorithm init-expert-location moe-dense-tp-size hicache-ratio "
    "hicache-size hicache-write-policy hicache-io-backend hicache-mem-layout hicache-storage-backend "
    "cuda-graph-max-bs cuda-graph-bs torch-compile-max-bs torchao-config tbo-token-distribution-threshold "
    "triton-attention-num-kv-splits num-continuous-decode-steps scheduler-recv-interval numa-node "
    "debug-tensor-dump-output-folder disaggregation-mode disaggregation-transfer-backend "
    "disaggregation-bootstrap-port max-mamba-cache-size mamba-full-memory-ratio config",
    source=SOURCE["sglang"]))
SGLANG_FLAGS.update(_many(
    "trust-remote-code enable-metrics enable-cache-report disable-radix-cache disable-cuda-graph "
    "disable-cuda-graph-padding skip-tokenizer-init skip-server-warmup is-embedding enable-multimodal "
    "enable-dp-attention enable-dp-lm-head enable-two-batch-overlap enable-torch-compile enable-mixed-chunk "
    "disable-overlap-schedule enable-hierarchical-cache enable-lora enable-eplb enable-nan-detection "
    "enable-p2p-check disable-custom-all-reduce enable-mscclpp enable-symm-mem enable-nccl-nvls "
    "enable-memory-saver allow-auto-truncate enable-custom-logit-processor disable-shared-experts-fusion "
    "disable-chunked-prefix-cache enable-return-hidden-states enable-deterministic-inference log-requests "
    "show-time-cost enable-metrics-for-all-schedulers enable-priority-scheduling enable-fp32-lm-head "
    "delete-ckpt-after-loading disable-outlines-disk-cache enable-tokenizer-batch-encode stream-output "
    "enable-request-time-stats-logging disable-fast-image-processor enable-flashinfer-allreduce-fusion "
    "sleep-on-idle enable-profile-cuda-graph enable-cudagraph-gc triton-attention-reduce-in-fp32 "
    "disable-hybrid-swa-memory collect-tokens-histogram enable-double-sparsity flashinfer-mla-disable-ragged",
    boolean=True, source=SOURCE["sglang"]))
SGLANG_FLAGS.update({
    "moe-runner-backend": _spec(values=_SGLANG_MOE_RUNNERS, source="engine-facts.md section 2.6"),
    "speculative-moe-runner-backend": _spec(first="0.5.5", values=_SGLANG_MOE_RUNNERS,
                                            source="engine-facts.md sections 2.3 and 2.6 (PR sglang#10183)"),
    "speculative-draft-attention-backend": _spec(first="0.5.7", source="engine-facts.md section 2.6"),
    "speculative-algorithm": _spec(
        values=dict(_vals("EAGLE EAGLE3 NEXTN STANDALONE NGRAM"), **_vals("DFLASH DSPARK", "0.5.10")),
        complete_until="0.5.9", source="engine-facts.md section 2.3"),
    "fp8-gemm-backend": _spec(
        first="0.5.7",
        values=dict(_vals("auto deep_gemm flashinfer_trtllm flashinfer_deepgemm cutlass triton aiter"),
                    **_vals("flashinfer_cutlass flashinfer_cutedsl", "0.5.10")),
        source="engine-facts.md section 2.6"),
    "fp4-gemm-backend": _spec(
        first="0.5.8", values=_vals("auto flashinfer_cudnn flashinfer_cutedsl flashinfer_cutlass flashinfer_trtllm "
                                    "marlin"),
        source="engine-facts.md section 2.6 (values as of 0.5.23)"),
    "mamba-scheduler-strategy": _spec(
        first="0.5.7", last="0.5.19", deprecated="0.5.14", replacement="mamba-radix-cache-strategy",
        values=dict(_vals("auto no_buffer extra_buffer"), extra_buffer_lazy=("0.5.13", None)),
        source="engine-facts.md section 2.4"),
    "mamba-radix-cache-strategy": _spec(first="0.5.14", values=_vals("auto no_buffer extra_buffer extra_buffer_lazy"),
                                        source="engine-facts.md section 2.4"),
    "mamba-ssm-dtype": _spec(first="0.5.2", source="engine-facts.md section 2.6"),
    "linear-attn-backend": _spec(first="0.5.10", source="engine-facts.md section 2.6"),
    "schedule-policy": _spec(
        values=dict(_vals("lpm random fcfs dfs-weight lof"), priority=("0.5.3", None),
                    **{"routing-key": ("0.5.8", None), "hrrn": ("0.5.20", None),
                       "shortest-prefill-first": ("0.5.21", None)}),
        source="engine-facts.md section 2.6"),
})
SGLANG_ALIASES = {"tensor-parallel-size": ("tp-size", None), "data-parallel-size": ("dp-size", None),
                  "expert-parallel-size": ("ep-size", None), "pipeline-parallel-size": ("pp-size", None),
                  "model": ("model-path", None)}

FLAGS = {"vllm": VLLM_FLAGS, "sglang": SGLANG_FLAGS}
ALIASES = {"vllm": VLLM_ALIASES, "sglang": SGLANG_ALIASES}

# ---------------------------------------------------------------------------------------------
# Reasoning parsers (only the Nemotron-3 ones: the lint checks these by name and version)
# ---------------------------------------------------------------------------------------------
REASONING_PARSERS = {
    # 0.17.0's registry lacks it: KeyError 'invalid reasoning parser' (engine-facts 1.8, 1.10).
    "vllm": {"nemotron_v3": ("0.17.1", None)},
    # nano_v3 (NanoV3Detector) 0.5.7-0.5.9, renamed nemotron_3 in 0.5.10; super_v3 never existed.
    "sglang": {"nano_v3": ("0.5.7", "0.5.9"), "nemotron_3": ("0.5.10", None)},
}
NEMOTRON3_PARSER_NAMES = ("nemotron_v3", "nemotron_3", "nano_v3", "super_v3")

# ---------------------------------------------------------------------------------------------
# Environment variables
# ---------------------------------------------------------------------------------------------
ENV_PREFIXES = {"vllm": ("VLLM_",), "sglang": ("SGLANG_",)}


def _env(first=None, deprecated=None, removed=None, replacement=None, values=None, source=None):
    return {"first": first, "deprecated": deprecated, "removed": removed, "replacement": replacement,
            "values": values, "source": source}


VLLM_ENV = {
    "VLLM_NVFP4_GEMM_BACKEND": _env(
        deprecated="0.22.0", removed="0.24.0", replacement="linear-backend",
        values=dict(_vals("flashinfer-cudnn flashinfer-trtllm flashinfer-cutlass cutlass marlin"),
                    emulation=("0.20.0", None), **{"flashinfer-b12x": ("0.22.0", None)}),
        source="engine-facts.md section 1.10 (env vars)"),
    "VLLM_USE_FLASHINFER_MOE_FP4": _env(deprecated="0.22.0", removed="0.24.0", replacement="moe-backend",
                                        values=_vals("0 1"), source="engine-facts.md section 1.10 (env vars)"),
    "VLLM_FLASHINFER_MOE_BACKEND": _env(deprecated="0.22.0", removed="0.24.0", replacement="moe-backend",
                                        values=_vals("throughput latency masked_gemm"),
                                        source="engine-facts.md section 1.10 (env vars)"),
    "VLLM_FLASHINFER_ALLREDUCE_BACKEND": _env(first="0.17.0", values=_vals("auto trtllm mnnvl"),
                                              source="engine-facts.md section 1.10 (env vars)"),
}
# Names read by vllm/envs.py (a 2025 snapshot) and engine-facts.md: known, versions not checked.
VLLM_ENV.update({name: _env(source="vllm/envs.py") for name in (
    "VLLM_HOST_IP VLLM_PORT VLLM_RPC_BASE_PATH VLLM_USE_MODELSCOPE VLLM_RINGBUFFER_WARNING_INTERVAL "
    "VLLM_NCCL_SO_PATH VLLM_USE_TRITON_FLASH_ATTN VLLM_FLASH_ATTN_VERSION VLLM_ENGINE_ITERATION_TIMEOUT_S "
    "VLLM_API_KEY VLLM_DEBUG_LOG_API_SERVER_RESPONSE VLLM_MODEL_REDIRECT_PATH VLLM_CACHE_ROOT VLLM_CONFIG_ROOT "
    "VLLM_USAGE_STATS_SERVER VLLM_NO_USAGE_STATS VLLM_DO_NOT_TRACK VLLM_USAGE_SOURCE VLLM_CONFIGURE_LOGGING "
    "VLLM_LOGGING_LEVEL VLLM_LOGGING_PREFIX VLLM_LOGGING_CONFIG_PATH VLLM_LOGGING_COLOR "
    "VLLM_LOGITS_PROCESSOR_THREADS VLLM_TRACE_FUNCTION VLLM_ATTENTION_BACKEND VLLM_USE_FLASHINFER_SAMPLER "
    "VLLM_FLASHINFER_FORCE_TENSOR_CORES VLLM_PP_LAYER_PARTITION VLLM_CPU_KVCACHE_SPACE "
    "VLLM_CPU_OMP_THREADS_BIND VLLM_CPU_NUM_OF_RESERVED_CPU VLLM_FUSED_MOE_CHUNK_SIZE "
    "VLLM_ENABLE_FUSED_MOE_ACTIVATION_CHUNKING VLLM_USE_RAY_SPMD_WORKER VLLM_USE_RAY_COMPILED_DAG "
    "VLLM_WORKER_MULTIPROC_METHOD VLLM_ASSETS_CACHE VLLM_IMAGE_FETCH_TIMEOUT VLLM_VIDEO_FETCH_TIMEOUT "
    "VLLM_AUDIO_FETCH_TIMEOUT VLLM_VIDEO_LOADER_BACKEND VLLM_MM_INPUT_CACHE_GIB VLLM_TARGET_DEVICE "
    "VLLM_NO_DEPRECATION_WARNING VLLM_KEEP_ALIVE_ON_ENGINE_DEATH VLLM_ALLOW_LONG_MAX_MODEL_LEN "
    "VLLM_RPC_TIMEOUT VLLM_HTTP_TIMEOUT_KEEP_ALIVE VLLM_PLUGINS VLLM_LORA_RESOLVER_CACHE_DIR "
    "VLLM_TORCH_PROFILER_DIR VLLM_USE_TRITON_AWQ VLLM_ALLOW_RUNTIME_LORA_UPDATING VLLM_SKIP_P2P_CHECK "
    "VLLM_DISABLED_KERNELS VLLM_USE_V1 VLLM_ENABLE_V1_MULTIPROCESSING VLLM_LOG_BATCHSIZE_INTERVAL "
    "VLLM_DISABLE_COMPILE_CACHE VLLM_SERVER_DEV_MODE VLLM_V1_OUTPUT_PROC_CHUNK_SIZE VLLM_MLA_DISABLE "
    "VLLM_RAY_PER_WORKER_GPUS VLLM_RAY_BUNDLE_INDICES VLLM_CUDART_SO_PATH VLLM_DP_RANK VLLM_DP_RANK_LOCAL "
    "VLLM_DP_SIZE VLLM_DP_MASTER_IP VLLM_DP_MASTER_PORT VLLM_MOE_DP_CHUNK_SIZE VLLM_MARLIN_USE_ATOMIC_ADD "
    "VLLM_USE_DEEP_GEMM VLLM_USE_FLASHINFER_MOE_FP8 VLLM_XGRAMMAR_CACHE_MB VLLM_MSGPACK_ZERO_COPY_THRESHOLD "
    "VLLM_ALLOW_INSECURE_SERIALIZATION VLLM_NIXL_SIDE_CHANNEL_HOST VLLM_NIXL_SIDE_CHANNEL_PORT "
    "VLLM_ALL2ALL_BACKEND VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE VLLM_TOOL_PARSE_REGEX_TIMEOUT_SECONDS "
    "VLLM_SLEEP_WHEN_IDLE VLLM_MQ_MAX_CHUNK_BYTES_MB VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS VLLM_KV_CACHE_LAYOUT "
    "VLLM_COMPUTE_NANS_IN_LOGITS VLLM_USE_NVFP4_CT_EMULATIONS VLLM_USE_CUDNN_PREFILL VLLM_LOOPBACK_IP "
    "VLLM_LOG_STATS_INTERVAL VLLM_DISABLE_LOG_LOGO VLLM_USE_STANDALONE_COMPILE VLLM_USE_PRECOMPILED"
).split()})

SGLANG_ENV = {
    # Seed 002's Repro sets it on SM120 (DeepGEMM asserts there); not checked against SGLang's source.
    "SGLANG_DISABLE_DEEP_GEMM": _env(source="seed 002 Repro"),
    "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": _env(source="engine-facts.md section 2.8"),
    "SGLANG_LOG_FORWARD_ITERS": _env(source="engine-facts.md section 2.5"),
}
SGLANG_ENV.update({name: _env(source="sglang/srt/environ.py") for name in (
    "SGLANG_ENABLE_JIT_DEEPGEMM SGLANG_ENABLE_SPEC_V2 SGLANG_SET_CPU_AFFINITY SGLANG_USE_MODELSCOPE "
    "SGLANG_LOG_MS SGLANG_LOG_GC SGLANG_IS_IN_CI SGLANG_PORT SGLANG_TIMEOUT_KEEP_ALIVE SGLANG_WARMUP_TIMEOUT "
    "SGLANG_DISABLE_OUTLINES_DISK_CACHE SGLANG_TORCH_PROFILER_DIR SGLANG_CACHE_DIR "
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN SGLANG_SORT_WEIGHT_FILES SGLANG_LOG_REQUEST_EXCEEDED_MS"
).split()})

ENV = {"vllm": VLLM_ENV, "sglang": SGLANG_ENV}


# ---------------------------------------------------------------------------------------------
# Look-ups
# ---------------------------------------------------------------------------------------------
def flag_name(engine, flag):
    """The name a flag is spelt with on the command line, without dashes; vLLM folds ``_`` to ``-``.

    vLLM folds only the part before the first ``.`` (``speculative_config.num_speculative_tokens``
    -> ``speculative-config.num_speculative_tokens``); SGLang folds nothing (engine-facts 1.10, 2.6).
    """
    name = str(flag).lstrip("-")
    if engine == "vllm":
        head, dot, tail = name.partition(".")
        return head.replace("_", "-") + dot + tail
    return name


def resolve_flag(engine, flag):
    """``(canonical, spec, negated, subkey, alias_first)`` for a flag as written, or None if unknown.

    Handles vLLM's underscore folding, its ``--no-<flag>`` form of boolean flags, dotted sub-keys
    (``speculative-config.method``) and the short aliases of either engine.
    """
    flags = FLAGS[engine]
    name = flag_name(engine, flag)
    head, _dot, subkey = name.partition(".")
    alias_first = None
    if head in ALIASES[engine]:
        head, alias_first = ALIASES[engine][head]
    if head in flags:
        return head, flags[head], False, subkey or None, alias_first
    if engine == "vllm" and head.startswith("no-") and flags.get(head[3:], {}).get("boolean"):
        return head[3:], flags[head[3:]], True, subkey or None, alias_first
    return None


def flag_available(spec, version):
    """Whether a flag spec is present in ``version``."""
    return version_in(version, spec["first"], spec["last"])


def flag_deprecated(spec, version):
    """Whether a flag is a deprecated alias in ``version`` (it still works, with a warning)."""
    return bool(spec.get("deprecated")) and version_in(version, spec["deprecated"], spec["last"])


def normalise_value(spec, value):
    """A flag value as the engine compares it (vLLM lower-cases --moe-backend, upper-cases attention)."""
    text = str(value)
    if spec.get("norm") == "lower_underscore":
        return text.lower().replace("-", "_")
    if spec.get("norm") == "upper":
        return text.upper()
    return text


def allowed_values(values, version):
    """The values of a ``{value: (first, last)}`` table present in ``version``, sorted."""
    return sorted(value for value, (first, last) in values.items() if version_in(version, first, last))


def value_known(values, value, version):
    """``(present_now, range)``: whether ``value`` is allowed in ``version``; range None if never known."""
    for pattern, (first, last) in values.items():
        if pattern == value or ("*" in pattern and fnmatch.fnmatchcase(value, pattern)):
            return version_in(version, first, last), (first, last)
    return False, None


def values_complete(spec, version):
    """Whether the catalogued choices of a flag are the full list for ``version``."""
    return spec["complete_until"] is None or version.release_at_most(spec["complete_until"])


def available_flags(engine, version=None):
    """Sorted names of the flags of ``engine`` present in ``version`` (all catalogued if None)."""
    return sorted(name for name, spec in FLAGS[engine].items()
                  if version is None or flag_available(spec, version))


def suggest(word, candidates, count=3, cutoff=0.6):
    """The nearest of ``candidates`` to ``word`` (difflib), best first."""
    return difflib.get_close_matches(str(word), list(candidates), n=count, cutoff=cutoff)


def suggest_flag(engine, flag, version=None):
    """The nearest known flag names for a typo, as ``--name`` strings, best first."""
    name = flag_name(engine, flag)
    if engine == "sglang":
        name = name.replace("_", "-")
    return ["--" + match for match in suggest(name, available_flags(engine, version))]


def env_status(engine, name, version):
    """``(status, spec)`` of an env var in ``version``.

    status: ``active``, ``deprecated`` (still read, warns), ``removed`` (not read any more),
    ``too_new`` (not read yet), ``unknown`` (engine prefix, not in the catalog) or
    ``foreign`` (not an engine variable; not judged).
    """
    spec = ENV[engine].get(name)
    if spec is None:
        if any(name.startswith(prefix) for prefix in ENV_PREFIXES[engine]):
            return "unknown", None
        return "foreign", None
    if spec["removed"] and version_in(version, spec["removed"]):
        return "removed", spec
    if spec["first"] and not version_in(version, spec["first"]):
        return "too_new", spec
    if spec["deprecated"] and version_in(version, spec["deprecated"]):
        return "deprecated", spec
    return "active", spec
