# SPDX-License-Identifier: GPL-3.0-or-later
"""The bench tests' engine simulator (tests/lab/engine_sim) run as a local process: a free
loopback port, and the process started, waited for until /health answers 200, stopped at the end."""
from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running(module_argv, env, log_path, port, ready_timeout):
    """``python -m <module_argv...>`` (the simulator's vLLM or SGLang entry point) with ``env``,
    its output in ``log_path``, until /health on ``port`` answers 200 (the log in the failure
    otherwise); SIGTERM when the block ends."""
    python = shutil.which("python3.11") or sys.executable
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([python, "-m", *module_argv], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + ready_timeout
        while True:
            assert proc.poll() is None, log_path.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert time.time() < deadline, "simulator not ready:\n" + log_path.read_text()
            time.sleep(0.2)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
