# SPDX-License-Identifier: GPL-3.0-or-later
"""backend_assert as a whole: log files, and containers behind a fake Docker Engine API on a unix socket."""
from __future__ import annotations

import calendar
import json
import os
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.inferops.serving.plugins.modules import backend_assert

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "logs")
GB10_OK = os.path.join(FIXTURES, "vllm-0.19-gb10-nvfp4-mtp-ok.log")
GB10_EXPECT = {
    "engine": "vllm", "moe_backend": "MARLIN", "draft_moe_backend": "TRITON", "linear_backend": "MARLIN",
    "attention_backend": "TRITON_ATTN", "speculative_method": "mtp", "num_speculative_tokens": 2,
    "kv_cache_dtype": "fp8", "chunked_prefill": True, "prefix_caching": False, "max_num_seqs": 4,
    "tensor_parallel_size": 1,
}


def read_fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read().splitlines()


# --- log files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("check_mode", [False, True])
def test_file_expect_pass(run_module, check_mode):
    failed, result = run_module(backend_assert, {"log_path": GB10_OK, "engine": "vllm", "expect": GB10_EXPECT},
                                check_mode=check_mode)
    assert not failed and result["changed"] is False
    assert result["mismatches"] == [] and result["fatal"] is None and result["ready"] is True
    assert result["observed"]["draft_moe_backend"] == "TRITON"
    assert "Using TRITON backend for Unquantized MoE" in result["evidence"]["draft_moe_backend"]
    assert result["log_lines_read"] == 42


def test_file_mismatch_names_key_values_and_line(run_module):
    path = os.path.join(FIXTURES, "vllm-0.20-auto-flashinfer-prefixed.log")
    failed, result = run_module(backend_assert, {"log_path": path, "expect": {"moe_backend": "MARLIN"}})
    assert failed
    assert result["msg"].startswith("moe_backend: expected MARLIN, observed FLASHINFER_CUTLASS, proven by log line: ")
    assert "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend" in result["msg"]
    assert result["mismatches"][0]["key"] == "moe_backend"


def test_file_no_evidence_fails_and_says_what_would_prove_it(run_module):
    path = os.path.join(FIXTURES, "sglang-0.5.9-g7e-fp8-ok.log")
    failed, result = run_module(backend_assert, {"log_path": path, "expect": {"engine_version": "0.5.9"}})
    assert failed
    assert result["msg"].startswith("engine_version: expected 0.5.9, but the log shows no evidence for it")
    assert result["mismatches"] == [{"key": "engine_version", "expected": "0.5.9", "observed": None,
                                     "evidence": None}]


def test_file_optional_key_without_evidence_passes(run_module):
    path = os.path.join(FIXTURES, "sglang-0.5.9-g7e-fp8-ok.log")
    failed, result = run_module(backend_assert, {
        "log_path": path, "engine": "sglang",
        "expect": {"moe_backend": "triton", "engine_version": "0.5.9", "draft_moe_backend": None},
        "optional": ["engine_version"]})
    assert not failed, result["msg"]


def test_file_fatal_fails_with_kind_line_and_context(run_module):
    path = os.path.join(FIXTURES, "vllm-0.17.1-mtp-marlin-config-error.log")
    failed, result = run_module(backend_assert, {"log_path": path, "expect": {"moe_backend": "MARLIN"}})
    assert failed
    assert result["fatal"]["kind"] == "config_error"
    # The fatal leads: kind, line number, the line, then its context.
    assert result["msg"].startswith("fatal config_error in the engine log at line 16: (EngineCore_DP0 pid=188) ERROR "
                                    "03-12 09:19:51 [core.py:1010] ValueError: moe_backend='marlin' is not supported")
    assert " -- context: " in result["msg"] and "Loading drafter model..." in result["msg"]
    assert result["fatal"]["line_number"] == 16
    assert 15 <= len(result["fatal"]["context"]) <= 20


def test_engine_option_against_a_log_of_the_other_engine(run_module):
    path = os.path.join(FIXTURES, "sglang-0.5.9-g7e-fp8-ok.log")
    failed, result = run_module(backend_assert, {"log_path": path, "engine": "vllm"})
    assert failed and result["msg"].startswith("engine: expected vllm, observed sglang, proven by log line: ")


@pytest.mark.parametrize("args, text", [
    ({"expect": {"moe_backnd": "MARLIN"}}, "unknown key(s) in expect/optional: moe_backnd"),
    ({"optional": ["draft"]}, "unknown key(s) in expect/optional: draft"),
])
def test_unknown_keys_are_rejected(run_module, args, text):
    failed, result = run_module(backend_assert, dict(args, log_path=GB10_OK))
    assert failed and result["msg"].startswith(text)


def test_a_fifo_is_refused_not_waited_for(run_module, tmp_path):
    fifo = tmp_path / "engine.log"
    os.mkfifo(str(fifo))
    failed, result = run_module(backend_assert, {"log_path": str(fifo)})
    assert failed
    assert result["msg"] == ("cannot read log_path: %s is a FIFO (named pipe); backend_assert reads a saved log file "
                             "(for example the output of docker logs <container> > file), or use container to read "
                             "a running one" % fifo)


def test_a_50_mb_line_with_a_fatal_comes_back_once_and_bounded(run_module, tmp_path):
    path = tmp_path / "long.log"
    line = ("(EngineCore pid=9) ERROR 05-01 17:58:16 [core.py:1] torch.AcceleratorError: CUDA error: an illegal memory "
            "access was encountered " + "x" * (50 << 20))
    path.write_text(line + "\n", encoding="utf-8")
    failed, result = run_module(backend_assert, {"log_path": str(path)})
    assert failed and result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert len(json.dumps(result)) < 64 * 1024
    assert result["long_lines"] == 1


def test_missing_file(run_module, tmp_path):
    failed, result = run_module(backend_assert, {"log_path": str(tmp_path / "nope.log")})
    assert failed and result["msg"].startswith("cannot read log_path")


# --- a fake Docker Engine API -------------------------------------------------------------------------
class FakeDocker(object):
    """A container named ``engine`` whose log is served as Docker does (multiplexed frames or raw TTY)."""

    STARTED = "2026-11-29T15:37:01.500000000Z"

    def __init__(self, lines, tty=False, exit_code=None, oom=False, hold_open=True, delay=0.0,
                 restarts=False):
        self.lines = lines
        self.restarts = restarts  # after exiting, the restart policy starts it again
        self.tty = tty
        self.exit_code = exit_code  # set: the container stops after its log
        self.oom = oom
        self.hold_open = hold_open
        self.delay = delay
        self.running = True
        self.queries = []
        self.stream_abandoned = threading.Event()  # the client hung up while the stream was open
        self.stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                parts = url.path.strip("/").split("/")
                if parts[0] != "containers" or parts[1] not in ("engine", "c0ffee"):
                    return self._json(404, {"message": "No such container: %s" % parts[1]})
                if parts[2] == "json":
                    return self._json(200, fake.inspect())
                fake.queries.append(parse_qs(url.query))
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.docker.%s-stream" % (
                    "raw" if fake.tty else "multiplexed"))
                self.end_headers()
                try:
                    frames = []
                    for line in fake.lines:
                        payload = (line + "\n").encode()
                        if not fake.tty:
                            payload = struct.pack(">BxxxI", 1, len(payload)) + payload
                        frames.append(payload)
                    # Without a delay the log is already there when the stream opens: one write,
                    # so the reader sees it as the daemon sends a backlog, not line by line.
                    for chunk in ([b"".join(frames)] if not fake.delay else frames):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        if fake.delay:
                            time.sleep(fake.delay)
                    if fake.exit_code is not None:
                        fake.running = False
                        if fake.restarts:
                            fake.running, fake.STARTED = True, "2026-11-29T15:37:09.000000000Z"
                        return
                    if parse_qs(url.query).get("follow") == ["0"]:
                        return  # the log so far was sent
                    while fake.hold_open and not fake.stop.is_set():
                        self.wfile.write(b"")
                        time.sleep(0.05)
                        self.connection.settimeout(0.01)
                        try:
                            if self.connection.recv(1, 0x40) == b"":  # MSG_DONTWAIT: peer closed
                                fake.stream_abandoned.set()
                                return
                        except (BlockingIOError, OSError):
                            pass
                except (BrokenPipeError, ConnectionResetError):
                    fake.stream_abandoned.set()

            def _json(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.handler = Handler

    def inspect(self):
        return {
            "Id": "c0ffee",
            "Config": {"Tty": self.tty},
            "State": {"Running": self.running,
                      "ExitCode": self.exit_code if not self.running or self.restarts else 0,
                      "OOMKilled": self.oom and not self.running, "StartedAt": self.STARTED,
                      "FinishedAt": "2026-11-29T15:30:00.000000000Z"},
        }

    def close(self):
        self.stop.set()


@pytest.mark.parametrize("tty", [False, True])
def test_container_answers_as_soon_as_ready(run_module, docker, tty):
    fake, host = docker(FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), tty=tty))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "wait_timeout": 600,
                                                 "engine": "vllm", "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["ready"] and result["container_state"]["running"]
    # The stream was still open (the container runs on): the module hung up, it did not wait it out.
    assert fake.stream_abandoned.wait(5)
    # Logs since the latest start, with a second of slack for lines stamped before StartedAt.
    assert fake.queries[0]["since"] == ["%.6f" % (calendar.timegm((2026, 11, 29, 15, 37, 1, 0, 0, 0)) + 0.5 - 1.0)]
    assert fake.queries[0]["follow"] == ["1"]


def test_container_exit_before_ready(run_module, docker):
    lines = read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")[:20]
    fake, host = docker(FakeDocker(lines, exit_code=137))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host})
    assert failed
    assert result["fatal"]["kind"] == "container_exited"
    assert result["msg"].startswith("fatal container_exited in the engine log at line 20: container engine exited "
                                    "with code 137; its last log line: %s -- context: " % result["fatal"]["context"][-2])
    assert result["container_state"] == {"running": False, "exit_code": 137, "oom_killed": False,
                                         "started_at": FakeDocker.STARTED}
    assert result["fatal"]["context"][-2] == lines[-1]


def test_container_exit_and_restart_before_ready_names_the_last_line(run_module, docker):
    # A crash without a known signature (here: the port is taken), and the restart policy
    # started the container again before the module looked: still an exit, with the evidence.
    lines = ["Traceback (most recent call last):", "    sock.bind(addr)",
             "OSError: [Errno 98] Address already in use"]
    fake, host = docker(FakeDocker(lines, exit_code=1, restarts=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host})
    assert failed and result["fatal"]["kind"] == "container_exited"
    assert result["msg"].startswith("fatal container_exited in the engine log at line 3: container engine exited "
                                    "with code 1 and its restart policy started it again; its last log line: "
                                    "OSError: [Errno 98] Address already in use")


def test_container_oom_killed(run_module, docker):
    fake, host = docker(FakeDocker(read_fixture("sglang-0.5.9-g7e-fp8-eagle-ok.log")[:3], exit_code=137, oom=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host})
    assert failed and result["fatal"]["kind"] == "out_of_memory"
    assert "killed by the kernel OOM killer" in result["msg"]


def test_container_fatal_in_log(run_module, docker):
    fake, host = docker(FakeDocker(read_fixture("vllm-0.17.1-mtp-marlin-config-error.log"), exit_code=1))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host,
                                                 "expect": {"draft_moe_backend": "TRITON"}})
    assert failed and result["fatal"]["kind"] == "config_error"
    assert "moe_backend='marlin' is not supported" in result["msg"]
    # missing evidence follows the fatal, in one line
    assert result["msg"].endswith("; no evidence in the log for draft_moe_backend (the engine failed before printing it)")


def test_container_fatal_after_ready_while_it_still_runs(run_module, docker):
    fake, host = docker(FakeDocker(read_fixture("vllm-0.19-mtp-illegal-memory-access.log"), hold_open=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host})
    # The crash arrived in the same read as the ready line: a fatal in what was read fails, even after
    # ready, and the module waits a short grace for the rest of the traceback, not for wait_timeout.
    assert failed and result["ready"]
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert result["fatal"]["context"][-1].endswith("500 Internal Server Error")


@pytest.mark.parametrize("line", [
    '(APIServer pid=1) INFO:     203.0.113.7:40001 - "GET /OutOfMemoryError HTTP/1.1" 404 Not Found',
    'INFO:     203.0.113.7:40002 - "GET /Traceback%20(most%20recent%20call%20last) HTTP/1.1" 404 Not Found',
    "(APIServer pid=1) INFO 06-09 10:09:02 [logger.py:41] Received request chatcmpl-1: prompt: 'CUDA error: an "
    "illegal memory access was encountered\\nEngine core proc EngineCore died unexpectedly', params: None.",
    '(APIServer pid=1) INFO:     203.0.113.7:40003 - "GET /x.%20It%20usually%20means%20died%20unexpectedly HTTP/1.1" 404',
])
def test_container_clients_cannot_make_a_healthy_engine_fatal(run_module, docker, line):
    # The review's repro (D4): a client-chosen path or prompt after readiness, sent as a backlog.
    lines = read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")
    fake, host = docker(FakeDocker(lines + [line] * 3, hold_open=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["fatal"] is None and result["ready"]


def test_container_a_line_longer_than_the_cap_is_cut(run_module, docker):
    lines = read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")
    fake, host = docker(FakeDocker(lines[:5] + ["z" * (3 << 20)] + lines[5:], hold_open=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["long_lines"] == 1 and result["log_lines_read"] >= len(lines) + 1


def test_container_wait_timeout(run_module, docker):
    fake, host = docker(FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")[:20]))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "wait_timeout": 1,
                                                 "expect": {"moe_backend": "FLASHINFER_CUTLASS"}})
    assert failed
    assert result["msg"].startswith("the server was not ready after 1s")
    assert "moe_backend: expected FLASHINFER_CUTLASS, observed MARLIN" in result["msg"]
    assert result["ready"] is False and result["fatal"] is None
    assert result["container_state"]["running"]


def test_since_reads_a_crash_after_ready_and_later_starts(run_module, docker):
    # The engine died on a request after it was proven ready, and its restart policy started it
    # again: the crash is in the log since the proven start, not in the latest start's log.
    lines = read_fixture("vllm-0.19-mtp-illegal-memory-access.log") + read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")
    fake, host = docker(FakeDocker(lines, hold_open=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host,
                                                 "since": "2026-11-29T15:30:00.25Z"})
    assert failed and result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert result["msg"].startswith("fatal cuda_illegal_memory_access in the engine log at line 12: ")
    assert "illegal memory access was encountered" in result["msg"]
    assert fake.queries[0]["follow"] == ["0"]
    assert fake.queries[0]["since"] == ["%.6f" % (calendar.timegm((2026, 11, 29, 15, 30, 0, 0, 0, 0)) + 0.25 - 1.0)]


def test_since_without_a_fatal_reports_what_it_read(run_module, docker):
    fake, host = docker(FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), hold_open=True))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "since": FakeDocker.STARTED, "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["ready"] and result["fatal"] is None


def test_since_must_be_a_docker_timestamp(run_module, docker):
    fake, host = docker(FakeDocker([]))
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "since": "yesterday"})
    assert failed and result["msg"].startswith("since must be a timestamp as Docker reports it")


def test_unknown_container(run_module, docker):
    fake, host = docker(FakeDocker([]))
    failed, result = run_module(backend_assert, {"container": "nope", "docker_host": host})
    assert failed and "No such container: nope" in result["msg"] and "(is the container created?)" in result["msg"]


def test_no_docker_daemon(run_module, tmp_path):
    failed, result = run_module(backend_assert, {"container": "engine",
                                                 "docker_host": "unix://" + str(tmp_path / "none.sock")})
    assert failed and result["msg"].startswith("cannot reach the Docker daemon at unix://")


@pytest.mark.parametrize("args", [{}, {"container": "x", "log_path": "/y"}])
def test_container_and_log_path_one_required(run_module, args):
    failed, result = run_module(backend_assert, args)
    assert failed


# --- bounded waits (wait_chunk): progress, stall budgets, the cap from the container's start -------
def _started(seconds_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime(time.time() - seconds_ago))


def _loading_docker(docker, started_ago):
    """The GB10 start cut in its weight loading ("Starting to load model"), started ``started_ago`` s ago."""
    fake = FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log")[:20])
    fake.STARTED = _started(started_ago)
    return docker(fake)


def test_chunk_returns_not_ready_with_phase_and_elapsed(run_module, docker):
    fake, host = _loading_docker(docker, 40)
    begin = time.time()
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_timeout": 1800, "wait_chunk": 1, "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert time.time() - begin < 10
    assert result["ready"] is False and result["phase"] == "weight_loading"
    assert "Starting to load model" in result["phase_line"]
    assert 40 <= result["elapsed"] <= 50
    assert result["msg"] == "weight_loading, %d s" % result["elapsed"]
    assert result["progress"]["started_at"] == fake.STARTED and result["progress"]["bytes"] > 0
    # small: what the next wait needs and the operator reads, not the evidence of an unfinished start
    assert "observed" not in result and "evidence" not in result


def test_chunk_fails_a_start_stuck_in_its_phase_with_the_last_lines(run_module, docker):
    fake, host = _loading_docker(docker, 40)
    failed, first = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                "wait_chunk": 1})
    assert not failed
    # the log did not move since the previous wait, 1000 s ago by its clock
    progress = dict(first["progress"], activity_at=first["progress"]["activity_at"] - 1000)
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_chunk": 1, "progress": progress,
                                                 "phase_budgets": {"weight_loading": 600}})
    assert failed
    assert result["msg"].startswith("the start is stuck in phase weight_loading (")
    assert "(its stall budget is 600 s)" in result["msg"] and "raise server_ready_phase_budgets.weight_loading" \
        in result["msg"]
    assert "the last log lines: " in result["msg"] and "Using AttentionBackendEnum.TRITON_ATTN" in result["msg"]
    assert result["ready"] is False and result["phase"] == "weight_loading"


def test_chunk_new_lines_keep_a_slow_start_alive(run_module, docker):
    fake, host = _loading_docker(docker, 40)
    stale = {"started_at": fake.STARTED, "phase": "engine_init", "bytes": 10, "activity_at": time.time() - 1000}
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_chunk": 1, "progress": stale, "stall_timeout": 600})
    assert not failed, result["msg"]
    assert result["progress"]["activity_at"] > time.time() - 30


def test_chunk_cap_counts_from_the_container_start(run_module, docker):
    # a controller that comes back after the cap: the engine started 100 s ago, the cap is 60 s
    fake, host = _loading_docker(docker, 100)
    begin = time.time()
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_timeout": 60, "wait_chunk": 30})
    assert failed and time.time() - begin < 10
    assert result["msg"].startswith("the server was not ready after 1") and "(the cap, server_ready_timeout 60 s), " \
        "still in phase weight_loading" in result["msg"]


def test_chunk_an_engine_ready_long_before_the_cap_is_read_and_proven(run_module, docker):
    # A converge that finds an engine started long ago (here 600 s, the cap 60 s) and ready: its log
    # is read up to the ready line, not judged at the cap before it was read (a lab regression).
    # Docker streams an existing log as frames that arrive one after another (delay), not in one write.
    fake = FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), delay=0.001)
    fake.STARTED = _started(600)
    fake, host = docker(fake)
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_timeout": 60, "wait_chunk": 25, "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["ready"] is True and result["mismatches"] == []


def test_chunk_ready_start_answers_with_the_whole_proof(run_module, docker):
    fake = FakeDocker(read_fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"))
    fake.STARTED = _started(300)
    fake, host = docker(fake)
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_chunk": 30, "expect": GB10_EXPECT})
    assert not failed, result["msg"]
    assert result["ready"] is True and result["phase"] == "ready" and result["mismatches"] == []
    assert result["observed"]["moe_backend"] == "MARLIN"


def test_chunk_refuses_bad_budgets_before_waiting(run_module, docker):
    fake, host = _loading_docker(docker, 40)
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "wait_chunk": 30,
                                                 "phase_budgets": {"warm": 10}})
    assert failed and result["msg"].startswith("server_ready_phase_budgets has the unknown phase 'warm'")
    assert fake.queries == []


def test_one_long_wait_names_the_phase_it_timed_out_in(run_module, docker):
    fake, host = _loading_docker(docker, 40)
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "wait_timeout": 1})
    assert failed
    assert result["msg"].startswith("the server was not ready after 1s (no \"Application startup complete.\" line "
                                    "yet), in start-up phase weight_loading")


def test_chunk_a_container_started_again_since_the_previous_wait_failed(run_module, docker):
    # its restart policy brought it back between two waits: the crash of the earlier start counts
    fake, host = _loading_docker(docker, 10)
    previous = {"container_id": "c0ffee", "started_at": _started(60), "phase": "cuda_graphs", "bytes": 9000,
                "activity_at": time.time() - 15}
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_chunk": 30, "progress": previous})
    assert failed and result["fatal"]["kind"] == "container_exited"
    assert result["msg"].startswith("container engine stopped and was started again by its restart policy since "
                                    "the previous wait (then started at %s, now at %s" % (previous["started_at"],
                                                                                          fake.STARTED))
    assert fake.queries == []
    # the same start as before: the wait goes on
    failed, result = run_module(backend_assert, {"container": "engine", "docker_host": host, "engine": "vllm",
                                                 "wait_chunk": 1, "progress": dict(previous, started_at=fake.STARTED)})
    assert not failed and result["progress"]["container_id"] == "c0ffee"
