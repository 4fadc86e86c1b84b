# SPDX-License-Identifier: GPL-3.0-or-later
"""The field reports' command lines and GPU rows the engine simulator's tests share; puts the simulator's tree
on sys.path. A module of its own, not conftest.py: several test folders have a conftest, and the one
imported first under that name would shadow the others."""
from __future__ import annotations

import os
import sys

ENGINE_SIM_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "lab", "engine_sim"))
if ENGINE_SIM_DIR not in sys.path:
    sys.path.insert(0, ENGINE_SIM_DIR)

GB10_ROWS = "0, NVIDIA GB10, 12.1, [N/A]\n"
RTX_PRO_6000_ROWS = "".join(f"{i}, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887\n" for i in range(8))

# The GB10 field report: docker-vllm-nemotron-3-super-120b-nvfp4-mtp.sh (latency profile), verbatim args.
SEED000_MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
SEED000_ENV = {"TOKENIZERS_PARALLELISM": "false", "VLLM_NVFP4_GEMM_BACKEND": "marlin",
               "VLLM_USE_FLASHINFER_MOE_FP4": "0", "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm"}
SEED000_MTP_SPEC = '{"method":"mtp","num_speculative_tokens":2,"moe_backend":"triton"}'


def seed000_args(max_num_seqs: str = "4", spec: str | None = SEED000_MTP_SPEC,
                 attention: str = "TRITON_ATTN", moe_backend: str | None = "marlin") -> list[str]:
    args = [SEED000_MODEL, "--served-model-name", SEED000_MODEL, "--trust-remote-code", "--dtype", "auto",
            "--tensor-parallel-size", "1", "--pipeline-parallel-size", "1", "--data-parallel-size", "1",
            "--max-model-len", "262144", "--max-num-seqs", max_num_seqs, "--gpu-memory-utilization", "0.90",
            "--kv-cache-dtype", "fp8", "--mamba-ssm-cache-dtype", "float32", "--attention-backend", attention]
    if moe_backend:
        args += ["--moe-backend", moe_backend]
    args += ["--async-scheduling", "--enable-chunked-prefill", "--max-cudagraph-capture-size", "128"]
    if spec:
        args += ["--speculative_config", spec]
    args += ["--reasoning-parser", "nemotron_v3", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
             "--override-generation-config", '{"temperature":1.0,"top_p":0.95}']
    return args


# The g7e field report: the SGLang launch command and the MTP/EAGLE additions, verbatim.
SEED002_ENV = {"SGLANG_DISABLE_DEEP_GEMM": "1"}
SEED002_ARGS = ["--model-path", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "--tp-size", "8", "--ep-size", "8",
                "--context-length", "262144", "--kv-cache-dtype", "fp8_e4m3", "--mem-fraction-static", "0.85",
                "--fp8-gemm-backend", "triton", "--moe-runner-backend", "triton", "--schedule-policy", "lpm",
                "--mamba-scheduler-strategy", "no_buffer", "--reasoning-parser", "nemotron_3",
                "--tool-call-parser", "qwen3_coder", "--enable-metrics", "--enable-cache-report",
                "--trust-remote-code", "--host", "0.0.0.0", "--port", "8000"]
SEED002_EAGLE = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", "4", "--speculative-moe-runner-backend", "triton",
                 "--disable-radix-cache", "--mem-fraction-static", "0.80"]


def without(args: list[str], flag: str, has_value: bool = True) -> list[str]:
    """Drop one flag (and its value) from an argv list."""
    index = args.index(flag)
    return args[:index] + args[index + (2 if has_value else 1):]


def replace_value(args: list[str], flag: str, value: str) -> list[str]:
    index = args.index(flag)
    return args[:index + 1] + [value] + args[index + 2:]
