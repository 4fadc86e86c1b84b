# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure decision functions: (engine, version, parsed flags, env, GPU, model) -> backends/fault.

No I/O here: the runner prints what these functions decide, the unit tests check them directly.
Version boundaries and texts come from each release's source (the engine catalog, the log
patterns' table); the failure modes from the field reports (the GB10 field report: vLLM; the g7e
field report: SGLang on RTX PRO 6000).

Faults reproduced (``Fault.name``):
  vLLM  speculative_config_unexpected_key  nested moe_backend (< 0.19) / attention_backend (< 0.21)
                                           / kv_cache_dtype (< 0.26): pydantic ValidationError
        invalid_reasoning_parser / invalid_tool_call_parser   KeyError at server setup
        async_scheduling_unsupported_spec  --async-scheduling with a non EAGLE/MTP method
        unknown_environment_variable       only with --fail-on-environ-validation
        invalid_env_value                  VLLM_NVFP4_GEMM_BACKEND with a bad value
        attention_backend_invalid          forced backend not valid on this GPU/model
        nvfp4_moe_backend_unsupported      --moe-backend not an NVFP4 MoE backend / not on this GPU
        unquantized_moe_backend_unsupported  --moe-backend marlin reaching the MTP head's
                                           unquantized MoE (no nested speculative moe_backend)
        kv_cache_no_memory                 weights + draft leave no room for the KV cache
        flashinfer_mtp_cuda_graph_crash    FlashInfer attention + MTP on sm_121 (GB10)
        illegal_memory_access_on_first_spec  image fault (ENGINE_SIM_FAULT), first spec request
        crash_on_cuda_graph_capture        image fault (ENGINE_SIM_FAULT): with speculative decoding
                                           on, torch.compile dies in CUDA graph capture at start-up
                                           (the GB10 write-up: a nightly that crashed mid-start-up)
  SGLang mamba_extra_buffer_unsupported   --mamba-scheduler-strategy extra_buffer on NemotronH
        nemotronh_triton_attention          triton attention on NemotronH (0.5.7-0.5.18)
        trtllm_mha_sm120                    trtllm_mha attention on SM12x
        speculative_moe_flashinfer_trtllm   explicit flashinfer_trtllm draft MoE runner
        speculative_radix_cache             EAGLE on a hybrid model without --disable-radix-cache
        deep_gemm_sm120                     FP8 GEMM/MoE resolved to DeepGEMM on SM12x
        cutlass_fp8_sm120                   --fp8-gemm-backend cutlass on SM12x
        eagle_draft_moe_oom                 EAGLE without --speculative-moe-runner-backend triton
                                            on SM12x: OOM-killed while loading the draft (exit 137)
        kv_cache_no_memory                  not enough memory for the KV cache
  both  no_gpu                             started without --gpus (nvidia-smi absent)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .gpu import Gpu
from .models import ModelFacts
from .versions import at_least, before

try:  # in the image: tests/lab/lab.sh copies the collection's table into the build context
    from . import _kernel_support as kernels
except ImportError:  # from the repository: the collection's own file
    import importlib.util as _util
    import os as _os
    _path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), *[_os.pardir] * 4,
                          "plugins", "plugin_utils", "_kernel_support.py")
    _spec = _util.spec_from_file_location("engine_sim._kernel_support", _path)
    kernels = _util.module_from_spec(_spec)
    _spec.loader.exec_module(kernels)


@dataclass(frozen=True)
class Fault:
    name: str
    phase: str  # config | engine_init | draft_load | cuda_graph | first_spec_request
    message: str  # the final exception text, possibly several lines
    exit_code: int = 1


IMAGE_FAULTS = ("illegal_memory_access_on_first_spec", "crash_on_cuda_graph_capture")


def no_gpu_fault(engine: str) -> Fault:
    if engine == "vllm":
        return Fault("no_gpu", "config",
                     "RuntimeError: Failed to infer device type, please set the environment variable "
                     "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue.")
    return Fault("no_gpu", "config",
                 "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
                 "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


# ----------------------------------------------------------------------------------------- vLLM

SPEC_KEYS = {"method", "model", "num_speculative_tokens", "quantization", "max_model_len",
             "draft_tensor_parallel_size", "disable_padded_drafter_batch", "revision",
             "code_revision", "prompt_lookup_max", "prompt_lookup_min", "speculative_token_tree",
             "disable_by_batch_size", "enforce_eager", "parallel_drafting"}
SPEC_KEYS_SINCE = {"moe_backend": "0.19.0", "attention_backend": "0.21.0", "kv_cache_dtype": "0.26.0"}
SPEC_METHODS = ("ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "eagle", "eagle3",
                "deepseek_mtp", "mtp", "ernie_mtp", "qwen3_next_mtp", "mimo_mtp", "glm4_moe_mtp",
                "longcat_flash_mtp", "pangu_ultra_moe_mtp")
ASYNC_SPEC_METHODS = ("eagle", "eagle3", "mtp", "deepseek_mtp", "qwen3_next_mtp", "draft_model",
                      "ernie_mtp", "mimo_mtp", "glm4_moe_mtp", "longcat_flash_mtp", "pangu_ultra_moe_mtp")

VLLM_REASONING_PARSERS = ("deepseek_r1", "deepseek_v3", "ernie45", "glm45", "gpt_oss", "granite",
                          "hunyuan_a13b", "kimi_k2", "minimax_m2", "minimax_m2_append_think",
                          "mistral", "olmo3", "qwen3", "seed_oss", "step3")
VLLM_TOOL_PARSERS = ("deepseek_v3", "deepseek_v31", "glm45", "granite", "hermes", "hunyuan_a13b",
                     "internlm", "jamba", "kimi_k2", "llama3_json", "llama4_json", "minimax_m2",
                     "mistral", "openai", "phi4_mini_json", "pythonic", "qwen3_coder", "qwen3_xml",
                     "seed_oss", "step3", "xlam")

KNOWN_VLLM_ENV = {"VLLM_FLASHINFER_ALLREDUCE_BACKEND", "VLLM_LOGGING_LEVEL", "VLLM_LOGGING_PREFIX",
                  "VLLM_LOGGING_COLOR", "VLLM_LOGGING_CONFIG_PATH", "VLLM_CONFIGURE_LOGGING",
                  "VLLM_LOG_STATS_INTERVAL", "VLLM_DISABLE_LOG_LOGO", "VLLM_TARGET_DEVICE",
                  "VLLM_USE_FLASHINFER_MOE_FP16", "VLLM_USE_FLASHINFER_MOE_FP8", "VLLM_HOST_IP",
                  "VLLM_PORT", "VLLM_API_KEY", "VLLM_CACHE_ROOT", "VLLM_USAGE_SOURCE",
                  "VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK", "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH",
                  "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_WORKER_MULTIPROC_METHOD",
                  "VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_SERVER_DEV_MODE"}
REMOVED_IN_0_24 = ("VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_FLASHINFER_MOE_BACKEND")

NVFP4_GEMM_ENV_CHOICES = {"flashinfer-cudnn": "FLASHINFER_CUDNN", "flashinfer-trtllm": "FLASHINFER_TRTLLM",
                          "flashinfer-cutlass": "FLASHINFER_CUTLASS", "cutlass": "VLLM_CUTLASS",
                          "marlin": "MARLIN"}
NVFP4_LINEAR_KERNELS = {"VLLM_CUTLASS": "CutlassNvFp4LinearKernel",
                        "FLASHINFER_CUTLASS": "FlashInferCutlassNvFp4LinearKernel",
                        "FLASHINFER_TRTLLM": "FlashInferTrtllmNvFp4LinearKernel",
                        "FLASHINFER_CUDNN": "FlashInferCudnnNvFp4LinearKernel",
                        "FLASHINFER_CUTEDSL": "FlashInferCuteDslNvFp4LinearKernel",
                        "FLASHINFER_B12X": "FlashInferB12xNvFp4LinearKernel",
                        "B12X": "B12xNvFp4LinearKernel", "MARLIN": "MarlinNvFp4LinearKernel",
                        "HUMMING": "HummingNvFp4LinearKernel", "EMULATION": "EmulationNvFp4LinearKernel",
                        "TORCH": "TorchNvFp4LinearKernel"}
UNQUANTIZED_DISPLAY = {"triton": "TRITON", "batched_triton": "BATCHED_TRITON",
                       "flashinfer_trtllm": "FlashInfer TRTLLM", "flashinfer_cutlass": "FlashInfer CUTLASS",
                       "aiter": "ROCm AITER"}
UNQUANTIZED_POTENTIAL = ["FlashInfer TRTLLM", "FlashInfer CUTLASS", "TRITON", "BATCHED_TRITON"]
FP8_MOE_BACKENDS = ("FLASHINFER_TRTLLM", "FLASHINFER_CUTLASS", "DEEPGEMM", "BATCHED_DEEPGEMM", "MARLIN",
                    "TRITON", "BATCHED_TRITON", "AITER", "VLLM_CUTLASS", "BATCHED_VLLM_CUTLASS", "XPU")


def nvfp4_moe_potential(version: str) -> list[str]:
    """The NVFP4 MoE candidates in auto order, as ``Using '...' NvFp4 MoE backend`` lists them."""
    if before(version, "0.20.0"):
        return ["FLASHINFER_TRTLLM", "FLASHINFER_CUTEDSL", "FLASHINFER_CUTLASS", "VLLM_CUTLASS", "MARLIN"]
    order = ["FLASHINFER_TRTLLM", "FLASHINFER_CUTEDSL", "FLASHINFER_CUTEDSL_BATCHED",
             "FLASHINFER_CUTLASS", "VLLM_CUTLASS", "MARLIN"]
    if at_least(version, "0.25.0"):
        order.append("HUMMING")
    return order + ["EMULATION"]


def nvfp4_moe_cli_map(version: str) -> dict[str, str]:
    """``map_nvfp4_backend``: --moe-backend value -> NvFp4MoeBackend."""
    mapping = {"cutlass": "VLLM_CUTLASS", "flashinfer_trtllm": "FLASHINFER_TRTLLM",
               "flashinfer_cutlass": "FLASHINFER_CUTLASS", "flashinfer_cutedsl": "FLASHINFER_CUTEDSL",
               "marlin": "MARLIN"}
    for since, key, value in (("0.20.0", "emulation", "EMULATION"), ("0.22.0", "flashinfer_b12x", "FLASHINFER_B12X"),
                              ("0.25.0", "humming", "HUMMING"), ("0.29.0", "b12x", "B12X"),
                              ("0.32.0", "flashinfer_moe_ep_cutedsl", "FLASHINFER_MOE_EP_CUTEDSL")):
        if at_least(version, since):
            mapping[key] = value
    return mapping


def nvfp4_moe_supported(backend: str, version: str, gpu: Gpu) -> bool:
    """Device gate of each NVFP4 MoE kernel: the collection's table, shared with the lint
    (plugins/plugin_utils/_kernel_support.py NVFP4_MOE_SM12X)."""
    return kernels.nvfp4_moe_supported(backend, gpu.capability[0], version, at_least)


def unquantized_moe_cli_keys(version: str) -> list[str]:
    if at_least(version, "0.28.0"):
        return ["triton", "batched_triton", "flashinfer_trtllm", "flashinfer_cutlass", "aiter"]
    return ["triton", "flashinfer_trtllm", "flashinfer_cutlass", "aiter"]


def unquantized_moe_exempt(version: str) -> tuple[str, ...]:
    exempt = ["auto"]
    if at_least(version, "0.25.0"):
        exempt.append("humming")
    if at_least(version, "0.33.0"):
        exempt.append("marlin")
    return tuple(exempt)


def attention_choice(gpu: Gpu) -> tuple[str, list[str]]:
    """(auto-selected attention backend, potential backends) on this GPU."""
    if gpu.capability[0] in (10, 12):
        return "FLASHINFER", ["FLASHINFER", "TRITON_ATTN"]
    return "FLASH_ATTN", ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"]


def attention_invalid_reason(backend: str, gpu: Gpu) -> str | None:
    if backend.startswith("ROCM") or backend in ("CPU_ATTN", "CUSTOM"):
        return "device not supported"
    if "MLA" in backend:
        return "MLA not supported"
    if backend == "FLASH_ATTN" and gpu.capability[0] in (10, 12):
        return "compute capability not supported"
    if backend == "NO_ATTENTION":
        return "model has attention layers"
    return None


@dataclass
class VllmPlan:
    version: str
    model: ModelFacts
    gpu: Gpu
    served_model_name: str
    spec: dict[str, Any] | None = None
    attention: str = "FLASHINFER"
    attention_forced: bool = False
    attention_potential: list[str] = field(default_factory=list)
    draft_attention: str | None = None
    draft_attention_forced: bool = False
    moe_kind: str | None = None  # nvfp4 | fp8 | unquantized
    moe: str | None = None
    moe_potential: list[str] = field(default_factory=list)
    draft_moe: str | None = None  # unquantized backend display name
    nvfp4_gemm: str | None = None  # NvFp4LinearBackend name
    mamba_ssm_cache_dtype: str | None = None
    mamba_dtype_updated: bool = False
    kv_cache_dtype: str = "auto"
    prefix_caching: bool = False
    chunked_prefill: bool = True
    async_scheduling: bool = True
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int = 4096
    kv_cache_gib: float = 0.0
    kv_cache_tokens: int = 0
    env_warnings: list[str] = field(default_factory=list)
    env_future_warnings: list[str] = field(default_factory=list)
    fault: Fault | None = None

    @property
    def speculative(self) -> bool:
        return self.spec is not None

    @property
    def num_spec_tokens(self) -> int:
        return int(self.spec.get("num_speculative_tokens", 1)) if self.spec else 0

    def selected_backends(self) -> dict[str, Any]:
        """Short summary, for tests and /version."""
        return {"attention": self.attention, "draft_attention": self.draft_attention,
                "moe_kind": self.moe_kind, "moe": self.moe, "draft_moe": self.draft_moe,
                "nvfp4_gemm": self.nvfp4_gemm, "mamba_ssm_cache_dtype": self.mamba_ssm_cache_dtype}


def _pydantic_unexpected(keys: list[tuple[str, Any]]) -> str:
    count = len(keys)
    lines = [f"pydantic_core._pydantic_core.ValidationError: {count} validation error"
             f"{'s' if count > 1 else ''} for SpeculativeConfig"]
    for key, value in keys:
        lines += [key,
                  f"  Unexpected keyword argument [type=unexpected_keyword_argument, input_value={value!r}, "
                  f"input_type={type(value).__name__}]",
                  "    For further information visit https://errors.pydantic.dev/2.12/v/unexpected_keyword_argument"]
    return "\n".join(lines)


def _registry_error(kind: str, name: str, names) -> str:
    return f"KeyError: 'invalid {kind}: {name} (chose from {{ {','.join(sorted(names))} }})'"


def vllm_reasoning_parsers(version: str) -> tuple[str, ...]:
    return VLLM_REASONING_PARSERS + (("nemotron_v3",) if at_least(version, "0.17.1") else ())


def resolve_vllm_spec(args, version: str) -> tuple[dict[str, Any] | None, Fault | None]:
    """The speculative config after --spec-* shorthands and key validation."""
    spec = dict(args.speculative_config) if getattr(args, "speculative_config", None) else None
    for flag, key in (("--spec-method", "method"), ("--spec-model", "model"), ("--spec-tokens", "num_speculative_tokens")):
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is None:
            continue
        if spec and key in spec:
            return None, Fault("spec_shorthand_conflict", "config",
                               f"ValueError: {flag} and --speculative-config['{key}'] are mutually exclusive")
        spec = spec or {}
        spec[key] = value
    if spec is None:
        return None, None
    unexpected = [(key, value) for key, value in spec.items()
                  if key not in SPEC_KEYS and not (key in SPEC_KEYS_SINCE and at_least(version, SPEC_KEYS_SINCE[key]))]
    if unexpected:
        return None, Fault("speculative_config_unexpected_key", "config", _pydantic_unexpected(unexpected))
    method = spec.get("method")
    if method is not None and method not in SPEC_METHODS:
        allowed = ", ".join(f"'{m}'" for m in SPEC_METHODS)
        return None, Fault("speculative_config_invalid_method", "config",
                           "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
                           f"method\n  Input should be {allowed} [type=literal_error, input_value={method!r}, input_type=str]")
    spec.setdefault("method", "draft_model" if spec.get("model") else "ngram")
    spec.setdefault("num_speculative_tokens", 1)
    return spec, None


def kv_cache_size(model: ModelFacts, gpu: Gpu, util: float, tp: int, kv_dtype: str,
                  speculative: bool) -> tuple[float, int]:
    """(GiB left for the KV cache, tokens) -- a simple, deterministic memory model."""
    budget = util * gpu.total_gib
    weights = model.weights_gib / max(tp, 1)
    draft = 1.6 / max(tp, 1) if speculative and model.has_mtp_head else 0.0
    reserve = 3.5
    kv_gib = round(budget - weights - draft - reserve, 2)
    if kv_gib <= 0:
        return kv_gib, 0
    byte_size = 1 if kv_dtype.startswith("fp8") else 2
    layers = 8 if model.hybrid_mamba else 32
    kv_heads = 2 if model.hybrid_mamba else 8
    per_token = 2 * layers * max(kv_heads // max(tp, 1), 1) * 128 * byte_size
    return kv_gib, int(kv_gib * 2**30 / per_token)


def decide_vllm(version: str, args, env: Mapping[str, str], gpu: Gpu, model: ModelFacts) -> VllmPlan:
    """What ``vllm serve`` would select (and where it would fail) for these inputs."""
    served = (args.served_model_name or [args.model])[0]
    plan = VllmPlan(version=version, model=model, gpu=gpu, served_model_name=served)

    def fail(name: str, phase: str, message: str) -> VllmPlan:
        plan.fault = plan.fault or Fault(name, phase, message)
        return plan

    # --- environment (envs.py validation at start-up)
    for name in sorted(k for k in env if k.startswith("VLLM_")):
        removed = name in REMOVED_IN_0_24 and at_least(version, "0.24.0")
        if removed or (name not in KNOWN_VLLM_ENV and name not in REMOVED_IN_0_24):
            plan.env_warnings.append(name)
        elif name in REMOVED_IN_0_24 and at_least(version, "0.22.0"):
            replacement = "Use --linear-backend." if name == "VLLM_NVFP4_GEMM_BACKEND" else \
                "Use --moe-backend (e.g. flashinfer_trtllm, flashinfer_cutlass, flashinfer_cutedsl)."
            plan.env_future_warnings.append(f"{name} is deprecated and will be removed in v0.23. {replacement}")
    if plan.env_warnings and getattr(args, "fail_on_environ_validation", False):
        return fail("unknown_environment_variable", "config",
                    f"ValueError: Unknown vLLM environment variable detected: {plan.env_warnings[0]}")
    gemm_env = env.get("VLLM_NVFP4_GEMM_BACKEND")
    if gemm_env is not None and before(version, "0.24.0"):
        choices = dict(NVFP4_GEMM_ENV_CHOICES)
        if at_least(version, "0.20.0"):
            choices["emulation"] = "EMULATION"
        if at_least(version, "0.22.0"):
            choices["flashinfer-b12x"] = "FLASHINFER_B12X"
        if gemm_env.lower() not in choices:
            return fail("invalid_env_value", "config",
                        f"ValueError: Invalid value '{gemm_env}' for VLLM_NVFP4_GEMM_BACKEND. "
                        f"Valid options: {list(choices)}.")

    # --- config (APIServer): speculative config, parsers, scheduler
    plan.spec, fault = resolve_vllm_spec(args, version)
    if fault:
        return fail(fault.name, fault.phase, fault.message)
    if plan.spec and plan.spec["method"] in ("mtp", "deepseek_mtp") and model.has_mtp_head:
        plan.spec["method"] = "mtp"
    if args.reasoning_parser and args.reasoning_parser not in vllm_reasoning_parsers(version):
        return fail("invalid_reasoning_parser", "config",
                    _registry_error("reasoning parser", args.reasoning_parser, vllm_reasoning_parsers(version)))
    if args.enable_auto_tool_choice and args.tool_call_parser not in VLLM_TOOL_PARSERS:
        return fail("invalid_tool_call_parser", "config",
                    _registry_error("tool call parser", str(args.tool_call_parser), VLLM_TOOL_PARSERS))
    if args.async_scheduling and plan.spec and plan.spec["method"] not in ASYNC_SPEC_METHODS:
        return fail("async_scheduling_unsupported_spec", "config",
                    "ValueError: Currently, async scheduling is only supported with EAGLE/MTP/Draft Model "
                    "kind of speculative decoding.")
    plan.async_scheduling = args.async_scheduling is not False and not (
        plan.spec and plan.spec["method"] not in ASYNC_SPEC_METHODS)
    plan.kv_cache_dtype = args.kv_cache_dtype
    plan.max_model_len = args.max_model_len if args.max_model_len and args.max_model_len > 0 else 262144 \
        if model.hybrid_mamba else 131072
    plan.max_num_seqs = args.max_num_seqs or 256
    plan.chunked_prefill = args.enable_chunked_prefill is not False
    plan.max_num_batched_tokens = args.max_num_batched_tokens or (2048 if plan.chunked_prefill else plan.max_model_len)
    default_prefix = not model.hybrid_mamba or at_least(version, "0.26.0")
    plan.prefix_caching = default_prefix if args.enable_prefix_caching is None else args.enable_prefix_caching
    if model.hybrid_mamba:
        if args.mamba_ssm_cache_dtype == "auto":
            plan.mamba_ssm_cache_dtype = "float32" if at_least(version, "0.20.0") else "float16"
            plan.mamba_dtype_updated = True
        else:
            plan.mamba_ssm_cache_dtype = args.mamba_ssm_cache_dtype

    # --- engine init: attention of the target model
    auto_attention, potential = attention_choice(gpu)
    plan.attention_potential = potential
    if args.attention_backend:
        reason = attention_invalid_reason(args.attention_backend, gpu)
        if reason:
            return fail("attention_backend_invalid", "engine_init",
                        f"ValueError: Selected backend AttentionBackendEnum.{args.attention_backend} is not "
                        f"valid for this configuration. Reason: ['{reason}']")
        plan.attention, plan.attention_forced = args.attention_backend, True
    else:
        plan.attention = auto_attention

    # --- engine init: MoE and dense GEMM of the target model
    moe_backend = getattr(args, "moe_backend", "auto")
    if model.moe and model.weight_format == "nvfp4":
        plan.moe_kind = "nvfp4"
        plan.moe_potential = nvfp4_moe_potential(version)
        if moe_backend != "auto":
            mapping = nvfp4_moe_cli_map(version)
            if moe_backend not in mapping:
                return fail("nvfp4_moe_backend_unsupported", "engine_init",
                            f"ValueError: moe_backend='{moe_backend}' is not supported for NvFP4 MoE. "
                            f"Expected one of {list(mapping)}.")
            plan.moe = mapping[moe_backend]
            if not nvfp4_moe_supported(plan.moe, version, gpu):
                return fail("nvfp4_moe_backend_unsupported", "engine_init",
                            f"ValueError: NvFp4 MoE backend '{plan.moe}' does not support the deployment "
                            "configuration since kernel does not support current device cuda.")
        else:
            no_flashinfer = env.get("VLLM_USE_FLASHINFER_MOE_FP4", "").strip() == "0" and before(version, "0.24.0")
            for candidate in plan.moe_potential:
                if no_flashinfer and candidate.startswith("FLASHINFER"):
                    continue
                if nvfp4_moe_supported(candidate, version, gpu):
                    plan.moe = candidate
                    break
            else:
                return fail("nvfp4_moe_backend_unsupported", "engine_init",
                            "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration.")
    elif model.moe and model.weight_format == "fp8":
        plan.moe_kind = "fp8"
        plan.moe_potential = list(FP8_MOE_BACKENDS)
        forced = {"deep_gemm": "DEEPGEMM", "cutlass": "VLLM_CUTLASS"}.get(moe_backend, moe_backend.upper())
        plan.moe = forced if moe_backend != "auto" and forced in FP8_MOE_BACKENDS else "TRITON"
    elif model.moe:
        plan.moe_kind = "unquantized"
        plan.moe, fault = _unquantized_moe(moe_backend, version)
        if fault:
            return fail(fault.name, "engine_init", fault.message)
    if model.weight_format == "nvfp4":
        plan.nvfp4_gemm = _nvfp4_gemm(version, args, env, gpu)

    # --- drafter (MTP head: its MoE is unquantized)
    if plan.spec:
        if before(version, "0.21.0"):
            plan.draft_attention, plan.draft_attention_forced = plan.attention, plan.attention_forced
        elif plan.spec.get("attention_backend"):
            plan.draft_attention, plan.draft_attention_forced = str(plan.spec["attention_backend"]).upper(), True
        else:
            plan.draft_attention = auto_attention
        if model.moe and model.has_mtp_head and plan.spec["method"] == "mtp":
            draft_moe_flag = plan.spec.get("moe_backend", moe_backend)
            plan.draft_moe, fault = _unquantized_moe(str(draft_moe_flag).lower().replace("-", "_"), version)
            if fault:
                return fail(fault.name, "draft_load", fault.message)

    # --- KV cache
    plan.kv_cache_gib, plan.kv_cache_tokens = kv_cache_size(
        model, gpu, args.gpu_memory_utilization, args.tensor_parallel_size, plan.kv_cache_dtype, plan.speculative)
    if plan.kv_cache_tokens <= 0:
        return fail("kv_cache_no_memory", "cuda_graph",
                    "ValueError: No available memory for the cache blocks. Try increasing "
                    "`gpu_memory_utilization` when initializing the engine. See "
                    "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")

    # --- CUDA graph capture: FlashInfer + MTP on sm_121 (vLLM #37754)
    if plan.spec and plan.spec["method"] == "mtp" and gpu.sm == 121 and plan.attention == "FLASHINFER" \
            and not args.enforce_eager:
        return fail("flashinfer_mtp_cuda_graph_crash", "cuda_graph",
                    "torch.AcceleratorError: CUDA error: an illegal instruction was encountered")

    # --- image fault: a nightly whose torch.compile dies while capturing CUDA graphs once a
    # speculative config is added (the GB10 write-up); no flag combination predicts it, only the image.
    if env.get("ENGINE_SIM_FAULT") == "crash_on_cuda_graph_capture" and plan.spec and not args.enforce_eager:
        return fail("crash_on_cuda_graph_capture", "cuda_graph",
                    "torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend "
                    "object at 0x7f3c2c1d5e50>' raised:\n"
                    "RuntimeError: CUDA error: an illegal instruction was encountered")

    # --- image fault: crashes on the first speculative request
    if env.get("ENGINE_SIM_FAULT") == "illegal_memory_access_on_first_spec" and plan.spec:
        plan.fault = Fault("illegal_memory_access_on_first_spec", "first_spec_request",
                           "torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    return plan


def _unquantized_moe(flag: str, version: str) -> tuple[str | None, Fault | None]:
    keys = unquantized_moe_cli_keys(version)
    if flag in keys:
        return UNQUANTIZED_DISPLAY[flag], None
    if flag in unquantized_moe_exempt(version):
        return "TRITON", None
    return None, Fault("unquantized_moe_backend_unsupported", "engine_init",
                       f"ValueError: moe_backend='{flag}' is not supported for unquantized MoE. "
                       f"Expected one of {keys}.")


def _nvfp4_gemm(version: str, args, env: Mapping[str, str], gpu: Gpu) -> str:
    linear = getattr(args, "linear_backend", "auto")
    linear_map = {"cutlass": "VLLM_CUTLASS", "flashinfer_cutlass": "FLASHINFER_CUTLASS",
                  "flashinfer_cutedsl": "FLASHINFER_CUTEDSL", "flashinfer_trtllm": "FLASHINFER_TRTLLM",
                  "flashinfer_cudnn": "FLASHINFER_CUDNN", "flashinfer_b12x": "FLASHINFER_B12X",
                  "b12x": "B12X", "marlin": "MARLIN", "humming": "HUMMING", "emulation": "EMULATION",
                  "torch": "TORCH"}
    if linear in linear_map:
        return linear_map[linear]
    gemm_env = env.get("VLLM_NVFP4_GEMM_BACKEND")
    if gemm_env and before(version, "0.24.0"):
        mapping = dict(NVFP4_GEMM_ENV_CHOICES, **{"emulation": "EMULATION", "flashinfer-b12x": "FLASHINFER_B12X"})
        return mapping[gemm_env.lower()]
    return "FLASHINFER_CUTLASS" if gpu.capability[0] in (10, 12) else "MARLIN"


# --------------------------------------------------------------------------------------- SGLang

@dataclass
class SglangPlan:
    version: str
    model: ModelFacts
    gpu: Gpu
    server_args: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    fault: Fault | None = None
    kv_cache_tokens: int = 0
    kv_size_gb: float = 0.0
    mamba_cache_size: int = 0
    cuda_graph_bs: list[int] = field(default_factory=list)

    @property
    def speculative(self) -> bool:
        return bool(self.server_args.get("speculative_algorithm"))

    @property
    def served_model_name(self) -> str:
        return self.server_args["served_model_name"]


CUDA_GRAPH_BS = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 513, 16))  # 52 sizes


def decide_sglang(version: str, args, env: Mapping[str, str], gpu: Gpu, model: ModelFacts) -> SglangPlan:
    """What ``sglang.launch_server`` would resolve (and where it would fail) for these inputs."""
    arch = model.architecture
    sm12x = gpu.capability[0] == 12
    strategy_field = "mamba_radix_cache_strategy" if at_least(version, "0.5.14") else "mamba_scheduler_strategy"
    warnings: list[str] = list(getattr(args, "deprecated_flags", []))

    attention = args.attention_backend
    if attention is None:
        attention = "flashinfer"
        warnings.append("Attention backend not specified. Use flashinfer backend by default.")
    moe = args.moe_runner_backend
    if moe == "auto" and model.moe:
        moe = "flashinfer_cutlass" if model.sglang_quantization else "triton"
    fp8_gemm = getattr(args, "fp8_gemm_runner_backend", "auto")
    if fp8_gemm == "auto" and model.weight_format == "fp8":
        fp8_gemm = "triton" if _truthy(env.get("SGLANG_DISABLE_DEEP_GEMM")) else "deep_gemm"
    algorithm = args.speculative_algorithm
    if algorithm == "NEXTN":
        algorithm = "EAGLE"
    steps, topk, draft_tokens = args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens
    spec_moe = getattr(args, "speculative_moe_runner_backend", None)
    max_running = args.max_running_requests
    if algorithm:
        steps = 3 if steps is None else steps
        topk = 1 if topk is None else topk
        if draft_tokens is None or (topk == 1 and draft_tokens != steps + 1):
            if draft_tokens is not None:
                warnings.append("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 "
                                "when speculative_eagle_topk == 1")
            draft_tokens = steps + 1
        if max_running is None:
            max_running = 48
            warnings.append("Max running requests is reset to 48 for speculative decoding. You can override "
                            "this by explicitly setting --max-running-requests.")
        # The g7e field report (0.5.6.post2): an unset draft MoE runner stays 'auto', which OOMs on SM120.
        spec_moe = spec_moe or "auto"
    strategy = getattr(args, strategy_field, None)
    if strategy == "auto" and model.hybrid_mamba:
        strategy = "no_buffer"
    mem_fraction = args.mem_fraction_static if args.mem_fraction_static is not None else 0.85
    served = args.served_model_name or args.model_path
    server_args: dict[str, Any] = {
        "model_path": args.model_path, "tokenizer_path": args.tokenizer_path or args.model_path,
        "tokenizer_mode": "auto", "skip_tokenizer_init": False, "load_format": "auto",
        "trust_remote_code": args.trust_remote_code, "context_length": args.context_length,
        "is_embedding": False, "revision": None, "host": args.host, "port": args.port,
        "dtype": args.dtype, "quantization": args.quantization or model.sglang_quantization,
        "kv_cache_dtype": args.kv_cache_dtype, "mem_fraction_static": mem_fraction,
        "max_running_requests": max_running, "max_total_tokens": None,
        "chunked_prefill_size": args.chunked_prefill_size or 8192, "max_prefill_tokens": 16384,
        "schedule_policy": args.schedule_policy, "schedule_conservativeness": 1.0,
        "tp_size": args.tp_size, "pp_size": 1, "dp_size": args.dp_size, "ep_size": args.ep_size,
        "random_seed": args.random_seed if args.random_seed is not None else 388233925,
        "served_model_name": served, "api_key": args.api_key,
        "enable_metrics": args.enable_metrics, "enable_cache_report": args.enable_cache_report,
        "decode_log_interval": args.decode_log_interval,
        "reasoning_parser": args.reasoning_parser, "tool_call_parser": args.tool_call_parser,
        "attention_backend": attention, "sampling_backend": "flashinfer", "grammar_backend": "xgrammar",
        "speculative_algorithm": algorithm, "speculative_draft_model_path":
            (args.speculative_draft_model_path or args.model_path) if algorithm else None,
        "speculative_num_steps": steps, "speculative_eagle_topk": topk,
        "speculative_num_draft_tokens": draft_tokens,
    }
    if at_least(version, "0.5.5"):
        server_args["speculative_moe_runner_backend"] = spec_moe
    if at_least(version, "0.5.7"):
        server_args["speculative_draft_attention_backend"] = args.speculative_draft_attention_backend
    server_args["moe_runner_backend"] = moe
    if at_least(version, "0.5.7"):
        server_args["fp8_gemm_runner_backend"] = fp8_gemm
    if at_least(version, "0.5.8"):
        server_args["fp4_gemm_runner_backend"] = args.fp4_gemm_runner_backend
    if at_least(version, "0.5.2"):
        server_args["mamba_ssm_dtype"] = args.mamba_ssm_dtype
    if at_least(version, "0.5.7"):
        server_args[strategy_field] = strategy
    if at_least(version, "0.5.10"):
        server_args["linear_attn_backend"] = args.linear_attn_backend
    server_args.update({"disable_radix_cache": args.disable_radix_cache,
                        "disable_cuda_graph": args.disable_cuda_graph,
                        "cuda_graph_max_bs": 152 if algorithm else 512,
                        "disable_overlap_schedule": False, "enable_mixed_chunk": False})
    plan = SglangPlan(version, model, gpu, server_args, warnings)

    def fail(name: str, phase: str, message: str, exit_code: int = 1) -> SglangPlan:
        plan.fault = Fault(name, phase, message, exit_code)
        return plan

    # --- ServerArgs.__post_init__ (main process, before the dump)
    if model.hybrid_mamba and strategy in ("extra_buffer", "extra_buffer_lazy"):
        if at_least(version, "0.5.7") and before(version, "0.5.13"):
            return fail("mamba_extra_buffer_unsupported", "config",
                        f"AssertionError: mamba extra_buffer is not supported for {arch} model")
        if at_least(version, "0.5.15") and args.linear_attn_backend != "triton":
            return fail("mamba_extra_buffer_unsupported", "config",
                        f"AssertionError: extra_buffer is not supported for {arch}; use no_buffer.")
    if model.hybrid_mamba and attention == "triton" and at_least(version, "0.5.7") and before(version, "0.5.19"):
        return fail("nemotronh_triton_attention", "config",
                    f"AssertionError: {arch} does not support triton attention backend,as the first layer "
                    "might not be an attention layer")
    if attention == "trtllm_mha" and sm12x:
        return fail("trtllm_mha_sm120", "config",
                    "AssertionError: TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). "
                    "Please use a different backend.")
    if algorithm and getattr(args, "speculative_moe_runner_backend", None) == "flashinfer_trtllm":
        return fail("speculative_moe_flashinfer_trtllm", "config",
                    "AssertionError: Currently speculative MoE runner backend cannot be flashinfer_trtllm "
                    "for risk in some draft models.")
    if algorithm and model.hybrid_mamba and not args.disable_radix_cache and strategy != "extra_buffer":
        return fail("speculative_radix_cache", "config",
                    f"ValueError: Speculative decoding for {arch} is not compatible with radix cache when using "
                    f"--{strategy_field.replace('_', '-')} no_buffer. To use radix cache with speculative "
                    f"decoding, please use --{strategy_field.replace('_', '-')} extra_buffer and set "
                    "SGLANG_ENABLE_SPEC_V2=1.")

    # --- scheduler (TP ranks): weights, memory pool, CUDA graphs. Failures kill the tree (137).
    if sm12x and fp8_gemm == "cutlass" and model.weight_format == "fp8":
        return fail("cutlass_fp8_sm120", "engine_init",
                    "AssertionError: cutlass fp8 blockwise GEMM requires SM90 or SM100, got SM120. "
                    "Use --fp8-gemm-backend triton.", 137)
    weights_gb = model.weights_gib * 1.0737 / max(args.tp_size, 1)
    total_gb = gpu.total_gib * 1.0737
    plan.mamba_cache_size = 512 if model.hybrid_mamba else 0
    mamba_gb = (30.1 + (3.0 if algorithm else 0.0)) if model.hybrid_mamba else 0.0
    draft_gb = 1.2 if algorithm else 0.0
    kv_gb = mem_fraction * total_gb - weights_gb - draft_gb - mamba_gb - 4.5
    if kv_gb <= 0:
        return fail("kv_cache_no_memory", "engine_init",
                    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", 137)
    per_token = 2048 if args.kv_cache_dtype.startswith("fp8") else 4096
    plan.kv_size_gb = kv_gb / 2
    plan.kv_cache_tokens = int(kv_gb * 1e9 / per_token)
    if algorithm and sm12x and spec_moe != "triton":
        return fail("eagle_draft_moe_oom", "draft_load", "Killed", 137)
    if sm12x and model.weight_format == "fp8" and "deep_gemm" in (fp8_gemm, moe):
        return fail("deep_gemm_sm120", "cuda_graph",
                    "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/jit/kernel_runtime.hpp:45): "
                    "Unsupported architecture: sm_120 (DeepGEMM supports sm_90 and sm_100)", 137)
    plan.cuda_graph_bs = [] if args.disable_cuda_graph else CUDA_GRAPH_BS[:23] if algorithm else CUDA_GRAPH_BS
    return plan
