# SPDX-License-Identifier: GPL-3.0-or-later
"""Line output shared by both personalities: flushed at once, stdout for logs, stderr for
tracebacks and progress bars (``docker logs`` shows both)."""
from __future__ import annotations

import os
import sys
import threading
import time

_LOCK = threading.Lock()

VLLM_SITE = "/usr/local/lib/python3.12/dist-packages"


# ENGINE_SIM_STALL_IN_PHASE=<phase>: the start stops making progress right after the first line
# that enters this start-up phase (the collection's names, _startup_phases.STARTUP_PHASES): the
# process keeps running and prints nothing more until SIGTERM/SIGINT (release_stall). The
# markers are substrings of the first line of each phase in the simulator's own output.
STALL_MARKERS = {
    "engine_init": ("non-default args:", "server_args="),
    "weight_loading": ("Starting to load model", "Load weight begin."),
    "compile": ("Model loading took",),
    "kv_cache": ("torch.compile ", "KV Cache is allocated."),
    "cuda_graphs": ("Capturing CUDA graphs", "graph begin."),
    "server_start": ("Graph capturing finished", "graph end."),
}
_STALL_RELEASE = threading.Event()
_STALLED = []


def release_stall() -> None:
    """Let a stalled start go on (it is being stopped)."""
    _STALL_RELEASE.set()


def _stall_after(text: str) -> None:
    phase = os.environ.get("ENGINE_SIM_STALL_IN_PHASE", "")
    if not phase or _STALLED or not any(marker in text for marker in STALL_MARKERS.get(phase, ())):
        return
    _STALLED.append(text)
    while not _STALL_RELEASE.wait(1.0):
        pass


def emit(text: str, stream: str = "stdout") -> None:
    out = sys.stderr if stream == "stderr" else sys.stdout
    with _LOCK:
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
    _stall_after(text)


def traceback_lines(frames: list[tuple[str, int, str, str]], exception: str,
                    site: str = VLLM_SITE) -> list[str]:
    """A Python traceback: frames are (path under site-packages, line, function, code)."""
    lines = ["Traceback (most recent call last):"]
    for path, line, function, code in frames:
        full = path if path.startswith("/") else f"{site}/{path}"
        lines.append(f'  File "{full}", line {line}, in {function}')
        if code:
            lines.append(f"    {code}")
    lines.extend(exception.splitlines())
    return lines


class VllmPrinter:
    """vLLM's log format: ``(Proc pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message``."""

    def __init__(self, version_tuple: tuple[int, int, int], api_pid: int, engine_pid: int):
        self.version_tuple = version_tuple
        self.pids = {"APIServer": api_pid, "EngineCore": engine_pid}
        self.engine_name = "EngineCore_DP0" if version_tuple < (0, 18, 0) else "EngineCore"
        # 0.32+: the tag is part of the log record only; raw output (uvicorn, tracebacks) is untagged.
        self.tag_raw = version_tuple < (0, 32, 0)

    def _tag(self, proc: str) -> str:
        name = self.engine_name if proc == "EngineCore" else proc
        return f"({name} pid={self.pids[proc]}) "

    def log(self, proc: str, level: str, source: str, message: str) -> None:
        stamp = time.strftime("%m-%d %H:%M:%S")
        for line in message.split("\n"):
            emit(f"{self._tag(proc)}{level} {stamp} [{source}] {line}")

    def raw(self, proc: str, text: str, stream: str = "stdout") -> None:
        prefix = self._tag(proc) if self.tag_raw else ""
        for line in text.split("\n"):
            emit(f"{prefix}{line}", stream)

    def uvicorn(self, message: str) -> None:
        self.raw("APIServer", f"INFO:     {message}")


class SglangPrinter:
    """SGLang's log format: ``[YYYY-MM-DD HH:MM:SS{ TP0}] message`` (no level name)."""

    def log(self, message: str, rank: str = "", stream: str = "stdout") -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        suffix = f" {rank}" if rank else ""
        for line in message.split("\n"):
            emit(f"[{stamp}{suffix}] {line}", stream)

    def uvicorn(self, message: str) -> None:
        self.log(f"INFO:     {message}")
