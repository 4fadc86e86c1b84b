# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine log pattern table and the pure functions around it, per pattern and version."""
from __future__ import annotations

import re

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_records as log_records
from ansible_collections.inferops.serving.plugins.module_utils import _log_patterns as log_patterns
from ansible_collections.inferops.serving.plugins.module_utils import _log_scanner as log_scanner
from ansible_collections.inferops.serving.plugins.module_utils import _log_reading as log_reading
from ansible_collections.inferops.serving.plugins.module_utils import _log_verdict as log_verdict
from ansible_collections.inferops.serving.plugins.module_utils import _startup_phases as startup_phases

from log_corpus import (  # this directory
    ERR,
    REQUEST,
    SGL,
    VLLM,
    fixture,
)


# --- prefixes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, message, tag", [
    ("(APIServer pid=1) INFO 06-09 10:08:22 [api_server.py:1961] Starting vLLM server", "Starting vLLM server", "APIServer"),
    ("(EngineCore_DP0 pid=188) ERROR 03-12 09:19:51 [core.py:1010] ValueError: x", "ValueError: x", "EngineCore_DP0"),
    ("(Worker_TP3 pid=77) INFO 05-01 17:58:16 [cuda.py:351] Using X", "Using X", "Worker_TP3"),
    ("(EngineCore pid=176) INFO 05-01 17:58:16 [nvfp4.py:279] Using 'MARLIN'", "Using 'MARLIN'", "EngineCore"),
    ("vllm-1  | 2026-05-01T17:58:16.371010021Z (EngineCore pid=176) INFO 05-01 17:58:16 [a.py:1] hi", "hi", "EngineCore"),
    ("May 01 17:58:16 gb10 docker[812]: (APIServer pid=1) INFO:     Application startup complete.",
     "Application startup complete.", "APIServer"),
    ("INFO:     Application startup complete.", "Application startup complete.", ""),
    ("[2026-07-24 08:09:27 TP0] Prefill batch, #new-seq: 1", "Prefill batch, #new-seq: 1", "TP0"),
    ("[2026-07-24 08:09:27.123 DP0 TP3] Decode batch", "Decode batch", "DP0 TP3"),
    ("[2026-07-24 08:09:21] INFO:     10.38.1.110:54856 - \"HEAD / HTTP/1.1\" 200 OK",
     "10.38.1.110:54856 - \"HEAD / HTTP/1.1\" 200 OK", ""),
    ("(EngineCore pid=7476) 2026-07-25 13:42:38,525 - INFO - autotuner.py:2216 - flashinfer.jit: x", "flashinfer.jit: x",
     "EngineCore"),
    ("  File \"/usr/lib/python3.12/x.py\", line 3", "  File \"/usr/lib/python3.12/x.py\", line 3", ""),
])
def test_split_prefix(line, message, tag):
    msg, got_tag, _header = log_records.split_prefix(line)
    assert (msg, got_tag) == (message, tag)


@pytest.mark.parametrize("line, header", [
    ("[2026-07-24 08:09:27 TP0] Prefill batch", "sglang"),
    ("(APIServer pid=1) INFO 06-09 10:08:22 [api_server.py:1961] Starting vLLM server", "vllm"),
    # SGLang's uvicorn lines carry its timestamp header but are no engine record (client-chosen paths)
    ("[2026-07-24 08:09:21] INFO:     10.38.1.110:54856 - \"GET /OutOfMemoryError HTTP/1.1\" 404", None),
    ("(EngineCore pid=7476) 2026-07-25 13:42:38,525 - INFO - autotuner.py:2216 - flashinfer.jit: x", None),
    ("INFO:     Application startup complete.", None),
])
def test_split_prefix_names_the_engine_of_a_record_only(line, header):
    assert log_records.split_prefix(line)[2] == header


def test_clean_line_strips_ansi_colour():
    assert log_records.clean_line("(APIServer pid=1) \x1b[32mINFO\x1b[0m 05-01 x  \r") == "(APIServer pid=1) INFO 05-01 x"


# --- names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, name", [
    ("AttentionBackendEnum.TRITON_ATTN", "TRITON_ATTN"),
    ("NvFp4LinearBackend.MARLIN", "MARLIN"),
    ("'marlin'", "MARLIN"),
    ("FlashInfer TRTLLM", "FLASHINFER_TRTLLM"),
    ("flashinfer-cutlass", "FLASHINFER_CUTLASS"),
])
def test_backend_name(raw, name):
    assert log_patterns.backend_name(raw) == name


@pytest.mark.parametrize("cls, name", [
    ("MarlinNvFp4LinearKernel", "MARLIN"),
    ("FlashInferCutlassNvFp4LinearKernel", "FLASHINFER_CUTLASS"),
    ("FlashInferTrtllmNvFp4LinearKernel", "FLASHINFER_TRTLLM"),
    ("FlashInferCuteDslNvFp4LinearKernel", "FLASHINFER_CUTEDSL"),
    ("FlashInferB12xNvFp4LinearKernel", "FLASHINFER_B12X"),
    ("CutlassNvFp4LinearKernel", "VLLM_CUTLASS"),
    ("EmulationNvFp4LinearKernel", "EMULATION"),
    ("CutlassFP8ScaledMMLinearKernel", "VLLM_CUTLASS"),
])
def test_kernel_class_backend(cls, name):
    assert log_patterns.kernel_class_backend(cls) == name


def test_every_pattern_names_its_versions_and_compiles():
    names = [p[0] for p in log_patterns.PATTERNS]
    assert len(names) == len(set(names))
    for name, engine, versions, scope, needle, rx, handler, phase in log_patterns.PATTERNS:
        assert engine in (None, "vllm", "sglang") and versions and needle, name
        assert scope in log_patterns.SCOPES and re.compile(rx), name
        assert handler is not None or phase is not None, name  # an entry records a fact, a fatal or a phase
        if phase is not None:
            assert scope in log_patterns.PHASE_KINDS, name


API = "(APIServer pid=1) INFO 05-01 17:58:16 [x.py:1] "


# --- one line per pattern and version ---------------------------------------------------------------
@pytest.mark.parametrize("engine, lines, expected", [
    # NvFp4 MoE, identical 0.17-0.33
    ("vllm", [VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'MARLIN']."],
     {"moe_backend": "MARLIN"}),
    # FP8 MoE (no quotes)
    ("vllm", [VLLM + "Using TRITON Fp8 MoE backend out of potential backends: ['DEEPGEMM', 'TRITON']."],
     {"moe_backend": "TRITON"}),
    # Unquantized MoE 0.17-0.19 vs 0.20+, BF16 model without a draft: the target's
    ("vllm", [VLLM + "Using TRITON backend for Unquantized MoE"], {"moe_backend": "TRITON"}),
    ("vllm", [VLLM + "Using FlashInfer CUTLASS backend for Unquantized MoE"], {"moe_backend": "FLASHINFER_CUTLASS"}),
    ("vllm", [VLLM + "Using TRITON Unquantized MoE backend out of potential backends: ['FlashInfer TRTLLM', 'TRITON']."],
     {"moe_backend": "TRITON"}),
    # ... with a quantized target, the unquantized line is the MTP head's, even before the drafter line
    ("vllm", [VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: []",
              VLLM + "Using TRITON Unquantized MoE backend out of potential backends: []"],
     {"moe_backend": "MARLIN", "draft_moe_backend": "TRITON"}),
    # ... and after "Loading drafter model..." it is the draft's for a BF16 target too
    ("vllm", [VLLM + "Using TRITON backend for Unquantized MoE", VLLM + "Loading drafter model...",
              VLLM + "Using FlashInfer TRTLLM backend for Unquantized MoE"],
     {"moe_backend": "TRITON", "draft_moe_backend": "FLASHINFER_TRTLLM"}),
    # the 0.33 LoRA line is not the MoE backend line
    ("vllm", [VLLM + "Using TRITON Unquantized MoE LoRA backend"], {"moe_backend": None}),
    # NVFP4 GEMM <=0.19 enum / 0.20+ kernel class
    ("vllm", [VLLM + "Using NvFp4LinearBackend.MARLIN for NVFP4 GEMM"], {"linear_backend": "MARLIN"}),
    ("vllm", [VLLM + "Using MarlinNvFp4LinearKernel for NVFP4 GEMM"], {"linear_backend": "MARLIN"}),
    ("vllm", [VLLM + "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM"], {"linear_backend": "FLASHINFER_CUTLASS"}),
    # attention: forced (enum repr) and auto (bare name); lines after the drafter are the draft's
    ("vllm", [VLLM + "Using AttentionBackendEnum.TRITON_ATTN backend."], {"attention_backend": "TRITON_ATTN"}),
    ("vllm", [VLLM + "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER']."],
     {"attention_backend": "FLASH_ATTN"}),
    ("vllm", [VLLM + "Using AttentionBackendEnum.TRITON_ATTN backend.", VLLM + "Loading drafter model...",
              VLLM + "Using AttentionBackendEnum.FLASHINFER backend."],
     {"attention_backend": "TRITON_ATTN", "draft_attention_backend": "FLASHINFER"}),
    # not attention-backend selections
    ("vllm", [VLLM + "Using backend AttentionBackendEnum.FLASH_ATTN for vit attention",
              VLLM + "Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention."], {"attention_backend": None}),
    # KV cache size: 0.17-0.25 own line, 0.28 one line, 0.30+ device prefix and "GPU + host"
    ("vllm", [VLLM + "GPU KV cache size: 1,206,303 tokens"], {"kv_cache_tokens": 1206303}),
    ("vllm", [VLLM + "GPU KV cache size: 52,000 tokens, Maximum concurrency for 8,192 tokens per request: 6.35x"],
     {"kv_cache_tokens": 52000}),
    ("vllm", [VLLM + "GPU + host KV cache size: 99 tokens, Maximum concurrency for 8 tokens per request: 1.00x"],
     {"kv_cache_tokens": 99}),
    # mamba, chunked prefill, prefix caching (0.17-0.27 WARNING form and 0.28+ INFO form)
    ("vllm", [VLLM + "Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model"],
     {"mamba_ssm_cache_dtype": "float32"}),
    ("vllm", [API + "Chunked prefill is enabled with max_num_batched_tokens=8192."], {"chunked_prefill": True}),
    ("vllm", [API.replace("INFO", "WARNING") + "Mamba cache mode is set to 'all' for NemotronHForCausalLM by default "
              "when prefix caching is enabled"], {"prefix_caching": True}),
    ("vllm", [API + "Mamba cache mode is set to 'none' when prefix caching is disabled"], {"prefix_caching": False}),
    # versions: config line, 0.17 API server line, 0.2x "server version ..., serving model"
    ("vllm", [VLLM + "Initializing a V1 LLM engine (v0.17.1) with config: model='m', speculative_config=None, "
              "tensor_parallel_size=2, kv_cache_dtype=auto, enable_prefix_caching=True, chunked_prefill_enabled=False"],
     {"engine_version": "0.17.1", "model": "m", "speculative_method": "none", "tensor_parallel_size": 2,
      "kv_cache_dtype": "auto", "prefix_caching": True, "chunked_prefill": False}),
    ("vllm", [API + "vLLM API server version 0.17.1"], {"engine_version": "0.17.1"}),
    ("vllm", [API + "vLLM server version 0.23.0, serving model org/m"], {"engine_version": "0.23.0", "model": "org/m"}),
    # the requested args are evidence only when nothing resolved says otherwise
    ("vllm", [API + "non-default args: {'max_num_seqs': 32, 'speculative_config': {'method': 'mtp', "
              "'num_speculative_tokens': 1}}",
              VLLM + "Initializing a V1 LLM engine (v0.19.1) with config: model='m', speculative_config="
              "SpeculativeConfig(method='mtp', model='m', num_spec_tokens=3), tensor_parallel_size=1"],
     {"max_num_seqs": 32, "speculative_method": "mtp", "num_speculative_tokens": 3}),
    # ready: vLLM 0.17-0.31 tagged, 0.32+ untagged uvicorn line
    ("vllm", ["(APIServer pid=1) INFO:     Application startup complete."], {"ready": True}),
    ("vllm", ["INFO:     Application startup complete."], {"ready": True}),
    ("vllm", [VLLM + "Unknown vLLM environment variable detected: VLLM_NVFP4_GEMM_BACKEND"],
     {"warnings": ["Unknown vLLM environment variable detected: VLLM_NVFP4_GEMM_BACKEND"]}),
    # SGLang: <=0.5.18 repr and >=0.5.19 dict
    ("sglang", ["[2026-03-14 09:00:01] server_args=ServerArgs(model_path='m', tp_size=4, attention_backend='triton', "
                "speculative_algorithm=None, speculative_num_steps=None, speculative_moe_runner_backend='triton', "
                "moe_runner_backend='flashinfer_cutlass', fp8_gemm_runner_backend='auto', kv_cache_dtype='auto', "
                "disable_radix_cache=True, chunked_prefill_size=-1, max_running_requests=16)"],
     {"model": "m", "tensor_parallel_size": 4, "attention_backend": "TRITON", "speculative_method": "none",
      "draft_moe_backend": None, "moe_backend": "FLASHINFER_CUTLASS", "linear_backend": "AUTO",
      "prefix_caching": False, "chunked_prefill": False, "max_num_seqs": 16, "num_speculative_tokens": None}),
    ("sglang", ["[2026-10-02 12:00:01] server_args={'model_path': 'm', 'speculative_algorithm': 'EAGLE', "
                "'speculative_num_steps': 3, 'speculative_moe_runner_backend': 'triton', "
                "'moe_runner_backend': 'marlin', 'disable_radix_cache': False, 'mamba_ssm_dtype': 'bfloat16'}"],
     {"speculative_method": "eagle", "num_speculative_tokens": 3, "draft_moe_backend": "TRITON",
      "moe_backend": "MARLIN", "prefix_caching": True, "mamba_ssm_cache_dtype": "bfloat16"}),
    ("sglang", [SGL + "KV Cache is allocated. #tokens: 17892656, K size: 16.66 GB, V size: 16.66 GB"],
     {"kv_cache_tokens": 17892656}),
    ("sglang", [SGL + "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 42, K size: 0.01 GB, V size: 0.01 GB"],
     {"kv_cache_tokens": 42}),
    ("sglang", ["[2026-03-14 09:00:01] The server is fired up and ready to roll!"], {"ready": True}),
    # SGLang also runs uvicorn: its startup line is not readiness
    ("sglang", ["[2026-03-14 09:00:01] INFO:     Application startup complete."], {"ready": False}),
])
def test_pattern(engine, lines, expected):
    result = log_reading.scan_lines(lines, engine)
    for key, value in expected.items():
        assert result["observed"].get(key) == value, key
        if value is not None and key not in ("ready", "warnings"):
            # the line itself, or for a long config dump its head and the key=value (" ... " between)
            pieces = [p for p in result["evidence"][key].split(" ...") if p.strip()]
            assert any(all(p.strip() in line for p in pieces) for line in lines), key
    assert result["fatal"] is None


@pytest.mark.parametrize("lines, engine", [
    ([VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: []"], "vllm"),
    (["[2026-03-14 09:00:01] server_args=ServerArgs(model_path='m')"], "sglang"),
    (["(APIServer pid=1) INFO:     Started server process [1]"], None),
])
def test_engine_detection(lines, engine):
    assert log_reading.scan_lines(lines)["observed"].get("engine") == engine


def test_engine_option_limits_the_pattern_set():
    line = VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: []"
    result = log_reading.scan_lines([line], "sglang")
    assert "moe_backend" not in result["observed"]
    assert result["observed"]["engine"] == "vllm"


# --- fatal signatures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("line, kind", [
    (ERR + "ValueError: moe_backend='marlin' is not supported for unquantized MoE. Expected one of ['triton']",
     "config_error"),
    (ERR + "ValueError: NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment configuration since x.",
     "config_error"),
    (ERR + "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration.", "config_error"),
    ("(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
     "config_error"),
    ("vllm serve: error: argument --moe-backend: invalid choice: 'bogus' (choose from 'aiter', 'auto')", "config_error"),
    ("launch_server.py: error: unrecognized arguments: --mamba-scheduler-strategy no_buffer", "config_error"),
    ("(APIServer pid=1) KeyError: 'invalid reasoning parser: nemotron_v3 (chose from { deepseek_r1 })'", "config_error"),
    (ERR + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
     "cuda_illegal_memory_access"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_illegal_memory_access"),
    (ERR + "torch.AcceleratorError: CUDA error: device-side assert triggered", "cuda_error"),
    (ERR + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "out_of_memory"),
    (ERR + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
     "out_of_memory"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: 0.8", "out_of_memory"),
    ("AssertionError: mamba extra_buffer is not supported for NemotronHForCausalLM model", "assertion"),
    ("AssertionError", "assertion"),
    ("(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.", "engine_dead"),
    (ERR + "EngineCore failed to start.", "engine_dead"),
    ("(APIServer pid=1) ERROR 05-01 17:58:16 [core_client.py:1] Engine core proc EngineCore_DP0 died unexpectedly, "
     "shutting down client.", "engine_dead"),
    ("(APIServer pid=1) WARNING 05-01 17:58:16 [core_client.py:1] [shutdown] MPClient: engine core exited "
     "unexpectedly; starting cleanup", "engine_dead"),
    ("(EngineCore pid=9) ERROR 05-01 17:58:16 [multiproc_executor.py:1] Worker proc VllmWorker-0 died unexpectedly "
     "(exit code: -9), shutting down executor.", "engine_dead"),
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", "engine_dead"),
    ("[2026-03-14 12:00:40] Received sigquit from a child process. It usually means the child failed.", "engine_dead"),
    ("[2026-03-14 12:00:40] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
     "engine_dead"),
])
def test_fatal_kind(line, kind):
    # A headerless exception line counts at its place in a traceback (here: after a frame line).
    frame = '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1000, in run'
    prefix = line[:line.index(")") + 2] if line.startswith("(") else ""
    result = log_reading.scan_lines(["first", prefix + "Traceback (most recent call last):", prefix + frame,
                                     prefix + "    raise", line])
    assert result["fatal"]["kind"] == kind
    assert result["fatal"]["line"] == line
    assert result["fatal"]["context"][-1] == line
    assert result["fatal"]["line_number"] == 5


@pytest.mark.parametrize("line", [
    "Traceback (most recent call last):",
    "    raise ValueError(",
    VLLM + "Using AttentionBackendEnum.TRITON_ATTN backend.",
    "(APIServer pid=1) INFO:     172.17.0.1:40112 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request",
])
def test_not_fatal(line):
    assert log_reading.scan_lines([line])["fatal"] is None


def test_request_error_after_ready_is_not_a_config_error():
    result = log_reading.scan_lines(["INFO:     Application startup complete.",
                                     "(APIServer pid=1) ValueError: This model's maximum context length is 8192 tokens."], "vllm")
    assert result["fatal"] is None and result["ready"]


def test_root_cause_beats_the_dead_engine_before_it_and_context_is_20_lines():
    lines = ["line %d" % i for i in range(30)] + [ERR + "EngineCore failed to start."] + \
        ["trace %d" % i for i in range(5)] + [ERR + "ValueError: bad"] + ["after %d" % i for i in range(30)]
    result = log_reading.scan_lines(lines)
    assert result["fatal"]["kind"] == "config_error"
    assert result["fatal"]["line"] == ERR + "ValueError: bad"
    assert len(result["fatal"]["context"]) == 20
    assert result["fatal"]["context"][10] == ERR + "ValueError: bad"
    assert result["fatal"]["line_number"] == 37
    assert result["log_lines_read"] == 67  # the whole log is read


# --- fixtures (both engines, successful and failed starts) ---------------------------------------------
@pytest.mark.parametrize("name, expected, fatal", [
    ("vllm-0.19-gb10-nvfp4-mtp-ok.log",
     {"engine": "vllm", "engine_version": "0.19.2rc1.dev134+gfe9c3d6c5", "moe_backend": "MARLIN",
      "draft_moe_backend": "TRITON", "linear_backend": "MARLIN", "attention_backend": "TRITON_ATTN",
      "draft_attention_backend": "TRITON_ATTN", "speculative_method": "mtp", "num_speculative_tokens": 2,
      "kv_cache_dtype": "fp8", "mamba_ssm_cache_dtype": "float32", "prefix_caching": False, "chunked_prefill": True,
      "max_num_seqs": 4, "tensor_parallel_size": 1, "kv_cache_tokens": 1206303, "ready": True}, None),
    ("vllm-0.17.1-mtp-marlin-config-error.log",
     {"engine_version": "0.17.1", "moe_backend": "MARLIN", "ready": False, "draft_moe_backend": None}, "config_error"),
    ("vllm-0.19-mtp-illegal-memory-access.log", {"ready": True}, "cuda_illegal_memory_access"),
    ("vllm-0.20-auto-flashinfer-prefixed.log",
     {"moe_backend": "FLASHINFER_CUTLASS", "draft_moe_backend": "FLASHINFER_CUTLASS",
      "linear_backend": "FLASHINFER_CUTLASS", "attention_backend": "FLASHINFER", "tensor_parallel_size": 2,
      "num_speculative_tokens": 3, "kv_cache_tokens": 2412544, "ready": True}, None),
    ("vllm-0.33-no-spec-unknown-env.log",
     {"engine_version": "0.33.0", "speculative_method": "none", "moe_backend": "MARLIN", "linear_backend": "MARLIN",
      "attention_backend": "TRITON_ATTN", "prefix_caching": True, "max_num_seqs": 32, "kv_cache_tokens": 1206303,
      "ready": True}, None),
    ("vllm-real-kv-cache-lines.log", {"engine": "vllm", "kv_cache_tokens": 1823372}, None),
    ("sglang-0.5.9-g7e-fp8-ok.log",
     {"engine": "sglang", "moe_backend": "TRITON", "linear_backend": "TRITON", "attention_backend": "FLASHINFER",
      "speculative_method": "none", "kv_cache_dtype": "fp8_e4m3", "prefix_caching": True, "tensor_parallel_size": 8,
      "kv_cache_tokens": 17892656, "max_num_seqs": 512, "chunked_prefill": True, "ready": True,
      "draft_moe_backend": None}, None),
    ("sglang-0.5.9-g7e-fp8-eagle-ok.log",
     {"speculative_method": "eagle", "num_speculative_tokens": 3, "draft_moe_backend": "TRITON",
      "prefix_caching": False, "max_num_seqs": 48, "ready": True}, None),
    ("sglang-0.5.21-dict-format-ok.log",
     {"attention_backend": "TRTLLM_MHA", "draft_attention_backend": "FLASHINFER", "moe_backend": "FLASHINFER_TRTLLM",
      "kv_cache_tokens": 4200000, "max_num_seqs": 64, "tensor_parallel_size": 4, "ready": True}, None),
    ("sglang-0.5.9-extra-buffer-assertion.log", {"engine": "sglang", "ready": False}, "assertion"),
    ("sglang-0.5.9-eagle-oom.log", {"draft_moe_backend": "FLASHINFER_CUTLASS", "ready": False}, "out_of_memory"),
    ("sglang-real-server-args-head.log",
     {"engine": "sglang", "model": "/home/dist/10.10.142.201/models/Qwen3-30B-A3B", "kv_cache_dtype": "auto",
      "max_num_seqs": None}, None),
])
def test_fixture(name, expected, fatal):
    result = log_reading.scan_file(fixture(name))
    for key, value in expected.items():
        assert result["observed"].get(key) == value, key
    assert (result["fatal"] or {}).get("kind") == fatal


def test_fixture_same_result_line_by_line_and_in_tiny_chunks():
    path = fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")
    with open(path, encoding="utf-8") as handle:
        by_line = log_reading.scan_lines(handle)
    assert log_reading.scan_file(path, chunk_size=7) == by_line == log_reading.scan_file(path)


# --- expect -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("expected, observed, same", [
    ("marlin", "MARLIN", True),
    ("TRITON", "MARLIN", False),
    (2, 2, True),
    ("2", 2, True),
    (2.0, 2, True),
    (3, 2, False),
    (True, True, True),
    ("true", True, True),
    ("no", False, True),
    (False, True, False),
    ("maybe", True, False),
    ([], [], True),
    ([], ["x"], False),
    ("VLLM_NVFP4_GEMM_BACKEND", ["Unknown vLLM environment variable detected: VLLM_NVFP4_GEMM_BACKEND"], True),
])
def test_values_match(expected, observed, same):
    assert log_verdict.values_match(expected, observed) is same


@pytest.fixture(scope="module")
def ok_result():
    """A healthy GB10 start scanned whole; computed when a test runs, not at import: mutation testing
    (benchmarks/mutation.sh) imports the tests once and switches the code under test per test run."""
    return log_reading.scan_file(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"))


@pytest.mark.parametrize("expect, optional, keys", [
    ({"moe_backend": "marlin", "draft_moe_backend": "TRITON", "num_speculative_tokens": "2", "ready": True}, (), []),
    ({"moe_backend": "FLASHINFER_CUTLASS"}, (), ["moe_backend"]),
    ({"engine_version": "0.19"}, (), []),
    ({"engine_version": "0.19.2rc1.dev134"}, (), []),
    ({"engine_version": "0.1"}, (), ["engine_version"]),
    ({"kv_cache_tokens": 1206303, "prefix_caching": "false"}, (), []),
    ({"draft_attention_backend": None}, (), ["draft_attention_backend"]),
    ({"engine_version": None, "model": None}, (), ["engine_version", "model"]),
])
def test_compare_expect(ok_result, expect, optional, keys):
    assert [m["key"] for m in log_verdict.compare_expect(expect, ok_result, optional)] == keys


def test_a_value_where_none_is_expected_is_a_mismatch_with_its_proof(ok_result):
    assert log_verdict.compare_expect({"draft_moe_backend": None}, ok_result) == [
        {"key": "draft_moe_backend", "expected": None, "observed": "TRITON",
         "evidence": ok_result["evidence"]["draft_moe_backend"]}]
    assert log_verdict.compare_expect({"warnings": None}, {"observed": {"warnings": []}, "evidence": {}}) == []


def test_no_evidence_and_optional():
    result = log_reading.scan_file(fixture("sglang-0.5.9-g7e-fp8-ok.log"))
    expect = {"draft_moe_backend": None, "engine_version": "0.5.9", "draft_attention_backend": "TRITON"}
    mismatches = log_verdict.compare_expect(expect, result)
    assert mismatches == [
        {"key": "draft_attention_backend", "expected": "TRITON", "observed": None, "evidence": None},
        {"key": "engine_version", "expected": "0.5.9", "observed": None, "evidence": None},
    ]
    assert log_verdict.compare_expect(expect, result, optional=["engine_version", "draft_attention_backend"]) == []


def test_messages_name_key_expected_observed_and_proof():
    result = log_reading.scan_file(fixture("vllm-0.20-auto-flashinfer-prefixed.log"))
    mismatch, = log_verdict.compare_expect({"moe_backend": "MARLIN"}, result)
    text = log_verdict.describe_mismatch(mismatch, "vllm")
    assert text.startswith("moe_backend: expected MARLIN, observed FLASHINFER_CUTLASS, proven by log line: vllm-1  |")
    assert "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend" in text
    mismatch, = log_verdict.compare_expect({"mamba_ssm_cache_dtype": "float32"}, result)
    text = log_verdict.describe_mismatch(mismatch, "vllm")
    assert "no evidence" in text and "Updating mamba_ssm_cache_dtype" in text
    mismatch, = log_verdict.compare_expect({"ready": True}, log_reading.scan_lines(["x"]))
    assert "Application startup complete." in log_verdict.describe_mismatch(mismatch, None)
    assert "fired up" in log_verdict.describe_mismatch(mismatch, None)


def test_dump_evidence_is_an_excerpt_with_the_key():
    result = log_reading.scan_file(fixture("sglang-0.5.9-g7e-fp8-ok.log"))
    assert result["evidence"]["moe_backend"].startswith("[2026-03-14 09:00:01] server_args=ServerArgs(")
    assert result["evidence"]["moe_backend"] == (
        "[2026-03-14 09:00:01] server_args=ServerArgs(model_path='nvi ... moe_runner_backend='triton' ...")
    assert result["evidence"]["speculative_method"] == (
        "[2026-03-14 09:00:01] server_args=ServerArgs(model_path='nvi ... speculative_algorithm=None ...")
    result = log_reading.scan_file(fixture("sglang-0.5.9-g7e-fp8-eagle-ok.log"))
    assert result["evidence"]["speculative_method"] == (
        "[2026-03-14 10:00:01] server_args=ServerArgs(model_path='nvi ... speculative_algorithm='EAGLE' ...")


# --- versions of the ready and default lines ------------------------------------------------------------
@pytest.mark.parametrize("lines, expected", [
    # vLLM 0.17 "API server N", 0.18+ "server", ready at the first route line (no uvicorn line)
    ([API + "Starting vLLM API server 0 on http://0.0.0.0:8000", API + "Available routes are:",
      API + "Route: /openapi.json, Methods: HEAD, GET"], {"ready": True}),
    ([API + "Starting vLLM server on unix:/tmp/v.sock", API + "Route: /health, Endpoint: health"], {"ready": True}),
    ([API + "Route: /health, Methods: GET"], {"ready": False}),
    # SGLang 0.5.1-0.5.6.post2 "not explicitly specified" (0.5.1-0.5.4 after the dump, which shows None)
    (["[2026-03-14 09:00:01] server_args=ServerArgs(model_path='m', attention_backend=None)",
      SGL + "Attention backend not explicitly specified. Use flashinfer backend by default."],
     {"attention_backend": "FLASHINFER"}),
    (["[2026-03-14 09:00:01] Attention backend not specified. Use trtllm_mha backend by default."],
     {"attention_backend": "TRTLLM_MHA"}),
    # SGLang rank tags with underscores (0.5.9+)
    (["[2026-03-14 09:00:01 DP1 ATTN_CP0 MOE_DP1 TP3 EP3] KV Cache is allocated. #tokens: 42, K size: 1 GB"],
     {"kv_cache_tokens": 42}),
    # flashinfer allreduce: 0.20-0.28 INFO selection, 0.20-0.33 workspace line, DEBUG workspace line
    ([VLLM + "Using flashinfer allreduce backend: mnnvl"], {"allreduce_backend": "MNNVL"}),
    ([VLLM + "Initialized FlashInfer Allreduce norm fusion workspace with backend=trtllm"],
     {"allreduce_backend": "TRTLLM"}),
    ([VLLM.replace("INFO", "DEBUG") + "Initialized FlashInfer All Reduce workspace: backend=trtllm, world_size=2"],
     {"allreduce_backend": "TRTLLM"}),
    # SGLang 0.5.1-0.5.3 "Decode batch." and 0.5.5+ "Decode batch," accept len
    ([SGL + "Decode batch, #running-req: 1, #full token: 768320, full token usage: 0.83, mamba num: 4, mamba usage: "
      "0.40, accept len: 2.85, accept rate: 0.62, cuda graph: True, gen throughput (token/s): 0.73, #queue-req: 0"],
     {"mean_acceptance_length": 2.85}),
])
def test_ready_default_and_metrics_variants(lines, expected):
    result = log_reading.scan_lines(lines)
    for key, value in expected.items():
        assert result["observed"].get(key) == value, key


def test_sglang_rank_tags_with_underscores_are_stripped():
    msg, tag, header = log_records.split_prefix("[2026-03-14 09:00:01 DP1 ATTN_CP0 MOE_DP1 TP3] Received sigquit from x")
    assert (msg, tag, header) == ("Received sigquit from x", "DP1 ATTN_CP0 MOE_DP1 TP3", "sglang")
    result = log_reading.scan_lines(["[2026-03-14 09:00:01 MOE_DP1 TP3] Received sigquit from a child process. It usually "
                                     "means the child failed."])
    assert result["fatal"]["kind"] == "engine_dead"


# --- lines and messages the mutation run found unproven ------------------------------------------------
@pytest.mark.parametrize("lines, key, value", [
    ([VLLM + "Selected CutlassFP8ScaledMMLinearKernel for Fp8LinearMethod"], "linear_backend", "VLLM_CUTLASS"),
    ([VLLM + "Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance."],
     "kv_cache_dtype", "fp8"),
    ([API + "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   RedHatAI/NVIDIA-Nemotron-3-Super"],
     "model", "RedHatAI/NVIDIA-Nemotron-3-Super"),
])
def test_one_record_proves_one_key(lines, key, value):
    result = log_reading.scan_lines(lines)
    assert result["observed"][key] == value
    assert result["evidence"][key] == lines[-1]


def test_non_default_args_with_objects_are_read_key_by_key():
    line = (API + "non-default args: {'model': 'org/m', 'max_num_seqs': 8, 'enable_prefix_caching': True, "
            "'kv_transfer_config': KVTransferConfig(kv_connector='x'), 'tensor_parallel_size': 2, "
            "'speculative_config': {'method': 'MTP', 'num_speculative_tokens': 2}, 'kv_cache_dtype': 'auto'}")
    result = log_reading.scan_lines([line])
    expected = {"model": "org/m", "max_num_seqs": 8, "prefix_caching": True, "tensor_parallel_size": 2,
                "speculative_method": "mtp", "num_speculative_tokens": 2, "kv_cache_dtype": None}
    assert {k: result["observed"].get(k) for k in expected} == expected
    assert all(result["evidence"][k] == line for k in ("model", "max_num_seqs", "speculative_method"))


@pytest.mark.parametrize("expected, observed, same", [
    ("0.19", "0.19.2rc1.dev134+gfe9c3d6c5", True),
    ("v0.20", "0.20.1rc1", True),
    ("0.20.1", "0.20.1rc1", True),
    ("0.20.1", "0.20.1", True),
    ("0.2", "0.20.1", False),
    ("0.1", "0.19", False),
    ("0.33.0", "0.33", False),
    ("0.20", "v0.20.1", True),
    ("0.20", " V0.20 ", True),
    ("0.19", "0.19x", False),
])
def test_version_match(expected, observed, same):
    assert log_verdict._version_match(expected, observed) is same


@pytest.mark.parametrize("mismatch, engine, text", [
    ({"key": "ready", "expected": True, "observed": False, "evidence": None}, "sglang",
     "ready: expected True, observed false: the log never shows \"The server is fired up and ready to roll!\""),
    ({"key": "kv_cache_tokens", "expected": 5, "observed": None, "evidence": None}, None,
     "kv_cache_tokens: expected 5, but the log shows no evidence for it (it would show vllm: \"GPU KV cache size: N "
     "tokens\" or sglang: \"KV Cache is allocated. #tokens: N, ...\")"),
    ({"key": "draft_moe_backend", "expected": None, "observed": "TRITON", "evidence": "x"}, "vllm",
     "draft_moe_backend: expected none, observed TRITON, proven by log line: x"),
    ({"key": "warnings", "expected": [], "observed": ["w"], "evidence": None}, "vllm",
     "warnings: expected [], observed ['w']"),
])
def test_describe_mismatch(mismatch, engine, text):
    assert log_verdict.describe_mismatch(mismatch, engine) == text


def test_describe_fatal_and_failure():
    fatal = {"kind": "assertion", "line": "AssertionError", "context": ["AssertionError"]}
    assert log_verdict.describe_fatal(fatal) == "fatal assertion in the engine log: AssertionError"
    fatal = {"kind": "out_of_memory", "line": "L", "line_number": 7, "context": ["a", " ", "b" * 400, "L"]}
    assert log_verdict.describe_fatal(fatal) == "fatal out_of_memory in the engine log at line 7: L -- context: a | %s | L" % (
        "b" * 300)
    result = {"fatal": fatal}
    mismatches = [{"key": "moe_backend", "expected": "MARLIN", "observed": None, "evidence": None},
                  {"key": "ready", "expected": True, "observed": False, "evidence": None},
                  {"key": "engine", "expected": "vllm", "observed": "sglang", "evidence": "e"}]
    assert log_verdict.describe_failure(result, mismatches, "vllm") == [
        log_verdict.describe_fatal(fatal), "engine: expected vllm, observed sglang, proven by log line: e",
        "no evidence in the log for moe_backend, ready (the engine failed before printing it)"]
    assert log_verdict.describe_failure({"fatal": None}, mismatches[:1], "vllm") == [log_verdict.describe_mismatch(mismatches[0], "vllm")]


def test_a_dynamo_wrapped_exception_is_read_as_the_root_cause(tmp_path):
    """torch._dynamo reports a compile failure as "...BackendCompilerFailed: backend='...' raised:"
    with the wrapped exception on the next line. The two exception lines are as a public
    repository quotes vLLM's output (a comment beside `except torch._dynamo.exc.BackendCompilerFailed`,
    found with the search tool), inside vLLM 0.19's logger.exception record of an engine that
    failed to start (the frames as the lab simulator prints them)."""
    head = "(EngineCore pid=176) ERROR 11-30 15:19:40 [core.py:1019] "
    lines = [head + "EngineCore failed to start.", head + "Traceback (most recent call last):",
             head + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1010, in run_engine_core',
             head + "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
             head + "torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend object at "
                    "0x7f6d3f341730>' raised:",
             head + "RuntimeError: CUDA error: an illegal instruction was encountered"]
    log = tmp_path / "engine.log"
    log.write_text("\n".join(lines) + "\n")
    fatal = log_reading.scan_file(str(log), "vllm")["fatal"]
    assert fatal["kind"] == "cuda_error" and fatal["line"].endswith("an illegal instruction was encountered")
    # Lines after an ordinary exception line stay message text: the quoted CUDA error is not the cause.
    log.write_text("\n".join(lines[:4] + [head + "ValueError: bad config", head + "RuntimeError: CUDA error: quoted"])
                   + "\n")
    fatal = log_reading.scan_file(str(log), "vllm")["fatal"]
    assert fatal["kind"] == "config_error" and fatal["line"].endswith("ValueError: bad config")


def test_warnings_are_kept_once_each_and_at_most_max_warnings():
    scanner = log_scanner.LogScanner()
    scanner.warn("w")
    scanner.warn("w")
    assert scanner.warnings == ["w"]
    for i in range(log_scanner.MAX_WARNINGS + 10):
        scanner.warn("w%d" % i)
    assert len(scanner.warnings) == log_scanner.MAX_WARNINGS and scanner.warnings[-1] == "w%d" % (log_scanner.MAX_WARNINGS - 2)


@pytest.mark.parametrize("expected, observed, same", [
    ("abc", 2, False),  # not a number: no match (not an error)
    (None, 2.5, False),
    ("ab", ["ba"], False),  # a string item is searched whole, not letter by letter
    (["a", "b"], ["ba"], True),
])
def test_values_match_other_types(expected, observed, same):
    assert log_verdict.values_match(expected, observed) is same


@pytest.mark.parametrize("chunk, on", [("8192", True), ("1", True), ("0", False), ("-1", False)])
def test_sglang_scheduler_line_says_whether_prefill_is_chunked(chunk, on):
    line = (SGL + "max_total_num_tokens=4200000, chunked_prefill_size=%s, max_prefill_tokens=16384, "
            "max_running_requests=64, context_len=262144, available_gpu_mem=5.10 GB" % chunk)
    result = log_reading.scan_lines([line])
    assert result["observed"]["chunked_prefill"] is on and result["evidence"]["chunked_prefill"] == line
    assert result["observed"]["max_num_seqs"] == 64


def test_sglang_draft_keys_need_a_speculative_algorithm_in_the_dump():
    # an excerpt of the dump without speculative_algorithm: speculation is not known to be on, so the
    # draft backends it names are not evidence
    line = ("[2026-03-14 09:00:01] server_args=ServerArgs(model_path='m', speculative_moe_runner_backend='triton', "
            "speculative_draft_attention_backend='triton', moe_runner_backend='flashinfer_cutlass')")
    observed = log_reading.scan_lines([line])["observed"]
    assert observed["moe_backend"] == "FLASHINFER_CUTLASS"
    assert "draft_moe_backend" not in observed and "draft_attention_backend" not in observed
    assert "speculative_method" not in observed


def test_a_fatal_with_one_line_of_context_before_it_shows_it():
    fatal = {"kind": "assertion", "line": "AssertionError", "line_number": 2, "context": ["a", "AssertionError"]}
    assert log_verdict.describe_fatal(fatal) == "fatal assertion in the engine log at line 2: AssertionError -- context: a | " \
        "AssertionError"


def _result(observed, evidence, conflicts=None):
    """A scan result reduced to what compare_expect reads (LogScanner.result() has more keys)."""
    result = {"observed": observed, "evidence": evidence}
    if conflicts is not None:
        result["conflicts"] = conflicts
    return result


def test_compare_expect_rules_on_handmade_results():
    # a value without a proving line is a mismatch (named with the value), unless optional
    assert log_verdict.compare_expect({"moe_backend": "MARLIN"}, _result({"moe_backend": "MARLIN"}, {})) == [
        {"key": "moe_backend", "expected": "MARLIN", "observed": "MARLIN", "evidence": None}]
    # ready and warnings need no proving line: "not ready" and "no warnings" are the absence of one
    assert log_verdict.compare_expect({"ready": False, "warnings": []}, _result({"ready": False, "warnings": []}, {})) == []
    # an optional key without evidence is skipped, and the keys after it are still compared
    assert [m["key"] for m in log_verdict.compare_expect(
        {"allreduce_backend": "NCCL", "attention_backend": "TRITON_ATTN", "moe_backend": "MARLIN"},
        _result({"attention_backend": "FLASHINFER", "moe_backend": "CUTLASS"},
                {"attention_backend": "a", "moe_backend": "m"}), optional=["allreduce_backend"])] == [
        "attention_backend", "moe_backend"]
    # only engine_version matches by prefix; a model or a bool is compared as a value
    assert log_verdict.compare_expect({"model": "org/m"}, _result({"model": "org/m-FP8"}, {"model": "l"})) == [
        {"key": "model", "expected": "org/m", "observed": "org/m-FP8", "evidence": "l"}]
    assert log_verdict.compare_expect({"prefix_caching": "yes", "engine_version": "0.19"},
                                      _result({"prefix_caching": True, "engine_version": "0.19.1"},
                                              {"prefix_caching": "p", "engine_version": "v"})) == []
    # a later conflicting line of the same weight is a mismatch, the first that disagrees
    conflicts = {"moe_backend": [{"value": "MARLIN", "line": "l1"}, {"value": "CUTLASS", "line": "l2"}]}
    assert log_verdict.compare_expect({"moe_backend": "MARLIN"}, _result({"moe_backend": "MARLIN"}, {"moe_backend": "l0"},
                                                                         conflicts)) == [
        {"key": "moe_backend", "expected": "MARLIN", "observed": "CUTLASS", "evidence": "l2", "conflict": True}]


def test_a_quantized_moe_line_after_the_drafter_is_the_drafts():
    lines = [VLLM + "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_CUTLASS']",
             VLLM + "Loading drafter model...",
             VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['MARLIN']"]
    observed = log_reading.scan_lines(lines)["observed"]
    assert observed["moe_backend"] == "FLASHINFER_CUTLASS" and observed["draft_moe_backend"] == "MARLIN"


def test_engine_config_evidence_is_the_excerpt_of_each_field():
    line = (VLLM + "Initializing a V1 LLM engine (v0.19.1) with config: model='org/m', speculative_config="
            "SpeculativeConfig(method='mtp', model='org/m', num_spec_tokens=2), tokenizer='org/m', "
            "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, "
            "max_seq_len=262144, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, "
            "kv_cache_dtype=fp8, device_config=cuda, enable_prefix_caching=True, enable_chunked_prefill=False, "
            "use_async_output_proc=True")
    result = log_reading.scan_lines([line])
    head = line[:60]
    assert result["observed"]["chunked_prefill"] is False
    assert result["evidence"] == dict(result["evidence"], **{
        "model": head + " ... model='org/m' ...",
        "speculative_method": head + " ... speculative_config=SpeculativeConfig(method='mtp', model='org/m', "
                                     "num_spec_tokens=2) ...",
        "tensor_parallel_size": head + " ... tensor_parallel_size=2 ...",
        "chunked_prefill": head + " ... enable_chunked_prefill=False ...",
    })


def test_only_the_drafters_process_or_untagged_lines_after_it_are_the_drafts():
    target = VLLM.replace("EngineCore", "Worker_TP1")
    lines = [VLLM + "Loading drafter model...",
             target + "Using AttentionBackendEnum.FLASHINFER backend.",
             VLLM + "Using AttentionBackendEnum.TRITON_ATTN backend."]
    observed = log_reading.scan_lines(lines)["observed"]
    assert observed["attention_backend"] == "FLASHINFER" and observed["draft_attention_backend"] == "TRITON_ATTN"
    # an untagged line is the draft's only once a drafter was loaded
    untagged = "INFO 05-01 17:58:16 [x.py:1] Using AttentionBackendEnum.TRITON_ATTN backend."
    assert log_reading.scan_lines([untagged])["observed"]["attention_backend"] == "TRITON_ATTN"
    assert log_reading.scan_lines([VLLM + "Loading drafter model...", untagged])["observed"]["draft_attention_backend"] == \
        "TRITON_ATTN"


def test_backend_name_strips_quotes_only():
    assert log_patterns.backend_name("'XFORMERS'") == "XFORMERS"


@pytest.mark.parametrize("text, value", [
    ("None", None), (" null ", None), ("True", True), ("False", False), ("12", 12), ("-0.5", -0.5),
    ("'x'", "x"), ('"x"', "x"), ("auto", "auto"), ("'XFORMERS", "XFORMERS"),  # an unterminated quote: cut
])
def test_literal_reads_a_dump_value(text, value):
    assert log_patterns._literal(text) == value and type(log_patterns._literal(text)) is type(value)


def test_backend_name_takes_the_last_dotted_part():
    assert log_patterns.backend_name("vllm.v1.attention.backends.registry.AttentionBackendEnum.TRITON_ATTN") == "TRITON_ATTN"


def test_conflicting_config_dump_lines_are_kept_up_to_five_distinct_values():
    # linear_backend from "Selected <kernel> for ..." is a resolved (config) line: a later different one is a
    # conflict at that tier too; a repeated value is not a new conflict, and at most 5 are kept.
    kernels = ["MarlinNvFp4LinearKernel", "FlashInferCutlassNvFp4LinearKernel", "FlashInferTrtllmNvFp4LinearKernel",
               "FlashInferCuteDslNvFp4LinearKernel", "FlashInferB12xNvFp4LinearKernel", "CutlassNvFp4LinearKernel",
               "EmulationNvFp4LinearKernel"]
    lines = [VLLM + "Selected %s for Fp8LinearMethod" % kernel for kernel in kernels]
    result = log_reading.scan_lines(lines[:2] + [lines[1]] + lines[2:])
    assert result["observed"]["linear_backend"] == "MARLIN"
    assert result["conflicts"] == {"linear_backend": [
        {"value": "FLASHINFER_CUTLASS", "line": lines[1]}, {"value": "FLASHINFER_TRTLLM", "line": lines[2]},
        {"value": "FLASHINFER_CUTEDSL", "line": lines[3]}, {"value": "FLASHINFER_B12X", "line": lines[4]},
        {"value": "VLLM_CUTLASS", "line": lines[5]}]}
    assert result["observed"]["warnings"][0] == (
        "conflicting evidence for linear_backend: MARLIN, then FLASHINFER_CUTLASS in: " + lines[1])
    assert len(result["observed"]["warnings"]) == 5


def test_the_ready_line_is_the_evidence_of_readiness(ok_result):
    with open(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    # vLLM's "Application startup complete" proves readiness; the evidence names the server it started.
    assert ok_result["ready"] and any("Application startup complete" in line for line in lines)
    assert ok_result["evidence"]["ready"] == next(line for line in lines if "Starting vLLM server on http://" in line)


def test_a_second_consequence_does_not_replace_the_first_and_a_root_cause_is_looked_for_300_lines():
    dead = ERR + "EngineCore failed to start."
    died = ERR + "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
    filler = [REQUEST.strip()] * 50
    result = log_reading.scan_lines([dead] + filler[:3] + [died] + filler)
    assert result["fatal"]["line"] == dead and result["fatal"]["kind"] == "engine_dead"
    # The root cause 50 lines after the consequence (past its context) still becomes the headline ...
    result = log_reading.scan_lines([dead] + filler + [ERR + "ValueError: bad"])
    assert result["fatal"]["line"] == ERR + "ValueError: bad" and result["fatal"]["kind"] == "config_error"
    # ... but not 300 lines after.
    result = log_reading.scan_lines([dead] + [REQUEST.strip()] * 300 + [ERR + "ValueError: bad"])
    assert result["fatal"]["line"] == dead


# --- small pure helpers at their boundaries ----------------------------------------------------------------
def test_excerpt_keeps_a_line_up_to_twice_the_width_plus_the_value():
    import re
    for extra, whole in ((0, True), (1, False)):
        line = "a" * 60 + "key=VALUE" + "b" * (60 + extra)
        m = re.search(r"key=[A-Z]+", line)
        got = log_patterns._excerpt(line, m, m.start(), m.end())
        assert (got == line) is whole, (extra, got)
        if not whole:
            assert got == "a" * 60 + " ... key=VALUE ..."
    line = "a" * 10 + "key=VALUE" + "b" * 200  # shorter than the width after the value: still cut
    m = re.search(r"key=[A-Z]+", line)
    assert log_patterns._excerpt(line, m, m.start(), m.end(), width=100) == "a" * 10 + "key=VALUE" + "b" * 81 + " ... key=VALUE ..."


def test_startup_phase_refuses_a_state_it_did_not_return_naming_it():
    with pytest.raises(ValueError, match=r"^not a start-up phase state: \{'phase': 'warming'\}$"):
        startup_phases.startup_phase({"phase": "warming"})


# --- which records can hold an exception -----------------------------------------------------------
def test_an_exception_line_logged_at_info_or_debug_by_vllm_is_not_a_fatal():
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert log_reading.scan_lines([ERR + oom])["fatal"]["kind"] == "out_of_memory"
    for level in ("INFO", "DEBUG"):
        line = ERR.replace("ERROR", level) + oom
        assert log_reading.scan_lines([line])["fatal"] is None, level
    # SGLang's records carry no level: an exception line in one is the engine's own
    assert log_reading.scan_lines([SGL + oom])["fatal"]["kind"] == "out_of_memory"


def test_a_vllm_traceback_cut_by_another_loggers_record_ends_there():
    # the process's traceback records share one header ([core.py:870] at ERROR); a record of another
    # logger of the same process ends it, and an error record after that is read on its own
    frames = [ERR + "Traceback (most recent call last):", ERR + '  File "/usr/lib/x.py", line 3, in run',
              ERR + "    run()"]
    other = VLLM + "Shutting down: the engine core is idle"
    result = log_reading.scan_lines(frames + [other, ERR + "ValueError: max_num_seqs must be at least 1"])
    assert result["fatal"]["kind"] == "config_error" and result["fatal"]["line"].endswith("at least 1")
