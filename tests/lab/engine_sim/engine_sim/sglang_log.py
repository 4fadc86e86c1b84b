# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang start-up, request and crash lines, in the formats of the released SGLang wheels."""
from __future__ import annotations

from .decide import SglangPlan
from .printer import SglangPrinter, emit, traceback_lines
from .versions import at_least

SITE = "/usr/local/lib/python3.12/dist-packages"


def dump_server_args(plan: SglangPlan) -> str:
    """``server_args=ServerArgs(k=v, ...)`` (<= 0.5.18) or ``server_args={'k': v, ...}`` (>= 0.5.19)."""
    if at_least(plan.version, "0.5.19"):
        return f"server_args={plan.server_args!r}"
    body = ", ".join(f"{key}={value!r}" for key, value in plan.server_args.items())
    return f"server_args=ServerArgs({body})"


def context_len(plan: SglangPlan) -> int:
    return plan.server_args["context_length"] or (262144 if plan.model.hybrid_mamba else 131072)


def max_running(plan: SglangPlan) -> int:
    return plan.server_args["max_running_requests"] or (plan.mamba_cache_size or 4096)


def config_phase(p: SglangPrinter, plan: SglangPlan) -> None:
    for warning in plan.warnings:
        p.log(warning)
    if plan.fault and plan.fault.phase == "config":
        return
    p.log(dump_server_args(plan))


def config_fault(p: SglangPrinter, plan: SglangPlan) -> None:
    """ServerArgs.__post_init__ raised in the launcher process: traceback, exit 1."""
    frames = [("<frozen runpy>", 198, "_run_module_as_main", ""), ("<frozen runpy>", 88, "_run_code", ""),
              (f"{SITE}/sglang/launch_server.py", 29, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
              ("sglang/srt/server_args.py", 4630, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
              ("sglang/srt/server_args.py", 4210, "from_cli_args",
               "return cls(**{attr: getattr(args, attr) for attr in attrs})"),
              ("<string>", 301, "__init__", ""),
              ("sglang/srt/server_args.py", 640, "__post_init__", "self._handle_model_specific_adjustments()")]
    if plan.fault.name == "no_gpu":
        frames[-1] = ("sglang/srt/server_args.py", 612, "__post_init__", "self._handle_gpu_memory_settings(gpu_mem)")
        frames += [("torch/cuda/__init__.py", 412, "_lazy_init", "torch._C._cuda_init()")]
    for line in traceback_lines(frames, plan.fault.message, SITE):
        emit(line, "stderr")


def load_phase(p: SglangPrinter, plan: SglangPlan) -> None:
    total = plan.gpu.total_gib * 1.0737
    weights = plan.model.weights_gib * 1.0737 / max(plan.server_args["tp_size"], 1)
    p.log("Init torch distributed begin.", "TP0")
    p.log("Init torch distributed ends. mem usage=0.93 GB", "TP0")
    p.log(f"Load weight begin. avail mem={total - 1.2:.2f} GB", "TP0")
    dtype = "torch.bfloat16"
    after = total - 1.2 - weights
    if at_least(plan.version, "0.5.20"):
        quant = plan.server_args["quantization"]
        quant_str = f"quant={quant}, " if quant else ""
        p.log(f"Load weight end. elapsed=14.12 s, type={plan.model.architecture}, {quant_str}"
              f"avail mem={after:.2f} GB, mem usage={weights:.2f} GB.", "TP0")
    else:
        p.log(f"Load weight end. type={plan.model.architecture}, dtype={dtype}, avail mem={after:.2f} GB, "
              f"mem usage={weights:.2f} GB.", "TP0")


def draft_phase(p: SglangPrinter, plan: SglangPlan) -> None:
    if not plan.speculative:
        return
    total = plan.gpu.total_gib * 1.0737
    weights = plan.model.weights_gib * 1.0737 / max(plan.server_args["tp_size"], 1)
    avail = total - 1.2 - weights
    p.log(f"Load weight begin. avail mem={avail:.2f} GB", "TP0")
    if plan.fault and plan.fault.name == "eagle_draft_moe_oom":
        return
    draft_type = "NemotronHForCausalLMMTP" if plan.model.has_mtp_head else plan.model.architecture
    p.log(f"Load weight end. type={draft_type}, dtype=torch.bfloat16, avail mem={avail - 1.2:.2f} GB, "
          "mem usage=1.20 GB.", "TP0")


def memory_phase(p: SglangPrinter, plan: SglangPlan) -> None:
    prefix = "dtype: torch.float8_e4m3fn, " if at_least(plan.version, "0.5.20") else ""
    p.log(f"KV Cache is allocated. {prefix}#tokens: {plan.kv_cache_tokens}, K size: {plan.kv_size_gb:.2f} GB, "
          f"V size: {plan.kv_size_gb:.2f} GB", "TP0")
    if plan.model.hybrid_mamba:
        line = (f"Mamba Cache is allocated. max_mamba_cache_size: {plan.mamba_cache_size}, "
                "conv_state size: 0.56GB, ssm_state size: 29.54GB ")
        if plan.speculative:
            line += "intermediate_ssm_state_cache size: 2.76GB intermediate_conv_window_cache size: 0.24GB "
        p.log(line, "TP0")
    p.log("Memory pool end. avail mem=9.81 GB", "TP0")


def graph_phase(p: SglangPrinter, plan: SglangPlan) -> None:
    if not plan.cuda_graph_bs and not (plan.fault and plan.fault.phase == "cuda_graph"):
        return
    name = "cuda graph"
    if at_least(plan.version, "0.5.23"):
        p.log("Capture decode CUDA graph begin. This can take up to several minutes. avail mem=9.60 GB", "TP0")
    else:
        p.log(f"Capture {name} begin. This can take up to several minutes. avail mem=9.60 GB", "TP0")
    if plan.fault and plan.fault.phase == "cuda_graph":
        return
    p.log(f"Capture {name} end. Time elapsed: {0.4 * len(plan.cuda_graph_bs):.2f} s. mem usage=0.85 GB. "
          "avail mem=8.75 GB.", "TP0")


def scheduler_fault(p: SglangPrinter, plan: SglangPlan) -> None:
    """Scheduler hit an exception -> SIGQUIT to the launcher -> process tree killed (137)."""
    frames = [("sglang/srt/managers/scheduler.py", 2780, "run_scheduler_process",
               "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"),
              ("sglang/srt/managers/scheduler.py", 331, "__init__", "self.tp_worker = TpModelWorker(")]
    if plan.fault.phase == "cuda_graph":
        frames += [("sglang/srt/model_executor/model_runner.py", 412, "initialize", "self.init_device_graphs()"),
                   ("sglang/srt/model_executor/cuda_graph_runner.py", 390, "capture", "self.capture_one_batch_size(bs, forward)"),
                   ("sglang/srt/layers/quantization/fp8_utils.py", 188, "deepgemm_w8a8_block_fp8_linear_with_fallback",
                    "output = w8a8_block_fp8_matmul_deepgemm("),
                   ("deep_gemm/__init__.py", 95, "fp8_gemm_nt", "return _C.fp8_gemm_nt(")]
    else:
        frames += [("sglang/srt/model_executor/model_runner.py", 388, "initialize", "self.load_model()"),
                   ("sglang/srt/layers/quantization/fp8_utils.py", 143, "dispatch_w8a8_block_fp8_linear",
                    "assert is_sm90_supported() or is_sm100_supported(),")]
    lines = traceback_lines(frames, plan.fault.message, SITE)
    p.log("Scheduler hit an exception: " + "\n".join(lines), "TP0")
    p.log("Received sigquit from a child process. It usually means the child failed.")


def runtime_crash(p: SglangPrinter) -> None:
    """The runtime fault ``crash_after_requests``: a CUDA illegal memory access in a decode batch
    (eugr/spark-vllm-docker 308 under sustained load); the scheduler's exception reaches the
    launcher as SIGQUIT, which kills the process tree (scheduler.py / the launcher's handler)."""
    frames = [("sglang/srt/managers/scheduler.py", 2790, "run_scheduler_process", "scheduler.event_loop_normal()"),
              ("sglang/srt/managers/scheduler.py", 1012, "event_loop_normal", "result = self.run_batch(batch)"),
              ("sglang/srt/managers/tp_worker.py", 395, "forward_batch_generation",
               "logits_output, can_run_cuda_graph = self.model_runner.forward("),
              ("sglang/srt/model_executor/cuda_graph_runner.py", 820, "replay", "self.graphs[self.bs].replay()"),
              ("torch/cuda/graphs.py", 139, "replay", "super().replay()")]
    lines = traceback_lines(frames, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
                            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                            "stacktrace below might be incorrect.", SITE)
    p.log("Scheduler hit an exception: " + "\n".join(lines), "TP0")
    p.log("Received sigquit from a child process. It usually means the child failed.")


def ready_phase(p: SglangPrinter, plan: SglangPlan, display_host: str, port: int) -> None:
    args = plan.server_args
    p.log(f"max_total_num_tokens={plan.kv_cache_tokens}, chunked_prefill_size={args['chunked_prefill_size']}, "
          f"max_prefill_tokens={args['max_prefill_tokens']}, max_running_requests={max_running(plan)}, "
          f"context_len={context_len(plan)}, available_gpu_mem=8.75 GB", "TP0")
    p.uvicorn("Started server process [1]")
    p.uvicorn("Waiting for application startup.")
    p.uvicorn("Application startup complete.")
    p.uvicorn(f"Uvicorn running on http://{display_host}:{port} (Press CTRL+C to quit)")


def prefill_line(p: SglangPrinter, plan: SglangPlan, new_tokens: int, cached: int, running: int, queued: int,
                 new_seqs: int = 1) -> None:
    usage = "full token usage: 0.00, mamba usage: 0.00, " if plan.model.hybrid_mamba else "token usage: 0.00, "
    p.log(f"Prefill batch, #new-seq: {new_seqs}, #new-token: {new_tokens}, #cached-token: {cached}, {usage}"
          f"#running-req: {running}, #queue-req: {queued}, cuda graph: False, input throughput (token/s): 0.00", "TP0")


def decode_line(p: SglangPrinter, plan: SglangPlan, running: int, tokens: int, accept_len: float | None,
                accept_rate: float | None, throughput: float, queued: int) -> None:
    if plan.model.hybrid_mamba:
        usage = (f"#full token: {tokens}, full token usage: {tokens / max(plan.kv_cache_tokens, 1):.2f}, "
                 f"mamba num: {running}, mamba usage: {running / max(plan.mamba_cache_size, 1):.2f}, ")
    else:
        usage = f"#token: {tokens}, token usage: {tokens / max(plan.kv_cache_tokens, 1):.2f}, "
    spec = ""
    if accept_len is not None:
        spec = f"accept len: {accept_len:.2f}, accept rate: {accept_rate:.2f}, "
    graph = bool(plan.cuda_graph_bs)
    p.log(f"Decode batch, #running-req: {running}, {usage}{spec}cuda graph: {graph}, "
          f"gen throughput (token/s): {throughput:.2f}, #queue-req: {queued}", "TP0")


def fired_up(p: SglangPrinter) -> None:
    p.log("The server is fired up and ready to roll!")
