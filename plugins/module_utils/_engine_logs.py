# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The one table of vLLM / SGLang log patterns, and the pure functions that read a log with it.

Every log line the collection understands is an entry of ``PATTERNS`` below, with the engine
versions whose source prints it (format strings read from the released wheels, see
``docs``/research ``engine-facts.md``). Nothing else in the collection matches engine log text.

Reading a log is: strip the line prefixes (ANSI colour, compose ``name |``, Docker/journald
timestamps, vLLM ``(EngineCore pid=N)`` process tags and ``INFO MM-DD hh:mm:ss [file.py:N]``
headers, SGLang ``[YYYY-MM-DD hh:mm:ss TP0]`` headers, uvicorn ``INFO:``), match the message
against the table, accumulate ``observed`` (first evidence of the highest priority wins), and
record the first fatal signature with 20 lines of context. ``compare_expect`` then turns an
``expect`` mapping into mismatches. ``scan_file`` streams a file in large binary chunks and,
once the server is ready, only decodes the chunks that contain a fatal needle.
"""
from __future__ import annotations

import ast
import os
import re
from collections import deque

ENGINES = ("vllm", "sglang")

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
    "ready",
    "warnings",
)

CONTEXT_BEFORE = 10
CONTEXT_AFTER = 9  # + the fatal line itself = 20 lines of context
MAX_WARNINGS = 50
# A consequence signature (engine_dead) is followed by the root cause within a traceback or
# two; keep looking this many lines for it before settling for the consequence.
ROOT_CAUSE_LOOKAHEAD = 300

# Priorities of evidence: an engine's own selection line beats its resolved config dump,
# which beats the echo of the requested (non-default) arguments.
REQUESTED, RESOLVED, SELECTED = 1, 2, 3

# Fatal tiers: a root cause beats a consequence (engine_dead) found earlier.
ROOT_CAUSE, CONSEQUENCE = 1, 2


# ---------------------------------------------------------------------------------------------
# Line prefixes
# ---------------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_OUTER_PREFIX = re.compile(
    r"""^(?:
        [\w.\-]+\s+\|\s?                                                   # compose: "name  | "
      | \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s      # docker logs -t
      | [A-Z][a-z]{2}\s+\d{1,2}\s\d\d:\d\d:\d\d\s\S+\s[^\s:\[]+(?:\[\d+\])?:\s  # journalctl
      | \((?P<tag>[A-Za-z][\w]*)\s+pid=\d+\)\s?                          # vLLM process tag
    )""",
    re.X,
)
# vLLM logger header (0.17-0.33): "INFO 05-01 17:58:16 [nvfp4.py:279] "
_VLLM_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s?"
)
# SGLang logger header (0.5.x): "[2026-07-24 08:09:27 TP0] " / "[2026-07-24 08:09:27.123 DP0 TP3] "
_SGLANG_HEADER = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?P<rank>(?: [A-Z]+\d+)*)\]\s?")
# Python logging default format used by libraries (flashinfer): "2026-07-25 13:42:38,525 - INFO - x.py:1 - "
_PYLOG_HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [A-Z]+ - (?:\S+ - )?")
_UVICORN_HEADER = re.compile(r"^(?:INFO|WARNING|ERROR):\s+")


def clean_line(raw):
    """Return ``raw`` without ANSI colour codes and trailing whitespace (the evidence form)."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    return raw.rstrip()


def split_prefix(line):
    """Split a cleaned log line into ``(message, tag, header)``.

    ``tag`` is the process tag (``EngineCore``, ``Worker_TP3``, ``TP0``...) or ``""``;
    ``header`` is ``"vllm"``/``"sglang"`` when an engine's logger header was seen, else ``None``.
    """
    tag = ""
    header = None
    msg = line
    for dummy in range(4):
        m = _OUTER_PREFIX.match(msg)
        if not m or not m.group(0):
            break
        if m.group("tag"):
            tag = m.group("tag")
        msg = msg[m.end():]
    m = _VLLM_HEADER.match(msg)
    if m:
        header = "vllm"
        msg = msg[m.end():]
    else:
        m = _SGLANG_HEADER.match(msg)
        if m:
            header = "sglang"
            if m.group("rank"):
                tag = m.group("rank").strip()
            msg = msg[m.end():]
        else:
            m = _PYLOG_HEADER.match(msg)
            if m:
                msg = msg[m.end():]
    m = _UVICORN_HEADER.match(msg)
    if m:
        msg = msg[m.end():]
    return msg, tag, header


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
    if text in ("None", "null"):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")


def parse_int(text):
    """``1,206,303`` -> 1206303."""
    return int(str(text).replace(",", "").replace("_", ""))


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
    sc.observe("engine_version", m.group("version").rstrip(","), line, SELECTED)


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
        sc.observe("speculative_method", "none" if algo is None else str(algo).lower(),
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
    sc.observe("attention_backend", backend_name(m.group("backend")), line, REQUESTED)


def _fatal(kind, tier=ROOT_CAUSE, startup_only=False):
    def handler(sc, m, line, tag):
        sc.set_fatal(kind, line, tier, startup_only)
    handler.fatal_kind = kind
    return handler


# ---------------------------------------------------------------------------------------------
# THE table. (name, engine or None for both, versions, needle, regex, handler)
# The needle is a plain substring that every match contains; it is checked before the regex.
# Patterns are searched in the message (the line without its prefixes).
# ---------------------------------------------------------------------------------------------
PATTERNS = [
    # --- vLLM: version, model, config -------------------------------------------------------
    ("vllm_engine_config", "vllm", "0.17-0.33", "Initializing a V1 LLM engine",
     r"Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\) with config: (?P<config>.*)", _h_engine_config),
    ("vllm_non_default_args", "vllm", "0.17-0.33", "non-default args:",
     r"non-default args: (?P<args>\{.*\})", _h_non_default_args),
    ("vllm_server_version", "vllm", "0.17-0.33", "server version",
     r"vLLM (?:API )?server version (?P<version>\S+?),? serving model (?P<model>\S+)", _h_version_and_model),
    ("vllm_api_server_version", "vllm", "0.17-0.33", "server version",
     r"vLLM (?:API )?server version (?P<version>[^\s,]+)\s*$", _h_version),
    ("vllm_logo_version", "vllm", "0.17-0.33", "version",
     r"[\u2580-\u259f]\s+version\s+(?P<version>\d\S*)\s*$", _h_version),
    ("vllm_logo_model", "vllm", "0.17-0.33", "model",
     r"[\u2580-\u259f]\s+model\s+(?P<model>\S+)\s*$", _h_banner_model),
    # --- vLLM: MoE ------------------------------------------------------------------------------
    ("vllm_nvfp4_moe", "vllm", "0.17-0.33", "NvFp4 MoE backend",
     r"Using '(?P<backend>[A-Z0-9_]+)' NvFp4 MoE backend", _h_quantized_moe),
    ("vllm_fp8_moe", "vllm", "0.17-0.33", "Fp8 MoE backend",
     r"Using '?(?P<backend>[A-Z0-9_]+)'? Fp8 MoE backend", _h_quantized_moe),
    ("vllm_unquantized_moe_old", "vllm", "0.17-0.19", "backend for Unquantized MoE",
     r"Using (?P<backend>.+?) backend for Unquantized MoE\s*$", _h_unquantized_moe),
    ("vllm_unquantized_moe", "vllm", "0.20-0.33", "Unquantized MoE backend",
     r"Using (?P<backend>.+?) Unquantized MoE backend(?: out of potential backends|\s*$)", _h_unquantized_moe),
    # --- vLLM: dense GEMM -----------------------------------------------------------------------
    ("vllm_nvfp4_gemm", "vllm", "0.17-0.19 (NvFp4LinearBackend.X), 0.20-0.33 (kernel class)", "for NVFP4 GEMM",
     r"Using (?P<backend>[\w.]+) for NVFP4 GEMM", _h_nvfp4_gemm),
    ("vllm_fp8_linear", "vllm", "0.19-0.33", "LinearKernel for ",
     r"^Selected (?P<kernel>\w+LinearKernel) for \w+", _h_fp8_linear),
    # --- vLLM: attention ------------------------------------------------------------------------
    ("vllm_attention_forced", "vllm", "0.17-0.33", "Using AttentionBackendEnum.",
     r"Using AttentionBackendEnum\.(?P<backend>[A-Z0-9_]+) backend\.", _h_attention),
    ("vllm_attention_auto", "vllm", "0.17-0.33", "attention backend out of potential backends",
     r"Using (?P<backend>[A-Z0-9_]+) attention backend out of potential backends", _h_attention),
    ("vllm_drafter", "vllm", "0.17-0.33", "Loading drafter model",
     r"Loading drafter model", _h_drafter),
    # --- vLLM: KV cache, mamba, scheduler -------------------------------------------------------
    ("vllm_kv_cache_size", "vllm", "0.17-0.25 (own line), 0.28-0.33 (with concurrency)", "KV cache size:",
     r"(?:GPU(?: \+ host)? )?KV cache size: (?P<tokens>[\d,]+) tokens", _h_kv_tokens),
    ("vllm_kv_cache_dtype", "vllm", "0.17-0.33", "data type to store kv cache",
     r"Using (?P<dtype>\w+) data type to store kv cache", _h_kv_dtype),
    ("vllm_mamba_ssm_dtype", "vllm", "0.17-0.33", "Updating mamba_ssm_cache_dtype",
     r"Updating mamba_ssm_cache_dtype to '(?P<dtype>\w+)'", _h_mamba_dtype),
    ("vllm_chunked_prefill", "vllm", "0.17-0.33", "Chunked prefill is enabled",
     r"Chunked prefill is enabled with max_num_batched_tokens=\d+", _h_chunked_prefill_on),
    ("vllm_mamba_cache_mode", "vllm", "0.17-0.33", "Mamba cache mode is set to",
     r"Mamba cache mode is set to '\w+'.* when prefix caching is (?P<state>enabled|disabled)", _h_mamba_prefix),
    # --- vLLM: readiness (uvicorn) ---------------------------------------------------------------
    ("vllm_ready", "vllm", "0.17-0.33", "Application startup complete",
     r"Application startup complete\.", _h_ready),
    # --- vLLM: warnings (unknown/deprecated env vars, forced fallbacks) -------------------------
    ("vllm_unknown_env", "vllm", "0.17-0.33", "Unknown vLLM environment variable",
     r"Unknown vLLM environment variable detected: \S+", _h_warning),
    ("vllm_deprecated_env", "vllm", "0.22-0.23", "is deprecated and will be removed in v",
     r"\bVLLM_\w+ is deprecated and will be removed in v[\d.]+", _h_warning),
    ("vllm_nvfp4_emulation", "vllm", "0.20-0.33", "falling back to the slow",
     r"NVFP4 linear falling back to the slow and unoptimized emulation backend", _h_warning),
    ("vllm_marlin_fp4_weight_only", "vllm", "0.17-0.33", "Weight-only FP4 compression",
     r"Weight-only FP4 compression will be used leveraging the Marlin kernel", _h_warning),
    ("vllm_cudagraph_downgrade", "vllm", "0.17-0.33", "setting cudagraph_mode=",
     r"is not supported with .*setting cudagraph_mode=\w+", _h_warning),
    ("vllm_async_disabled", "vllm", "0.17-0.33", "Async scheduling ",
     r"Async scheduling (?:is|will be) disabled", _h_warning),
    # --- SGLang -----------------------------------------------------------------------------------
    ("sglang_server_args", "sglang", "0.5.1-0.5.18 ServerArgs(key=value), 0.5.19-0.5.23 {'key': value}", "server_args=",
     r"server_args=(?P<dump>(?:ServerArgs\(|\{).*)", _h_sglang_server_args),
    ("sglang_kv_cache", "sglang", "0.5.1-0.5.23 (0.5.2x adds dtype)", "KV Cache is allocated",
     r"KV Cache is allocated\. (?:dtype: [^,]+, )?#tokens: (?P<tokens>\d+)", _h_sglang_kv),
    ("sglang_scheduler_limits", "sglang", "0.5.1-0.5.23", "max_total_num_tokens=",
     r"max_total_num_tokens=\d+, chunked_prefill_size=(?P<chunk>-?\d+), max_prefill_tokens=\d+, "
     r"max_running_requests=(?P<reqs>\d+)", _h_sglang_scheduler),
    ("sglang_attention_default", "sglang", "0.5.1-0.5.23", "Attention backend not s",
     r"Attention backend not (?:specified|set)\. Use (?P<backend>\w+) backend by default", _h_sglang_attention_default),
    ("sglang_ready", "sglang", "0.5.1-0.5.23", "fired up and ready to roll",
     r"The server is fired up and ready to roll!", _h_ready),
    ("sglang_deprecated_arg", "sglang", "0.5.9-0.5.19", "is deprecated and will be removed in",
     r"'--[\w-]+' is deprecated and will be removed in|command line argument '--[\w-]+' is deprecated", _h_warning),
    ("sglang_max_running_reset", "sglang", "0.5.1-0.5.23", "Max running requests is reset to",
     r"Max running requests is reset to \d+", _h_warning),
    ("sglang_overlap_disabled", "sglang", "0.5.1-0.5.23", "Overlap scheduler is disabled",
     r"Overlap scheduler is disabled", _h_warning),
    # --- Fatal signatures (both engines; PyTorch texts are shared); the first that matches a line wins
    ("fatal_illegal_memory_access", None, "all (PyTorch)", "illegal memory access",
     r"illegal memory access was encountered|cudaErrorIllegalAddress", _fatal("cuda_illegal_memory_access")),
    ("fatal_cuda_error", None, "all (PyTorch)", "CUDA error: ",
     r"CUDA error: (?!out of memory)", _fatal("cuda_error")),
    ("fatal_out_of_memory", None, "all (PyTorch)", "out of memory",
     r"CUDA out of memory|CUDA error: out of memory", _fatal("out_of_memory")),
    ("fatal_torch_oom", None, "all (PyTorch)", "OutOfMemoryError",
     r"OutOfMemoryError", _fatal("out_of_memory")),
    ("fatal_vllm_no_cache_memory", "vllm", "0.17-0.33", "memory",
     r"No available memory for the cache blocks|is larger than the available KV cache memory|"
     r"Free memory on device .* is less than desired GPU memory utilization", _fatal("out_of_memory")),
    ("fatal_sglang_not_enough_memory", "sglang", "0.5.1-0.5.23", "Not enough memory",
     r"Not enough memory\. Please try to increase --mem-fraction-static", _fatal("out_of_memory")),
    ("fatal_assertion", None, "all", "AssertionError",
     r"^(?:[\w.]+\.)?AssertionError\b", _fatal("assertion")),
    # Configuration errors last: a ValueError about memory is out_of_memory (first match wins).
    ("fatal_value_error", None, "all", "Error: ",
     r"^(?:[\w.]+\.)?(?:ValueError|TypeError|NotImplementedError): ", _fatal("config_error", startup_only=True)),
    ("fatal_validation_error", None, "all (pydantic config classes)", "ValidationError",
     r"^(?:[\w.]+\.)?ValidationError: |validation errors? for \w+Config", _fatal("config_error", startup_only=True)),
    ("fatal_argparse", None, "all", "error: ",
     r"^[\w./\-]+(?: [\w\-]+)?: error: (?:argument|unrecognized arguments|the following arguments)",
     _fatal("config_error", startup_only=True)),
    ("fatal_invalid_parser", "vllm", "0.17-0.33", "KeyError: 'invalid",
     r"KeyError: 'invalid (?:reasoning|tool call) parser", _fatal("config_error", startup_only=True)),
    ("fatal_engine_dead", "vllm", "0.17-0.33", "Engine",
     r"EngineDeadError|Engine core initialization failed|EngineCore failed to start|"
     r"EngineCore encountered a fatal error|Engine core (?:proc|process) \S+ died unexpectedly",
     _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_child_failed", "sglang", "0.5.1-0.5.23", "sigquit",
     r"Received sigquit from a child process", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_sigquit", "sglang", "0.5.1-0.5.23", "SIGQUIT received",
     r"SIGQUIT received\. ", _fatal("engine_dead", CONSEQUENCE)),
    ("fatal_sglang_hit_exception", "sglang", "0.5.1-0.5.23", "hit an exception",
     r"^\w+ hit an exception", _fatal("engine_dead", CONSEQUENCE)),
]

_COMPILED = [
    (name, engine, needle, re.compile(rx), handler, getattr(handler, "fatal_kind", None) is not None)
    for name, engine, _versions, needle, rx, handler in PATTERNS
]

# Byte needles of the fatal signatures that can come after start-up: every Python exception prints
# a traceback, an engine killed without one is reported dead by vLLM's front end, and a C++ abort
# (NCCL watchdog CUDA fault) goes through std::terminate. Once the server is ready, a file chunk
# without any of them cannot hold a fatal and is only counted, never decoded. (Few, long needles:
# each one is a pass over the chunk.)
FATAL_NEEDLES = (
    b"Traceback (most recent call last)",
    b"died unexpectedly",
    b"terminate called after throwing",
)


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
        "ready": "\"Application startup complete.\"",
        "engine": "any vLLM log line",
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
        "engine": "any SGLang log line",
    },
}

_VLLM_MARKERS = ("Initializing a V1 LLM engine", "non-default args:", "vLLM server version", "vLLM API server version")
_SGLANG_MARKERS = ("server_args=", "The server is fired up and ready to roll!")


class LogScanner(object):
    """Accumulates what one engine start printed. Feed it lines; read ``result()``."""

    def __init__(self, engine="auto"):
        self.engine_option = engine
        self.engine = engine if engine in ENGINES else None  # the pattern set in use
        self.detected = None  # the engine the log itself shows
        self.values = {}
        self.evidence = {}
        self.priority = {}
        self.warnings = []
        self.ready = False
        self.ready_line = None
        self.fatal = None
        self.fatal_tier = None
        self.fatal_after = 0  # lines still to append to the fatal's context
        self.lookahead = 0  # lines left to look for a root cause after a consequence
        self.lines = 0
        self.context = deque(maxlen=CONTEXT_BEFORE)
        self.drafter_tags = set()
        self.quantized_moe_seen = False
        self.unquantized_moe = []

    # -- recording ------------------------------------------------------------------------------
    def observe(self, key, value, line, priority):
        if value is None:
            return
        if key in self.priority and self.priority[key] >= priority:
            return
        self.values[key] = value
        self.evidence[key] = line
        self.priority[key] = priority

    def warn(self, text):
        if text not in self.warnings and len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)

    def set_ready(self, line):
        if not self.ready:
            self.ready = True
            self.ready_line = line

    def in_drafter(self, tag):
        return tag in self.drafter_tags or (tag == "" and bool(self.drafter_tags))

    def set_fatal(self, kind, line, tier, startup_only):
        if startup_only and self.ready:
            return  # a ValueError after start-up is a request error, not a configuration error
        if self.fatal is not None and (tier >= self.fatal_tier or self.fatal_tier == ROOT_CAUSE):
            return
        self.fatal = {"kind": kind, "line": line, "context": list(self.context) + [line]}
        self.fatal_tier = tier
        self.fatal_after = CONTEXT_AFTER
        self.lookahead = ROOT_CAUSE_LOOKAHEAD if tier == CONSEQUENCE else 0

    # -- state ------------------------------------------------------------------------------------
    @property
    def done(self):
        """True once a root cause (or a consequence with no root cause nearby) has its context."""
        return self.fatal is not None and self.fatal_after <= 0 and self.lookahead <= 0

    @property
    def wants_every_line(self):
        """False once the start-up is over and nothing is pending: only fatal needles matter then."""
        return not self.ready or (self.fatal is not None and not self.done)

    # -- input ------------------------------------------------------------------------------------
    def feed(self, raw):
        """Process one log line (str, without its newline)."""
        self.lines += 1
        line = clean_line(raw)
        if self.fatal is not None and not self.done:
            if self.fatal_after > 0:
                self.fatal["context"].append(line)
                self.fatal_after -= 1
            if self.lookahead > 0:
                self.lookahead -= 1
        if line:
            self._match(line)
        self.context.append(line)

    def skip(self, count, tail):
        """Account for ``count`` lines not fed one by one; ``tail`` are the last few of them."""
        self.lines += count
        self.context.extend(tail)

    def _match(self, line):
        msg, tag, header = split_prefix(line)
        if self.detected is None:
            self._detect(msg, header, line)
        engine = self.engine
        only_fatal = self.ready
        for name, pat_engine, needle, rx, handler, is_fatal in _COMPILED:
            if only_fatal and not is_fatal:
                continue
            if pat_engine is not None and engine is not None and pat_engine != engine:
                continue
            if needle not in msg:
                continue
            m = rx.search(msg)
            if m:
                handler(self, m, line, tag)
                if is_fatal:
                    break

    def _detect(self, msg, header, line):
        if header == "vllm" or any(marker in msg for marker in _VLLM_MARKERS):
            self.detected = "vllm"
        elif header == "sglang" or any(marker in msg for marker in _SGLANG_MARKERS):
            self.detected = "sglang"
        else:
            return
        if self.engine is None:
            self.engine = self.detected
        self.evidence["engine"] = line[:300]

    # -- output -----------------------------------------------------------------------------------
    def result(self):
        values = dict(self.values)
        evidence = dict(self.evidence)
        for backend, line, after_drafter in self.unquantized_moe:
            key = "draft_moe_backend" if after_drafter or self.quantized_moe_seen else "moe_backend"
            if key not in values:
                values[key] = backend
                evidence[key] = line
        if self.detected:
            values["engine"] = self.detected
        values["ready"] = self.ready
        if self.ready_line:
            evidence["ready"] = self.ready_line
        values["warnings"] = list(self.warnings)
        observed = dict((k, values[k]) for k in OBSERVED_KEYS if k in values)
        return {
            "observed": observed,
            "evidence": dict((k, evidence[k]) for k in OBSERVED_KEYS if k in evidence),
            "fatal": self.fatal,
            "ready": self.ready,
            "log_lines_read": self.lines,
        }


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def _tail_lines(chunk, count, end):
    """The last ``count`` lines of ``chunk[:end]`` (which ends with a newline), decoded."""
    end -= 1
    lines = []
    while end > 0 and len(lines) < count:
        start = chunk.rfind(b"\n", 0, end) + 1
        lines.append(clean_line(bytes(chunk[start:end]).decode("utf-8", "replace")))
        end = start - 1
    lines.reverse()
    return lines


def feed_bytes(scanner, chunk, end=None):
    """Feed ``chunk[:end]``, whole lines ending with a newline; skip it cheaply when only fatal needles matter."""
    if end is None:
        end = len(chunk)
    if not scanner.wants_every_line and all(chunk.find(needle, 0, end) < 0 for needle in FATAL_NEEDLES):
        scanner.skip(chunk.count(b"\n", 0, end), _tail_lines(chunk, CONTEXT_BEFORE, end))
        return
    for raw in bytes(chunk[:end - 1]).split(b"\n"):
        scanner.feed(raw.decode("utf-8", "replace"))
        if scanner.done:
            return


# After start-up, a remainder larger than this is counted and needle-searched by forked workers,
# one byte range each (the common case, no fatal, then costs a fraction of a sequential pass).
PARALLEL_MIN_BYTES = 64 << 20
MAX_WORKERS = 8
_NEEDLE_OVERLAP = max(len(needle) for needle in FATAL_NEEDLES)


def count_range(path, start, stop, chunk_size=1 << 20):
    """``(newlines, needle_found)`` of the bytes ``[start, stop)`` of a file."""
    newlines = 0
    found = False
    buf = bytearray(chunk_size)
    edge = b""
    with open(path, "rb", buffering=0) as handle:
        handle.seek(start)
        pos = start
        while pos < stop:
            with memoryview(buf) as view:
                count = handle.readinto(view[:min(chunk_size, stop - pos)])
            if not count:
                break
            newlines += buf.count(b"\n", 0, count)
            if not found:
                window = edge + bytes(buf[:min(count, _NEEDLE_OVERLAP)])  # needles across chunks
                found = any(buf.find(needle, 0, count) >= 0 or needle in window for needle in FATAL_NEEDLES)
            if count >= _NEEDLE_OVERLAP:
                edge = bytes(buf[count - _NEEDLE_OVERLAP:count])
            else:
                edge = (edge + bytes(buf[:count]))[-_NEEDLE_OVERLAP:]
            pos += count
    return newlines, found


def _line_start_after(path, offset):
    """The offset of the first line starting at or after ``offset``."""
    with open(path, "rb") as handle:
        handle.seek(offset - 1)
        while True:
            data = handle.read(65536)
            if not data:
                return handle.tell()
            nl = data.find(b"\n")
            if nl >= 0:
                return handle.tell() - len(data) + nl + 1


def count_parallel(path, start, stop, workers):
    """``count_range`` over ``[start, stop)`` split at line starts among forked workers."""
    bounds = [start]
    for i in range(1, workers):
        bounds.append(max(bounds[-1], _line_start_after(path, start + (stop - start) * i // workers)))
    bounds.append(stop)
    children = []
    for lo, hi in zip(bounds[1:-1], bounds[2:]):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            status = 1
            try:
                os.close(read_fd)
                os.write(write_fd, ("%d %d" % count_range(path, lo, hi)).encode("ascii"))
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        children.append((pid, read_fd))
    newlines, found = count_range(path, bounds[0], bounds[1])
    ok = True
    for pid, read_fd in children:
        with os.fdopen(read_fd, "rb") as pipe:
            answer = pipe.read().split()
        ok = os.waitpid(pid, 0)[1] == 0 and len(answer) == 2 and ok
        if ok:
            newlines += int(answer[0])
            found = found or answer[1] == b"1"
    return (newlines, found) if ok else (None, True)


def scan_file(path, engine="auto", chunk_size=1 << 20, parallel=True):
    """Scan a saved log file and return ``LogScanner.result()``.

    Streams the file into one reused buffer (no copies of the bulk) line by line until the
    server is ready; then only counts lines and looks for fatal needles, in parallel for a large
    remainder, and decodes only what may hold a fatal. Stops once the answer is complete (a fatal
    and its context), else reads to the end.
    """
    scanner = LogScanner(engine)
    buf = bytearray(max(chunk_size, 2))
    keep = 0  # bytes of an unfinished line at the start of buf
    size = os.path.getsize(path)
    workers = min(os.cpu_count() or 1, MAX_WORKERS) if parallel and hasattr(os, "fork") else 1
    with open(path, "rb", buffering=0) as handle:
        while not scanner.done:
            if workers > 1 and not scanner.wants_every_line:
                start = handle.tell() - keep
                if size - start >= PARALLEL_MIN_BYTES:
                    newlines, found = count_parallel(path, start, size, workers)
                    if not found:
                        scanner.skip(newlines, [])
                        handle.seek(size)
                        keep = 0
                        with open(path, "rb") as tail:  # a last line without its newline
                            tail.seek(max(size - 1, 0))
                            if size and tail.read(1) != b"\n":
                                scanner.lines += 1
                        break
                workers = 1  # a fatal needle is there: read it line by line
            if keep == len(buf):  # a line longer than the buffer
                buf.extend(bytes(len(buf)))
            with memoryview(buf) as view:
                count = handle.readinto(view[keep:])
            if not count:
                break
            end = keep + count
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut:
                feed_bytes(scanner, buf, cut)
                buf[:end - cut] = buf[cut:end]
            keep = end - cut
    if keep and not scanner.done:
        scanner.feed(bytes(buf[:keep]).decode("utf-8", "replace"))
    return scanner.result()


def scan_lines(lines, engine="auto"):
    """Scan an iterable of str lines (tests, small logs) and return ``LogScanner.result()``."""
    scanner = LogScanner(engine)
    for line in lines:
        scanner.feed(line.rstrip("\r\n"))
        if scanner.done:
            break
    return scanner.result()


# ---------------------------------------------------------------------------------------------
# Expect
# ---------------------------------------------------------------------------------------------
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
    text = "%s: expected %s, observed %s" % (key, _show(expected), _show(observed))
    if evidence is not None:
        text += ", proven by log line: %s" % evidence
    return text


def describe_fatal(fatal):
    """One operator-facing sentence for a fatal signature."""
    return "fatal %s in the engine log: %s" % (fatal["kind"], fatal["line"])
