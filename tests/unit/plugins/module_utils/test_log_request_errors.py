# SPDX-License-Identifier: GPL-3.0-or-later
"""A client's failed request never fails a healthy vLLM engine (issue 25, finding 2).

vLLM logs a request's error with ``logger.exception``: the record header in front of every line of
the traceback, on the API server's stream, and the exception text quotes what the client sent (a
chat content part's ``type`` in ``Unknown part type: ...``, with newlines if the client put some).
After readiness such a traceback is a request error whatever words it quotes; the engine process's
own records, and the API server's own EngineDeadError, still decide a fatal.
"""
from __future__ import annotations

import os
import re

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_reading as log_reading
from ansible_collections.inferops.serving.plugins.module_utils import _log_scanner as log_scanner
from ansible_collections.inferops.serving.plugins.module_utils import _log_verdict as log_verdict

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
JOURNALD = re.compile(r"^\w{3} \d\d \d\d:\d\d:\d\d \S+ env\[\d+\]: ")


def fixture_lines(*path):
    with open(os.path.join(FIXTURES, *path), encoding="utf-8") as handle:
        return [line for line in handle.read().split("\n") if not line.startswith("# corpus:")]


def healthy_start():
    """The GB10 start-up fixture (composed from vLLM 0.19's format strings, see fixtures/logs/README.md), ready."""
    return [line for line in fixture_lines("logs", "vllm-0.19-gb10-nvfp4-mtp-ok.log") if line]


GB10_EXPECT = {"moe_backend": "MARLIN", "draft_moe_backend": "TRITON", "linear_backend": "MARLIN",
               "attention_backend": "TRITON_ATTN", "speculative_method": "mtp", "ready": True}


def request_error(exception_lines=None):
    """The real request error of real_logs/vllm-0.15-journald-request-error.log as ``docker logs`` prints it
    (journald's prefix taken off), its exception line replaced by ``exception_lines``: what vLLM prints
    for a client's request, each line under the record's header as vLLM's formatter puts it."""
    lines = [JOURNALD.sub("", line) for line in fixture_lines("real_logs", "vllm-0.15-journald-request-error.log")]
    if exception_lines is None:
        return lines
    at = next(i for i, line in enumerate(lines) if "VLLMValidationError: " in line)
    header = lines[at][:lines[at].index("vllm.exceptions.")]
    return lines[:at] + [header + text for text in exception_lines] + lines[at + 1:]


# The client writes the text after "Unknown part type: " (a chat content part's type); a newline in it
# makes more lines under the same header.
CLIENT_TEXTS = [
    ["ValueError: Unknown part type: CUDA error: an illegal memory access was encountered"],  # issue 25's repro
    ["NotImplementedError: Unknown part type: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
    ["ValueError: Unknown part type: RuntimeError: cudaErrorIllegalAddress"],
    ["ValueError: Unknown part type: AssertionError: x"],
    # vLLM raises this at start-up only: after readiness, a request's RuntimeError whose text starts so
    ["RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"],
    ["ValueError: Unknown part type: x",
     "Traceback (most recent call last):",
     '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 861, in run_engine_core',
     "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
     "EngineCore encountered a fatal error.",
     "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
     "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
     "terminate called after throwing an instance of 'c10::Error'",
     "  what():  CUDA error: an illegal memory access was encountered"],
]


def _all_paths(lines, tmp_path):
    """The scan result line by line, of a file (counted-only chunks too) and of a container's stream."""
    results = [log_reading.scan_lines(lines)]
    path = tmp_path / "engine.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results += [log_reading.scan_file(str(path), chunk_size=size) for size in (512, 1 << 20)]
    scanner = log_scanner.LogScanner()
    data = path.read_bytes()
    begin = 0
    while begin < len(data):  # a container's stream: whole lines, about 700 bytes a chunk
        end = data.find(b"\n", begin + 700) + 1 or len(data)
        log_reading.feed_bytes(scanner, data[begin:end])
        begin = end
    return results + [scanner.result()]


@pytest.mark.parametrize("client_text", CLIENT_TEXTS, ids=lambda t: t[0][:40])
def test_a_request_error_quoting_a_fatal_is_not_a_fatal(client_text, tmp_path):
    lines = healthy_start() + request_error(client_text)
    for result in _all_paths(lines, tmp_path):
        assert result["fatal"] is None, result["fatal"]
        assert log_verdict.compare_expect(GB10_EXPECT, result) == []


def test_the_real_request_error_is_not_a_fatal(tmp_path):
    for result in _all_paths(healthy_start() + request_error(), tmp_path):
        assert result["fatal"] is None and result["ready"], result["fatal"]


def test_the_engine_process_record_still_decides_a_fatal():
    """After the request error, the engine core's own traceback (its stream) is the fatal."""
    crash = fixture_lines("logs", "vllm-0.19-mtp-illegal-memory-access.log")
    crash = crash[crash.index("(APIServer pid=1) INFO:     Application startup complete.") + 1:]
    lines = healthy_start() + request_error(CLIENT_TEXTS[0]) + crash
    fatal = log_reading.scan_lines(lines)["fatal"]
    assert fatal["kind"] == "cuda_illegal_memory_access"
    assert fatal["line"].startswith("(EngineCore pid=211) ERROR")


def test_the_api_servers_own_engine_dead_error_after_readiness_is_a_fatal():
    """EngineDeadError is raised by the API server itself (the engine core is gone): a record of it is a
    fatal after readiness too, first line of its record (real line: vllm-0.2x-engine-dead-headerless-traceback.log)."""
    dead = fixture_lines("real_logs", "vllm-0.2x-engine-dead-headerless-traceback.log")[0]
    fatal = log_reading.scan_lines(healthy_start() + request_error(CLIENT_TEXTS[0]) + [dead])["fatal"]
    assert (fatal["kind"], fatal["line"]) == ("engine_dead", dead)
