# SPDX-License-Identifier: GPL-3.0-or-later
"""soak's load against a local stand-in for an OpenAI-compatible engine (POST /v1/chat/completions
answering the real response shape with `usage.completion_tokens`; after `fail_after` requests it
answers HTTP 500 as vLLM does once its engine core died, or hangs as a wedged engine does)."""
from __future__ import annotations

import http.server
import json
import threading

import pytest

from ansible_collections.inferops.serving.plugins.modules import soak


@pytest.fixture
def engine():
    servers = []
    released = threading.Event()  # a hung request is let go when the test ends

    def start(fail_after=None, hang=False):
        state = {"n": 0}
        lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    state["n"] += 1
                    n = state["n"]
                if fail_after is not None and n > fail_after:
                    if hang:
                        released.wait(30)
                        return
                    body, status = {"error": {"message": "EngineDeadError: EngineCore encountered an issue."}}, 500
                else:
                    body, status = {"id": "chatcmpl-%d" % n, "object": "chat.completion",
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Once"},
                                                 "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 20, "completion_tokens": 16, "total_tokens": 36}}, 200
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return "http://127.0.0.1:%d/v1/chat/completions" % server.server_address[1]

    yield start
    released.set()
    for server in servers:
        server.shutdown()
        server.server_close()


def test_healthy_engine_counts_requests_and_tokens(engine):
    stats = soak.load(engine(), "m", None, concurrency=4, seconds=1.0, max_tokens=16, timeout=5)
    assert stats["requests"] > 4 and stats["ok"] == stats["requests"] and stats["errors"] == stats["timeouts"] == 0
    assert stats["tokens"] == 16 * stats["ok"]


def test_an_engine_that_dies_answers_errors(engine):
    stats = soak.load(engine(fail_after=5), "m", None, concurrency=2, seconds=1.5, max_tokens=16, timeout=5)
    assert stats["ok"] == 5 and stats["errors"] >= 1 and "HTTP 500" in stats["first_error"]


def test_a_wedged_engine_times_out(engine):
    # The timeout is well above a healthy answer's time on a loaded 2-core CI machine (a 0.5 s one
    # timed a healthy answer out there); the load runs long enough for the third, hung request.
    stats = soak.load(engine(fail_after=2, hang=True), "m", None, concurrency=1, seconds=2.5, max_tokens=16, timeout=2.0)
    assert stats["ok"] == 2 and stats["timeouts"] >= 1 and "no answer within 2.0s" in stats["first_error"], stats
