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
timestamps, vLLM ``(EngineCore pid=N)`` process tags), parse the record header (vLLM
``INFO MM-DD hh:mm:ss [file.py:N]``, SGLang ``[YYYY-MM-DD hh:mm:ss TP0]``), tell engine records
from uvicorn lines and headerless lines, follow each stream's traceback structure, match the
message against the table entries of its scope, accumulate ``observed`` (first evidence of the
highest priority wins; a later one of the same weight that disagrees is a conflict), and record the
first fatal signature with 20 lines of context. ``compare_expect`` then turns an ``expect`` mapping
into mismatches. ``scan_file`` streams a whole file in large binary chunks and, once the server is
ready, only decodes the chunks that contain a fatal needle.
"""
from __future__ import annotations

import ast
import os
import re
import stat
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
    "allreduce_backend",
    "mean_acceptance_length",
    "acceptance_rate_per_position",
    "ready",
    "warnings",
)
# Keys whose value is the last one the log shows (a running measurement, not a start-up choice).
LATEST_KEYS = ("mean_acceptance_length", "acceptance_rate_per_position")

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
# Line prefixes and record headers
# ---------------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\^\[\[[0-9;]*m")  # the escape itself, or pasted as "^[[0;36m"
_OUTER_PREFIX = re.compile(
    r"""^(?:
        [\w.\-]+\s+\|\s?                                                   # compose: "name  | "
      | \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s      # docker logs -t
      | [^\W\d_]{3}\s+\d{1,2}\s\d\d:\d\d:\d\d\s\S+\s[^\s:\[]+(?:\[\d+\])?:\s  # journalctl (any locale)
      | \((?P<tag>[A-Za-z][\w]*)\s+pid=\d+\)\s?                          # vLLM process tag
    )""",
    re.X,
)
# vLLM logger header (0.17-0.33): "INFO 05-01 17:58:16 [nvfp4.py:279] "
_VLLM_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[(?P<src>[^\]]*)\]\s?"
)
# SGLang logger header (0.5.x): "[2026-07-24 08:09:27 TP0] " / "[2026-07-24 08:09:27.123 DP0 TP3] " /
# "[2026-07-24 08:09:27 DP1 ATTN_CP0 MOE_DP1 TP3 EP3] " (0.5.9+ rank names with underscores); a logging
# config with level and source adds "INFO server_args.py:1970: ".
_SGLANG_HEADER = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?P<rank>(?: [A-Z]+(?:_[A-Z]+)*\d+)*)\]\s?"
    r"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+:\d+: )?"
)
# Python logging default format used by libraries (flashinfer): "2026-07-25 13:42:38,525 - INFO - x.py:1 - "
_PYLOG_HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [A-Z]+ - (?:\S+ - )?")
_UVICORN_HEADER = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+")

# What a line is. Only RECORD lines (an engine logger's header) are evidence; UVICORN lines (the
# HTTP server's own lines and its access log, with client-chosen paths) only say "started"; RAW
# lines (no header: tracebacks, C++ aborts, progress bars) count only inside a traceback's structure.
RECORD, UVICORN, LIBRARY, RAW = "record", "uvicorn", "library", "raw"


def clean_line(raw):
    """Return ``raw`` without ANSI colour codes and trailing whitespace (the evidence form)."""
    if "\x1b" in raw or "^[[" in raw:
        raw = _ANSI.sub("", raw)
    return raw.rstrip()


def parse_line(line):
    """Split a cleaned log line into ``(message, tag, kind, engine, level, source, outer)``.

    ``tag`` is the process tag (``EngineCore``, ``Worker_TP3``, SGLang ``TP0``...) or ``""``;
    ``outer`` only the tag in front of any header (vLLM's process tag; the stream a traceback is on);
    ``kind`` is RECORD, UVICORN, LIBRARY or RAW; ``engine`` is ``"vllm"``/``"sglang"`` for a record
    of that engine's logger header; ``level`` the record's level when its header has one;
    ``source`` the ``file.py:N`` of a vLLM record.
    """
    tag = ""
    msg = line
    for dummy in range(4):
        m = _OUTER_PREFIX.match(msg)
        if not m or not m.group(0):
            break
        if m.group("tag"):
            tag = m.group("tag")
        msg = msg[m.end():]
    outer = tag
    kind, engine, level, source = RAW, None, None, None
    m = _VLLM_HEADER.match(msg)
    if m:
        kind, engine, level, source = RECORD, "vllm", m.group("level"), m.group("src")
        msg = msg[m.end():]
    else:
        m = _SGLANG_HEADER.match(msg)
        if m:
            kind, engine, level = RECORD, "sglang", m.group("level")
            if m.group("rank"):
                tag = m.group("rank").strip()
            msg = msg[m.end():]
        else:
            m = _PYLOG_HEADER.match(msg)
            if m:
                kind = LIBRARY
                msg = msg[m.end():]
    m = _UVICORN_HEADER.match(msg)
    if m and (kind == RAW or engine == "sglang"):
        kind, level = UVICORN, msg[:m.end()].rstrip(": \t")
        msg = msg[m.end():]
    return msg, tag, kind, engine, level, source, outer


def split_prefix(line):
    """Split a cleaned log line into ``(message, tag, header)``; ``header`` is the engine of a record."""
    msg, tag, kind, engine, _level, _source, _outer = parse_line(line)
    return msg, tag, engine if kind == RECORD else None


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


def _fatal(kind, tier=ROOT_CAUSE, startup_only=False):
    def handler(sc, m, line, tag):
        sc.set_fatal(kind, line, tier, startup_only)
    handler.fatal_kind = kind
    return handler


# Where a pattern is searched:
#   RECORD   the message of an engine log record (a vLLM or SGLang logger header), before readiness
#   AFTER    ... also after readiness (metrics lines; a record-level fatal)
#   UVICORN  the message of a uvicorn line (never its access log: only exact startup lines match)
#   EXC      the text of a Python exception line (``torch.OutOfMemoryError: ...``) or of a C++
#            ``what():`` line, at its place in a traceback's structure (see LogScanner._exception_text)
#   USAGE    a headerless line before readiness (argparse prints its usage error without a header)
RECORD_SCOPE, AFTER, UVICORN_SCOPE, EXC, USAGE = "record", "after", "uvicorn", "exception", "usage"

# ---------------------------------------------------------------------------------------------
# THE table. (name, engine or None for both, versions, scope, needle, regex, handler)
# The needle is a plain substring that every match contains; it is checked before the regex.
# ---------------------------------------------------------------------------------------------
PATTERNS = [
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
     r"^Loading drafter model", _h_drafter),
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
     r"^Application startup complete\.$", _h_ready),
    ("vllm_api_server_start", "vllm", "0.17 (API server N), 0.18-0.33", RECORD_SCOPE, "Starting vLLM ",
     r"^Starting vLLM (?:API )?server (?:\d+ )?on \S+", _h_api_server_start),
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
     "server_args=", r"^server_args=(?P<dump>(?:ServerArgs\(|\{).*)", _h_sglang_server_args),
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
     r"^The server is fired up and ready to roll!", _h_ready),
    ("sglang_accept_len", "sglang", "0.5.1-0.5.23 (Decode batch line with speculation)", AFTER, "accept len: ",
     r"^Decode batch\b.*, accept len: (?P<mean>[\d.]+)", _h_sglang_accept_len),
    ("sglang_deprecated_arg", "sglang", "0.5.9-0.5.19", RECORD_SCOPE, "is deprecated and will be removed in",
     r"'--[\w-]+' is deprecated and will be removed in|command line argument '--[\w-]+' is deprecated", _h_warning),
    ("sglang_max_running_reset", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Max running requests is reset to",
     r"Max running requests is reset to \d+", _h_warning),
    ("sglang_overlap_disabled", "sglang", "0.5.1-0.5.23", RECORD_SCOPE, "Overlap scheduler is disabled",
     r"Overlap scheduler is disabled", _h_warning),
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
    ("fatal_engine_dead_exception", "vllm", "0.17-0.33", EXC, "Engine",
     r"^(?:[\w.]+\.)?EngineDeadError\b|^RuntimeError: Engine core initialization failed",
     _fatal("engine_dead", CONSEQUENCE)),
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
]

_COMPILED = [
    (name, engine, scope, needle, re.compile(rx), handler, getattr(handler, "fatal_kind", None) is not None)
    for name, engine, _versions, scope, needle, rx, handler in PATTERNS
]
_BY_SCOPE = dict((scope, [c for c in _COMPILED if c[2] == scope])
                 for scope in (RECORD_SCOPE, AFTER, UVICORN_SCOPE, EXC, USAGE))

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
             b" unexpectedly"),  # "... died unexpectedly", 0.25+: "engine core exited unexpectedly"
    "sglang": (b"Traceback (most recent call last)",
               b". It usually means "),  # "Received sigquit from a child process. It usually means ..."
}
FATAL_NEEDLES = tuple(sorted(set(n for needles in ENGINE_FATAL_NEEDLES.values() for n in needles), key=len,
                             reverse=True))
# After start-up, also the last metrics line of a chunk is read (when speculation is on).
METRICS_NEEDLES = {"vllm": b"SpecDecoding metrics: ", "sglang": b"accept len: "}
# Lines longer than this are cut to it before matching (and reported once).
LINE_CAP = 64 * 1024
# Lines returned in a result (fatal line and context, evidence, warnings) are cut to this.
SHOW_CAP = 2000


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

_VLLM_MARKERS = ("Initializing a V1 LLM engine", "non-default args:", "vLLM server version", "vLLM API server version")
_SGLANG_MARKERS = ("server_args=", "The server is fired up and ready to roll!")

# A Python traceback, as both engines print it: "Traceback (most recent call last):" (SGLang:
# "Scheduler hit an exception: Traceback ..."), frame lines and their indented source lines, then
# the exception line at column 0, then the rest of its message. Only that exception line (or a C++
# abort's "what():" line) is exception text; the message lines after it can quote anything.
_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s+File "[^"]*", line \d+, in ')
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s|:?$)")
_WHAT = re.compile(r"^\s*what\(\):\s+(?P<text>.*)")
_TERMINATE = "terminate called after throwing an instance of"
# Traceback states, per stream (the process tag in front of the line).
_NONE, _FRAMES, _AFTER_EXCEPTION, _TERMINATING, _IGNORED = range(5)
# A raw tail kept from a chunk that was only counted: replayed for the traceback structure.
TAIL_BYTES = 64 * 1024
# A traceback still waiting for its exception line after this many lines is not waited for.
TRACEBACK_SPAN = 2000


def show(line):
    """A log line as returned in results: cut to SHOW_CAP characters, saying how much was cut."""
    if len(line) <= SHOW_CAP:
        return line
    return "%s ... [%d more characters]" % (line[:SHOW_CAP], len(line) - SHOW_CAP)


class LogScanner(object):
    """Accumulates what one engine start printed. Feed it lines; read ``result()``."""

    def __init__(self, engine="auto"):
        self.engine_option = engine
        self.engine = engine if engine in ENGINES else None  # the pattern set in use
        self.detected = None  # the engine the log itself shows
        self.values = {}
        self.evidence = {}
        self.priority = {}
        self.conflicts = {}
        self.warnings = []
        self.ready = False
        self.ready_line = None
        self.api_server_line = None
        self.fatal = None
        self.fatal_tier = None
        self.fatal_after = 0  # lines still to append to the fatal's context
        self.lookahead = 0  # lines left to look for a root cause after a consequence
        self.lines = 0
        self.long_lines = 0
        self.context = deque(maxlen=CONTEXT_BEFORE)
        self.blocks = {}  # process tag -> [traceback state, record header it belongs to, line it opened at]
        self.pending_tail = None  # raw bytes (whole lines, at most TAIL_BYTES) of the last counted-only lines
        self.skipped = 0  # lines counted since the last one read (fed or replayed)
        self.replay_back = 0  # while replaying that tail: how many counted lines follow the current one
        self.drafter_tags = set()
        self.quantized_moe_seen = False
        self.unquantized_moe = []

    # -- recording ------------------------------------------------------------------------------
    def observe(self, key, value, line, priority):
        if value is None:
            return
        old = self.priority.get(key)
        if old is not None and old > priority:
            return
        if old == priority:
            if key.endswith("_backend") and priority >= RESOLVED and value != self.values[key]:
                seen = self.conflicts.setdefault(key, [])
                if value not in [c["value"] for c in seen] and len(seen) < 5:
                    seen.append({"value": value, "line": show(line)})
                    self.warn("conflicting evidence for %s: %s, then %s in: %s" % (
                        key, self.values[key], value, show(line)))
            return  # the first evidence of the highest priority stays the value
        self.values[key] = value
        self.evidence[key] = show(line)
        self.priority[key] = priority

    def latest(self, key, value, line):
        """Record a running measurement (LATEST_KEYS, never observe()d): the last line wins."""
        self.values[key] = value
        self.evidence[key] = show(line)

    def warn(self, text):
        if text not in self.warnings and len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)

    def set_ready(self, line):
        if not self.ready:
            self.ready = True
            self.ready_line = show(line)

    def in_drafter(self, tag):
        return tag in self.drafter_tags or (tag == "" and bool(self.drafter_tags))

    @property
    def fatal_needles(self):
        """The byte needles that a line starting a fatal of this log's engine contains (FATAL_NEEDLES)."""
        return ENGINE_FATAL_NEEDLES.get(self.engine, FATAL_NEEDLES)

    @property
    def speculating(self):
        return self.values.get("speculative_method") not in (None, "none") or "mean_acceptance_length" in self.values

    def set_fatal(self, kind, line, tier, startup_only):
        if startup_only and self.ready:
            return  # a ValueError after start-up is a request error, not a configuration error
        if self.fatal is not None and (tier >= self.fatal_tier or self.fatal_tier == ROOT_CAUSE or self.done):
            return  # the first fatal is the headline (a root cause close after a consequence replaces it)
        line = show(line)
        self.fatal = {"kind": kind, "line": line, "line_number": self.lines - self.replay_back,
                      "context": list(self.context) + [line]}
        self.fatal_tier = tier
        self.fatal_after = CONTEXT_AFTER
        self.lookahead = ROOT_CAUSE_LOOKAHEAD if tier == CONSEQUENCE else 0

    # -- state ------------------------------------------------------------------------------------
    @property
    def done(self):
        """True once a root cause (or a consequence with no root cause nearby) has its context."""
        return self.fatal is not None and self.fatal_after <= 0 and self.lookahead <= 0

    @property
    def in_traceback(self):
        """True while a traceback opened in the last TRACEBACK_SPAN lines waits for its exception line."""
        return any(block[0] in (_FRAMES, _TERMINATING) and self.lines - block[2] < TRACEBACK_SPAN
                   for block in self.blocks.values())

    @property
    def wants_every_line(self):
        """False once the start-up is over and nothing is pending: only fatal needles matter then."""
        return not self.ready or (self.fatal is not None and not self.done) or self.in_traceback

    # -- input ------------------------------------------------------------------------------------
    def feed(self, raw):
        """Process one log line (str, without its newline)."""
        self.lines += 1
        if len(raw) > LINE_CAP:
            self.long_lines += 1
            if self.long_lines == 1:
                self.warn("log line %d is longer than %d characters: such lines are cut to that length "
                          "before they are read" % (self.lines, LINE_CAP))
            raw = raw[:LINE_CAP]
        self._line(clean_line(raw))

    def _line(self, line):
        if self.fatal is not None and not self.done:
            if self.fatal_after > 0:
                self.fatal["context"].append(show(line))
                self.fatal_after -= 1
            if self.lookahead > 0:
                self.lookahead -= 1
        if line:
            self._match(line)
        self.context.append(show(line))

    def skip(self, count, tail=b""):
        """Account for ``count`` lines not fed one by one; ``tail`` are the raw bytes they end with.

        Consecutive skips add up: a container's stream comes a few lines a chunk, and the context of a
        fatal in the next chunk is the last lines before it, not only the last chunk's. Without a tail
        (a range counted elsewhere), or when the tail had to be cut (TAIL_BYTES), the lines read before
        are no longer the ones just before what follows: a fatal's context then starts with the tail.
        """
        self.lines += count
        self.skipped += count
        tail = (self.pending_tail or b"") + tail if tail else b""
        if len(tail) > TAIL_BYTES:  # whole lines only (a tail ends with its newline)
            tail = tail[tail.find(b"\n", len(tail) - TAIL_BYTES - 1) + 1:]
        if tail.count(b"\n") < self.skipped:
            self.context.clear()  # lines the tail lacks lie between them and the tail
        self.pending_tail = tail or None

    def replay_tail(self):
        """Before feeding lines after a skip: read the last skipped lines (already counted) after all.

        They give the context and the traceback state, and a fatal without a needle of its own
        close before the chunk that has one (a C++ abort's "what():" before vLLM's "died unexpectedly").
        """
        tail, self.pending_tail, self.skipped = self.pending_tail, None, 0
        if not tail:
            return
        lines = tail.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for index, raw in enumerate(lines):
            self.replay_back = len(lines) - index - 1
            self._line(clean_line(raw[:LINE_CAP]))
        self.replay_back = 0

    def observe_line(self, raw):
        """Match one engine record found in a counted-only chunk (a metrics line), without counting it and
        without following its stream's traceback state: the lines before it in the chunk are read after it
        (replay_tail), if at all, and must find the state they left."""
        line = clean_line(raw[:LINE_CAP])
        if line:
            msg, tag, kind = parse_line(line)[:3]
            if kind == RECORD:
                self._run(AFTER, msg, line, tag)

    def _structure(self, outer, msg, kind, engine, level, source):
        """Follow the traceback structure of the stream ``outer``; return the exception text, if any."""
        block = self.blocks.get(outer)
        if kind == UVICORN:
            # uvicorn's tracebacks are about requests ("Exception in ASGI application")
            self.blocks[outer] = [_IGNORED if "Exception in ASGI application" in msg else _NONE, None, 0]
            return None
        if kind == RECORD:
            header = (level, source) if engine == "vllm" else object()  # each SGLang record starts anew
            if block is None or block[1] != header:
                block = self.blocks[outer] = [_NONE, header, 0]
        elif kind == RAW:
            if block is None:
                block = self.blocks[outer] = [_NONE, None, 0]
        else:
            return None
        state = block[0]
        if state == _IGNORED:
            return None
        if msg == _TRACEBACK or msg.endswith(": " + _TRACEBACK) or (_FRAME.match(msg) and state != _FRAMES):
            block[0], block[2] = _FRAMES, self.lines
            return None
        if _FRAME.match(msg):
            return None
        if msg.startswith(_TERMINATE):
            block[0], block[2] = _TERMINATING, self.lines
            return None
        if state == _TERMINATING:
            m = _WHAT.match(msg)
            if m:
                block[0] = _AFTER_EXCEPTION
                return m.group("text")
            return None
        if state == _FRAMES:
            if not msg or msg[0].isspace():
                return None  # source lines, ^^^^ markers
            # torch._dynamo wraps the real error: "...BackendCompilerFailed: backend='...' raised:"
            # and, on the next line, the wrapped exception line (e.g. "RuntimeError: CUDA error: ...").
            block[0] = _FRAMES if msg.rstrip().endswith(" raised:") else _AFTER_EXCEPTION
            return msg if _EXCEPTION_LINE.match(msg) else None
        if state == _NONE and kind == RECORD and (engine == "sglang" or level not in ("DEBUG", "INFO")) \
                and _EXCEPTION_LINE.match(msg):
            block[0] = _AFTER_EXCEPTION  # an engine's error record that is an exception line
            return msg
        return None

    def _run(self, scope, text, line, tag):
        engine = self.engine
        for dummy, pat_engine, dummy2, needle, rx, handler, is_fatal in _BY_SCOPE[scope]:
            if pat_engine is not None and engine is not None and pat_engine != engine:
                continue
            if needle not in text:
                continue
            m = rx.search(text)
            if m:
                handler(self, m, line, tag)
                if is_fatal:
                    return True
        return False

    def _match(self, line):
        msg, tag, kind, engine, level, source, outer = parse_line(line)
        if kind == RECORD and self.detected is None:
            self._detect(msg, engine, line)
        exception = self._structure(outer, msg, kind, engine, level, source)
        if exception is not None:
            self._run(EXC, exception, line, tag)
        if kind == RECORD:
            if not self.ready:
                self._run(RECORD_SCOPE, msg, line, tag)
            self._run(AFTER, msg, line, tag)
        elif kind == UVICORN:
            if not self.ready:
                self._run(UVICORN_SCOPE, msg, line, tag)
        elif kind == RAW and exception is None and not self.ready:
            self._run(USAGE, msg, line, tag)

    def _detect(self, msg, engine, line):
        if engine == "vllm" or any(marker in msg for marker in _VLLM_MARKERS):
            self.detected = "vllm"
        elif engine == "sglang" or any(marker in msg for marker in _SGLANG_MARKERS):
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
                evidence[key] = show(line)
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
            "conflicts": dict((k, list(v)) for k, v in self.conflicts.items()),
            "long_lines": self.long_lines,
        }


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
class LogFileError(ValueError):
    """A log_path that is not a regular file."""


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def open_log(path):
    """Open a saved log for reading: ``(unbuffered binary file, size)``; LogFileError unless a regular file.

    Opened without blocking, so a FIFO with no writer is refused instead of waited for.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _FILE_TYPES if test(info.st_mode)), "not a regular file")
            raise LogFileError("%s is %s; backend_assert reads a saved log file (for example the output of "
                               "docker logs <container> > file), or use container to read a running one"
                               % (path, what))
    except Exception:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb", buffering=0), info.st_size


def _line_bounds(chunk, pos, start, end):
    """The bytes of the line of ``chunk`` containing ``pos`` (within ``[start, end)``, without the newline)."""
    lo = chunk.rfind(b"\n", start, pos) + 1
    if lo == 0:
        lo = start
    hi = chunk.find(b"\n", pos, end)
    if hi < 0:
        hi = end
    return bytes(chunk[lo:min(hi, lo + LINE_CAP)])


def _observe_metrics(scanner, chunk, start, end):
    """In a counted-only chunk: feed the last metrics line (the running measurement)."""
    needle = METRICS_NEEDLES.get(scanner.engine) if scanner.speculating else None
    if needle is not None:
        pos = chunk.rfind(needle, start, end)
        if pos >= 0:
            scanner.observe_line(_line_bounds(chunk, pos, start, end).decode("utf-8", "replace"))


def feed_bytes(scanner, chunk, end=None, start=0):
    """Feed ``chunk[start:end]``, whole lines ending with a newline; count it cheaply when only fatal needles matter."""
    if end is None:
        end = len(chunk)
    while start < end:
        if not scanner.wants_every_line and all(chunk.find(needle, start, end) < 0
                                                for needle in scanner.fatal_needles):
            _observe_metrics(scanner, chunk, start, end)
            tail_start = max(start, end - TAIL_BYTES)
            if tail_start > start:
                tail_start = chunk.find(b"\n", tail_start - 1, end) + 1 or end
            scanner.skip(chunk.count(b"\n", start, end), bytes(chunk[tail_start:end]))
            return
        scanner.replay_tail()
        while start < end:  # line by line, until only fatal needles matter again
            nl = chunk.find(b"\n", start, end)
            if nl < 0:
                nl = end
            scanner.feed(bytes(chunk[start:nl]).decode("utf-8", "replace"))
            start = nl + 1
            if not scanner.wants_every_line:
                break


# After start-up, a remainder larger than this is counted and needle-searched by forked workers,
# one byte range each (the common case, no fatal, then costs a fraction of a sequential pass).
PARALLEL_MIN_BYTES = 64 << 20
MAX_WORKERS = 8
_NEEDLE_OVERLAP = max(len(needle) for needle in FATAL_NEEDLES)
# How far back from the end a counted-only remainder is searched for its last metrics line.
METRICS_LOOKBACK = 64 << 20


def count_range(path, start, stop, chunk_size=1 << 20, needles=FATAL_NEEDLES):
    """``(newlines, needle_found)`` of the bytes ``[start, stop)`` of a file (any of ``needles``)."""
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
                found = any(buf.find(needle, 0, count) >= 0 or needle in window for needle in needles)
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


def count_parallel(path, start, stop, workers, needles=FATAL_NEEDLES):
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
                os.write(write_fd, ("%d %d" % count_range(path, lo, hi, needles=needles)).encode("ascii"))
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        children.append((pid, read_fd))
    newlines, found = count_range(path, bounds[0], bounds[1], needles=needles)
    ok = True
    for pid, read_fd in children:
        with os.fdopen(read_fd, "rb") as pipe:
            answer = pipe.read().split()
        ok = os.waitpid(pid, 0)[1] == 0 and len(answer) == 2 and ok
        if ok:
            newlines += int(answer[0])
            found = found or answer[1] == b"1"
    return (newlines, found) if ok else (None, True)


def _last_metrics_lines(path, start, stop, needles, block=1 << 20):
    """The last line with one of ``needles`` within the last METRICS_LOOKBACK bytes of ``[start, stop)``."""
    found = {}
    low = max(start, stop - METRICS_LOOKBACK)
    with open(path, "rb") as handle:
        hi = stop
        while hi > low and not found:
            lo = max(low, hi - block)
            base = max(start, lo - LINE_CAP)  # the window starts before lo to begin a line, runs past hi to finish it
            handle.seek(base)
            data = handle.read(min(hi + LINE_CAP, stop) - base)
            for needle in needles:  # the last one from lo on, even one that hi cuts (the blocks after had none)
                pos = data.rfind(needle, lo - base)
                if pos >= 0:
                    found[needle] = _line_bounds(data, pos, 0, len(data))
            hi = lo
    return [line.decode("utf-8", "replace") for line in found.values()]


def scan_file(path, engine="auto", chunk_size=1 << 20, parallel=True):
    """Scan a saved log file, whole, and return ``LogScanner.result()``.

    Streams the file into one reused buffer (no copies of the bulk) line by line until the
    server is ready; then only counts lines and looks for fatal needles (in parallel for a large
    remainder), and decodes only what may hold a fatal. A line longer than the buffer is read as
    its first LINE_CAP bytes. Raises OSError or LogFileError (not a regular file).
    """
    scanner = LogScanner(engine)
    handle, size = open_log(path)
    buf = bytearray(max(chunk_size, 2))
    keep = 0  # bytes of an unfinished line at the start of buf
    head = None  # the first LINE_CAP bytes of a line longer than the buffer, while its rest is skipped
    workers = min(os.cpu_count() or 1, MAX_WORKERS) if parallel and hasattr(os, "fork") else 1
    with handle:
        while True:
            if workers > 1 and not scanner.wants_every_line and head is None:
                start = handle.tell() - keep
                if size - start >= PARALLEL_MIN_BYTES:
                    newlines, found = count_parallel(path, start, size, workers, scanner.fatal_needles)
                    if not found:
                        scanner.skip(newlines)
                        if scanner.speculating and scanner.engine in METRICS_NEEDLES:
                            for line in _last_metrics_lines(path, start, size, [METRICS_NEEDLES[scanner.engine]]):
                                scanner.observe_line(line)
                        handle.seek(size)
                        keep = 0
                        with open(path, "rb") as tail:  # a last line without its newline
                            tail.seek(max(size - 1, 0))
                            if size and tail.read(1) != b"\n":
                                scanner.lines += 1
                        break
                workers = 1  # a fatal needle is there: read it line by line
            with memoryview(buf) as view:
                count = handle.readinto(view[keep:])
            if not count:
                break
            end = keep + count
            begin = 0
            if head is not None:  # the rest of a line longer than the buffer: skip to its newline
                nl = buf.find(b"\n", 0, end)
                if nl < 0:
                    keep = 0
                    continue
                scanner.replay_tail()
                scanner.feed(head.decode("utf-8", "replace"))
                head = None
                begin = nl + 1
            cut = buf.rfind(b"\n", begin, end) + 1
            if cut > begin:
                feed_bytes(scanner, buf, cut, begin)
                begin = cut
            keep = end - begin
            if begin:
                buf[:keep] = buf[begin:end]
            if keep == len(buf):  # no newline in a full buffer
                if len(buf) <= LINE_CAP:
                    buf.extend(bytes(len(buf)))
                else:
                    head = bytes(buf[:LINE_CAP + 1])  # one byte over the cap: fed, it counts as cut
                    keep = 0
    if head is not None:
        scanner.replay_tail()
        scanner.feed(head.decode("utf-8", "replace"))
    elif keep:
        scanner.replay_tail()
        scanner.feed(bytes(buf[:keep]).decode("utf-8", "replace"))
    return scanner.result()


def scan_lines(lines, engine="auto"):
    """Scan an iterable of str lines (tests, small logs) and return ``LogScanner.result()``."""
    scanner = LogScanner(engine)
    for line in lines:
        scanner.feed(line.rstrip("\r\n"))
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


# ---------------------------------------------------------------------------------------------
# Start-up phases (readiness progress). A separate table: a phase line is not evidence of what the
# engine selected, only of how far its start got, so it may also be a headerless progress bar.
# ---------------------------------------------------------------------------------------------
# The phases of a cold start, in order; both engines map onto the same names so budgets can be
# set per phase whatever the engine (SGLang has no separate compile phase in its log).
STARTUP_PHASES = (
    ("process_start", "the container started; no engine start-up line yet"),
    ("engine_init", "engine configuration and distributed init"),
    ("weight_loading", "weight download and loading (a first deploy downloads and processes the checkpoint here)"),
    ("compile", "torch.compile and the profiling run"),
    ("kv_cache", "memory profiling and KV cache allocation"),
    ("cuda_graphs", "CUDA graph capture"),
    ("server_start", "engine warm-up and API server start"),
    ("ready", "the server is ready"),
)
STARTUP_PHASE_NAMES = tuple(name for name, dummy in STARTUP_PHASES)

# (name, engine, versions, phase entered, kinds, needle, regex). The line whose pattern matched
# last sets the phase (a draft model's "Load weight begin" after the target's end is weight
# loading again). Kinds: the line kinds of parse_line the pattern is tried on.
_REC, _UVI, _ANY = (RECORD,), (UVICORN,), (RECORD, RAW, LIBRARY)
STARTUP_PATTERNS = [
    # --- vLLM (format strings of the 0.19.0 wheel; the same text 0.17-0.33 unless noted) ------
    ("vllm_server_args", "vllm", "0.17-0.33", "engine_init", _REC, "non-default args:",
     r"^non-default args: "),
    ("vllm_engine_init", "vllm", "0.17-0.33", "engine_init", _REC, "Initializing a V1 LLM engine",
     r"^Initializing a V1 LLM engine \(v"),
    ("vllm_load_start", "vllm", "0.17-0.33", "weight_loading", _REC, "Starting to load model",
     r"^Starting to load model \S"),
    ("vllm_load_shards", "vllm", "0.17-0.33 (tqdm bar on stderr)", "weight_loading", _ANY, "checkpoint shards",
     r"^Loading (?:\w+ )?checkpoint shards:"),
    ("vllm_weights_loaded", "vllm", "0.17-0.33", "weight_loading", _REC, "Loading weights took",
     r"^Loading weights took [\d.]+ seconds"),
    ("vllm_drafter", "vllm", "0.17-0.33", "weight_loading", _REC, "Loading drafter model",
     r"^Loading drafter model"),
    ("vllm_model_loaded", "vllm", "0.17-0.33 ('GiB memory and' in gpu_model_runner, 'GiB and' in model runner v2)",
     "compile", _REC, "Model loading took", r"^Model loading took [\d.]+ GiB"),
    ("vllm_dynamo", "vllm", "0.17-0.33", "compile", _REC, "Dynamo bytecode transform time",
     r"^Dynamo bytecode transform time: "),
    ("vllm_torch_compile_done", "vllm", "0.17-0.33", "kv_cache", _REC, "torch.compile took",
     r"^torch\.compile took [\d.]+ s in total"),
    ("vllm_available_kv", "vllm", "0.17-0.33", "kv_cache", _REC, "Available KV cache memory",
     r"^Available KV cache memory: "),
    ("vllm_graph_profile", "vllm", "0.19-0.33", "kv_cache", _REC, "Profiling CUDA graph memory",
     r"^Profiling CUDA graph memory: "),
    ("vllm_graph_capture", "vllm", "0.17-0.33 (tqdm bar 'Capturing CUDA graphs (mode, sizes)'; 0.2x also "
     "'Capturing prefill CUDA graphs')", "cuda_graphs", _ANY, "Capturing ", r"^Capturing (?:\w+ )?CUDA graphs\b"),
    ("vllm_graph_done", "vllm", "0.17-0.33", "server_start", _REC, "Graph capturing finished",
     r"^Graph capturing finished in [\d.]+ secs"),
    ("vllm_init_engine_done", "vllm", "0.17-0.33", "server_start", _REC, "init engine (profile, create kv cache",
     r"^init engine \(profile, create kv cache, warmup model\) took "),
    ("vllm_api_server", "vllm", "0.17 (API server N), 0.18-0.33", "server_start", _REC, "Starting vLLM ",
     r"^Starting vLLM (?:API )?server (?:\d+ )?on \S+"),
    ("vllm_uvicorn_ready", "vllm", "0.17-0.33 (uvicorn)", "ready", _UVI, "Application startup complete",
     r"^Application startup complete\.$"),
    # --- SGLang (format strings of the 0.5.13 wheel; 0.5.1-0.5.23 unless noted) ----------------
    ("sglang_server_args", "sglang", "0.5.1-0.5.23", "engine_init", _REC, "server_args=",
     r"^server_args=(?:ServerArgs\(|\{)"),
    ("sglang_dist_init", "sglang", "0.5.1-0.5.23", "engine_init", _REC, "Init torch distributed begin",
     r"^Init torch distributed begin\."),
    ("sglang_load_begin", "sglang", "0.5.1-0.5.23", "weight_loading", _REC, "Load weight begin",
     r"^Load weight begin\. avail mem="),
    ("sglang_load_shards", "sglang", "0.5.1-0.5.23 (tqdm bar on stderr)", "weight_loading", _ANY, "checkpoint shards",
     r"^Loading (?:\w+ )?checkpoint shards:"),
    ("sglang_load_end", "sglang", "0.5.1-0.5.23", "kv_cache", _REC, "Load weight end",
     r"^Load weight end\. "),
    ("sglang_kv_allocated", "sglang", "0.5.1-0.5.23", "kv_cache", _REC, "Cache is allocated",
     r"^(?:KV|Mamba) Cache is allocated\. "),
    ("sglang_graph_begin", "sglang",
     "0.5.1-0.5.1x 'Capture cuda graph begin', 0.5.2x 'Capture <name> CUDA graph begin'", "cuda_graphs", _REC,
     "begin. This can take up to several minutes", r"^Capture .*\bgraph begin\. This can take up to several minutes"),
    ("sglang_graph_end", "sglang", "0.5.1-0.5.23", "server_start", _REC, "end. Time elapsed:",
     r"^Capture .*\bgraph end\. Time elapsed: "),
    ("sglang_scheduler_limits", "sglang", "0.5.1-0.5.23", "server_start", _REC, "max_total_num_tokens=",
     r"^max_total_num_tokens=\d+, "),
    ("sglang_uvicorn_running", "sglang", "0.5.1-0.5.23 (uvicorn; the warm-up request follows)", "server_start", _UVI,
     "Uvicorn running on", r"^Uvicorn running on "),
    ("sglang_fired_up", "sglang", "0.5.1-0.5.23", "ready", _REC, "fired up and ready to roll",
     r"^The server is fired up and ready to roll!"),
]
_STARTUP_COMPILED = [(name, engine, phase, kinds, needle, re.compile(rx))
                     for name, engine, dummy, phase, kinds, needle, rx in STARTUP_PATTERNS]


def phase_of_line(line, engine=None):
    """``(phase, pattern name)`` a cleaned log line marks the start of, or ``(None, None)``.

    ``engine`` (``vllm``/``sglang``) restricts the patterns to that engine's; None tries both.
    A progress bar's carriage-return updates count as their last non-empty state.
    """
    if "\r" in line:
        parts = [part for part in line.split("\r") if part.strip()]
        line = parts[-1] if parts else ""
    msg, dummy, kind, line_engine, dummy3, dummy4, dummy5 = parse_line(line)
    for name, pat_engine, phase, kinds, needle, rx in _STARTUP_COMPILED:
        if (engine in ENGINES and pat_engine != engine) or (line_engine is not None and pat_engine != line_engine):
            continue
        if kind in kinds and needle in msg and rx.search(msg):
            return phase, name
    return None, None


class StartupPhases(object):
    """The start-up phase of one engine start, fed its log lines (str) in order."""

    def __init__(self, engine="auto"):
        self.engine = engine if engine in ENGINES else None
        self.phase = "process_start"
        self.line = None  # the line that entered the phase
        self.line_number = 0
        self.lines = 0

    def feed(self, raw):
        self.lines += 1
        if self.phase == "ready":
            return
        line = clean_line(raw[:LINE_CAP])
        if not line:
            return
        phase, dummy = phase_of_line(line, self.engine)
        if phase is not None:
            self.phase, self.line, self.line_number = phase, show(line), self.lines

    def feed_bytes(self, data):
        """Feed newline-terminated log bytes (the form backend_assert's reader passes on)."""
        if self.phase == "ready":
            self.lines += data.count(b"\n")
            return
        for raw in bytes(data).decode("utf-8", "replace").split("\n")[:-1]:
            self.feed(raw)

    def state(self):
        return {"phase": self.phase, "line": self.line, "line_number": self.line_number}


def startup_phase(lines_or_state, engine="auto"):
    """The start-up phase of a log: ``{phase, line, line_number}``.

    ``lines_or_state`` is an iterable of log lines (str) of one engine start, or a state such a
    call returned (returned as it is, checked); ``phase`` is one of STARTUP_PHASE_NAMES and
    ``line`` the log line that entered it (None for ``process_start``).
    """
    if isinstance(lines_or_state, dict):
        if lines_or_state.get("phase") not in STARTUP_PHASE_NAMES:
            raise ValueError("not a start-up phase state: %r" % (lines_or_state,))
        return dict(lines_or_state)
    tracker = StartupPhases(engine)
    for line in lines_or_state:
        tracker.feed(line.rstrip("\r\n"))
    return tracker.state()
