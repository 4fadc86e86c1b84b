# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The verdict on a scanned log: ``compare_expect`` turns an ``expect`` mapping into mismatches,
``describe_failure`` into the sentences an operator reads (a fatal first)."""
from __future__ import annotations

from ._log_records import ENGINES

# What line would have proved a key, for "no evidence" messages.
EVIDENCE_HINTS = {
    "vllm": {
        "engine_version": "\"Initializing a V1 LLM engine (vX.Y.Z) with config: ...\" or the \"version X\" banner",
        "model": "\"Initializing a V1 LLM engine (...) with config: model='...'\"",
        "moe_backend": "\"Using 'MARLIN' NvFp4 MoE backend out of potential backends: [...]\" (or the Fp8 MoE line)",
        "draft_moe_backend": "\"Using TRITON Unquantized MoE backend out of potential backends: [...]\" (0.20+) or "
                             "\"Using TRITON backend for Unquantized MoE\" (<=0.19) for the MTP head",
        "linear_backend": "\"Using MarlinNvFp4LinearKernel for NVFP4 GEMM\" (0.20+) or "
                          "\"Using NvFp4LinearBackend.MARLIN for NVFP4 GEMM\" (<=0.19)",
        "attention_backend": "\"Using AttentionBackendEnum.TRITON_ATTN backend.\" or "
                             "\"Using TRITON_ATTN attention backend out of potential backends: [...]\"",
        "draft_attention_backend": "an attention backend line after \"Loading drafter model...\" (vLLM prints the "
                                   "auto-selected line once per process, so an identical draft line is suppressed)",
        "speculative_method": "\"speculative_config=SpeculativeConfig(method='mtp', ...)\" in the engine config line",
        "num_speculative_tokens": "\"num_spec_tokens=N\" in the engine config line",
        "kv_cache_dtype": "\"kv_cache_dtype=...\" in the engine config line",
        "mamba_ssm_cache_dtype": "\"Updating mamba_ssm_cache_dtype to '...'\" or 'mamba_ssm_cache_dtype' in "
                                 "\"non-default args: {...}\"",
        "prefix_caching": "\"enable_prefix_caching=...\" in the engine config line",
        "chunked_prefill": "\"Chunked prefill is enabled with max_num_batched_tokens=N.\"",
        "max_num_seqs": "'max_num_seqs' in \"non-default args: {...}\" (vLLM prints no line for the default)",
        "tensor_parallel_size": "\"tensor_parallel_size=N\" in the engine config line",
        "kv_cache_tokens": "\"GPU KV cache size: N tokens\"",
        "ready": "\"Application startup complete.\" (or \"Starting vLLM server on ...\" and its \"Route: ...\" lines)",
        "engine": "any vLLM log record",
        "allreduce_backend": "\"Initialized FlashInfer Allreduce norm fusion workspace with backend=X\" (0.20+) or "
                             "\"Using|Auto-selected flashinfer allreduce backend: X\" (0.20-0.28; DEBUG from 0.29)",
        "mean_acceptance_length": "\"SpecDecoding metrics: Mean acceptance length: X, ...\" (logged while requests run)",
        "acceptance_rate_per_position": "\"SpecDecoding metrics: ... Per-position acceptance rate: a, b, ...\" "
                                        "(logged while requests run)",
    },
    "sglang": {
        "engine_version": "a version line (SGLang 0.5.x prints none at startup)",
        "model": "model_path in the \"server_args=...\" line",
        "moe_backend": "moe_runner_backend in the \"server_args=...\" line",
        "draft_moe_backend": "speculative_moe_runner_backend in the \"server_args=...\" line (speculation on)",
        "linear_backend": "fp8_gemm_runner_backend in the \"server_args=...\" line",
        "attention_backend": "attention_backend in the \"server_args=...\" line",
        "draft_attention_backend": "speculative_draft_attention_backend in the \"server_args=...\" line",
        "speculative_method": "speculative_algorithm in the \"server_args=...\" line",
        "num_speculative_tokens": "speculative_num_steps in the \"server_args=...\" line (speculation on)",
        "kv_cache_dtype": "kv_cache_dtype in the \"server_args=...\" line",
        "mamba_ssm_cache_dtype": "mamba_ssm_dtype in the \"server_args=...\" line",
        "prefix_caching": "disable_radix_cache in the \"server_args=...\" line",
        "chunked_prefill": "chunked_prefill_size in the \"server_args=...\" line",
        "max_num_seqs": "\"max_total_num_tokens=..., max_running_requests=N, ...\"",
        "tensor_parallel_size": "tp_size in the \"server_args=...\" line",
        "kv_cache_tokens": "\"KV Cache is allocated. #tokens: N, ...\"",
        "ready": "\"The server is fired up and ready to roll!\"",
        "engine": "any SGLang log record",
        "mean_acceptance_length": "\"Decode batch, ... accept len: X, ...\" (logged while requests run)",
    },
}


_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


def _as_bool(value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(value)


def values_match(expected, observed):
    """Strings case-insensitively, numbers numerically, bools as bools, lists as 'contains'."""
    if isinstance(observed, bool):
        try:
            return _as_bool(expected) == observed
        except ValueError:
            return False
    if isinstance(observed, (int, float)):
        try:
            return float(expected) == float(observed)
        except (TypeError, ValueError):
            return False
    if isinstance(observed, list):
        items = expected if isinstance(expected, (list, tuple)) else [expected]
        if not items:
            return not observed
        return all(any(str(item).lower() in str(o).lower() for o in observed) for item in items)
    return str(expected).strip().lower() == str(observed).strip().lower()


def _version_match(expected, observed):
    """``0.19`` matches ``0.19.2rc1.dev134+gfe9c3d6c5``: a prefix at a component boundary."""
    expected, observed = str(expected).strip().lower().lstrip("v"), str(observed).strip().lower().lstrip("v")
    return observed == expected or (observed.startswith(expected) and observed[len(expected)] in ".+-_r")


def compare_expect(expect, result, optional=()):
    """List of mismatches ``{key, expected, observed, evidence}`` of ``expect`` against a scan result.

    ``expected: None`` means the log must show no value for the key (e.g. no draft model).
    A key without evidence is a mismatch (``evidence`` None) unless listed in ``optional``.
    """
    observed = result["observed"]
    evidence = result["evidence"]
    mismatches = []
    for key in sorted(expect):
        expected = expect[key]
        have = key in observed and observed[key] is not None
        if expected is None:
            if have and observed[key] != []:
                mismatches.append({"key": key, "expected": None, "observed": observed[key],
                                   "evidence": evidence.get(key)})
            continue
        if not have or (key != "ready" and key != "warnings" and key not in evidence):
            if key in optional:
                continue
            mismatches.append({"key": key, "expected": expected, "observed": observed.get(key),
                               "evidence": None})
            continue
        same = _version_match(expected, observed[key]) if key == "engine_version" else values_match(
            expected, observed[key])
        if not same:
            mismatches.append({"key": key, "expected": expected, "observed": observed[key],
                               "evidence": evidence.get(key)})
            continue
        for conflict in result.get("conflicts", {}).get(key, []):
            # a later line of the same weight says otherwise: the log does not prove the expectation
            if not values_match(expected, conflict["value"]):
                mismatches.append({"key": key, "expected": expected, "observed": conflict["value"],
                                   "evidence": conflict["line"], "conflict": True})
                break
    return mismatches


def _show(value):
    return "none" if value is None else str(value)


def describe_mismatch(mismatch, engine):
    """One operator-facing sentence for a mismatch (names key, expected, observed and the proof)."""
    key = mismatch["key"]
    expected, observed, evidence = mismatch["expected"], mismatch["observed"], mismatch["evidence"]
    hint = EVIDENCE_HINTS.get(engine or "", {}).get(key)
    if hint is None:
        hint = " or ".join("%s: %s" % (e, EVIDENCE_HINTS[e][key]) for e in ENGINES if key in EVIDENCE_HINTS[e])
    if key == "ready" and not observed:
        return "ready: expected %s, observed false: the log never shows %s" % (_show(expected), hint)
    if evidence is None and expected is not None and key != "warnings":
        return "%s: expected %s, but the log shows no evidence for it (it would show %s)" % (
            key, _show(expected), hint)
    if mismatch.get("conflict"):
        return "%s: expected %s, but a later log line says %s: %s" % (key, _show(expected), _show(observed), evidence)
    text = "%s: expected %s, observed %s" % (key, _show(expected), _show(observed))
    if evidence is not None:
        text += ", proven by log line: %s" % evidence
    return text


def describe_fatal(fatal, context_width=300):
    """The operator-facing text for a fatal signature: kind, line number, the line, then its context."""
    text = "fatal %s in the engine log" % fatal["kind"]
    if fatal.get("line_number"):
        text += " at line %d" % fatal["line_number"]
    text += ": %s" % fatal["line"]
    context = [c[:context_width] for c in fatal.get("context") or [] if c.strip()]
    if len(context) > 1:
        text += " -- context: %s" % " | ".join(context)
    return text


def describe_failure(result, mismatches, engine):
    """The failure sentences, a fatal first: then what else the log contradicts, missing evidence in one line."""
    if result["fatal"] is not None:
        messages = [describe_fatal(result["fatal"])]
        missing = [m["key"] for m in mismatches if m["evidence"] is None and m["expected"] is not None]
        messages.extend(describe_mismatch(m, engine) for m in mismatches if m["key"] not in missing)
        if missing:
            messages.append("no evidence in the log for %s (the engine failed before printing it)" % ", ".join(missing))
        return messages
    return [describe_mismatch(m, engine) for m in mismatches]
