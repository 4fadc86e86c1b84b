# SPDX-License-Identifier: GPL-3.0-or-later
"""``python3 -m sglang.launch_server`` command line, per SGLang version (each release's sglang/srt/server_args.py).

SGLang uses a plain ``argparse.ArgumentParser``: no underscore normalisation, so
``--moe_runner_backend`` is an unrecognized argument; errors exit 2 with argparse's message,
prog ``launch_server.py``.  Only the flags the collection uses are modelled.
"""
from __future__ import annotations

import argparse

from .versions import at_least, before

_SPEC_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]


def fp8_gemm_choices(version: str) -> list[str]:
    choices = ["auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_deepgemm", "cutlass", "triton", "aiter"]
    if at_least(version, "0.5.23"):
        choices += ["flashinfer_cutlass", "flashinfer_cutedsl"]
    return choices


def moe_runner_choices(version: str) -> list[str]:
    choices = ["auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
               "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass"]
    if at_least(version, "0.5.12"):
        choices.append("marlin")
    return choices


def reasoning_parser_choices(version: str) -> list[str]:
    choices = ["deepseek-r1", "deepseek-v3", "glm45", "gpt-oss", "kimi", "kimi_k2", "minimax",
               "minimax-append-think", "qwen3", "qwen3-thinking", "step3"]
    if at_least(version, "0.5.10"):
        choices.append("nemotron_3")
    elif at_least(version, "0.5.7"):
        choices.append("nano_v3")
    return choices


TOOL_CALL_PARSERS = ["deepseekv3", "deepseekv31", "glm", "glm45", "gpt-oss", "kimi_k2", "llama3",
                     "mistral", "pythonic", "qwen", "qwen25", "qwen3_coder", "step3"]
ATTENTION_BACKENDS = ["triton", "torch_native", "flex_attention", "cutlass_mla", "fa3", "fa4",
                      "flashinfer", "flashmla", "trtllm_mla", "trtllm_mha", "dual_chunk_flash_attn",
                      "aiter", "wave", "intel_amx", "ascend"]
KV_CACHE_DTYPES = ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"]


def schedule_policies(version: str) -> list[str]:
    policies = ["lpm", "random", "fcfs", "dfs-weight", "lof"]
    if at_least(version, "0.5.3"):
        policies.append("priority")
    if at_least(version, "0.5.8"):
        policies.append("routing-key")
    if at_least(version, "0.5.20"):
        policies.append("hrrn")
    if at_least(version, "0.5.21"):
        policies.append("shortest-prefill-first")
    return policies


class _DeprecatedAlias(argparse.Action):
    """--mamba-scheduler-strategy on 0.5.14-0.5.19: stores into mamba_radix_cache_strategy."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.deprecated_flags = getattr(namespace, "deprecated_flags", []) + [
            "'--mamba-scheduler-strategy' is deprecated and will be removed in a future release. "
            "Use '--mamba-radix-cache-strategy' instead."]
        setattr(namespace, self.dest, values)


def build_parser(version: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="launch_server.py")
    add = parser.add_argument
    add("--model-path", "--model", type=str, required=True, dest="model_path")
    add("--tokenizer-path", type=str, default=None)
    # The model's commit (every stored release, sglang/srt/server_args.py).
    add("--revision", type=str, default=None)
    add("--host", type=str, default="127.0.0.1")
    add("--port", type=int, default=30000)
    add("--served-model-name", type=str, default=None)
    add("--trust-remote-code", action="store_true")
    add("--dtype", type=str, default="auto", choices=["auto", "half", "float16", "bfloat16", "float", "float32"])
    add("--quantization", type=str, default=None)
    add("--context-length", type=int, default=None)
    add("--tp-size", "--tensor-parallel-size", type=int, default=1, dest="tp_size")
    add("--ep-size", "--expert-parallel-size", type=int, default=1, dest="ep_size")
    add("--dp-size", "--data-parallel-size", type=int, default=1, dest="dp_size")
    add("--mem-fraction-static", type=float, default=None)
    add("--max-running-requests", type=int, default=None)
    add("--chunked-prefill-size", type=int, default=None)
    add("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES)
    add("--schedule-policy", type=str, default="fcfs", choices=schedule_policies(version))
    add("--attention-backend", type=str, default=None, choices=ATTENTION_BACKENDS)
    add("--moe-runner-backend", type=str, default="auto", choices=moe_runner_choices(version))
    add("--disable-radix-cache", action="store_true")
    add("--disable-cuda-graph", action="store_true")
    add("--enable-metrics", action="store_true")
    add("--enable-cache-report", action="store_true")
    add("--decode-log-interval", type=int, default=40)
    add("--random-seed", type=int, default=None)
    add("--api-key", type=str, default=None)
    add("--tool-call-parser", type=str, default=None, choices=TOOL_CALL_PARSERS)
    add("--reasoning-parser", type=str, default=None, choices=reasoning_parser_choices(version))
    add("--speculative-algorithm", type=str, default=None, choices=_SPEC_ALGORITHMS)
    add("--speculative-draft-model-path", type=str, default=None)
    if at_least(version, "0.5.2"):  # the engine catalog: absent from 0.5.1
        add("--speculative-draft-model-revision", type=str, default=None)
    add("--speculative-num-steps", type=int, default=None)
    add("--speculative-eagle-topk", type=int, default=None)
    add("--speculative-num-draft-tokens", type=int, default=None)
    if at_least(version, "0.5.5"):
        add("--speculative-moe-runner-backend", type=str, default=None, choices=moe_runner_choices(version))
    if at_least(version, "0.5.7"):
        add("--fp8-gemm-backend", type=str, default="auto", choices=fp8_gemm_choices(version),
            dest="fp8_gemm_runner_backend")
        add("--speculative-draft-attention-backend", type=str, default=None, choices=ATTENTION_BACKENDS)
    if at_least(version, "0.5.8"):
        add("--fp4-gemm-backend", type=str, default="auto", dest="fp4_gemm_runner_backend",
            choices=["auto", "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass",
                     "flashinfer_trtllm", "marlin"])
    if at_least(version, "0.5.10"):
        add("--linear-attn-backend", type=str, default="triton", choices=["triton", "cutedsl", "flashinfer"])
    if at_least(version, "0.5.2"):
        add("--mamba-ssm-dtype", type=str, default="float32", choices=["float32", "bfloat16", "float16"])
    strategies = ["auto", "no_buffer", "extra_buffer"]
    if at_least(version, "0.5.13"):
        strategies.append("extra_buffer_lazy")
    if at_least(version, "0.5.7") and before(version, "0.5.14"):
        add("--mamba-scheduler-strategy", type=str, default="auto", choices=strategies)
    if at_least(version, "0.5.14"):
        add("--mamba-radix-cache-strategy", type=str, default="auto", choices=strategies)
        if before(version, "0.5.20"):
            add("--mamba-scheduler-strategy", type=str, choices=strategies, action=_DeprecatedAlias,
                dest="mamba_radix_cache_strategy")
    return parser


def parse(argv: list[str], version: str) -> argparse.Namespace:
    """Parse launch_server argv; exits 2 with argparse's message on bad input."""
    namespace = build_parser(version).parse_args(argv)
    if not hasattr(namespace, "deprecated_flags"):
        namespace.deprecated_flags = []
    return namespace
