# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The one table of vLLM / SGLang log patterns, and the handlers that turn a match into a fact.

Every log line the collection understands is an entry of ``PATTERNS`` below, with the engine
versions whose source prints it (format strings read from the released wheels; an entry's
``versions`` says which): the evidence of what the engine selected, the fatal
signatures, and the start-up phase a line enters. Nothing else in the collection matches engine
log text. ``_log_scanner`` runs the table over a log; ``_startup_phases`` reads its phase column.
"""
from __future__ import annotations

import ast
import re
from collections import namedtuple

from ._log_records import LIBRARY, RAW, RECORD, UVICORN

OBSERVED_KEYS = (
    "engine",
    "engine_version",
    "model",
    "moe_backend",
    "draft_moe_backend",
    "linear_backend",
    "attention_backend",
    "draft_attention_backend",
    "speculative_method",
    "num_speculative_tokens",
    "kv_cache_dtype",
    "mamba_ssm_cache_dtype",
    "prefix_caching",
    "chunked_prefill",
    "max_num_seqs",
    "tensor_parallel_size",
    "kv_cache_tokens",
    "allreduce_backend",
    "mean_acceptance_length",
    "acceptance_rate_per_position",
    "ready",
    "warnings",
)
# Keys whose value is the last one the log shows (a running measurement, not a start-up choice).
LATEST_KEYS = ("mean_acceptance_length", "acceptance_rate_per_position")


# Priorities of evidence: an engine's own selection line beats its resolved config dump,
# which beats the echo of the requested (non-default) arguments.
REQUESTED, RESOLVED, SELECTED = 1, 2, 3

# Fatal tiers: a root cause beats a consequence (engine_dead) found earlier.
ROOT_CAUSE, CONSEQUENCE = 1, 2


# ---------------------------------------------------------------------------------------------
# Value normalisation
# ---------------------------------------------------------------------------------------------
def backend_name(value):
    """``AttentionBackendEnum.TRITON_ATTN`` / ``'marlin'`` / ``FlashInfer TRTLLM`` -> canonical upper name."""
    value = str(value).strip().strip("'\"")
    if "." in value:
        value = value.rsplit(".", 1)[1]
    return re.sub(r"[\s\-]+", "_", value).upper()


_KERNEL_SUFFIX = re.compile(r"(?:NvFp4|NVFP4|Nvfp4|W4A16|W4A8|Fp8|FP8|ScaledMM|MM)*LinearKernel$")
_KERNEL_WORDS = (("FlashInfer", "Flashinfer"), ("CuteDsl", "Cutedsl"), ("CuteDSL", "Cutedsl"), ("TrtLlm", "Trtllm"))
# vLLM <= 0.19 named its own CUTLASS kernels VLLM_CUTLASS; keep that name for 0.20+ class names.
_KERNEL_ALIASES = {"CUTLASS": "VLLM_CUTLASS"}


def kernel_class_backend(cls_name):
    """``MarlinNvFp4LinearKernel`` -> ``MARLIN``; ``FlashInferCutlassNvFp4LinearKernel`` -> ``FLASHINFER_CUTLASS``."""
    stem = _KERNEL_SUFFIX.sub("", cls_name) or cls_name
    for word, repl in _KERNEL_WORDS:
        stem = stem.replace(word, repl)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).upper()
    return _KERNEL_ALIASES.get(name, name)


def _literal(text):
    """A Python-repr scalar from a config dump: ``'x'`` -> x, ``None``/``True``/``12`` -> typed."""
    text = text.strip()
    if text == "null":  # a JSON dump's None (None, True, False and numbers are Python literals)
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")


def parse_int(text):
    """``1,206,303`` -> 1206303 (the KV cache line groups digits with commas)."""
    return int(str(text).replace(",", ""))


def repr_field(text, key):
    """Value of ``key`` in a dataclass repr (``key=value``) or dict repr (``'key': value``), or KeyError."""
    m = re.search(
        r"(?:(?<=[\s(,{])%s=|'%s': )('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|None|True|False|-?\d+(?:\.\d+)?|[A-Za-z_][\w.]*)"
        % (re.escape(key), re.escape(key)),
        text,
    )
    if not m:
        raise KeyError(key)
    return _literal(m.group(1)), m.start(), m.end()


def _excerpt(line, m, start, end, width=60):
    """Shorten a huge dump line to its head and the ``key=value`` that proves one fact.

    ``start``/``end`` are offsets in the message ``m.string``, which is a suffix of ``line``.
    """
    base = len(line) - len(m.string)
    start, end = start + base, end + base
    if len(line) <= 2 * width + (end - start):
        return line
    return "%s ... %s ..." % (line[:width], line[start:end])


# ---------------------------------------------------------------------------------------------
# Handlers: (scanner, match, line, tag) -> None. They record facts with scanner.observe().
# ---------------------------------------------------------------------------------------------
def _h_engine_config(sc, m, line, tag):
    sc.observe("engine_version", m.group("version"), _excerpt(line, m, m.start("version"), m.end("version")), RESOLVED)
    cfg = m.group("config")
    off = m.start("config")
    mm = re.match(r"model='([^']*)'", cfg)
    if mm:
        sc.observe("model", mm.group(1), _excerpt(line, m, off, off + mm.end()), RESOLVED)
    mm = re.search(r"speculative_config=(None|SpeculativeConfig\(([^)]*)\))", cfg)
    if mm:
        proof = _excerpt(line, m, off + mm.start(), off + mm.end())
        if mm.group(1) == "None":
            sc.observe("speculative_method", "none", proof, RESOLVED)
        else:
            inner = mm.group(2)
            mt = re.search(r"method='([^']*)'", inner)
            if mt:
                sc.observe("speculative_method", mt.group(1).lower(), proof, RESOLVED)
            nt = re.search(r"num_spec_tokens=(\d+)", inner)
            if nt:
                sc.observe("num_speculative_tokens", int(nt.group(1)), proof, RESOLVED)
    for field, key, conv in (
        ("tensor_parallel_size", "tensor_parallel_size", int),
        ("kv_cache_dtype", "kv_cache_dtype", str),
        ("enable_prefix_caching", "prefix_caching", bool),
        ("enable_chunked_prefill", "chunked_prefill", bool),
        ("chunked_prefill_enabled", "chunked_prefill", bool),
    ):
        try:
            value, start, end = repr_field(cfg, field)
        except KeyError:
            continue
        if value is not None:
            sc.observe(key, conv(value), _excerpt(line, m, off + start, off + end), RESOLVED)


_NON_DEFAULT_KEYS = (
    ("model", "model", str),
    ("model_tag", "model", str),
    ("max_num_seqs", "max_num_seqs", int),
    ("mamba_ssm_cache_dtype", "mamba_ssm_cache_dtype", str),
    ("tensor_parallel_size", "tensor_parallel_size", int),
    ("kv_cache_dtype", "kv_cache_dtype", str),
    ("enable_prefix_caching", "prefix_caching", bool),
    ("enable_chunked_prefill", "chunked_prefill", bool),
)


def _h_non_default_args(sc, m, line, tag):
    text = m.group("args")
    try:
        args = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        args = None
    if not isinstance(args, dict):
        # Not a pure literal (a config object in it): read the keys one by one.
        args = {}
        for field, dummy, dummy2 in _NON_DEFAULT_KEYS:
            try:
                args[field] = repr_field(text, field)[0]
            except KeyError:
                pass
        spec = re.search(r"'speculative_config': (\{[^{}]*\})", text)
        if spec:
            try:
                args["speculative_config"] = ast.literal_eval(spec.group(1))
            except (ValueError, SyntaxError):
                pass
    for field, key, conv in _NON_DEFAULT_KEYS:
        if args.get(field) is not None and args.get(field) != "auto":
            sc.observe(key, conv(args[field]), line, REQUESTED)
    spec = args.get("speculative_config")
    if isinstance(spec, dict):
        if spec.get("method"):
            sc.observe("speculative_method", str(spec["method"]).lower(), line, REQUESTED)
        if spec.get("num_speculative_tokens") is not None:
            sc.observe("num_speculative_tokens", int(spec["num_speculative_tokens"]), line, REQUESTED)


def _h_version(sc, m, line, tag):
    sc.observe("engine_version", m.group("version"), line, SELECTED)


def _h_banner_model(sc, m, line, tag):
    sc.observe("model", m.group("model"), line, SELECTED)


def _h_version_and_model(sc, m, line, tag):
    sc.observe("engine_version", m.group("version"), line, SELECTED)
    sc.observe("model", m.group("model"), line, SELECTED)


def _h_quantized_moe(sc, m, line, tag):
    sc.quantized_moe_seen = True
    key = "draft_moe_backend" if sc.in_drafter(tag) else "moe_backend"
    sc.observe(key, backend_name(m.group("backend")), line, SELECTED)


def _h_unquantized_moe(sc, m, line, tag):
    # The MTP head of a quantized checkpoint is unquantized: with a quantized target MoE, this
    # line is the draft's even when it precedes "Loading drafter model..." (resolved at the end).
    sc.unquantized_moe.append((backend_name(m.group("backend")), line, sc.in_drafter(tag)))


def _h_nvfp4_gemm(sc, m, line, tag):
    value = m.group("backend")
    name = backend_name(value) if "." in value else kernel_class_backend(value)
    sc.observe("linear_backend", name, line, SELECTED)


def _h_fp8_linear(sc, m, line, tag):
    sc.observe("linear_backend", kernel_class_backend(m.group("kernel")), line, RESOLVED)


def _h_attention(sc, m, line, tag):
    key = "draft_attention_backend" if sc.in_drafter(tag) else "attention_backend"
    sc.observe(key, backend_name(m.group("backend")), line, SELECTED)


def _h_drafter(sc, m, line, tag):
    sc.drafter_tags.add(tag)


def _h_kv_tokens(sc, m, line, tag):
    sc.observe("kv_cache_tokens", parse_int(m.group("tokens")), line, SELECTED)


def _h_kv_dtype(sc, m, line, tag):
    sc.observe("kv_cache_dtype", m.group("dtype"), line, RESOLVED)


def _h_mamba_dtype(sc, m, line, tag):
    sc.observe("mamba_ssm_cache_dtype", m.group("dtype"), line, SELECTED)


def _h_chunked_prefill_on(sc, m, line, tag):
    sc.observe("chunked_prefill", True, line, SELECTED)


def _h_mamba_prefix(sc, m, line, tag):
    sc.observe("prefix_caching", m.group("state") == "enabled", line, RESOLVED)


def _h_ready(sc, m, line, tag):
    sc.set_ready(line)


def _h_warning(sc, m, line, tag):
    sc.warn(m.string.strip())


# SGLang server_args dump: field -> (observed key, converter). Draft keys only count with speculation.
_SGLANG_ARGS = (
    ("model_path", "model", str),
    ("moe_runner_backend", "moe_backend", backend_name),
    ("speculative_moe_runner_backend", "draft_moe_backend", backend_name),
    ("fp8_gemm_runner_backend", "linear_backend", backend_name),
    ("attention_backend", "attention_backend", backend_name),
    ("speculative_draft_attention_backend", "draft_attention_backend", backend_name),
    ("tp_size", "tensor_parallel_size", int),
    ("max_running_requests", "max_num_seqs", int),
    ("disable_radix_cache", "prefix_caching", lambda v: not v),
    ("chunked_prefill_size", "chunked_prefill", lambda v: int(v) > 0),
    ("kv_cache_dtype", "kv_cache_dtype", str),
    ("mamba_ssm_dtype", "mamba_ssm_cache_dtype", str),
    ("speculative_num_steps", "num_speculative_tokens", int),
)
_SGLANG_DRAFT_KEYS = ("draft_moe_backend", "draft_attention_backend", "num_speculative_tokens")


def _h_sglang_server_args(sc, m, line, tag):
    dump = m.group("dump")
    try:
        algo, start, end = repr_field(dump, "speculative_algorithm")
        off = m.start("dump")
        sc.observe("speculative_method", str(algo).lower(),  # None -> "none"
                   _excerpt(line, m, start + off, end + off), RESOLVED)
    except KeyError:
        algo = None
    for field, key, conv in _SGLANG_ARGS:
        if algo is None and key in _SGLANG_DRAFT_KEYS:
            continue
        try:
            value, start, end = repr_field(dump, field)
        except KeyError:
            continue
        if value is None:
            continue
        sc.observe(key, conv(value), _excerpt(line, m, start + m.start("dump"), end + m.start("dump")), RESOLVED)


def _h_sglang_kv(sc, m, line, tag):
    sc.observe("kv_cache_tokens", int(m.group("tokens")), line, SELECTED)


def _h_sglang_scheduler(sc, m, line, tag):
    sc.observe("max_num_seqs", int(m.group("reqs")), line, SELECTED)
    sc.observe("chunked_prefill", int(m.group("chunk")) > 0, line, SELECTED)


def _h_sglang_attention_default(sc, m, line, tag):
    sc.observe("attention_backend", backend_name(m.group("backend")), line, SELECTED)


def _h_api_server_start(sc, m, line, tag):
    sc.api_server_line = line


def _h_route(sc, m, line, tag):
    # vLLM lists its routes right before uvicorn serves them: ready even when uvicorn's own lines
    # are cut (--uvicorn-log-level warning, a log shipper that drops them).
    if sc.api_server_line is not None:
        sc.set_ready(sc.api_server_line)


def _h_allreduce(sc, m, line, tag):
    sc.observe("allreduce_backend", backend_name(m.group("backend")), line, SELECTED)


def _h_allreduce_debug(sc, m, line, tag):
    sc.observe("allreduce_backend", backend_name(m.group("backend")), line, RESOLVED)


def _h_vllm_spec_metrics(sc, m, line, tag):
    sc.latest("mean_acceptance_length", float(m.group("mean")), line)
    rates = [float(r) for r in re.findall(r"\d+(?:\.\d+)?", m.group("rates"))]
    sc.latest("acceptance_rate_per_position", rates, line)


def _h_sglang_accept_len(sc, m, line, tag):
    sc.latest("mean_acceptance_length", float(m.group("mean")), line)


def _fatal(kind, tier=ROOT_CAUSE, startup_only=False, api_server=False):
    """A handler recording a fatal ``kind``. ``api_server``: the API server raises the exception itself
    (vLLM's EngineDeadError), so it counts there after readiness, where request errors do not."""
    def handler(sc, m, line, tag):
        sc.set_fatal(kind, line, tier, startup_only)
    handler.fatal_kind = kind
    handler.api_server = api_server
    return handler


# Where a pattern is searched:
#   RECORD   the message of an engine log record (a vLLM or SGLang logger header), before readiness
#   AFTER    ... also after readiness (metrics lines; a record-level fatal)
#   UVICORN  the message of a uvicorn line (never its access log: only exact startup lines match)
#   EXC      the text of a Python exception line (``torch.OutOfMemoryError: ...``) or of a C++
#            ``what():`` line, at its place in a traceback's structure (see LogScanner._exception_text)
#   USAGE    a headerless line before readiness (argparse prints its usage error without a header)
#   PROGRESS any line but uvicorn's, for its start-up phase only (tqdm progress bars have no header)
RECORD_SCOPE, AFTER, UVICORN_SCOPE, EXC, USAGE = "record", "after", "uvicorn", "exception", "usage"
PROGRESS = "progress"
SCOPES = (RECORD_SCOPE, AFTER, UVICORN_SCOPE, EXC, USAGE, PROGRESS)
# The line kinds (_log_records.parse_line) a phase entry of each scope is tried on.
PHASE_KINDS = {RECORD_SCOPE: (RECORD,), AFTER: (RECORD,), UVICORN_SCOPE: (UVICORN,), PROGRESS: (RECORD, RAW, LIBRARY)}

Pattern = namedtuple("Pattern", "name engine versions scope needle regex handler phase")
Pattern.__new__.__defaults__ = (None,)  # phase: most entries are evidence or fatals only

# ---------------------------------------------------------------------------------------------
# THE table. (name, engine or None for both, versions, scope, needle, regex, handler, phase)
# The needle is a plain substring that every match contains; it is checked before the regex.
# ``handler`` records evidence or a fatal (None: the entry only marks a phase); ``phase`` is the
# start-up phase the line enters (_startup_phases.STARTUP_PHASES), or None. The entry whose pattern matched last
# sets the phase (a draft model's "Load weight begin" after the target's end is weight loading again).
# ---------------------------------------------------------------------------------------------
PATTERNS = [Pattern(*row) for row in [
    # --- vLLM: version, model, config -------------------------------------------------------
    ("vllm_engine_config", "vllm", "0.17-0.33", RECORD_SCOPE, "Initializing a V1 LLM engine",
     r"^Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\) with config: (?P<config>.*)", _h_engine_config),
    ("vllm_non_default_args", "vllm", "0.17-0.33", RECORD_SCOPE, "non-default args:",
     r"^non-default args: (?P<args>\{.*\})", _h_non_default_args),
    ("vllm_server_version", "vllm", "0.17-0.33", RECORD_SCOPE, "server version",
     r"^vLLM (?:API )?server version (?P<version>\S+?),? serving model (?P<model>\S+)", _h_version_and_model),
    ("vllm_api_server_version", "vllm", "0.17-0.33", RECORD_SCOPE, "server version",
     r"^vLLM (?:API )?server version (?P<version>[^\s,]+)\s*$", _h_version),
    ("vllm_logo_version", "vllm", "0.17-0.33", RECORD_SCOPE, "version",
     r"[\u2580-\u259f]\s+version\s+(?P<version>\d\S*)\s*$", _h_version),
    ("vllm_logo_model", "vllm", "0.17-0.33", RECORD_SCOPE, "model",
     r"[\u2580-\u259f]\s+model\s+(?P<model>\S+)\s*$", _h_banner_model),
    # --- vLLM: MoE ------------------------------------------------------------------------------
    ("vllm_nvfp4_moe", "vllm", "0.17-0.33", RECORD_SCOPE, "NvFp4 MoE backend",
     r"^Using '(?P<backend>[A-Z0-9_]+)' NvFp4 MoE backend", _h_quantized_moe),
    ("vllm_fp8_moe", "vllm", "0.17-0.33", RECORD_SCOPE, "Fp8 MoE backend",
     r"^Using '?(?P<backend>[A-Z0-9_]+)'? Fp8 MoE backend", _h_quantized_moe),
    ("vllm_unquantized_moe_old", "vllm", "0.17-0.19", RECORD_SCOPE, "backend for Unquantized MoE",
     r"^Using (?P<backend>.+?) backend for Unquantized MoE\s*$", _h_unquantized_moe),
    ("vllm_unquantized_moe", "vllm", "0.20-0.33", RECORD_SCOPE, "Unquantized MoE backend",
     r"^Using (?P<backend>.+?) Unquantized MoE backend(?: out of potential backends|\s*$)", _h_unquantized_moe),
    # --- vLLM: dense GEMM -----------------------------------------------------------------------
    ("vllm_nvfp4_gemm", "vllm", "0.17-0.19 (NvFp4LinearBackend.X), 0.20-0.33 (kernel class)", RECORD_SCOPE,
     "for NVFP4 GEMM", r"^Using (?P<backend>[\w.]+) for NVFP4 GEMM", _h_nvfp4_gemm),
    ("vllm_fp8_linear", "vllm", "0.19-0.33", RECORD_SCOPE, "LinearKernel for ",
     r"^Selected (?P<kernel>\w+LinearKernel) for \w+", _h_fp8_linear),
    # --- vLLM: attention ------------------------------------------------------------------------
    ("vllm_attention_forced", "vllm", "0.17-0.33", RECORD_SCOPE, "Using AttentionBackendEnum.",
     r"^Using AttentionBackendEnum\.(?P<backend>[A-Z0-9_]+) backend\.", _h_attention),
    ("vllm_attention_auto", "vllm", "0.17-0.33", RECORD_SCOPE, "attention backend out of potential backends",
     r"^Using (?P<backend>[A-Z0-9_]+) attention backend out of potential backends", _h_attention),
    ("vllm_drafter", "vllm", "0.17-0.33", RECORD_SCOPE, "Loading drafter model",
     r"^Loading drafter model", _h_drafter, "weight_loading"),
    # --- vLLM: flashinfer allreduce (proof that VLLM_FLASHINFER_ALLREDUCE_BACKEND took effect) ----
    ("vllm_allreduce_selected", "vllm", "0.20-0.28 (INFO; 0.29-0.33 DEBUG)", RECORD_SCOPE,
     "flashinfer allreduce backend: ",
     r"^(?:Using|Auto-selected) flashinfer allreduce backend: (?P<backend>\w+)", _h_allreduce),
    ("vllm_allreduce_workspace", "vllm", "0.20-0.33", RECORD_SCOPE, "Allreduce norm fusion workspace with",
     r"^Initialized FlashInfer Allreduce norm fusion workspace with backend=(?P<backend>\w+)", _h_allreduce),
    ("vllm_allreduce_workspace_debug", "vllm", "0.17-0.33 (DEBUG)", RECORD_SCOPE, "All Reduce workspace: backend=",
     r"^Initialized FlashInfer All Reduce workspace: backend=(?P<backend>\w+),", _h_allreduce_debug),
    ("vllm_allreduce_failed", "vllm", "0.20-0.33", RECORD_SCOPE, "Failed to initialize FlashInfer Allreduce",
     r"^Failed to initialize FlashInfer Allreduce norm fusion workspace with backend=\w+", _h_warning),
    # --- vLLM: KV cache, mamba, scheduler -------------------------------------------------------
    ("vllm_kv_cache_size", "vllm", "0.17-0.25 (own line), 0.28-0.33 (with concurrency)", RECORD_SCOPE,
     "KV cache size:", r"^(?:GPU(?: \+ host)? )?KV cache size: (?P<tokens>[\d,]+) tokens", _h_kv_tokens),
    ("vllm_kv_cache_dtype", "vllm", "0.17-0.33", RECORD_SCOPE, "data type to store kv cache",
     r"^Using (?P<dtype>\w+) data type to store kv cache", _h_kv_dtype),
    ("vllm_mamba_ssm_dtype", "vllm", "0.17-0.33", RECORD_SCOPE, "Updating mamba_ssm_cache_dtype",
     r"^Updating mamba_ssm_cache_dtype to '(?P<dtype>\w+)'", _h_mamba_dtype),
    ("vllm_chunked_prefill", "vllm", "0.17-0.33", RECORD_SCOPE, "Chunked prefill is enabled",
     r"^Chunked prefill is enabled with max_num_batched_tokens=\d+", _h_chunked_prefill_on),
    ("vllm_mamba_cache_mode", "vllm", "0.17-0.33", RECORD_SCOPE, "Mamba cache mode is set to",
     r"^Mamba cache mode is set to '\w+'.* when prefix caching is (?P<state>enabled|disabled)", _h_mamba_prefix),
    # --- vLLM: readiness --------------------------------------------------------------------------
    ("vllm_ready", "vllm", "0.17-0.33", UVICORN_SCOPE, "Application startup complete",
     r"^Application startup complete\.$", _h_ready, "ready"),
    ("vllm_api_server_start", "vllm", "0.17 (API server N), 0.18-0.33", RECORD_SCOPE, "Starting vLLM ",
     r"^Starting vLLM (?:API )?server (?:\d+ )?on \S+", _h_api_server_start, "server_start"),
    ("vllm_route", "vllm", "0.17-0.33", RECORD_SCOPE, "Route: ",
     r"^Route: \S+, (?:Methods|Endpoint): ", _h_route),
    # --- vLLM: speculative decoding metrics (APIServer, every 10 s while not idle) -----------------
    ("vllm_spec_metrics", "vllm", "0.17-0.33", AFTER, "SpecDecoding metrics: ",
     r"^SpecDecoding metrics: Mean acceptance length: (?P<mean>[\d.]+), .*"
     r"Per-position acceptance rate: (?P<rates>[\d., ]*?), Avg Draft acceptance rate", _h_vllm_spec_metrics),
    # --- vLLM: warnings (unknown/deprecated env vars, forced fallbacks) -------------------------
    ("vllm_unknown_env", "vllm", "0.17-0.33", RECORD_SCOPE, "Unknown vLLM environment variable",
     r"^Unknown vLLM environment variable detected: \S+", _h_warning),
    ("vllm_deprecated_env", "vllm", "0.22-0.23", RECORD_SCOPE, "is deprecated and will be removed in v",
     r"\bVLLM_\w+ is deprecated and will be removed in v[\d.]+", _h_warning),
    ("vllm_nvfp4_emulation", "vllm", "0.20-0.33", RECORD_SCOPE, "falling back to the slow",
     r"NVFP4 linear falling back to the slow and unoptimized emulation backend", _h_warning),
    ("vllm_marlin_fp4_weight_only", "vllm", "0.17-0.33", RECORD_SCOPE, "Weight-only FP4 compression",
     r"Weight-only FP4 compression will be used leveraging the Marlin kernel", _h_warning),
    ("vllm_cudagraph_downgrade", "vllm", "0.17-0.33", RECORD_SCOPE, "setting cudagraph_mode=",
     r"is not supported with .*setting cudagraph_mode=\w+", _h_warning),
    ("vllm_async_disabled", "vllm", "0.17-0.33", RECORD_SCOPE, "Async scheduling ",
     r"Async scheduling (?:is|will be) disabled", _h_warning),
    # --- SGLang -----------------------------------------------------------------------------------
    ("sglang_server_args", "sglang", "0.5.1-0.5.18 ServerArgs(key=value), 0.5.19-0.5.23 {'key': value}", RECORD_SCOPE,
     "server_args=", r"^server_args=(?P<dump>(?:ServerArgs\(|\{).*)", _h_sglang_server_args, "engine_init"),
    ("sglang_kv_cache", "sglang", "0.5.1-0.5.23 (0.5.2x adds dtype)", RECORD_SCOPE, "KV Cache is allocated",
     r"^KV Cache is allocated\. (?:dtype: [^,]+, )?#tokens: (?P<tokens>\d+)", _h_sglang_kv),
    ("sglang_scheduler_limits", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "max_total_num_tokens=",
     r"^max_total_num_tokens=\d+, chunked_prefill_size=(?P<chunk>-?\d+), max_prefill_tokens=\d+, "
     r"max_running_requests=(?P<reqs>\d+)", _h_sglang_scheduler),
    ("sglang_attention_default", "sglang",
     "0.5.1-0.5.6.post2 'not explicitly specified' (0.5.1-0.5.4 after the server_args dump), "
     "0.5.7-0.5.23 'not specified'", RECORD_SCOPE, "Attention backend not ",
     r"^Attention backend not (?:explicitly )?(?:specified|set)\. Use (?P<backend>\w+) backend by default",
     _h_sglang_attention_default),
    ("sglang_ready", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "fired up and ready to roll",
     r"^The server is fired up and ready to roll!", _h_ready, "ready"),
    ("sglang_accept_len", "sglang", "0.5.1-0.5.23 (Decode batch line with speculation)", AFTER, "accept len: ",
     r"^Decode batch\b.*, accept len: (?P<mean>[\d.]+)", _h_sglang_accept_len),
    ("sglang_deprecated_arg", "sglang", "0.5.9-0.5.19", RECORD_SCOPE, "is deprecated and will be removed in",
     r"'--[\w-]+' is deprecated and will be removed in|command line argument '--[\w-]+' is deprecated", _h_warning),
    ("sglang_max_running_reset", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Max running requests is reset to",
     r"Max running requests is reset to \d+", _h_warning),
    ("sglang_overlap_disabled", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Overlap scheduler is disabled",
     r"Overlap scheduler is disabled", _h_warning),
    # --- Start-up phases only (the entries above with a phase mark one too) ------------------------
    # vLLM: format strings of the 0.19.0 wheel; the same text 0.17-0.33 unless noted
    ("vllm_server_args", "vllm", "0.17-0.33", RECORD_SCOPE, "non-default args:",
     r"^non-default args: ", None, "engine_init"),
    ("vllm_engine_init", "vllm", "0.17-0.33", RECORD_SCOPE, "Initializing a V1 LLM engine",
     r"^Initializing a V1 LLM engine \(v", None, "engine_init"),
    ("vllm_load_start", "vllm", "0.17-0.33", RECORD_SCOPE, "Starting to load model",
     r"^Starting to load model \S", None, "weight_loading"),
    ("vllm_load_shards", "vllm", "0.17-0.33 (tqdm bar on stderr)", PROGRESS, "checkpoint shards",
     r"^Loading (?:\w+ )?checkpoint shards:", None, "weight_loading"),
    ("vllm_weights_loaded", "vllm", "0.17-0.33", RECORD_SCOPE, "Loading weights took",
     r"^Loading weights took [\d.]+ seconds", None, "weight_loading"),
    ("vllm_model_loaded", "vllm", "0.17-0.33 ('GiB memory and' in gpu_model_runner, 'GiB and' in model runner v2)",
     RECORD_SCOPE, "Model loading took", r"^Model loading took [\d.]+ GiB", None, "compile"),
    ("vllm_dynamo", "vllm", "0.17-0.33", RECORD_SCOPE, "Dynamo bytecode transform time",
     r"^Dynamo bytecode transform time: ", None, "compile"),
    ("vllm_torch_compile_done", "vllm", "0.17-0.33", RECORD_SCOPE, "torch.compile took",
     r"^torch\.compile took [\d.]+ s in total", None, "kv_cache"),
    ("vllm_available_kv", "vllm", "0.17-0.33", RECORD_SCOPE, "Available KV cache memory",
     r"^Available KV cache memory: ", None, "kv_cache"),
    ("vllm_graph_profile", "vllm", "0.19-0.33", RECORD_SCOPE, "Profiling CUDA graph memory",
     r"^Profiling CUDA graph memory: ", None, "kv_cache"),
    ("vllm_graph_capture", "vllm", "0.17-0.33 (tqdm bar 'Capturing CUDA graphs (mode, sizes)'; 0.2x also "
     "'Capturing prefill CUDA graphs')", PROGRESS, "Capturing ", r"^Capturing (?:\w+ )?CUDA graphs\b", None,
     "cuda_graphs"),
    ("vllm_graph_done", "vllm", "0.17-0.33", RECORD_SCOPE, "Graph capturing finished",
     r"^Graph capturing finished in [\d.]+ secs", None, "server_start"),
    ("vllm_init_engine_done", "vllm", "0.17-0.33", RECORD_SCOPE, "init engine (profile, create kv cache",
     r"^init engine \(profile, create kv cache, warmup model\) took ", None, "server_start"),
    # SGLang: format strings of the 0.5.13 wheel; 0.5.1-0.5.23 unless noted
    ("sglang_dist_init", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Init torch distributed begin",
     r"^Init torch distributed begin\.", None, "engine_init"),
    ("sglang_load_begin", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Load weight begin",
     r"^Load weight begin\. avail mem=", None, "weight_loading"),
    ("sglang_load_shards", "sglang", "0.5.1-0.5.23 (tqdm bar on stderr)", PROGRESS, "checkpoint shards",
     r"^Loading (?:\w+ )?checkpoint shards:", None, "weight_loading"),
    ("sglang_load_end", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Load weight end",
     r"^Load weight end\. ", None, "kv_cache"),
    ("sglang_kv_allocated", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Cache is allocated",
     r"^(?:KV|Mamba) Cache is allocated\. ", None, "kv_cache"),
    ("sglang_graph_begin", "sglang",
     "0.5.1-0.5.1x 'Capture cuda graph begin', 0.5.2x 'Capture <name> CUDA graph begin'", RECORD_SCOPE,
     "begin. This can take up to several minutes", r"^Capture .*\bgraph begin\. This can take up to several minutes",
     None, "cuda_graphs"),
    ("sglang_graph_end", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "end. Time elapsed:",
     r"^Capture .*\bgraph end\. Time elapsed: ", None, "server_start"),
    ("sglang_scheduler_start", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "max_total_num_tokens=",
     r"^max_total_num_tokens=\d+, ", None, "server_start"),
    ("sglang_uvicorn_running", "sglang", "0.5.1-0.5.23 (uvicorn; the warm-up request follows)", UVICORN_SCOPE,
     "Uvicorn running on", r"^Uvicorn running on ", None, "server_start"),
    # --- Fatal signatures in exception text (PyTorch texts are shared); the first that matches wins
    ("fatal_illegal_memory_access", None, "all (PyTorch)", EXC, "illegal memory access",
     r"illegal memory access was encountered", _fatal("cuda_illegal_memory_access")),
    ("fatal_illegal_address", None, "all (CUDA runtime error name)", EXC, "cudaErrorIllegalAddress",
     r"\bcudaErrorIllegalAddress\b", _fatal("cuda_illegal_memory_access")),
    ("fatal_cuda_error", None, "all (PyTorch)", EXC, "CUDA error: ",
     r"CUDA error: (?!out of memory)", _fatal("cuda_error")),
    ("fatal_out_of_memory", None, "all (PyTorch)", EXC, "out of memory",
     r"CUDA out of memory|CUDA error: out of memory", _fatal("out_of_memory")),
    ("fatal_torch_oom", None, "all (PyTorch)", EXC, "OutOfMemoryError",
     r"^(?:[\w.]+\.)?OutOfMemoryError\b", _fatal("out_of_memory")),
    ("fatal_vllm_no_cache_memory", "vllm", "0.17-0.33", EXC, "memory",
     r"No available memory for the cache blocks|is larger than the available KV cache memory|"
     r"Free memory on device .* is less than desired GPU memory utilization", _fatal("out_of_memory")),
    ("fatal_sglang_not_enough_memory", "sglang", "0.5.1-0.5.23", EXC, "Not enough memory",
     r"Not enough memory\. Please try to increase --mem-fraction-static", _fatal("out_of_memory")),
    ("fatal_assertion", None, "all", EXC, "AssertionError",
     r"^(?:[\w.]+\.)?AssertionError\b", _fatal("assertion")),
    ("fatal_engine_dead_exception", "vllm", "0.17-0.33", EXC, "EngineDeadError",
     r"^(?:[\w.]+\.)?EngineDeadError\b", _fatal("engine_dead", CONSEQUENCE, api_server=True)),
    ("fatal_engine_core_init_failed", "vllm", "0.17-0.33", EXC, "Engine core initialization failed",
     r"^RuntimeError: Engine core initialization failed", _fatal("engine_dead", CONSEQUENCE)),
    # Configuration errors last: a ValueError about memory is out_of_memory (first match wins).
    ("fatal_value_error", None, "all", EXC, "Error: ",
     r"^(?:[\w.]+\.)?(?:ValueError|TypeError|NotImplementedError): ", _fatal("config_error", startup_only=True)),
    ("fatal_validation_error", None, "all (pydantic config classes)", EXC, "ValidationError",
     r"^(?:[\w.]+\.)?ValidationError: |validation errors? for \w+Config", _fatal("config_error", startup_only=True)),
    ("fatal_invalid_parser", "vllm", "0.17-0.33", EXC, "KeyError: 'invalid",
     r"^KeyError: 'invalid (?:reasoning|tool call) parser", _fatal("config_error", startup_only=True)),
    ("fatal_argparse", None, "all", USAGE, "error: ",
     r"^[\w./\-]+(?: [\w\-]+)?: error: (?:argument|unrecognized arguments|the following arguments)",
     _fatal("config_error", startup_only=True)),
    # --- Fatal engine records (the message itself, from its start) ----------------------------------
    ("fatal_engine_dead", "vllm", "0.17-0.33", AFTER, "Engine",
     r"^(?:EngineCore failed to start\.|EngineCore encountered a fatal error\.)", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_engine_died", "vllm",
     "0.17-0.19 'Engine core proc X died unexpectedly' (0.20-0.22 print none), 0.25-0.33 '[shutdown] MPClient: "
     "engine core exited unexpectedly'; worker deaths 0.20-0.33", AFTER, " unexpectedly",
     r"^(?:Engine core (?:proc|process) \S+ died unexpectedly|\[shutdown\] MPClient: engine core exited unexpectedly|"
     r"(?:Worker proc \S+|RayWorkerProc rank=\S+) died unexpectedly)", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_child_failed", "sglang", "0.5.1-0.5.23", AFTER, "sigquit",
     r"^Received sigquit from a child process", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_sigquit", "sglang", "0.5.1-0.5.23", AFTER, "SIGQUIT received",
     r"^SIGQUIT received\. ", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_hit_exception", "sglang", "0.5.1-0.5.23", AFTER, "hit an exception",
     r"^\w+ hit an exception", _fatal("engine_dead", CONSEQUENCE)),
]]


# What the scanner runs: the entries with a handler, by scope, in table order.
_COMPILED = [
    (p.name, p.engine, p.scope, p.needle, re.compile(p.regex), p.handler,
     getattr(p.handler, "fatal_kind", None) is not None)
    for p in PATTERNS if p.handler is not None
]
BY_SCOPE = dict((scope, [c for c in _COMPILED if c[2] == scope])
                for scope in (RECORD_SCOPE, AFTER, UVICORN_SCOPE, EXC, USAGE))
# After readiness, an exception on a vLLM API server's stream is a request's (vLLM logs a request's
# error with its traceback, and its text quotes what the client sent): only these entries count there.
API_SERVER_EXC = [c for c in BY_SCOPE[EXC] if c[5].api_server]

# Byte needles of the lines that start a fatal after start-up: every Python exception prints a
# traceback (SGLang: "... hit an exception: Traceback ..."); an engine killed without one (a C++
# abort through std::terminate, the OOM killer) is reported "died/exited unexpectedly" by vLLM and
# "... It usually means the child failed." by SGLang, and the last TAIL_BYTES before the chunk
# with that line are read too (LogScanner.replay_tail), where the abort's "what():" line is. Once the server is ready, a chunk without
# any of them is only counted, never decoded; a chunk that opens a traceback is decoded, and so is
# every chunk after it until the traceback's exception line (LogScanner.in_traceback).
# (Few, long needles: each one is a pass over the chunk; test_fatal_after_filler_is_found_like_line_by_line.)
# Once the engine is known only its own needles are searched: the patterns a needle leads to are
# that engine's (the other engine's patterns are never run), and a needle is a whole pass.
ENGINE_FATAL_NEEDLES = {
    "vllm": (b"Traceback (most recent call last)",
             b" unexpectedly",  # "... died unexpectedly", 0.25+: "engine core exited unexpectedly"
             # the API server's record of a dead engine core (a paste may hold no traceback); the
             # message is the class's own (vllm/v1/engine/exceptions.py), a long needle is a cheap pass
             b"EngineDeadError: EngineCore encountered"),
    "sglang": (b"Traceback (most recent call last)",
               b". It usually means "),  # "Received sigquit from a child process. It usually means ..."
}
FATAL_NEEDLES = tuple(sorted(set(n for needles in ENGINE_FATAL_NEEDLES.values() for n in needles), key=len,
                             reverse=True))
# After start-up, also the last metrics line of a chunk is read (when speculation is on).
METRICS_NEEDLES = {"vllm": b"SpecDecoding metrics: ", "sglang": b"accept len: "}


# Record messages that show which engine wrote a log (besides its logger header).
VLLM_MARKERS = ("Initializing a V1 LLM engine", "non-default args:", "vLLM server version", "vLLM API server version")
SGLANG_MARKERS = ("server_args=", "The server is fired up and ready to roll!")
