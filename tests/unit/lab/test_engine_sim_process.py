# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine simulator as a process (no Docker): start-up log, HTTP API, metrics, crashes.

Runs the simulator with the image's interpreter when present (python3.11, Debian bookworm),
on a free 127.0.0.1 port, with a fake ``nvidia-smi`` on PATH, ENGINE_SIM_STARTUP_DELAY=0.
"""
from __future__ import annotations

import http.client
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from engine_sim_cases import (ENGINE_SIM_DIR, GB10_ROWS, RTX_PRO_6000_ROWS, SEED000_ENV, SEED000_MODEL, SEED002_ARGS,
                              SEED002_EAGLE, SEED002_ENV, replace_value, seed000_args, without)

PYTHON = shutil.which("python3.11") or sys.executable
TIMEOUT = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sim:
    def __init__(self, tmp_path, personality, argv, gpu_rows=None, env=None):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        if gpu_rows is not None:
            smi = bindir / "nvidia-smi"
            smi.write_text("#!/bin/sh\ncat <<'ROWS'\n" + gpu_rows + "ROWS\n")
            smi.chmod(0o755)
        self.out_path, self.err_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
        full_env = {"PATH": f"{bindir}:/usr/bin:/bin", "PYTHONPATH": f"{ENGINE_SIM_DIR}:{ENGINE_SIM_DIR}/shims/python",
                    "ENGINE_SIM_STARTUP_DELAY": "0", "ENGINE_SIM_EXIT_GRACE": "0.3", "LANG": "C.UTF-8",
                    "PYTHONIOENCODING": "utf-8"}
        full_env.update(env or {})
        if personality == "vllm":
            command = [PYTHON, "-m", "engine_sim", "vllm", "serve", *argv]
        else:
            command = [PYTHON, "-m", "sglang.launch_server", *argv]
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(command, stdout=out, stderr=err, env=full_env)

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(encoding="utf-8")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8")

    def wait_exit(self, timeout=TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=TIMEOUT)


def request(port, path, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_ready(sim: Sim, port: int) -> None:
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        assert sim.proc.poll() is None, f"simulator exited {sim.proc.returncode}:\n{sim.stdout}\n{sim.stderr}"
        try:
            if request(port, "/health", timeout=1)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    raise AssertionError("simulator not ready:\n" + sim.stdout)


def chat(port, model, content, temperature=0, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": content}], "temperature": temperature}
    body.update(extra)
    return request(port, "/v1/chat/completions", body)


def test_vllm_nightly_gb10_seed000_latency_profile(tmp_path, sims):
    port = free_port()
    sim = Sim(tmp_path, "vllm", seed000_args() + ["--host", "127.0.0.1", "--port", str(port)], GB10_ROWS,
              dict(SEED000_ENV, ENGINE_SIM_VERSION="0.19.2rc1.dev134", VLLM_LOG_STATS_INTERVAL="0.2"))
    sims.append(sim)
    wait_ready(sim, port)
    log = sim.stdout
    for line in ("version 0.19.2rc1.dev134+gfe9c3d6c5",
                 "(APIServer pid=", "non-default args: {",
                 "(EngineCore pid=", "Initializing a V1 LLM engine (v0.19.2rc1.dev134+gfe9c3d6c5) with config: ",
                 "speculative_config=SpeculativeConfig(method='mtp', model='RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4', num_spec_tokens=2)",
                 "Using AttentionBackendEnum.TRITON_ATTN backend.",
                 "Using 'MARLIN' NvFp4 MoE backend out of potential backends: "
                 "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].",
                 "Using NvFp4LinearBackend.MARLIN for NVFP4 GEMM", "Loading drafter model...",
                 "Using TRITON backend for Unquantized MoE", "GPU KV cache size: ",
                 "Maximum concurrency for 262,144 tokens per request: ",
                 "Chunked prefill is enabled with max_num_batched_tokens=2048.",
                 "Starting vLLM server on http://127.0.0.1:", "INFO:     Application startup complete."):
        assert line in log, line
    assert log.index("Loading drafter model...") < log.index("Using TRITON backend for Unquantized MoE")
    assert "EngineCore_DP0" not in log

    status, body = request(port, "/v1/models")
    assert status == 200 and json.loads(body)["data"][0]["id"] == SEED000_MODEL
    status, body = chat(port, SEED000_MODEL, "What is 2+2? Answer with a number only.")
    reply = json.loads(body)
    assert status == 200 and reply["choices"][0]["message"]["content"] == "4"
    assert reply["usage"]["prompt_tokens"] > 0 and reply["usage"]["completion_tokens"] > 0
    assert reply["object"] == "chat.completion" and reply["model"] == SEED000_MODEL
    status, body = request(port, "/v1/completions", {"model": SEED000_MODEL, "prompt": "Once upon", "max_tokens": 8})
    assert status == 200 and json.loads(body)["usage"]["completion_tokens"] == 8
    assert chat(port, "no-such-model", "hi")[0] == 404

    status, metrics = request(port, "/metrics")
    assert status == 200
    for name in ("vllm:num_requests_running{", "vllm:num_requests_waiting{", "vllm:kv_cache_usage_perc{",
                 "vllm:prefix_cache_queries_total{", "vllm:prefix_cache_hits_total{", "vllm:prompt_tokens_total{",
                 "vllm:generation_tokens_total{", "vllm:spec_decode_num_drafts_total{",
                 "vllm:spec_decode_num_draft_tokens_total{", "vllm:spec_decode_num_accepted_tokens_total{",
                 f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="{SEED000_MODEL}",position="1"}}'):
        assert name in metrics, name
    assert 'position="2"' not in metrics
    deadline = time.time() + 5
    while "SpecDecoding metrics: Mean acceptance length: " not in sim.stdout and time.time() < deadline:
        time.sleep(0.05)
    assert "Engine 000: Avg prompt throughput: " in sim.stdout
    assert "SpecDecoding metrics: Mean acceptance length: " in sim.stdout
    assert sim.stop() == 0


def test_vllm_per_position_acceptance_decays_at_temperature_one(tmp_path, sims):
    port = free_port()
    spec = '{"method":"mtp","num_speculative_tokens":3,"moe_backend":"triton"}'
    sim = Sim(tmp_path, "vllm", seed000_args(spec=spec) + ["--host", "127.0.0.1", "--port", str(port)], GB10_ROWS,
              dict(SEED000_ENV, ENGINE_SIM_TOKEN_LATENCY="0"))
    sims.append(sim)
    wait_ready(sim, port)
    for index in range(30):
        assert chat(port, SEED000_MODEL, f"Write a short story number {index}", temperature=1.0)[0] == 200
    metrics = request(port, "/metrics")[1]

    def value(prefix):
        line = next(line for line in metrics.splitlines() if line.startswith(prefix))
        return float(line.rsplit(" ", 1)[1])

    drafts = value("vllm:spec_decode_num_drafts_total")
    rates = [value(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="{SEED000_MODEL}",'
                   f'position="{k}"}}') / drafts for k in range(3)]
    assert 0.57 < rates[0] < 0.77 and 0.26 < rates[1] < 0.46 and 0.08 < rates[2] < 0.26, rates
    sim.stop()


def test_vllm_0171_mtp_with_global_marlin_fails_to_start(tmp_path, sims):
    port = free_port()
    argv = seed000_args(spec='{"method":"mtp","num_speculative_tokens":2}') + ["--port", str(port)]
    sim = Sim(tmp_path, "vllm", argv, GB10_ROWS, dict(SEED000_ENV, ENGINE_SIM_VERSION="0.17.1"))
    sims.append(sim)
    assert sim.wait_exit() == 1
    out, err = sim.stdout, sim.stderr
    assert "(EngineCore_DP0 pid=" in out and "EngineCore failed to start." in out
    assert "ValueError: moe_backend='marlin' is not supported for unquantized MoE. Expected one of " \
           "['triton', 'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter']." in err
    assert "RuntimeError: Engine core initialization failed. See root cause above. " \
           "Failed core proc(s): {'EngineCore_DP0': 1}" in err
    assert "Application startup complete." not in out


def test_vllm_flashinfer_mtp_on_gb10_crashes_in_cuda_graph_capture(tmp_path, sims):
    argv = replace_value(seed000_args(), "--attention-backend", "FLASHINFER") + ["--port", str(free_port())]
    sim = Sim(tmp_path, "vllm", argv, GB10_ROWS, SEED000_ENV)
    sims.append(sim)
    assert sim.wait_exit() == 1
    assert "Using AttentionBackendEnum.FLASHINFER backend." in sim.stdout
    assert "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   9%" in sim.stderr
    assert "torch.AcceleratorError: CUDA error: an illegal instruction was encountered" in sim.stderr


def test_vllm_bad_compile_nightly_dies_in_cuda_graph_capture(tmp_path, sims):
    argv = seed000_args() + ["--host", "127.0.0.1", "--port", str(free_port())]
    sim = Sim(tmp_path, "vllm", argv, GB10_ROWS, dict(SEED000_ENV, ENGINE_SIM_FAULT="crash_on_cuda_graph_capture"))
    sims.append(sim)
    assert sim.wait_exit() == 1
    assert "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   9%" in sim.stderr
    assert "RuntimeError: CUDA error: an illegal instruction was encountered" in sim.stderr
    assert "RuntimeError: Engine core initialization failed." in sim.stderr
    assert "Application startup complete." not in sim.stdout


def test_vllm_bad_nightly_dies_on_first_speculative_request(tmp_path, sims):
    port = free_port()
    sim = Sim(tmp_path, "vllm", seed000_args() + ["--host", "127.0.0.1", "--port", str(port)], GB10_ROWS,
              dict(SEED000_ENV, ENGINE_SIM_FAULT="illegal_memory_access_on_first_spec"))
    sims.append(sim)
    wait_ready(sim, port)
    status, body = chat(port, SEED000_MODEL, "What is 2+2?")
    assert status == 500 and json.loads(body)["error"]["type"] == "InternalServerError"
    assert request(port, "/health", timeout=2)[0] == 503
    assert sim.wait_exit() == 1
    out = sim.stdout
    assert "EngineCore encountered a fatal error." in out
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in out
    assert "CUDA kernel errors might be asynchronously reported at some other API call" in out
    assert "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue." in out


def test_vllm_without_gpu_fails_like_a_gpu_less_host(tmp_path, sims):
    sim = Sim(tmp_path, "vllm", seed000_args(), None, SEED000_ENV)
    sims.append(sim)
    assert sim.wait_exit() == 1
    assert "RuntimeError: Failed to infer device type" in sim.stderr


def test_vllm_unknown_flag_exits_2(tmp_path, sims):
    sim = Sim(tmp_path, "vllm", seed000_args() + ["--swap-space", "4"], GB10_ROWS)
    sims.append(sim)
    assert sim.wait_exit() == 2
    assert "vllm: error: unrecognized arguments: --swap-space 4" in sim.stderr


def test_sglang_seed002_eagle_on_rtx_pro_6000(tmp_path, sims):
    port = free_port()
    argv = replace_value(replace_value(SEED002_ARGS + SEED002_EAGLE, "--host", "127.0.0.1"), "--port", str(port))
    sim = Sim(tmp_path, "sglang", argv, RTX_PRO_6000_ROWS, dict(SEED002_ENV, ENGINE_SIM_VERSION="0.5.13"))
    sims.append(sim)
    wait_ready(sim, port)
    log = sim.stdout
    for line in ("server_args=ServerArgs(model_path='nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8'",
                 "speculative_moe_runner_backend='triton'", "fp8_gemm_runner_backend='triton'",
                 "Load weight end. type=NemotronHForCausalLM", "KV Cache is allocated. #tokens: ",
                 "intermediate_ssm_state_cache size:", "max_total_num_tokens=",
                 "Uvicorn running on http://127.0.0.1:", "The server is fired up and ready to roll!"):
        assert line in log, line
    status, body = chat(port, "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "What is 2+2?", max_tokens=64)
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "4"
    assert chat(port, "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "Write a poem")[0] == 200
    info = json.loads(request(port, "/get_server_info")[1])
    assert info["speculative_moe_runner_backend"] == "triton" and info["moe_runner_backend"] == "triton"
    assert request(port, "/server_info")[0] == 200
    metrics = request(port, "/metrics")[1]
    for name in ("sglang:num_running_reqs{", "sglang:num_queue_reqs{", "sglang:token_usage{",
                 "sglang:cache_hit_rate{", "sglang:spec_accept_length{", "sglang:spec_accept_rate{",
                 "sglang:gen_throughput{"):
        assert name in metrics, name
    assert "accept len: " in sim.stdout and "Decode batch, #running-req: " in sim.stdout
    assert sim.stop() == 0


def test_sglang_eagle_without_speculative_moe_triton_is_killed(tmp_path, sims):
    argv = without(SEED002_ARGS + SEED002_EAGLE, "--speculative-moe-runner-backend")
    sim = Sim(tmp_path, "sglang", replace_value(argv, "--port", str(free_port())), RTX_PRO_6000_ROWS, SEED002_ENV)
    sims.append(sim)
    assert sim.wait_exit() in (-signal.SIGKILL, 128 + signal.SIGKILL)
    assert sim.stdout.rstrip().endswith("Load weight begin. avail mem=85.44 GB")


def test_sglang_deep_gemm_on_sm120_kills_the_tree(tmp_path, sims):
    argv = replace_value(without(SEED002_ARGS, "--fp8-gemm-backend"), "--port", str(free_port()))
    sim = Sim(tmp_path, "sglang", argv, RTX_PRO_6000_ROWS, {})
    sims.append(sim)
    assert sim.wait_exit() in (-signal.SIGKILL, 128 + signal.SIGKILL)
    assert "fp8_gemm_runner_backend='deep_gemm'" in sim.stdout
    assert "Scheduler hit an exception: Traceback (most recent call last):" in sim.stdout
    assert "kernel_runtime.hpp:45" in sim.stdout


def test_sglang_extra_buffer_asserts_on_0512(tmp_path, sims):
    argv = replace_value(SEED002_ARGS, "--mamba-scheduler-strategy", "extra_buffer")
    sim = Sim(tmp_path, "sglang", argv, RTX_PRO_6000_ROWS, dict(SEED002_ENV, ENGINE_SIM_VERSION="0.5.12"))
    sims.append(sim)
    assert sim.wait_exit() == 1
    assert "AssertionError: mamba extra_buffer is not supported for NemotronHForCausalLM model" in sim.stderr


def test_sglang_without_gpu(tmp_path, sims):
    sim = Sim(tmp_path, "sglang", SEED002_ARGS, None, SEED002_ENV)
    sims.append(sim)
    assert sim.wait_exit() == 1
    assert "RuntimeError: Found no NVIDIA driver on your system." in sim.stderr


def _stream(port, body, timeout=20):
    """A streamed completion read to its end: (chunks with text, whether it ended with [DONE])."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    chunks, done = 0, False
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode().strip()
                done = done or line == "data: [DONE]"
                chunks += line.startswith("data: {")
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        pass
    return chunks, done


@pytest.mark.parametrize("shutdown_timeout, finished", [("10", True), ("0", False)])
def test_vllm_graceful_shutdown_finishes_in_flight_and_refuses_new(tmp_path, sims, shutdown_timeout, finished):
    """vLLM >= 0.18 --shutdown-timeout N: on SIGTERM new requests get 503 and /health 503 while the
    in-flight stream finishes, then exit 0; with 0 (the default) the stream is cut at once."""
    port = free_port()
    sim = Sim(tmp_path, "vllm", seed000_args() + ["--host", "127.0.0.1", "--port", str(port),
                                                  "--shutdown-timeout", shutdown_timeout], GB10_ROWS,
              dict(SEED000_ENV, ENGINE_SIM_VERSION="0.19.2rc1.dev134", ENGINE_SIM_TOKEN_LATENCY="0.02"))
    sims.append(sim)
    wait_ready(sim, port)
    result = {}
    body = {"model": SEED000_MODEL, "prompt": "Once upon", "max_tokens": 100, "ignore_eos": True, "stream": True}
    client = threading.Thread(target=lambda: result.update(zip(("chunks", "done"), _stream(port, body))))
    client.start()
    time.sleep(0.4)  # ~20 of its 100 tokens streamed
    sim.proc.send_signal(signal.SIGTERM)
    if finished:
        time.sleep(0.2)
        status, reply = request(port, "/v1/completions", {"model": SEED000_MODEL, "prompt": "Hi", "max_tokens": 4})
        assert status == 503 and json.loads(reply)["error"]["type"] == "ServiceUnavailableError"
        assert request(port, "/health")[0] == 503
    client.join(TIMEOUT)
    assert sim.wait_exit() == 0
    assert result["done"] is finished
    if finished:
        assert result["chunks"] > 10  # the whole stream (MTP sends several tokens a chunk)
        assert "Shutdown initiated (timeout=10)" in sim.stdout
        assert "Draining 1 in-flight requests (timeout=10s)" in sim.stdout
        assert "(server shutting down)" in sim.stdout and "Shutdown complete" in sim.stdout
    else:
        assert "Shutdown initiated" not in sim.stdout


def test_vllm_0171_has_no_shutdown_timeout(tmp_path, sims):
    sim = Sim(tmp_path, "vllm", seed000_args(moe_backend=None) + ["--shutdown-timeout", "10"], GB10_ROWS,
              dict(SEED000_ENV, ENGINE_SIM_VERSION="0.17.1"))
    sims.append(sim)
    assert sim.wait_exit() == 2
    assert "unrecognized arguments: --shutdown-timeout 10" in sim.stderr
