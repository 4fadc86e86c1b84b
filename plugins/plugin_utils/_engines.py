# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What the collection knows about each engine, in one place.

The container's launcher and ports, how flags are spelt, which flag sets the memory the engine
claims at start, what the OpenAI API calls the model, the Prometheus metric names, and which
``expect`` key each flag determines. The deployment plan (``_deployment``), the launch renderer
(``_profile``) and the lint read it; no role or playbook spells an engine name, flag or metric.
"""
from __future__ import annotations

import json

ENGINES = {
    # vLLM's image has ENTRYPOINT ["vllm", "serve"]: the model is the first positional.
    "vllm": {"label": "vLLM", "command": [], "model_flag": None, "default_port": 8000,
             "underscores_are_hyphens": True,
             # torch.compile / CUDA-graph artifacts (VLLM_CACHE_ROOT), Triton and FlashInfer JIT.
             "cache_paths": {"vllm": "/root/.cache/vllm", "triton": "/root/.triton",
                             "flashinfer": "/root/.cache/flashinfer",
                             "torchinductor": "/tmp/torchinductor_root"}},
    # SGLang's image has no entrypoint: the launcher module is the command.
    "sglang": {"label": "SGLang", "command": ["python3", "-m", "sglang.launch_server"], "model_flag": "--model-path",
               "default_port": 30000, "underscores_are_hyphens": False,
               # Triton kernels, FlashInfer JIT, torch.compile (inductor) and DeepGEMM JIT.
               "cache_paths": {"triton": "/root/.triton", "flashinfer": "/root/.cache/flashinfer",
                               "torchinductor": "/tmp/torchinductor_root",
                               "deep_gemm": "/root/.deep_gemm"}},
}

# The share of memory the engine claims at start, and its default when the flag is absent.
# vLLM: --gpu-memory-utilization (vllm/engine/arg_utils.py, CacheConfig.gpu_memory_utilization = 0.9).
# SGLang: --mem-fraction-static (sglang/srt/server_args.py); with no flag SGLang picks it from the
# GPU's memory at start, so the plan assumes vLLM's 0.9 as an upper bound for the memory check.
MEMORY_FLAGS = {
    "vllm": (("gpu-memory-utilization",), 0.9),
    "sglang": (("mem-fraction-static",), 0.9),
}

# The /proc/meminfo field the engine's start-up memory check compares with its share on unified
# memory (GB10). CUDA's free memory (cudaMemGetInfo) is MemFree there, the page cache counted as
# used; vLLM replaces it with psutil.virtual_memory().available (MemAvailable) on integrated GPUs
# (vllm/utils/mem_utils.py MemorySnapshot.measure, first by compute capability (12, 1), from
# vLLM PR 35356 by is_integrated; vLLM issue 48140's reporter traced its GB10 ValueError to
# MemAvailable). SGLang's get_available_gpu_memory does the same on integrated GPUs (ollama issue
# 12283 quotes it). plugins/module_utils/_unified_memory.py applies it; MemFree is what an engine
# without the correction would read.
UNIFIED_MEMORY_READS = {
    "vllm": "MemAvailable",
    "sglang": "MemAvailable",
}

# The env var the engine reads its API key from, when --api-key is not given: vLLM's API server
# checks `args.api_key or envs.VLLM_API_KEY` (vllm/entrypoints/openai/api_server.py) and then
# wants "Authorization: Bearer <key>" on /v1; SGLang reads its key only from --api-key.
API_KEY_ENV = {"vllm": "VLLM_API_KEY", "sglang": None}

# The engine's graceful shutdown: on SIGTERM refuse new requests (503), finish the in-flight ones
# for up to N seconds, then exit. vLLM >= 0.18 --shutdown-timeout (vllm/entrypoints/launcher.py,
# vllm/v1/engine/core.py _handle_shutdown; default 0: abort at once); which releases have it is
# the engine catalog's to say. SGLang has no such flag (0.5.x): it exits on SIGTERM.
GRACEFUL_SHUTDOWN_FLAG = {"vllm": "shutdown-timeout", "sglang": None}

# What the OpenAI-compatible API calls the model: --served-model-name, else the model itself.
SERVED_MODEL_NAME_FLAGS = {"vllm": ("served-model-name",), "sglang": ("served-model-name",)}

# Prometheus metric names on /metrics; None: the engine exports no such metric. Verified in the
# released wheels: vLLM 0.19.0 vllm/v1/metrics/loggers.py (Counter("vllm:generation_tokens") is
# exposed as ..._total and incremented every engine step); SGLang 0.5.13
# sglang/srt/observability/metrics_collector.py (generation_tokens_total is incremented in
# observe_one_finished_request, only when a request finishes). ``tokens_counted`` says which: the
# watchdog needs more evidence of a frozen counter for ``finish``.
METRICS = {
    "vllm": {
        "running": "vllm:num_requests_running",
        "waiting": "vllm:num_requests_waiting",
        "generation_tokens": "vllm:generation_tokens_total",
        "kv_cache_usage": "vllm:kv_cache_usage_perc",
        "spec_drafts": "vllm:spec_decode_num_drafts_total",
        "spec_accepted": "vllm:spec_decode_num_accepted_tokens_total",
        "spec_accepted_per_pos": "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        "spec_accept_length": None,
        "tokens_counted": "step",
    },
    "sglang": {
        "running": "sglang:num_running_reqs",
        "waiting": "sglang:num_queue_reqs",
        "generation_tokens": "sglang:generation_tokens_total",
        "kv_cache_usage": "sglang:token_usage",
        "spec_drafts": None,
        "spec_accepted": None,
        "spec_accepted_per_pos": None,
        "spec_accept_length": "sglang:spec_accept_length",
        "tokens_counted": "finish",
    },
}

# Latency histograms on /metrics (exposed as <name>_bucket, _sum, _count): vLLM 0.17 -> 0.33
# vllm/v1/metrics/loggers.py; SGLang 0.5.5 -> 0.5.23 sglang/srt/metrics/collector.py. The
# monitoring rules and dashboards read them (plugin_utils/_monitoring.py).
# Prompt tokens processed (a counter): vLLM counts each prefill chunk as its engine step runs it,
# SGLang when a request finishes (same sources). A long prefill leaves the generated-token
# counter flat while this one moves: the monitoring's wedge rule reads both.
PROMPT_TOKENS = {"vllm": "vllm:prompt_tokens_total", "sglang": "sglang:prompt_tokens_total"}
LATENCY_HISTOGRAMS = {
    "vllm": {"ttft": "vllm:time_to_first_token_seconds", "itl": "vllm:inter_token_latency_seconds",
             "e2e": "vllm:e2e_request_latency_seconds"},
    "sglang": {"ttft": "sglang:time_to_first_token_seconds", "itl": "sglang:inter_token_latency_seconds",
               "e2e": "sglang:e2e_request_latency_seconds"},
}

# Endpoints every supported release serves (vllm/entrypoints/openai/api_server.py;
# sglang/srt/entrypoints/http_server.py).
ENDPOINTS = {
    "vllm": {"chat": "/v1/chat/completions", "completions": "/v1/completions", "metrics": "/metrics",
             "health": "/health", "version": "/version", "models": "/v1/models"},
    "sglang": {"chat": "/v1/chat/completions", "completions": "/v1/completions", "metrics": "/metrics",
               "health": "/health", "version": "/get_server_info", "models": "/v1/models"},
}


def _upper(value):
    text = str(value).strip()
    return None if text.lower() in ("", "auto", "none") else text.upper()


def _lower(value):
    text = str(value).strip()
    return None if text.lower() in ("", "auto") else text.lower()


def _int(value):
    return int(value)


def _bool(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def _str_not_auto(value):
    text = str(value).strip()
    return None if text.lower() in ("", "auto") else text


# Which ``expect`` key a flag determines: (key, flags, convert, value when the flag is negated or
# false). The backend proof reads each key from the engine's own log (module_utils/_log_patterns).
# A flag set to "auto" leaves the choice to the engine: nothing is derived, the profile's own
# `expect` (if any) says what the engine picks on this hardware.
EXPECT_FLAGS = {
    "vllm": (
        ("max_num_seqs", ("max-num-seqs",), _int, None),
        ("tensor_parallel_size", ("tensor-parallel-size", "tp"), _int, None),
        ("kv_cache_dtype", ("kv-cache-dtype",), _str_not_auto, None),
        ("attention_backend", ("attention-backend",), _upper, None),
        ("moe_backend", ("moe-backend",), _upper, None),
        ("chunked_prefill", ("enable-chunked-prefill",), _bool, False),
        ("prefix_caching", ("enable-prefix-caching",), _bool, False),
        # vLLM 0.33's EnableDisableAction also accepts --disable-<feature>.
        ("chunked_prefill", ("disable-chunked-prefill",), lambda value: not _bool(value), True),
        ("prefix_caching", ("disable-prefix-caching",), lambda value: not _bool(value), True),
    ),
    "sglang": (
        ("max_num_seqs", ("max-running-requests",), _int, None),
        ("tensor_parallel_size", ("tp-size", "tensor-parallel-size", "tp"), _int, None),
        ("kv_cache_dtype", ("kv-cache-dtype",), _str_not_auto, None),
        ("attention_backend", ("attention-backend",), _upper, None),
        ("moe_backend", ("moe-runner-backend",), _upper, None),
        ("linear_backend", ("fp8-gemm-backend",), _upper, None),
        ("draft_moe_backend", ("speculative-moe-runner-backend",), _upper, None),
        ("prefix_caching", ("disable-radix-cache",), lambda value: not _bool(value), True),
    ),
}
# Defaults that hold in every supported release when the flag is absent.
EXPECT_DEFAULTS = {
    "vllm": {"tensor_parallel_size": 1},
    # The radix (prefix) cache is on unless --disable-radix-cache (sglang/srt/server_args.py).
    "sglang": {"tensor_parallel_size": 1, "prefix_caching": True},
}


def flag_key(engine, flag):
    """The identity of a flag for matching: vLLM treats ``_`` as ``-``, SGLang does not."""
    flag = str(flag).lstrip("-")
    if ENGINES.get(engine, {}).get("underscores_are_hyphens"):
        return flag.replace("_", "-")
    return flag


def label(engine):
    """The engine's display name."""
    return ENGINES.get(engine, {}).get("label", str(engine))


def _negated(engine, key):
    """The flag a ``--no-`` spelling negates, or None."""
    return key[3:] if key.startswith("no-") else None


def find_arg(engine, args, names):
    """``(written flag, value, negated)`` of the last of ``names`` in ``args``, or None if absent.

    ``flag: false`` or null renders nothing, so it is absent; ``--no-<flag>`` is the flag negated.
    """
    wanted = {flag_key(engine, name) for name in names}
    found = None
    for flag, value in (args or {}).items():
        key = flag_key(engine, flag)
        if value is None or value is False:
            continue
        if key in wanted:
            found = (flag, value, False)
        elif _negated(engine, key) in wanted:
            found = (flag, value, True)
    return found


def arg_value(engine, args, names, default=None):
    """The value of the last of ``names`` in ``args`` (``True`` for a bare flag), else ``default``."""
    found = find_arg(engine, args, names)
    return default if found is None or found[2] else found[1]


def memory_fraction(engine, args):
    """The share of memory (of MemTotal on unified memory, of each GPU otherwise) claimed at start."""
    flags, default = MEMORY_FLAGS[engine]
    return float(arg_value(engine, args, flags, default))


def served_model_name(engine, args, model):
    """What the OpenAI API calls the model (the first name when several are given)."""
    value = arg_value(engine, args, SERVED_MODEL_NAME_FLAGS[engine])
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, str) and " " in value.strip():
        value = value.split()[0]
    return str(value) if value not in (None, True, "") else str(model)


def speculative_config(args):
    """vLLM's effective ``--speculative-config``: the JSON value, then its dotted sub-keys in order.

    vLLM's FlexibleArgumentParser merges ``--speculative-config.<key> value`` into the JSON
    argument, so an override of one sub-key keeps the others. None when speculation is off.
    """
    config = None
    for flag, value in (args or {}).items():
        key = flag_key("vllm", flag)
        head, _dot, sub = key.partition(".")
        if head != "speculative-config" or value is None or value is False:
            continue
        if not sub:
            if isinstance(value, str):
                value = json.loads(value)
            config = dict(value or {})
            continue
        config = dict(config or {})
        target = config
        parts = str(flag).lstrip("-").split(".")[1:]
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        target[parts[-1]] = value
    return config


def _speculative_expect(engine, args):
    """Speculative decoding keys: method, tokens per step, the draft's MoE backend."""
    if engine == "vllm":
        config = speculative_config(args)
        if not config or not config.get("method"):
            return {"speculative_method": "none"} if config is None else {}
        derived = {"speculative_method": str(config["method"]).lower()}
        if config.get("num_speculative_tokens") is not None:
            derived["num_speculative_tokens"] = int(config["num_speculative_tokens"])
        backend = config.get("moe_backend")
        if backend is not None and _upper(backend):
            derived["draft_moe_backend"] = _upper(backend)
        return derived
    algorithm = arg_value(engine, args, ("speculative-algorithm",))
    if algorithm in (None, True):
        return {"speculative_method": "none"}
    derived = {"speculative_method": str(algorithm).lower()}
    steps = arg_value(engine, args, ("speculative-num-steps",))
    if steps not in (None, True):
        derived["num_speculative_tokens"] = int(steps)
    return derived


def derive_expect(engine, args):
    """``{key: (value, source)}``: what the final flags determine the engine's log must show."""
    derived = {}
    for key, value in EXPECT_DEFAULTS.get(engine, {}).items():
        derived[key] = (value, "%s's default (flag absent)" % label(engine))
    for key, value in _speculative_expect(engine, args).items():
        derived[key] = (value, "the speculative decoding flags")
    for key, names, convert, negated_value in EXPECT_FLAGS.get(engine, ()):
        found = find_arg(engine, args, names)
        if found is None:
            continue
        flag, value, negated = found
        source = "args.%s" % flag
        if negated:
            if negated_value is not None:
                derived[key] = (negated_value, source)
            continue
        converted = convert(value)
        if converted is not None:
            derived[key] = (converted, source)
    return derived
