# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine log fixtures the log-scan tests share: the composed logs, the real-log corpus and its
index, and what hostile clients write into a healthy engine's log. Not a test module."""
from __future__ import annotations

import os

import yaml

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "logs")


def fixture(name):
    return os.path.join(FIXTURES, name)


REAL = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "real_logs")
CORPUS_HEADER = "# corpus:"


def corpus_index():
    with open(os.path.join(REAL, "index.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def corpus_text(name):
    """``(header lines, log lines)`` of a corpus file: the "# corpus:" lines come first and are stripped."""
    with open(os.path.join(REAL, name), encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = [line for line in lines if line.startswith(CORPUS_HEADER)]
    assert lines[:len(header)] == header, "%s: the corpus header lines come first" % name
    return header, lines[len(header):]


# Every fatal signature the table knows, as a client can put it in a request path or a prompt.
SIGNATURES = [
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "RuntimeError: cudaErrorIllegalAddress",
    "CUDA error: device-side assert triggered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "OutOfMemoryError",
    "ValueError: No available memory for the cache blocks.",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "AssertionError: x",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
    "RuntimeError: Engine core initialization failed. See root cause above.",
    "EngineCore failed to start.",
    "EngineCore encountered a fatal error.",
    "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
    "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
    "Received sigquit from a child process. It usually means the child failed.",
    "SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    "Scheduler hit an exception: Traceback (most recent call last):",
    "Traceback (most recent call last):",
    "terminate called after throwing an instance of 'c10::Error'",
    "  what():  CUDA error: an illegal memory access was encountered",
    "vllm serve: error: unrecognized arguments: --bogus",
]


def hostile_lines():
    """What clients put in a healthy engine's log: request paths, logged prompts, an ASGI error traceback."""
    lines = []
    for i, sig in enumerate(SIGNATURES):
        path = "/" + sig.replace(" ", "%20")
        lines.append('(APIServer pid=1) INFO:     203.0.113.7:%d - "GET %s HTTP/1.1" 404 Not Found' % (40001 + i, path))
        lines.append('INFO:     203.0.113.7:%d - "POST /v1/%s HTTP/1.1" 404 Not Found' % (41001 + i, sig))
        lines.append("(APIServer pid=1) INFO 06-09 10:09:0%d [logger.py:41] Received request chatcmpl-%d: prompt: %r, "
                     "params: SamplingParams(n=1, temperature=0.7), lora_request: None." % (i % 10, i, sig + "\n" + sig))
        lines.append("[2026-03-14 10:01:0%d] Receive: obj=GenerateReqInput(text=%r, rid='r%d')" % (i % 10, sig, i))
    lines += ["(APIServer pid=1) ERROR:    Exception in ASGI application",
              "(APIServer pid=1) Traceback (most recent call last):",
              '(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/starlette/routing.py", line 1, in app',
              "(APIServer pid=1)     raise ValueError(body)",
              "(APIServer pid=1) ValueError: torch.OutOfMemoryError: CUDA out of memory",
              "(APIServer pid=1) torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
    return lines


# Record prefixes of each engine, and lines the reading tests share.
VLLM = "(EngineCore pid=9) INFO 05-01 17:58:16 [x.py:1] "
SGL = "[2026-03-14 09:00:01 TP0] "
ERR = "(EngineCore pid=9) ERROR 05-01 17:58:16 [core.py:1] "
REQUEST = "(APIServer pid=1) INFO:     172.17.0.1:53422 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"


def write_filler(path, head_lines, filler_line, size, tail_lines):
    block = ((filler_line + "\n") * 4096).encode()
    with open(path, "wb") as out:
        out.write(("\n".join(head_lines) + "\n").encode())
        written = 0
        while written < size:
            out.write(block)
            written += len(block)
        out.write(("\n".join(tail_lines) + "\n").encode())
    return len(head_lines) + written // len(block) * 4096


def cuts_at_lines(data, sizes):
    """Where ``data`` (whole lines) is cut into chunks of about each size of ``sizes`` in turn, each
    ending with its newline, as _docker_api.follow_container hands them to feed_bytes."""
    cuts, pos, index = [], 0, 0
    while pos < len(data):
        nl = data.find(b"\n", min(len(data) - 1, pos + sizes[index % len(sizes)] - 1))
        cut = len(data) if nl < 0 else nl + 1
        cuts.append((pos, cut))
        pos, index = cut, index + 1
    return cuts
