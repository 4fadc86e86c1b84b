# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up phases read from real engine log lines (each line's source is named beside it)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_records as log_records
from ansible_collections.inferops.serving.plugins.module_utils import _log_patterns as log_patterns
from ansible_collections.inferops.serving.plugins.module_utils import _startup_phases as startup_phases

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "real_logs")
COMPOSED = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "logs")


def real_log(name):
    with open(os.path.join(REAL, name), encoding="utf-8") as handle:
        return [line for line in handle.read().splitlines() if not line.startswith("# corpus:")]


# (source, engine, line, phase). Lines quoted from public GitHub issues/PRs (cut to the one line a
# test needs) or from the real-log corpus; the SGLang ready line is the 0.5.13 wheel's format string
# (sglang/srt/entrypoints/http_server.py), no real paste of it having been found.
REAL_LINES = [
    ("vllm PR #25340 (0.10.x, EngineCore_DP0)", "vllm",
     "(EngineCore_DP0 pid=66914) INFO 09-21 12:29:22 [gpu_model_runner.py:2530] Starting to load model "
     "unsloth/Qwen3-4B-Instruct-2507-GGUF...", "weight_loading"),
    ("vllm issue #38820 (tqdm bar, stderr)", "vllm",
     "Loading safetensors checkpoint shards:  56% Completed | 5/9 [00:13<00:11,  2.87s/it]", "weight_loading"),
    ("vllm issue #49011 (fastsafetensors bar)", "vllm",
     "Loading fastsafetensors checkpoint shards:  20% Completed | 1/5 [00:00<00:02,  1.77it/s]", "weight_loading"),
    ("vllm issue #38820", "vllm",
     "(Worker_TP0 pid=34322) INFO 05-06 20:59:57 [default_loader.py:384] Loading weights took 24.84 seconds",
     "weight_loading"),
    ("real_logs/vllm-0.2x-drafter-auto-attention.log line 13", "vllm",
     "(EngineCore pid=7476) INFO 07-25 13:42:16 [gpu_model_runner.py:5233] Loading drafter model...", "weight_loading"),
    ("vllm issue #38820", "vllm",
     "(Worker_TP0 pid=34322) INFO 05-06 20:59:59 [gpu_model_runner.py:4879] Model loading took 12.66 GiB memory "
     "and 31.657031 seconds", "compile"),
    ("vllm PR #44106 (model runner v2: 'GiB and')", "vllm",
     "(EngineCore pid=1265223) INFO 06-02 00:51:40 [model_runner.py:295] Model loading took 7.64 GiB and "
     "32.969258 seconds", "compile"),
    ("real_logs/vllm-tp2-eagle-head-workers.log line 5", "vllm",
     "(Worker_TP0 pid=101) INFO 07-06 10:46:16 [backends.py:1148] Dynamo bytecode transform time: 0.10 s", "compile"),
    ("vllm PR #39559", "vllm",
     "(EngineCore pid=1623438) INFO 04-13 22:09:34 [monitor.py:48] torch.compile took 1.61 s in total", "kv_cache"),
    ("vllm PR #39559", "vllm",
     "(EngineCore pid=1623438) INFO 04-13 22:09:35 [gpu_model_runner.py:5914] Profiling CUDA graph memory: "
     "PIECEWISE=51 (largest=512), FULL=35 (largest=256)", "kv_cache"),
    ("vllm PR #30515", "vllm",
     "(EngineCore_DP0 pid=387) INFO 03-08 16:44:29 [gpu_worker.py:456] Available KV cache memory: 17.36 GiB",
     "kv_cache"),
    ("aivrar/vllm-windows-build issue #17 (tqdm bar)", "vllm",
     "Capturing CUDA graphs (PIECEWISE): 100%|#####| 3/3 [00:03<00:00,  1.04s/it]", "cuda_graphs"),
    ("aivrar/vllm-windows-build issue #17 (tqdm bar)", "vllm",
     "Capturing prefill CUDA graphs (FULL): 100%|#####| 1/1 [00:00<00:00, 81.71it/s]", "cuda_graphs"),
    ("aivrar/vllm-windows-build issue #17", "vllm",
     "(EngineCore pid=5744) INFO 09-22 12:15:35 [model_runner.py:960] Graph capturing finished in 4 secs, "
     "took 0.11 GiB", "server_start"),
    ("vllm-omni PR #1160 (prefixed '[Stage-0]': not a vLLM record header, so not read)", "vllm",
     "(EngineCore_DP0 pid=181642) [Stage-0] INFO 02-02 18:25:04 [core.py:273] init engine (profile, create kv cache, "
     "warmup model) took 2.60 seconds", None),
    ("real_logs/vllm-0.2x-routes-ready-no-uvicorn.log line 6", "vllm",
     "(APIServer pid=34165) INFO 05-06 21:00:52 [api_server.py:602] Starting vLLM server on http://0.0.0.0:8000",
     "server_start"),
    ("real_logs/vllm-api-server-0-caret-ansi.log line 7 (colour pasted as text)", "vllm",
     "^[[0;36m(APIServer pid=31)^[[0;0m INFO 02-03 19:00:05 [api_server.py:946] Starting vLLM API server 0 on "
     "http://0.0.0.0:8000", "server_start"),
    ("sglang PR #15426", "sglang", "[2025-12-23 14:18:00] Init torch distributed begin.", "engine_init"),
    ("sglang PR #15426", "sglang", "[2025-12-23 14:18:01] Load weight begin. avail mem=46.81 GB", "weight_loading"),
    ("real_logs/sglang-0.5-tp8-moe-runner-auto.log line 17", "sglang",
     "[2025-10-16 09:06:10 TP0] Load weight begin. avail mem=137.34 GB", "weight_loading"),
    ("sglang PR #4826", "sglang",
     "[2025-03-27 21:33:30 TP0] Load weight end. type=Gemma3ForConditionalGeneration, dtype=torch.bfloat16, "
     "avail mem=131.08 GB, mem usage=8.13 GB.", "kv_cache"),
    ("real_logs/sglang-nightly-tp-ep-rank-tags.log line 5 (0.5.2x, elapsed=)", "sglang",
     "[2026-07-14 07:51:06 TP0 EP0] Load weight end. elapsed=10.26 s, type=DeepseekV3ForCausalLMNextN, quant=fp8, "
     "fmt=e4m3, avail mem=41.92 GB, mem usage=1.00 GB.", "kv_cache"),
    ("sglang PR #4826", "sglang",
     "[2025-03-27 21:33:31 TP0] KV Cache is allocated. #tokens: 834615, K size: 54.12 GB, V size: 54.12 GB",
     "kv_cache"),
    ("real_logs/sglang-0.5.6-musa-kv-cache-glued-progress.log line 7", "sglang",
     "[2026-06-08 07:20:54 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.99 GB",
     "cuda_graphs"),
    ("sglang PR #12978", "sglang",
     "[2025-11-10 19:59:09 TP0] Capture cuda graph end. Time elapsed: 11.39 s. mem usage=1.00 GB. "
     "avail mem=11.17 GB.", "server_start"),
    ("sglang PR #11830", "sglang",
     "[2025-11-30 11:18:05] max_total_num_tokens=2261377, chunked_prefill_size=16384, max_prefill_tokens=16384, "
     "max_running_requests=4096, context_len=128000, available_gpu_mem=37.06 GB", "server_start"),
    ("sglang PR #11830 (SGLang's uvicorn: not ready until the warm-up request)", "sglang",
     "[2025-11-30 11:18:05] INFO:     Application startup complete.", None),
    ("sglang PR #11830", "sglang",
     "[2025-11-30 11:18:05] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
     "server_start"),
    ("sglang 0.5.13 wheel, sglang/srt/entrypoints/http_server.py (format string)", "sglang",
     "[2026-06-11 10:00:00] The server is fired up and ready to roll!", "ready"),
]


@pytest.mark.parametrize("source, engine, line, phase", REAL_LINES, ids=[r[0] + " " + str(r[3]) for r in REAL_LINES])
def test_phase_of_real_lines(source, engine, line, phase):
    assert startup_phases.phase_of_line(log_records.clean_line(line), engine)[0] == phase
    # Without the engine named, the line's own header (or its text) decides the same phase.
    assert startup_phases.phase_of_line(log_records.clean_line(line))[0] == phase


def test_sglang_uvicorn_startup_is_not_vllm_ready_whatever_the_engine_option():
    line = "[2025-11-30 11:18:05] INFO:     Application startup complete."  # sglang PR #11830
    assert startup_phases.phase_of_line(line, "vllm") == (None, None)
    assert startup_phases.phase_of_line("(APIServer pid=1) INFO:     Application startup complete.", "vllm")[0] == "ready"


def test_the_other_engines_lines_do_not_count():
    line = "[2025-12-23 14:18:01] Load weight begin. avail mem=46.81 GB"  # sglang PR #15426
    assert startup_phases.phase_of_line(line, "vllm") == (None, None)


def test_a_progress_bar_updated_with_carriage_returns_counts_as_its_last_state():
    progress_bar = "Capturing CUDA graphs (PIECEWISE):   0%|  | 0/3\rCapturing CUDA graphs (PIECEWISE): 100%|###| 3/3\r"
    assert startup_phases.phase_of_line(progress_bar, "vllm")[0] == "cuda_graphs"


def test_a_progress_bar_left_without_newline_counts_as_the_line_after_it():
    # tqdm ends its bar with "\r", no newline, and the next record is written after it on the same line
    progress = "Loading safetensors checkpoint shards: 100% Completed | 17/17 [05:21<00:00, 18.9s/it]\r"
    line = progress + "(EngineCore pid=211) INFO 06-09 10:06:40 [gpu_model_runner.py:3404] Model loading took 76.41 GiB"
    assert startup_phases.phase_of_line(line, "vllm") == ("compile", "vllm_model_loaded")
    assert startup_phases.phase_of_line(progress, "vllm") == ("weight_loading", "vllm_load_shards")
    assert startup_phases.phase_of_line("\r \r", "vllm") == (None, None)  # only blank updates


def test_a_phase_text_without_the_engines_header_is_not_a_phase_line():
    # an echoed prompt or a pasted line: the record patterns need the logger's header
    assert startup_phases.phase_of_line("Model loading took 76.41 GiB memory and 334.1 seconds", "vllm") == (None, None)
    assert startup_phases.phase_of_line("(EngineCore pid=211) INFO 06-09 10:06:40 [gpu_model_runner.py:3404] Model loading "
                                        "took 76.41 GiB memory and 334.1 seconds", "vllm")[0] == "compile"


def test_the_engine_named_decides_a_line_without_a_header():
    # uvicorn's bare "Application startup complete." is vLLM's readiness; SGLang's is its own line after it
    line = "INFO:     Application startup complete."
    for engine, phase in (("vllm", "ready"), ("sglang", "process_start"), ("auto", "ready"), (None, "ready")):
        tracker = startup_phases.StartupPhases(engine)
        tracker.feed(line)
        assert tracker.phase == phase, engine
        assert startup_phases.startup_phase([line + "\n"], engine)["phase"] == phase, engine
    assert startup_phases.startup_phase([line]) == {"phase": "ready", "line": line, "line_number": 1}


def test_a_start_up_line_after_readiness_does_not_move_the_phase():
    # SGLang logs "Load weight begin" again when it loads a LoRA adapter or updates weights while serving
    lines = ["[2026-06-11 10:00:00] The server is fired up and ready to roll!",
             "[2026-06-11 10:00:01] Load weight begin. avail mem=1.00 GB"]
    assert startup_phases.startup_phase(lines, "sglang")["phase"] == "ready"
    assert startup_phases.startup_phase(lines, "sglang")["line_number"] == 1


def test_access_log_paths_never_move_the_phase():
    # a client can put any text in a request path; uvicorn's access log is not a start-up line
    line = '(APIServer pid=1) INFO:     172.17.0.1:53422 - "GET /Application%20startup%20complete. HTTP/1.1" 404'
    assert startup_phases.phase_of_line(line, "vllm") == (None, None)


def test_startup_phase_of_a_whole_composed_start():
    with open(os.path.join(COMPOSED, "vllm-0.19-gb10-nvfp4-mtp-ok.log"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    # cut after "Loading weights took": the GB10 MTP start is loading the drafter
    cut = next(i for i, line in enumerate(lines) if "Loading drafter model" in line) + 1
    state = startup_phases.startup_phase(lines[:cut], "vllm")
    assert state["phase"] == "weight_loading" and "Loading drafter model" in state["line"]
    assert state["line_number"] == cut
    cut = next(i for i, line in enumerate(lines) if "Available KV cache memory" in line) + 1
    assert startup_phases.startup_phase(lines[:cut], "vllm")["phase"] == "kv_cache"
    assert startup_phases.startup_phase(lines, "vllm")["phase"] == "ready"


def test_startup_phase_of_a_real_sglang_start_in_progress():
    state = startup_phases.startup_phase(real_log("sglang-0.5-tp8-moe-runner-auto.log"), "sglang")
    assert state["phase"] == "weight_loading" and "Load weight begin" in state["line"]


def test_startup_phase_before_any_line_and_of_a_state():
    assert startup_phases.startup_phase([], "vllm") == {"phase": "process_start", "line": None, "line_number": 0}
    state = {"phase": "cuda_graphs", "line": "x", "line_number": 3}
    assert startup_phases.startup_phase(state) == state
    with pytest.raises(ValueError):
        startup_phases.startup_phase({"phase": "warming"})


def test_feed_bytes_matches_feed_and_stops_reading_once_ready():
    lines = real_log("sglang-0.5-tp8-moe-runner-auto.log")
    tracker = startup_phases.StartupPhases("sglang")
    tracker.feed_bytes(("\n".join(lines) + "\n").encode())
    assert tracker.state() == startup_phases.startup_phase(lines, "sglang")
    tracker.feed_bytes(b"[2026-06-11 10:00:00] The server is fired up and ready to roll!\n")
    tracker.feed_bytes(b"[2026-06-11 10:00:01] Load weight begin. avail mem=1.00 GB\n")
    assert tracker.phase == "ready" and tracker.lines == len(lines) + 2


def test_every_phase_has_a_pattern_and_every_pattern_a_known_phase():
    phases = set(p.phase for p in log_patterns.PATTERNS if p.phase is not None)
    assert phases <= set(startup_phases.STARTUP_PHASE_NAMES)
    assert set(startup_phases.STARTUP_PHASE_NAMES) - phases == {"process_start"}
