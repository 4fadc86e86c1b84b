# SPDX-License-Identifier: GPL-3.0-or-later
"""``vllm serve`` command line, per vLLM version (each release's vllm/engine/arg_utils.py and cli_args.py).

Real parser semantics reproduced: FlexibleArgumentParser (``--flag_name`` -> ``--flag-name`` for
the part before the first ``.``/``=``; ``--json-arg.key value`` merged into a JSON dict;
``--model X`` moved to the positional), argparse errors on stderr with exit status 2:
unrecognized arguments are reported by the top-level ``vllm`` parser, invalid values by the
``vllm serve`` sub-parser.  Only the flags the collection uses are modelled.
"""
from __future__ import annotations

import argparse
import json
import re

from .versions import at_least

SUBCOMMANDS = ("chat", "complete", "serve", "bench", "collect-env", "run-batch")

_MOE_BACKENDS = [
    ("0.17.0", ["auto", "triton", "deep_gemm", "cutlass", "flashinfer_trtllm",
                "flashinfer_cutlass", "flashinfer_cutedsl", "marlin", "aiter"]),
    ("0.20.0", ["deep_gemm_mega_moe", "emulation"]),
    ("0.25.0", ["flashinfer_b12x", "humming", "triton_unfused", "flydsl", "hpc"]),
    ("0.28.0", ["batched_triton"]),
    ("0.29.0", ["b12x"]),
    ("0.32.0", ["flashinfer_moe_ep_cutedsl"]),
    ("0.33.0", ["aiter_mega_moe", "aiter_triton_mxfp4_bf16", "aiter_triton_mxfp4_mxfp4",
                "flashinfer_moe_ep_mega_deep_gemm", "rdna3"]),
]
_KV_CACHE_DTYPES = [
    ("0.0.0", ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"]),
    ("0.19.0", ["float16"]),
    ("0.22.0", ["int8_per_token_head", "fp8_per_token_head", "nvfp4"]),
    ("0.33.0", ["nvfp4_ds_mla"]),
]
_MAMBA_SSM_DTYPES = [("0.0.0", ["auto", "float32", "float16"]), ("0.22.0", ["bfloat16"])]
LINEAR_BACKENDS = ["auto", "cutlass", "flashinfer_cutlass", "flashinfer_cutedsl",
                   "flashinfer_trtllm", "flashinfer_cudnn", "flashinfer_b12x", "b12x", "marlin",
                   "humming", "triton", "deep_gemm", "torch", "aiter", "machete", "fbgemm",
                   "conch", "exllama", "emulation", "xpu", "xpu_woq"]
ATTENTION_BACKENDS = ["FLASH_ATTN", "TRITON_ATTN", "ROCM_ATTN", "ROCM_AITER_MLA",
                      "ROCM_AITER_FA", "ROCM_AITER_UNIFIED_ATTN", "TORCH_SDPA", "FLASHINFER",
                      "FLASHINFER_MLA", "TRITON_MLA", "CUTLASS_MLA", "FLASHMLA",
                      "FLASHMLA_SPARSE", "FLASH_ATTN_MLA", "NO_ATTENTION", "FLEX_ATTENTION",
                      "TREE_ATTN", "CPU_ATTN", "CUSTOM"]
DTYPES = ["auto", "half", "float16", "bfloat16", "float", "float32"]


def _cumulative(table, version: str) -> list[str]:
    values: list[str] = []
    for since, added in table:
        if at_least(version, since):
            values.extend(added)
    return values


def moe_backend_choices(version: str) -> list[str]:
    return sorted(_cumulative(_MOE_BACKENDS, version))


def kv_cache_dtype_choices(version: str) -> list[str]:
    return _cumulative(_KV_CACHE_DTYPES, version)


def mamba_ssm_dtype_choices(version: str) -> list[str]:
    return sorted(_cumulative(_MAMBA_SSM_DTYPES, version))


def mamba_cache_mode_choices(version: str) -> list[str]:
    return ["align", "none"] if at_least(version, "0.32.0") else ["all", "align", "none"]


def _backend_name(value: str) -> str:
    return value.lower().replace("-", "_")


def _attention_name(value: str) -> str:
    return value.upper()


def human_readable_int(value: str) -> int:
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        if suffix.islower():
            return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1))
    return int(value)


def human_readable_int_or_auto(value: str) -> int:
    if value.strip() in ("-1", "auto"):
        return -1
    return human_readable_int(value)


def loads(value: str):
    return json.loads(value)


class _Parser(argparse.ArgumentParser):
    """argparse with the real vLLM usage strings."""


def build_parser(version: str) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Return (top-level ``vllm`` parser, ``vllm serve`` sub-parser) for this version."""
    top = _Parser(prog="vllm", description="vLLM CLI")
    top.add_argument("-v", "--version", action="version", version=version)
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = None
    for name in SUBCOMMANDS:
        if name == "serve":
            serve = subparsers.add_parser(
                "serve", help="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
                usage="vllm serve [model_tag] [options]")
        else:
            subparsers.add_parser(name)
    assert serve is not None
    bool_flag = argparse.BooleanOptionalAction
    add = serve.add_argument
    add("model_tag", type=str, nargs="?", help="The model tag to serve.")
    # Frontend
    add("--host", type=str, default=None)
    add("--port", type=int, default=8000)
    add("--api-key", type=str, nargs="+", default=None)
    add("--served-model-name", type=str, nargs="+", default=None)
    add("--enable-auto-tool-choice", action=bool_flag, default=False)
    add("--tool-call-parser", type=str, default=None)
    add("--reasoning-parser", type=str, default="")
    add("--reasoning-parser-plugin", type=str, default="")
    add("--uvicorn-log-level", type=str, default="info",
        choices=["critical", "debug", "error", "info", "trace", "warning"])
    add("--disable-log-stats", action="store_true", default=False)
    add("--enable-log-requests", action=bool_flag, default=False)
    # Model
    add("--model", type=str, default="Qwen/Qwen3-0.6B")
    add("--trust-remote-code", action=bool_flag, default=False)
    # The commits of the model, its tokenizer and its remote code (every stored release, ModelConfig).
    add("--revision", type=str, default=None)
    add("--tokenizer-revision", type=str, default=None)
    add("--code-revision", type=str, default=None)
    add("--dtype", type=str, default="auto", choices=DTYPES)
    add("--seed", type=int, default=0)
    add("--max-model-len", type=human_readable_int_or_auto, default=None)
    add("--quantization", "-q", type=str, default=None)
    add("--enforce-eager", action=bool_flag, default=False)
    add("--generation-config", type=str, default="auto")
    add("--override-generation-config", type=loads, default={})
    # Parallel
    add("--tensor-parallel-size", "-tp", type=int, default=1)
    add("--pipeline-parallel-size", "-pp", type=int, default=1)
    add("--data-parallel-size", "-dp", type=int, default=1)
    # Cache
    add("--gpu-memory-utilization", type=float, default=0.9)
    add("--kv-cache-dtype", type=str, default="auto", choices=kv_cache_dtype_choices(version))
    add("--mamba-ssm-cache-dtype", type=str, default="auto", choices=mamba_ssm_dtype_choices(version))
    add("--mamba-cache-mode", type=str, default="none", choices=mamba_cache_mode_choices(version))
    add("--enable-prefix-caching", action=bool_flag, default=None)
    # Scheduler
    add("--max-num-seqs", type=int, default=None)
    add("--max-num-batched-tokens", type=human_readable_int, default=None)
    add("--enable-chunked-prefill", action=bool_flag, default=None)
    add("--async-scheduling", action=bool_flag, default=None)
    # Compilation
    add("--max-cudagraph-capture-size", type=int, default=None)
    # Attention / kernels
    add("--attention-backend", type=_attention_name, default=None, choices=ATTENTION_BACKENDS)
    if at_least(version, "0.17.0"):
        add("--moe-backend", type=_backend_name, default="auto", choices=moe_backend_choices(version))
        add("--performance-mode", type=str, default="balanced",
            choices=["balanced", "interactivity", "throughput"])
        add("--fail-on-environ-validation", action=bool_flag, default=False)
    if at_least(version, "0.18.0"):
        # vllm/engine/arg_utils.py (0.19.1): "Shutdown timeout in seconds. 0 = abort, >0 = wait."
        add("--shutdown-timeout", type=int, default=0)
    if at_least(version, "0.22.0"):
        add("--linear-backend", type=_backend_name, default="auto", choices=LINEAR_BACKENDS)
    # Speculative decoding
    spec_opts = ["--speculative-config", "-sc"] if at_least(version, "0.19.0") else ["--speculative-config"]
    add(*spec_opts, type=loads, default=None)
    if at_least(version, "0.22.0"):
        add("--spec-method", type=str, default=None)
        add("--spec-model", type=str, default=None)
        add("--spec-tokens", type=int, default=None)
    return top, serve


_KEY_PATTERN = re.compile(r"(?<=--)[^\.]*")


def _dotted_value(value: str):
    try:
        return json.loads(value)
    except ValueError:
        return value


def normalise_argv(args: list[str]) -> list[str]:
    """FlexibleArgumentParser.parse_args pre-processing (``args`` starts with ``serve``)."""
    args = list(args)
    if args and args[0] == "serve":
        for index, arg in enumerate(args):
            if re.match(r"^--model(=.+|$)", arg):
                if arg == "--model":
                    if index + 1 < len(args) and not args[index + 1].startswith("-"):
                        args = ["serve", args[index + 1], *args[1:index], *args[index + 2:]]
                else:
                    args = ["serve", arg.removeprefix("--model="), *args[1:index], *args[index + 1:]]
                break
    processed: list[str] = []
    for arg in args:
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                processed.append(f"{_KEY_PATTERN.sub(lambda m: m.group(0).replace('_', '-'), key, count=1)}={value}")
            else:
                processed.append(_KEY_PATTERN.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        else:
            processed.append(arg)
    # --json-arg.key value  ->  merged into --json-arg '{"key": value, ...}'
    merged: dict[str, dict] = {}
    rest: list[str] = []
    skip = False
    for index, arg in enumerate(processed):
        if skip:
            skip = False
            continue
        key_part, has_inline, inline = arg.partition("=")
        if arg.startswith("--") and "." in key_part:
            if has_inline:
                value = inline
            elif index + 1 < len(processed):
                value = processed[index + 1]
                skip = True
            else:
                rest.append(arg)
                continue
            flag, *keys = key_part.split(".")
            target = merged.setdefault(flag, {})
            for key in keys[:-1]:
                target = target.setdefault(key, {})
            target[keys[-1]] = _dotted_value(value)
            continue
        rest.append(arg)
    final: list[str] = []
    skip = False
    for index, arg in enumerate(rest):
        if skip:
            skip = False
            continue
        flag, has_inline, inline = arg.partition("=")
        if flag in merged:
            raw = inline if has_inline else (rest[index + 1] if index + 1 < len(rest) else "{}")
            skip = not has_inline
            try:
                base = json.loads(raw)
            except ValueError:
                final.extend([flag, raw])
                continue
            if isinstance(base, dict):
                base.update(merged.pop(flag))
            final.extend([flag, json.dumps(base)])
            continue
        final.append(arg)
    for flag, value in merged.items():
        final.extend([flag, json.dumps(value)])
    return final


def parse(argv: list[str], version: str) -> tuple[argparse.Namespace, dict]:
    """Parse ``vllm`` argv (``["serve", model, ...]``); return (namespace, non-default args).

    Exits with status 2 and the real argparse message on bad input (SystemExit propagates).
    """
    top, serve = build_parser(version)
    namespace = top.parse_args(normalise_argv(argv))
    if namespace.subparser != "serve":
        top.error("the simulator only implements `vllm serve`")
    if namespace.model_tag:
        namespace.model = namespace.model_tag
    non_default = {}
    for key, value in vars(namespace).items():
        if key == "subparser":
            continue
        if key == "model" and not namespace.model_tag:
            continue
        if value != serve.get_default(key):
            non_default[key] = value
    return namespace, non_default
