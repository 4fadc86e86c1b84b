# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM start-up, stats and crash lines, in the formats of the released vLLM wheels.

Each function prints one phase; the runner sleeps between phases.  Line numbers in
``[file.py:N]`` are representative (they change every release; nobody should match them).
"""
from __future__ import annotations

from .decide import NVFP4_LINEAR_KERNELS, UNQUANTIZED_POTENTIAL, VllmPlan
from .printer import VllmPrinter, traceback_lines
from .versions import at_least, before, full_version, release

ENGINE_CORE = "vllm/v1/engine/core.py"
FAULT_TRACE = {
    "draft_load": [
        ("vllm/v1/worker/gpu_model_runner.py", 3901, "load_model", "self.drafter.load_model(self.model)"),
        ("vllm/v1/spec_decode/eagle.py", 1012, "load_model",
         "self.model = get_model(vllm_config=self.vllm_config, model_config=draft_model_config)"),
        ("vllm/model_executor/model_loader/__init__.py", 130, "get_model",
         "return loader.load_model(vllm_config=vllm_config, model_config=model_config)"),
        ("vllm/model_executor/models/nemotron_h_mtp.py", 92, "__init__",
         'self.mixer = NemotronHMoE(config, quant_config=None, prefix=f"{prefix}.mixer")'),
        ("vllm/model_executor/layers/fused_moe/layer.py", 617, "__init__",
         "self.quant_method = UnquantizedFusedMoEMethod(self.moe_config)"),
        ("vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py", 64, "__init__",
         "self.unquantized_backend = select_unquantized_moe_backend("),
        ("vllm/model_executor/layers/fused_moe/oracle/unquantized.py", 133, "select_unquantized_moe_backend",
         "requested_backend = map_unquantized_backend(runner_backend)"),
        ("vllm/model_executor/layers/fused_moe/oracle/unquantized.py", 99, "map_unquantized_backend",
         "raise ValueError("),
    ],
    "nvfp4_moe_backend_unsupported": [
        ("vllm/v1/worker/gpu_model_runner.py", 3870, "load_model",
         "self.model = model_loader.load_model("),
        ("vllm/model_executor/layers/quantization/modelopt.py", 1690, "__init__",
         "self.nvfp4_backend, self.experts_cls = select_nvfp4_moe_backend("),
        ("vllm/model_executor/layers/fused_moe/oracle/nvfp4.py", 262, "select_nvfp4_moe_backend",
         "raise ValueError("),
    ],
    "attention_backend_invalid": [
        ("vllm/v1/worker/gpu_model_runner.py", 3870, "load_model",
         "self.model = model_loader.load_model("),
        ("vllm/attention/selector.py", 118, "get_attn_backend", "return _cached_get_attn_backend("),
        ("vllm/platforms/cuda.py", 341, "get_attn_backend_cls", "raise ValueError("),
    ],
    "kv_cache_no_memory": [
        ("vllm/v1/engine/core.py", 254, "_initialize_kv_caches",
         "kv_cache_configs = get_kv_cache_configs("),
        ("vllm/v1/core/kv_cache_utils.py", 701, "check_enough_kv_cache_memory", "raise ValueError("),
    ],
    "flashinfer_mtp_cuda_graph_crash": [
        ("vllm/v1/engine/core.py", 262, "_initialize_kv_caches",
         "self.model_executor.initialize_from_config(kv_cache_configs)"),
        ("vllm/v1/worker/gpu_worker.py", 512, "compile_or_warm_up_model",
         "cuda_graph_memory_bytes = self.model_runner.capture_model()"),
        ("vllm/v1/worker/gpu_model_runner.py", 5102, "capture_model",
         "self._capture_cudagraphs("),
        ("vllm/v1/worker/gpu_model_runner.py", 5211, "_capture_cudagraphs",
         "self._dummy_run("),
        ("vllm/v1/spec_decode/eagle.py", 1143, "dummy_run", "self.model("),
        ("vllm/v1/attention/backends/flashinfer.py", 1328, "forward",
         "decode_wrapper.run("),
        ("flashinfer/decode.py", 1291, "run", "self._cached_module.run("),
    ],
}
CUDA_TAIL = ("Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
             "group__CUDART__TYPES.html for more information.\n"
             "CUDA kernel errors might be asynchronously reported at some other API call, so the "
             "stacktrace below might be incorrect.\n"
             "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def capture_sizes(max_size: int) -> list[int]:
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
    return [size for size in sizes if size <= max_size]


def _engine_config_string(plan: VllmPlan, args) -> str:
    model = args.model
    spec = "None"
    if plan.spec:
        spec_model = "None" if plan.spec["method"] in ("ngram", "suffix") else repr(plan.spec.get("model", model))
        spec = (f"SpeculativeConfig(method={plan.spec['method']!r}, model={spec_model}, "
                f"num_spec_tokens={plan.num_spec_tokens})")
    dtype = {"auto": "torch.bfloat16", "half": "torch.float16", "float16": "torch.float16",
             "bfloat16": "torch.bfloat16", "float": "torch.float32", "float32": "torch.float32"}[args.dtype]
    max_capture = args.max_cudagraph_capture_size or min(plan.max_num_seqs * 2, 512)
    parts = [
        f"model={model!r}", f"speculative_config={spec}", f"tokenizer={model!r}",
        "skip_tokenizer_init=False", "tokenizer_mode=auto", "revision=None", "tokenizer_revision=None",
        f"trust_remote_code={args.trust_remote_code}", f"dtype={dtype}", f"max_seq_len={plan.max_model_len}",
        "download_dir=None", "load_format=auto", f"tensor_parallel_size={args.tensor_parallel_size}",
        f"pipeline_parallel_size={args.pipeline_parallel_size}", f"data_parallel_size={args.data_parallel_size}",
        "disable_custom_all_reduce=False", f"quantization={plan.model.vllm_quantization}",
        f"enforce_eager={args.enforce_eager}", f"kv_cache_dtype={plan.kv_cache_dtype}",
        "device_config=cuda", f"seed={args.seed}", f"served_model_name={plan.served_model_name}",
        f"enable_prefix_caching={plan.prefix_caching}", f"enable_chunked_prefill={plan.chunked_prefill}",
        "pooler_config=None",
        "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cudagraph_mode': "
        f"<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'max_cudagraph_capture_size': {max_capture}}}",
    ]
    if at_least(plan.version, "0.20.0"):
        kernel = f"moe_backend={getattr(args, 'moe_backend', 'auto')!r}"
        if at_least(plan.version, "0.22.0"):
            kernel += f", linear_backend={getattr(args, 'linear_backend', 'auto')!r}"
        parts.append(f"kernel_config=KernelConfig({kernel})")
    return ", ".join(parts)


LOGO = ["", "       █     █     █▄   ▄█", " ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}",
        "  █▄█▀ █     █     █     █  model   {model}", "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀", ""]


def config_phase(p: VllmPrinter, plan: VllmPlan, args, non_default: dict, env) -> None:
    """APIServer: banner, non-default args, env validation, model/cache/scheduler config."""
    version = full_version("vllm", plan.version)
    if env.get("VLLM_DISABLE_LOG_LOGO"):
        p.log("APIServer", "INFO", "utils.py:292", f"vLLM server version {version}, serving model {args.model}")
    else:
        for line in LOGO:
            p.log("APIServer", "INFO", "utils.py:299", line.format(version=version, model=args.model))
    p.log("APIServer", "INFO", "utils.py:233", f"non-default args: {non_default}")
    for name in plan.env_warnings:
        p.log("APIServer", "WARNING", "envs.py:1744", f"Unknown vLLM environment variable detected: {name}")
    for text in plan.env_future_warnings:
        p.raw("APIServer", f"{'/usr/local/lib/python3.12/dist-packages/vllm/envs.py'}:1702: FutureWarning: {text}",
              "stderr")
    if plan.fault and plan.fault.phase == "config" and plan.fault.name in (
            "speculative_config_unexpected_key", "speculative_config_invalid_method", "spec_shorthand_conflict",
            "unknown_environment_variable", "invalid_env_value", "async_scheduling_unsupported_spec"):
        return
    p.log("APIServer", "INFO", "model.py:554", f"Resolved architecture: {plan.model.architecture}")
    p.log("APIServer", "INFO", "model.py:1693", f"Using max model len {plan.max_model_len}")
    if plan.model.weight_format == "nvfp4":
        p.log("APIServer", "WARNING", "modelopt.py:1021", "Detected ModelOpt NVFP4 checkpoint. Please note that "
              "the format is experimental and could change in future.")
    elif plan.model.weight_format == "fp8":
        p.log("APIServer", "WARNING", "modelopt.py:239", "Detected ModelOpt fp8 checkpoint. Please note that "
              "the format is experimental and could change in future.")
    if plan.kv_cache_dtype.startswith("fp8"):
        dot = "." if before(plan.version, "0.20.0") else ""
        p.log("APIServer", "INFO", "cache.py:219", f"Using {plan.kv_cache_dtype} data type to store kv cache. It "
              "reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause accuracy "
              f"drop without a proper scaling factor{dot}")
    if plan.spec:
        if plan.spec["method"] == "mtp" and plan.num_spec_tokens > 1:
            p.log("APIServer", "WARNING", "speculative.py:437", "Enabling num_speculative_tokens > 1 will run "
                  "multiple times of forward on same MTP layer,which may result in lower acceptance rate")
        if plan.spec["method"] == "mtp" and plan.model.has_mtp_head:
            p.log("APIServer", "INFO", "model.py:554", "Resolved architecture: NemotronHMTPModel")
    if plan.model.hybrid_mamba:
        if plan.prefix_caching:
            if before(plan.version, "0.28.0"):
                p.log("APIServer", "WARNING", "config.py:319", "Mamba cache mode is set to 'all' for "
                      f"{plan.model.architecture} by default when prefix caching is enabled")
                p.log("APIServer", "INFO", "config.py:341", "Warning: Prefix caching in Mamba cache 'all' mode is "
                      "currently enabled. Its support for Mamba layers is experimental. Please report any "
                      "issues you may observe.")
            else:
                p.log("APIServer", "INFO", "config.py:319", "Mamba cache mode is set to 'align' for "
                      f"{plan.model.architecture} by default when prefix caching is enabled")
        if plan.mamba_dtype_updated:
            p.log("APIServer", "INFO", "config.py:401",
                  f"Updating mamba_ssm_cache_dtype to '{plan.mamba_ssm_cache_dtype}' for NemotronH model")
        p.log("APIServer", "INFO", "config.py:472", "Setting attention block size to 1072 tokens to ensure that "
              "attention page size is >= mamba page size.")
        p.log("APIServer", "INFO", "config.py:496", "Padding mamba page size by 0.75% to ensure that mamba page "
              "size and attention page size are exactly equal.")
    if plan.chunked_prefill:
        p.log("APIServer", "INFO", "scheduler.py:226",
              f"Chunked prefill is enabled with max_num_batched_tokens={plan.max_num_batched_tokens}.")
    if plan.async_scheduling and before(plan.version, "0.27.0"):
        p.log("APIServer", "INFO", "vllm.py:699", "Asynchronous scheduling is enabled.")
    if plan.model.hybrid_mamba:
        p.log("APIServer", "INFO", "vllm.py:911", "Disabling cascade attention since it is not supported for "
              "hybrid models.")


def config_fault(p: VllmPrinter, plan: VllmPlan) -> None:
    """A configuration error in the APIServer process: plain traceback, no EngineCore lines."""
    fault = plan.fault
    frames = [("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
              ("vllm/entrypoints/cli/main.py", 73, "main", "args.dispatch_function(args)"),
              ("vllm/entrypoints/cli/serve.py", 111, "cmd", "uvloop.run(run_server(args))")]
    if fault.name.startswith("speculative_config") or fault.name == "spec_shorthand_conflict":
        frames += [("vllm/entrypoints/openai/api_server.py", 1951, "run_server_worker",
                    "async with build_async_engine_client("),
                   ("vllm/engine/arg_utils.py", 1733, "create_engine_config",
                    "speculative_config = self.create_speculative_config("),
                   ("vllm/engine/arg_utils.py", 1416, "create_speculative_config",
                    "return SpeculativeConfig(**self.speculative_config)")]
    elif fault.name in ("invalid_reasoning_parser", "invalid_tool_call_parser"):
        frames += [("vllm/entrypoints/openai/api_server.py", 1961, "run_server_worker",
                    "await init_app_state(engine_client, app.state, args)"),
                   ("vllm/entrypoints/openai/api_server.py", 1707, "init_app_state",
                    "state.openai_serving_chat = OpenAIServingChat("),
                   ("vllm/reasoning/abs_reasoning_parsers.py", 171, "get_reasoning_parser",
                    "raise KeyError(")]
    else:
        frames += [("vllm/engine/arg_utils.py", 1733, "create_engine_config", "config = VllmConfig(")]
    for line in traceback_lines(frames, fault.message):
        p.raw("APIServer", line, "stderr")


def engine_init_phase(p: VllmPrinter, plan: VllmPlan, args) -> None:
    """EngineCore: engine config, target model construction (attention, MoE, GEMM), weights."""
    version = full_version("vllm", plan.version)
    p.log("EngineCore", "INFO", "core.py:96",
          f"Initializing a V1 LLM engine (v{version}) with config: {_engine_config_string(plan, args)}")
    p.log("EngineCore", "INFO", "parallel_state.py:1395", "world_size=1 rank=0 local_rank=0 "
          "distributed_init_method=tcp://127.0.0.1:43827 backend=nccl")
    p.log("EngineCore", "INFO", "gpu_model_runner.py:3850", f"Starting to load model {args.model}...")
    if plan.fault and plan.fault.name == "attention_backend_invalid":
        return
    if plan.attention_forced:
        p.log("EngineCore", "INFO", "cuda.py:351", f"Using AttentionBackendEnum.{plan.attention} backend.")
    else:
        potential = "[" + ", ".join(f"'{b}'" for b in plan.attention_potential) + "]"
        p.log("EngineCore", "INFO", "cuda.py:367",
              f"Using {plan.attention} attention backend out of potential backends: {potential}.")
    if plan.model.hybrid_mamba and at_least(plan.version, "0.20.0"):
        p.log("EngineCore", "INFO", "ssu_dispatch.py:58", "Using triton Mamba SSU backend.")
    if plan.fault and plan.fault.name == "nvfp4_moe_backend_unsupported":
        return
    _moe_line(p, plan, plan.moe_kind, plan.moe)
    if plan.nvfp4_gemm:
        if before(plan.version, "0.20.0"):
            p.log("EngineCore", "INFO", "nvfp4_utils.py:88", f"Using NvFp4LinearBackend.{plan.nvfp4_gemm} for NVFP4 GEMM")
        else:
            p.log("EngineCore", "INFO", "__init__.py:402",
                  f"Using {NVFP4_LINEAR_KERNELS[plan.nvfp4_gemm]} for NVFP4 GEMM")
    if "MARLIN" in (plan.moe, plan.nvfp4_gemm) and plan.model.weight_format == "nvfp4":
        p.log("EngineCore", "WARNING", "marlin_utils_fp4.py:298", "Your GPU does not have native support for FP4 "
              "computation but FP4 quantization is being used. Weight-only FP4 compression will be used "
              "leveraging the Marlin kernel. This may degrade performance for compute-heavy workloads.")
    if plan.model.weight_format == "nvfp4":
        p.log("EngineCore", "INFO", "kernels.py:120",
              "Selected CutlassFP8ScaledMMLinearKernel for ModelOptFp8LinearMethod")
    p.log("EngineCore", "INFO", "default_loader.py:291",
          f"Loading weights took {plan.model.weights_gib * 1.6:.2f} seconds")


def _moe_line(p: VllmPrinter, plan: VllmPlan, kind: str | None, backend: str | None) -> None:
    if not kind or not backend:
        return
    if kind == "nvfp4":
        p.log("EngineCore", "INFO", "nvfp4.py:279", f"Using '{backend}' NvFp4 MoE backend out of potential "
              f"backends: {plan.moe_potential}.")
    elif kind == "fp8":
        p.log("EngineCore", "INFO", "fp8.py:371", f"Using {backend} Fp8 MoE backend out of potential "
              f"backends: {plan.moe_potential}.")
    elif before(plan.version, "0.20.0"):
        p.log("EngineCore", "INFO", "unquantized.py:156", f"Using {backend} backend for Unquantized MoE")
    else:
        p.log("EngineCore", "INFO", "unquantized.py:201", f"Using {backend} Unquantized MoE backend out of "
              f"potential backends: {UNQUANTIZED_POTENTIAL}.")


def draft_phase(p: VllmPrinter, plan: VllmPlan) -> None:
    """EngineCore: the drafter (MTP head) -- its attention and its unquantized MoE."""
    if not plan.spec:
        return
    p.log("EngineCore", "INFO", "gpu_model_runner.py:3896", "Loading drafter model...")
    if plan.draft_attention_forced:
        p.log("EngineCore", "INFO", "cuda.py:351", f"Using AttentionBackendEnum.{plan.draft_attention} backend.")
    elif plan.draft_attention != plan.attention or plan.attention_forced:
        potential = "[" + ", ".join(f"'{b}'" for b in plan.attention_potential) + "]"
        p.log("EngineCore", "INFO", "cuda.py:367",
              f"Using {plan.draft_attention} attention backend out of potential backends: {potential}.")
    if plan.fault and plan.fault.phase == "draft_load":
        return
    if plan.draft_moe:
        _moe_line(p, plan, "unquantized", plan.draft_moe)
    if plan.spec["method"] == "mtp":
        p.log("EngineCore", "INFO", "eagle.py:1101", "Detected MTP model. Sharing target model embedding weights "
              "with the draft model.")
        p.log("EngineCore", "INFO", "eagle.py:1131", "Detected MTP model. Sharing target model lm_head weights "
              "with the draft model.")


def memory_phase(p: VllmPrinter, plan: VllmPlan, args) -> None:
    """EngineCore: model memory, torch.compile, KV cache size."""
    draft = 1.6 if plan.spec and plan.model.has_mtp_head else 0.0
    p.log("EngineCore", "INFO", "gpu_model_runner.py:3925", f"Model loading took "
          f"{plan.model.weights_gib / args.tensor_parallel_size + draft:.2f} GiB memory and 121.482913 seconds")
    verb = "takes" if before(plan.version, "0.18.0") else "took"
    p.log("EngineCore", "INFO", "monitor.py:34", f"torch.compile {verb} 38.21 s in total")
    if plan.fault and plan.fault.name == "kv_cache_no_memory":
        return
    p.log("EngineCore", "INFO", "gpu_worker.py:424", f"Available KV cache memory: {plan.kv_cache_gib:.2f} GiB")
    tokens = f"{plan.kv_cache_tokens:,}"
    concurrency = plan.kv_cache_tokens / plan.max_model_len
    max_len = f"{plan.max_model_len:,}"
    if before(plan.version, "0.28.0"):
        p.log("EngineCore", "INFO", "kv_cache_utils.py:1291", f"GPU KV cache size: {tokens} tokens")
        p.log("EngineCore", "INFO", "kv_cache_utils.py:1296",
              f"Maximum concurrency for {max_len} tokens per request: {concurrency:.2f}x")
    else:
        prefix = "GPU " if before(plan.version, "0.30.0") else "GPU "
        p.log("EngineCore", "INFO", "kv_cache_utils.py:1291", f"{prefix}KV cache size: {tokens} tokens, Maximum "
              f"concurrency for {max_len} tokens per request: {concurrency:.2f}x")


def graph_phase(p: VllmPrinter, plan: VllmPlan, args) -> None:
    """EngineCore: CUDA graph capture (where FlashInfer + MTP dies on sm_121)."""
    if args.enforce_eager:
        return
    max_capture = args.max_cudagraph_capture_size or min(plan.max_num_seqs * 2, 512)
    piecewise = capture_sizes(max_capture)
    full = capture_sizes(min(max_capture, plan.max_num_seqs * (1 + plan.num_spec_tokens)))
    flashinfer_spec = plan.spec and plan.attention == "FLASHINFER"
    if flashinfer_spec:
        p.log("EngineCore", "WARNING", "gpu_model_runner.py:4870", "CUDAGraphMode.FULL_AND_PIECEWISE is not "
              "supported with spec-decode for attention backend FlashInferBackend (support: "
              "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE")
    if at_least(plan.version, "0.19.0"):
        counts = f"PIECEWISE={len(piecewise)} (largest={piecewise[-1]})"
        if not flashinfer_spec:
            counts += f", FULL={len(full)} (largest={full[-1]})"
        p.log("EngineCore", "INFO", "gpu_model_runner.py:5050", f"Profiling CUDA graph memory: {counts}")
        p.log("EngineCore", "INFO", "gpu_model_runner.py:5077", "Estimated CUDA graph memory: 0.61 GiB total")
    if plan.fault and plan.fault.name in ("flashinfer_mtp_cuda_graph_crash", "crash_on_cuda_graph_capture"):
        p.raw("EngineCore", f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   9%|▉         | "
              f"{max(len(piecewise) // 11, 1)}/{len(piecewise)} [00:01<00:09,  4.71it/s]", "stderr")
        return
    p.raw("EngineCore", f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| "
          f"{len(piecewise)}/{len(piecewise)} [00:06<00:00,  8.02it/s]", "stderr")
    if not flashinfer_spec:
        p.raw("EngineCore", f"Capturing CUDA graphs (decode, FULL): 100%|██████████| {len(full)}/{len(full)} "
              "[00:02<00:00,  9.33it/s]", "stderr")
    p.log("EngineCore", "INFO", "gpu_model_runner.py:5180", "Graph capturing finished in 9 secs, took 0.58 GiB")
    if before(plan.version, "0.20.0"):
        p.log("EngineCore", "INFO", "core.py:275",
              "init engine (profile, create kv cache, warmup model) took 71.37 seconds")
    else:
        p.log("EngineCore", "INFO", "core.py:281",
              "init engine (profile, create kv cache, warmup model) took 71.37 s (compilation: 38.21 s)")


def engine_fault(p: VllmPrinter, plan: VllmPlan) -> None:
    """EngineCore failed to start -> APIServer RuntimeError (exit 1)."""
    fault = plan.fault
    frames = [(ENGINE_CORE, 1010, "run_engine_core", "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)"),
              (ENGINE_CORE, 764, "__init__", "super().__init__(")]
    if fault.phase in ("engine_init", "draft_load") and fault.name != "kv_cache_no_memory":
        frames += [(ENGINE_CORE, 106, "__init__", "self.model_executor = executor_class(vllm_config)"),
                   ("vllm/v1/executor/uniproc_executor.py", 48, "_init_executor", "self.driver_worker.load_model()"),
                   ("vllm/v1/worker/gpu_worker.py", 275, "load_model",
                    "self.model_runner.load_model(eep_scale_up=eep_scale_up)")]
        key = "draft_load" if fault.phase == "draft_load" else fault.name
    else:
        frames += [(ENGINE_CORE, 115, "__init__", "num_gpu_blocks, num_cpu_blocks, kv_cache_config = "
                    "self._initialize_kv_caches(")]
        key = fault.name
    frames += FAULT_TRACE.get(key, [])
    message = fault.message
    if fault.name == "flashinfer_mtp_cuda_graph_crash":
        message = message + "\n" + CUDA_TAIL.replace("cudaErrorIllegalAddress", "cudaErrorIllegalInstruction")
    lines = traceback_lines(frames, message)
    p.log("EngineCore", "ERROR", "core.py:1019", "EngineCore failed to start.\n" + "\n".join(lines))
    p.raw("EngineCore", "Process EngineCore:" if not before(plan.version, "0.18.0") else "Process EngineCore_DP0:",
          "stderr")
    for line in lines:
        p.raw("EngineCore", line, "stderr")
    name = "EngineCore_DP0" if before(plan.version, "0.18.0") else "EngineCore"
    api = traceback_lines([("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
                           ("vllm/entrypoints/cli/serve.py", 111, "cmd", "uvloop.run(run_server(args))"),
                           ("vllm/v1/engine/utils.py", 1005, "wait_for_engine_startup", "raise RuntimeError(")],
                          "RuntimeError: Engine core initialization failed. See root cause above. "
                          f"Failed core proc(s): {{'{name}': 1}}")
    for line in api:
        p.raw("APIServer", line, "stderr")


def ready_phase(p: VllmPrinter, plan: VllmPlan, args, display_host: str) -> None:
    p.log("APIServer", "INFO", "api_server.py:1630", "Supported tasks: ['generate']")
    if args.override_generation_config:
        p.log("APIServer", "INFO", "serving_chat.py:140",
              f"Using default chat sampling params from model: {args.override_generation_config}")
    address = f"http://{display_host}:{args.port}"
    if before(plan.version, "0.18.0"):
        p.log("APIServer", "INFO", "api_server.py:1983", f"Starting vLLM API server 0 on {address}")
    else:
        p.log("APIServer", "INFO", "api_server.py:1983", f"Starting vLLM server on {address}")
    p.log("APIServer", "INFO", "launcher.py:46", "Available routes are:")
    for route, methods in (("/health", "GET"), ("/metrics", "GET"), ("/version", "GET"), ("/v1/models", "GET"),
                           ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")):
        p.log("APIServer", "INFO", "launcher.py:54", f"Route: {route}, Methods: {methods}")
    p.uvicorn(f"Started server process [{p.pids['APIServer']}]")
    p.uvicorn("Waiting for application startup.")
    p.uvicorn("Application startup complete.")


def runtime_crash(p: VllmPrinter, plan: VllmPlan) -> None:
    """The bad nightly: CUDA illegal memory access in the first speculative step."""
    frames = [(ENGINE_CORE, 1064, "run_engine_core", "engine_core.run_busy_loop()"),
              (ENGINE_CORE, 1091, "run_busy_loop", "self._process_engine_step()"),
              (ENGINE_CORE, 1128, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
              (ENGINE_CORE, 455, "step_with_batch_queue", "model_output = future.result()"),
              ("vllm/v1/worker/gpu_model_runner.py", 3612, "sample_tokens",
               "self._draft_token_ids = self.propose_draft_token_ids("),
              ("vllm/v1/spec_decode/eagle.py", 402, "propose", "last_hidden_states, hidden_states = self.model("),
              ("vllm/v1/worker/gpu_model_runner.py", 3398, "_prepare_inputs",
               "self.prepare_inputs_event.synchronize()")]
    lines = traceback_lines(frames, plan.fault.message + "\n" + CUDA_TAIL)
    p.log("EngineCore", "ERROR", "core.py:1073", "EngineCore encountered a fatal error.\n" + "\n".join(lines))
    p.log("APIServer", "ERROR", "async_llm.py:704", "AsyncLLM output_handler failed.\n" + "\n".join(
        traceback_lines([("vllm/v1/engine/async_llm.py", 660, "output_handler",
                          "outputs = await engine_core.get_output_async()"),
                         ("vllm/v1/engine/core_client.py", 903, "get_output_async", "raise self._format_exception(outputs) from None")],
                        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                        "See stack trace (above) for the root cause.")))


def misaligned_address_crash(p: VllmPrinter, plan: VllmPlan, running: int) -> None:
    """The runtime fault ``crash_after_requests``: vLLM issue 50934 (GB10, Nemotron NVFP4 + Marlin
    MoE + MTP, after ~10 days): the engine core dumps the scheduler state (dump_input.py), then
    dies with ``torch.AcceleratorError: CUDA error: misaligned address`` in the model forward
    (frames and the CUDA lines as vLLM issue 41257 shows them for the same error)."""
    p.log("EngineCore", "ERROR", "dump_input.py:72", "Dumping input data for V1 LLM engine (v%s) with config: "
          "model=%r, speculative_config=%s" % (full_version("vllm", plan.version), plan.served_model_name,
                                               "SpeculativeConfig(method='mtp')" if plan.spec else None))
    p.log("EngineCore", "ERROR", "dump_input.py:79", "Dumping scheduler output for model execution: "
          "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=[...]), "
          "num_scheduled_tokens={...}, total_num_scheduled_tokens=%d, scheduled_spec_decode_tokens={}, "
          "num_spec_tokens_to_schedule=%d)" % (max(running, 1) * 8, plan.num_spec_tokens))
    p.log("EngineCore", "ERROR", "dump_input.py:81", "Dumping scheduler stats: SchedulerStats(num_running_reqs=%d, "
          "num_waiting_reqs=0, step_counter=0, current_wave=0)" % max(running, 1))
    frames = [(ENGINE_CORE, 1064, "run_engine_core", "engine_core.run_busy_loop()"),
              (ENGINE_CORE, 1091, "run_busy_loop", "self._process_engine_step()"),
              (ENGINE_CORE, 1128, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
              (ENGINE_CORE, 455, "step_with_batch_queue", "model_output = future.result()"),
              ("vllm/v1/worker/gpu_model_runner.py", 3524, "_model_forward", "return self.model("),
              ("vllm/compilation/cuda_graph.py", 355, "__call__", "entry.cudagraph.replay()"),
              ("torch/cuda/graphs.py", 139, "replay", "super().replay()")]
    lines = traceback_lines(frames, "torch.AcceleratorError: CUDA error: misaligned address\n"
                            + CUDA_TAIL.replace("cudaErrorIllegalAddress", "cudaErrorMisalignedAddress"))
    p.log("EngineCore", "ERROR", "core.py:1073", "EngineCore encountered a fatal error.\n" + "\n".join(lines))
    p.log("APIServer", "ERROR", "async_llm.py:704", "AsyncLLM output_handler failed.\n" + "\n".join(
        traceback_lines([("vllm/v1/engine/async_llm.py", 660, "output_handler",
                          "outputs = await engine_core.get_output_async()"),
                         ("vllm/v1/engine/core_client.py", 903, "get_output_async",
                          "raise self._format_exception(outputs) from None")],
                        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                        "See stack trace (above) for the root cause.")))


def drain_start(p: VllmPrinter, timeout: int, in_flight: int) -> None:
    """vLLM 0.19.1 vllm/v1/engine/core.py ``_handle_shutdown``, on SIGTERM with --shutdown-timeout > 0."""
    p.log("EngineCore", "INFO", "core.py:1210", f"Shutdown initiated (timeout={timeout})")
    if in_flight:
        p.log("EngineCore", "INFO", "core.py:1222", f"Draining {in_flight} in-flight requests (timeout={timeout}s)")


def drain_reject(p: VllmPrinter, request_id: str) -> None:
    """vLLM 0.19.1 vllm/v1/engine/core.py ``_reject_add_in_shutdown``: a request added while draining."""
    p.log("EngineCore", "INFO", "core.py:1276", f"Rejecting request {request_id} (server shutting down)")


def drain_end(p: VllmPrinter) -> None:
    """The last in-flight request finished (core.py ``_handle_shutdown``: no work remaining)."""
    p.log("EngineCore", "INFO", "core.py:1233", "Shutdown complete")


def shutdown(p: VllmPrinter, errored: bool) -> None:
    if errored:
        p.log("APIServer", "ERROR", "launcher.py:110", "Engine is dead. Shutting down the server.")
    p.uvicorn("Shutting down")
    p.uvicorn("Waiting for application shutdown.")
    p.uvicorn("Application shutdown complete.")
    p.uvicorn("Finished server process [1]")


def stats_lines(p: VllmPrinter, plan: VllmPlan, prompt_tps: float, gen_tps: float, running: int, waiting: int,
                kv_usage: float, prefix_hit_rate: float | None, spec: dict | None) -> None:
    """Periodic ``Engine 000:`` line (+ ``SpecDecoding metrics:``), loggers.py formats."""
    parts = [f"Avg prompt throughput: {prompt_tps:.1f} tokens/s", f"Avg generation throughput: {gen_tps:.1f} tokens/s",
             f"Running: {running} reqs", f"Waiting: {waiting} reqs", f"GPU KV cache usage: {kv_usage * 100:.1f}%"]
    if prefix_hit_rate is not None or before(plan.version, "0.32.0"):
        parts.append(f"Prefix cache hit rate: {(prefix_hit_rate or 0.0) * 100:.1f}%")
    p.log("APIServer", "INFO", "loggers.py:257", "Engine 000: " + ", ".join(parts))
    if spec and spec["drafts"]:
        drafts, drafted, accepted = spec["drafts"], spec["draft_tokens"], spec["accepted"]
        rates = ", ".join(f"{count / drafts:.3f}" for count in spec["per_pos"])
        p.log("APIServer", "INFO", "metrics.py:100",
              f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
              f"Accepted throughput: {spec['accepted_tps']:.2f} tokens/s, "
              f"Drafted throughput: {spec['drafted_tps']:.2f} tokens/s, Accepted: {accepted} tokens, "
              f"Drafted: {drafted} tokens, Per-position acceptance rate: {rates}, "
              f"Avg Draft acceptance rate: {100.0 * accepted / max(drafted, 1):.1f}%")


def release_tuple(version: str) -> tuple[int, int, int]:
    return release(version)
