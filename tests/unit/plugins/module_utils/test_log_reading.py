# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a log at grep speed (module_utils/_log_reading): whole files, chunks, forked workers, a
container's stream, what is decoded and what is only counted, long lines, bytes that are not UTF-8."""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_records as log_records
from ansible_collections.inferops.serving.plugins.module_utils import _log_patterns as log_patterns
from ansible_collections.inferops.serving.plugins.module_utils import _log_scanner as log_scanner
from ansible_collections.inferops.serving.plugins.module_utils import _log_reading as log_reading
from ansible_collections.inferops.serving.plugins.module_utils import _log_verdict as log_verdict
from ansible_collections.inferops.serving.plugins.module_utils import _startup_phases as startup_phases

from log_corpus import (  # this directory
    ERR,
    REAL,
    REQUEST,
    SGL,
    VLLM,
    corpus_index,
    corpus_text,
    cuts_at_lines,
    fixture,
    write_filler,
)


# --- streaming a large file -----------------------------------------------------------------------------
STATS = ("(APIServer pid=1) INFO 06-09 10:09:02 [loggers.py:257] Engine 000: Avg prompt throughput: 51.2 tokens/s, "
         "Avg generation throughput: 24.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%\n")


def _big_log(tmp_path, tail):
    with open(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), "rb") as handle:
        head = handle.read()
    body = (STATS + REQUEST * 3).encode() * 3000
    path = tmp_path / "big.log"
    path.write_bytes(head + body + tail.encode() + body)
    return str(path), head.count(b"\n") + body.count(b"\n") * 2 + tail.count("\n")


@pytest.fixture(params=["sequential", "forked workers"])
def parallel(request, monkeypatch):
    monkeypatch.setattr(log_reading, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(log_reading, "MAX_WORKERS", 3)
    return request.param != "sequential"


@pytest.mark.parametrize("last", ["", "INFO:     no newline at the end"])
def test_large_file_without_fatal_is_counted_to_the_end(tmp_path, parallel, last):
    path, lines = _big_log(tmp_path, "")
    with open(path, "ab") as handle:
        handle.write(last.encode())
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    assert result["log_lines_read"] == lines + (1 if last else 0)
    assert result["fatal"] is None and result["observed"]["moe_backend"] == "MARLIN"


def test_count_range_finds_a_needle_across_chunks(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"a\n" * 10 + b"Traceback (most recent call last):\n" + b"b\n" * 10)
    for chunk in (3, 7, 16, 1 << 20):
        assert log_reading.count_range(str(path), 0, path.stat().st_size, chunk) == (21, True)
    assert log_reading.count_range(str(path), 0, 20, 7) == (10, False)


def test_large_file_fatal_deep_inside_has_its_context(tmp_path, parallel):
    tail = ("(EngineCore pid=211) ERROR 06-09 11:00:00 [core.py:870] Traceback (most recent call last):\n"
            "(EngineCore pid=211) ERROR 06-09 11:00:00 [core.py:870] torch.AcceleratorError: CUDA error: an illegal "
            "memory access was encountered\n")
    path, _lines = _big_log(tmp_path, tail)
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert len(result["fatal"]["context"]) == 20
    assert result["fatal"]["context"][9].endswith("Traceback (most recent call last):")
    assert result["fatal"]["context"][8] == REQUEST.strip()


# The crashes that can happen after readiness (a configuration error cannot), each with the start of
# its traceback or a record: an excerpt cut inside a traceback is only read as such from its start.
FATAL_LOGS = [(None, name) for name in ("vllm-0.19-mtp-illegal-memory-access.log", "sglang-0.5.9-eagle-oom.log")] + [
    (REAL, e["file"]) for e in corpus_index()
    if e["fatal"] and e["fatal"]["kind"] != "config_error" and e["file"] not in (
        "vllm-engine-core-init-failed-apiserver.log",
        # an exception record and nothing a needle finds (no traceback, no dead-engine line): after readiness
        # the counted-only reading does not decode it (line by line it is a fatal)
        "vllm-0.2x-device-assert-excerpt-from-exception-record.log",
        "vllm-0.25-worker-exception-without-record-header.log")]  # and a bare one: before readiness only


# Excerpts whose fatal is an exception line without its traceback: it counts before readiness only (after
# it, a client's text could be such a line, and it carries no needle); the dead-engine line after it is the
# fatal then.
BARE_EXCEPTION = ("sglang-0.5-oom-excerpt-from-exception-line.log",)


def _ready_head_and_crash(where, name):
    """``(head, tail)``: a start of the crash's engine up to readiness, and the crash's lines (a corpus
    file when ``where`` is set, else a composed fixture). A log is one engine's: only that engine's
    needles are searched."""
    if where:
        tail = corpus_text(name)[1]
    else:
        with open(fixture(name), encoding="utf-8") as handle:
            tail = handle.read().splitlines()
    if name.startswith("sglang-"):
        with open(fixture("sglang-0.5.9-g7e-fp8-ok.log"), encoding="utf-8") as handle:
            head = handle.read().splitlines()
    else:
        head = corpus_text("vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    return head, tail


@pytest.mark.parametrize("where, name", FATAL_LOGS, ids=lambda x: x or "")
def test_fatal_after_filler_is_found_like_line_by_line(tmp_path, parallel, where, name):
    # Each real crash, after readiness and 2 MB of counted-only lines: found as line by line (the
    # needles cover it), with the same line, context and root cause. The start-up is of the crash's
    # engine (a log is one engine's, and only that engine's needles are searched).
    head, tail = _ready_head_and_crash(where, name)
    path = str(tmp_path / "x.log")
    before = write_filler(path, head, REQUEST.strip(), 2 << 20, tail)
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    expected = log_reading.scan_lines(head + [REQUEST.strip()] * (before - len(head)) + tail)
    assert result["fatal"] == expected["fatal"]
    if name in BARE_EXCEPTION:
        assert result["fatal"]["kind"] == "engine_dead"
    else:
        assert result["fatal"]["kind"] == log_reading.scan_lines(tail)["fatal"]["kind"]


def test_metrics_after_readiness_are_read_in_counted_only_chunks(tmp_path, parallel):
    head = [VLLM + "Initializing a V1 LLM engine (v0.23.0) with config: model='m', speculative_config="
            "SpeculativeConfig(method='mtp', model='m', num_spec_tokens=2)"] + corpus_text(
        "vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    metrics = corpus_text("vllm-gb10-mtp2-spec-decoding-metrics.log")[1]
    last = metrics[0].replace("Mean acceptance length: 3.00", "Mean acceptance length: 2.41").replace(
        "rate: 1.000, 1.000,", "rate: 0.812, 0.598,")
    path = str(tmp_path / "m.log")
    write_filler(path, head + metrics, REQUEST.strip(), 3 << 20, [last] + [REQUEST.strip()] * 10)
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    assert result["observed"]["mean_acceptance_length"] == 2.41
    assert result["observed"]["acceptance_rate_per_position"] == [0.812, 0.598]
    assert result["evidence"]["mean_acceptance_length"] == last


# --- bounded ------------------------------------------------------------------------------------------------
def test_a_50_mb_line_with_a_fatal_is_cut_reported_once_and_returned_bounded(tmp_path):
    import json
    line = ERR + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered " + "x" * (50 << 20)
    path = tmp_path / "long.log"
    path.write_text("first\n" + line + "\n" + line + "\nlast\n", encoding="utf-8")
    result = log_reading.scan_file(str(path))
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert result["long_lines"] == 2 and result["log_lines_read"] == 4
    assert [w for w in result["observed"]["warnings"] if "longer than" in w] == [
        "log line 2 is longer than 65536 characters: such lines are cut to that length before they are read"]
    assert len(json.dumps(result)) < 100 * 1024
    assert len(log_verdict.describe_fatal(result["fatal"])) < 10 * 1024


def test_a_line_longer_than_the_buffer_without_a_newline(tmp_path):
    path = tmp_path / "tail.log"
    path.write_bytes(b"a\n" + b"y" * (300 << 10))
    result = log_reading.scan_file(str(path), chunk_size=64 * 1024)
    assert result["log_lines_read"] == 2 and result["long_lines"] == 1


def test_only_regular_files_are_read(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(str(fifo))
    with pytest.raises(log_reading.LogFileError, match="is a FIFO"):
        log_reading.scan_file(str(fifo))
    with pytest.raises(log_reading.LogFileError, match="is a directory"):
        log_reading.scan_file(str(tmp_path))
    with pytest.raises(log_reading.LogFileError, match="is a character device"):
        log_reading.scan_file("/dev/zero")


@pytest.mark.parametrize("start, line", [
    ("vllm", "(APIServer pid=1) WARNING 06-09 11:00:00 [core_client.py:840] [shutdown] MPClient: engine core exited "
             "unexpectedly; starting cleanup"),
    ("vllm", "(APIServer pid=1) ERROR 06-09 11:00:00 [core_client.py:564] Engine core proc EngineCore_DP0 died "
             "unexpectedly, shutting down client."),
    # the review's D5 repro: a bare sigquit record after megabytes of access lines
    ("sglang", "[2026-03-14 12:00:40] Received sigquit from a child process. It usually means the child failed."),
    ("sglang", "[2026-03-14 12:00:40] SIGQUIT received. signum=None, frame=None. It usually means one child failed."),
])
def test_a_dead_engine_without_traceback_after_filler_is_found(tmp_path, parallel, start, line):
    if start == "vllm":
        head = corpus_text("vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    else:
        with open(fixture("sglang-0.5.9-g7e-fp8-ok.log"), encoding="utf-8") as handle:
            head = handle.read().splitlines()
    path = str(tmp_path / "d.log")
    before = write_filler(path, head, REQUEST.strip(), 3 << 20, [line])
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    assert result["fatal"]["kind"] == "engine_dead"
    assert (result["fatal"]["line"], result["fatal"]["line_number"]) == (line, before + 1)


@pytest.mark.parametrize("between", [0, 10, 700])
def test_a_cpp_abort_before_the_dead_worker_line_is_the_root_cause(tmp_path, parallel, between):
    # A worker aborted by std::terminate prints no Python traceback (libstdc++ text, vLLM's process
    # tag in front); vLLM 0.29+ then logs the worker's death (multiproc_executor.py text).
    abort = ["(Worker_TP0 pid=301) terminate called after throwing an instance of 'c10::Error'",
             "(Worker_TP0 pid=301)   what():  CUDA error: an illegal memory access was encountered"]
    died = ("(EngineCore pid=176) ERROR 06-09 11:00:02 [multiproc_executor.py:381] Worker proc VllmWorker-0 died "
            "unexpectedly (exit code: -6), shutting down executor.")
    head = corpus_text("vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    path = str(tmp_path / "a.log")
    before = write_filler(path, head, REQUEST.strip(), 3 << 20, abort + [REQUEST.strip()] * between + [died])
    result = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=parallel)
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert (result["fatal"]["line"], result["fatal"]["line_number"]) == (abort[1], before + 2)


# --- the counted-only reading: ranges, workers, the last metrics line (mutation-tested) -----------------
def _lines_file(tmp_path, lines):
    path = tmp_path / "r.log"
    path.write_bytes("".join(line + "\n" for line in lines).encode())
    return str(path), path.stat().st_size


@pytest.mark.parametrize("offset, expected", [(1, 6), (5, 6), (6, 6), (7, 12), (12, 12), (13, 19), (18, 19)])
def test_line_start_after_is_the_first_line_start_at_or_after_the_offset(tmp_path, offset, expected):
    path, size = _lines_file(tmp_path, ["aaaaa", "bbbbb", "cccccc"])
    assert size == 19
    assert log_reading._line_start_after(path, offset) == expected


def test_line_start_after_a_line_longer_than_its_read_block(tmp_path):
    path, size = _lines_file(tmp_path, ["a", "x" * 200000, "b"])
    assert log_reading._line_start_after(path, 5) == 200003
    path, size = _lines_file(tmp_path, ["a", "x" * 200000])
    with open(path, "ab") as handle:
        handle.write(b"no newline")
    assert log_reading._line_start_after(path, 200003) == 200003
    assert log_reading._line_start_after(path, 200005) == size + len("no newline")


@pytest.mark.parametrize("workers", [2, 3, 5])
@pytest.mark.parametrize("where", [None, 0.1, 0.5, 0.97])
def test_count_parallel_counts_every_range_and_a_needle_in_any_of_them(tmp_path, workers, where):
    lines = [REQUEST.strip()] * 3000
    if where is not None:
        lines[int(len(lines) * where)] = "(EngineCore pid=2) ERROR 06-09 11:00:00 [core.py:870] Traceback (most recent call last):"
    path, size = _lines_file(tmp_path, ["start"] + lines)
    assert log_reading.count_parallel(path, 6, size, workers) == (3000, where is not None)
    assert log_reading.count_range(path, 6, size) == (3000, where is not None)


def test_count_parallel_searches_the_needles_it_is_given(tmp_path):
    lines = [REQUEST.strip()] * 2000 + ["[2026-09-07 06:10:23] Received sigquit from a child process. It usually means the "
                                        "child failed."] + [REQUEST.strip()] * 10
    path, size = _lines_file(tmp_path, lines)
    assert log_reading.count_parallel(path, 0, size, 2, log_patterns.ENGINE_FATAL_NEEDLES["sglang"]) == (2011, True)
    assert log_reading.count_parallel(path, 0, size, 2, log_patterns.ENGINE_FATAL_NEEDLES["vllm"]) == (2011, False)
    assert log_reading.count_range(path, 0, size, needles=log_patterns.ENGINE_FATAL_NEEDLES["vllm"]) == (2011, False)


def test_a_failed_worker_makes_the_scan_read_its_range_line_by_line(tmp_path, monkeypatch):
    # a forked worker that dies (its count_range raises) answers nothing: the scan does not trust the
    # count and reads the rest line by line, with the same result as a sequential scan
    parent = os.getpid()
    real = log_reading.count_range

    def failing_in_a_worker(*args, **kwargs):
        if os.getpid() != parent:
            raise OSError("worker failed")
        return real(*args, **kwargs)

    tail = ("(EngineCore pid=211) ERROR 06-09 11:00:00 [core.py:870] Traceback (most recent call last):\n"
            "(EngineCore pid=211) ERROR 06-09 11:00:00 [core.py:870] torch.AcceleratorError: CUDA error: an illegal "
            "memory access was encountered\n")
    path, lines = _big_log(tmp_path, tail)
    size = os.path.getsize(path)
    monkeypatch.setattr(log_reading, "count_range", failing_in_a_worker)
    assert log_reading.count_parallel(path, 0, size, 2) == (None, True)
    monkeypatch.setattr(log_reading, "PARALLEL_MIN_BYTES", 1)
    result = log_reading.scan_file(path, chunk_size=64 * 1024)
    expected = log_reading.scan_file(path, chunk_size=64 * 1024, parallel=False)
    assert result == expected and result["log_lines_read"] == lines
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"


def test_last_metrics_line_is_the_last_within_the_lookback(tmp_path, monkeypatch):
    metric = ("(APIServer pid=1) INFO 06-09 10:09:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
              "%s, Accepted throughput: 12.10 tokens/s, Drafted throughput: 23.40 tokens/s, Accepted: 5 tokens, "
              "Drafted: 10 tokens, Per-position acceptance rate: 0.670, 0.360, Avg Draft acceptance rate: 51.5%%")
    needle = log_patterns.METRICS_NEEDLES["vllm"]
    lines = [REQUEST.strip()] * 100 + [metric % "1.50"] + [REQUEST.strip()] * 300 + [metric % "2.25"] + \
        [REQUEST.strip()] * 50
    path, size = _lines_file(tmp_path, lines)
    # searched backwards block by block: the last one, whole, wherever a block boundary cuts the line
    # or the needle itself
    for block in list(range(40, 400, 7)) + [1000, 1 << 20]:
        assert log_reading._last_metrics_lines(path, 0, size, [needle], block=block) == [metric % "2.25"]
    # only up to the stop, and only within METRICS_LOOKBACK of it
    stop = size - len(metric % "2.25") - 51 * len(REQUEST)
    assert log_reading._last_metrics_lines(path, 0, stop, [needle], block=128) == [metric % "1.50"]
    monkeypatch.setattr(log_reading, "METRICS_LOOKBACK", 50 * len(REQUEST))
    assert log_reading._last_metrics_lines(path, 0, size, [needle]) == []
    assert log_reading._last_metrics_lines(path, size - 10, size, [needle]) == []


@pytest.mark.parametrize("chunk_size", [1024, 64 * 1024, 1 << 20])
def test_a_long_line_is_cut_at_the_cap_whatever_the_buffer(tmp_path, chunk_size):
    # the 50 MB test with lines a mutation run can afford: 200 KiB, read through buffers that grow
    line = ERR + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered " + "x" * (200 << 10)
    path = tmp_path / "long.log"
    path.write_text("first\n" + line + "\n" + line + "\nlast\n", encoding="utf-8")
    result = log_reading.scan_file(str(path), chunk_size=chunk_size)
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access" and result["fatal"]["line_number"] == 2
    assert result["fatal"]["line"] == log_records.show(line[:log_records.LINE_CAP])
    assert result["long_lines"] == 2 and result["log_lines_read"] == 4
    assert [w for w in result["observed"]["warnings"] if "longer than" in w] == [
        "log line 2 is longer than 65536 characters: such lines are cut to that length before they are read"]


@pytest.mark.parametrize("chunk_size", [1000, 1 << 20])
@pytest.mark.parametrize("extra, cut", [(0, False), (1, True)])
def test_a_line_of_exactly_the_cap_is_not_cut(tmp_path, chunk_size, extra, cut):
    line = "y" * (log_records.LINE_CAP + extra)
    path = tmp_path / "cap.log"
    path.write_text("a\n" + line + "\nb\n", encoding="utf-8")
    result = log_reading.scan_file(str(path), chunk_size=chunk_size)
    assert result["long_lines"] == (1 if cut else 0) and result["log_lines_read"] == 3
    assert log_reading.scan_lines(["a", line, "b"])["long_lines"] == (1 if cut else 0)


def test_a_long_last_line_without_newline_is_read_as_its_first_cap(tmp_path):
    line = ERR + "torch.OutOfMemoryError: CUDA out of memory. " + "z" * (100 << 10)
    path = tmp_path / "end.log"
    path.write_text("a\n" + line, encoding="utf-8")
    result = log_reading.scan_file(str(path), chunk_size=4096)
    assert result["log_lines_read"] == 2 and result["long_lines"] == 1
    assert result["fatal"]["kind"] == "out_of_memory" and result["fatal"]["line_number"] == 2


def test_a_metrics_line_with_invalid_utf8_is_read_with_replacement_characters(tmp_path):
    metric = (b"(APIServer pid=1) INFO 06-09 10:09:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
              b"2.25, Accepted throughput: 12.10 tokens/s \xff\xfe, Drafted throughput: 23.40 tokens/s, Accepted: 5 "
              b"tokens, Drafted: 10 tokens, Per-position acceptance rate: 0.670, 0.360, Avg Draft acceptance rate: 51.5%")
    path = tmp_path / "u.log"
    path.write_bytes(REQUEST.encode() * 20 + metric + b"\n" + REQUEST.encode() * 5)
    lines = log_reading._last_metrics_lines(str(path), 0, path.stat().st_size, [log_patterns.METRICS_NEEDLES["vllm"]])
    assert lines == [metric.decode("utf-8", "replace")] and "\ufffd\ufffd" in lines[0]


@pytest.mark.parametrize("start, pos, end, line", [
    (0, 6, 16, b"metrics x"),
    (2, 6, 16, b"metrics x"),
    (4, 6, 16, b"trics x"),  # a range starting inside a line: from the range start
    (2, 6, 8, b"metric"),  # a range ending inside a line: to the range end
    (12, 14, 16, b"tail"),  # the last line, without its newline
])
def test_line_bounds_are_the_line_within_the_range(start, pos, end, line):
    assert log_reading._line_bounds(b"a\nmetrics x\ntail", pos, start, end) == line


def test_a_metrics_line_at_the_very_end_without_newline_is_read(tmp_path):
    metric = ("(APIServer pid=1) INFO 06-09 10:09:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
              "2.25, Accepted throughput: 12.10 tokens/s, Drafted throughput: 23.40 tokens/s, Accepted: 5 tokens, "
              "Drafted: 10 tokens, Per-position acceptance rate: 0.670, 0.360, Avg Draft acceptance rate: 51.5%")
    path = tmp_path / "e.log"
    path.write_bytes(REQUEST.encode() * 20 + metric.encode())
    assert log_reading._last_metrics_lines(str(path), 0, path.stat().st_size, [log_patterns.METRICS_NEEDLES["vllm"]]) == [metric]


def test_count_range_edges(tmp_path):
    path, size = _lines_file(tmp_path, ["a"] * 10 + ["Traceback (most recent call last):"] + ["b"] * 10)
    assert log_reading.count_range(path, 4, 4) == (0, False)  # an empty range
    assert log_reading.count_range(path, 0, size + 100) == (21, True)  # a file shorter than the range (truncated)
    # a needle cut by every chunk boundary, with chunks longer and shorter than the needle
    for chunk in range(3, 80):
        assert log_reading.count_range(path, 0, size, chunk) == (21, True), chunk


def test_count_parallel_counts_only_its_range(tmp_path):
    lines = ["line %04d" % i for i in range(3000)]
    path, size = _lines_file(tmp_path, lines)
    start, stop = 10 * 100, 10 * 2000  # "line NNNN\n" is 10 bytes: lines 100 to 1999
    for workers in (2, 3, 4):
        assert log_reading.count_parallel(path, start, stop, workers) == (1900, False)
        assert log_reading.count_parallel(path, 10 * 1000, 10 * 1200, workers) == (200, False)


def test_count_parallel_uses_the_given_needles_in_every_range(tmp_path):
    sigquit = "[2026-09-07 06:10:23] Received sigquit from a child process. It usually means the child failed."
    path, size = _lines_file(tmp_path, [sigquit] + [REQUEST.strip()] * 2000 + [sigquit])
    assert log_reading.count_parallel(path, 0, size, 2, log_patterns.ENGINE_FATAL_NEEDLES["vllm"]) == (2002, False)
    assert log_reading.count_parallel(path, 0, size, 2, log_patterns.ENGINE_FATAL_NEEDLES["sglang"]) == (2002, True)


def test_one_failed_worker_among_good_ones_fails_the_count(tmp_path, monkeypatch):
    parent = os.getpid()
    real = log_reading.count_range
    path, size = _lines_file(tmp_path, [REQUEST.strip()] * 3000)

    def first_worker_fails(file, lo, hi, *args, **kwargs):
        if os.getpid() != parent and lo < size // 2:
            raise OSError("worker failed")
        return real(file, lo, hi, *args, **kwargs)

    monkeypatch.setattr(log_reading, "count_range", first_worker_fails)
    assert log_reading.count_parallel(path, 0, size, 3) == (None, True)


def test_last_metrics_line_only_before_the_stop_in_a_large_file(tmp_path):
    metric = ("(APIServer pid=1) INFO 06-09 10:09:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
              "%s, Accepted throughput: 12.10 tokens/s, Drafted throughput: 23.40 tokens/s, Accepted: 5 tokens, "
              "Drafted: 10 tokens, Per-position acceptance rate: 0.670, 0.360, Avg Draft acceptance rate: 51.5%%")
    needle = log_patterns.METRICS_NEEDLES["vllm"]
    head = REQUEST * 2000 + metric % "1.50" + "\n" + REQUEST * 10
    path = tmp_path / "big.log"
    path.write_bytes((head + metric % "2.25" + "\n" + REQUEST * 10).encode())
    assert log_reading._last_metrics_lines(str(path), 0, len(head), [needle], block=4096) == [metric % "1.50"]
    # a metrics line that is the file's first line
    path.write_bytes((metric % "3.00" + "\n" + REQUEST * 10).encode())
    assert log_reading._last_metrics_lines(str(path), 0, path.stat().st_size, [needle]) == [metric % "3.00"]


# --- a container's stream: whole-line chunks fed as they come (backend_assert's follow) -------------
# A healthy start, 300 KB of access lines after readiness (counted, not read: more than TAIL_BYTES in
# one chunk), then a real crash whose root cause and context come from lines before its needle.
STREAM_LOGS = [(None, "vllm-0.19-mtp-illegal-memory-access.log"), (None, "sglang-0.5.9-eagle-oom.log"),
               (REAL, "sglang-0.5-oom-traceback-sigquit.log"), (REAL, "vllm-0.2x-engine-dead-headerless-traceback.log")]


def _stream_lines(where, name):
    head, tail = _ready_head_and_crash(where, name)
    return head + [REQUEST.strip()] * (300 * 1024 // len(REQUEST)) + tail


@pytest.mark.parametrize("where, name", STREAM_LOGS, ids=lambda x: x and os.path.basename(x))
def test_a_stream_of_whole_line_chunks_reads_as_line_by_line(where, name):
    lines = _stream_lines(where, name)
    expected = log_reading.scan_lines(lines)
    assert expected["ready"] and expected["fatal"]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    for sizes in ((1,), (4096, 100, 70000), (200 * 1024,), (len(data),)):
        scanner = log_scanner.LogScanner()
        for begin, end in cuts_at_lines(data, sizes):
            log_reading.feed_bytes(scanner, data[begin:end])
        assert scanner.result() == expected, sizes


@pytest.mark.parametrize("where, name", STREAM_LOGS[:2], ids=lambda x: x and os.path.basename(x))
def test_feed_bytes_reads_only_its_range_of_a_larger_buffer(where, name):
    # scan_file reuses one buffer: bytes before ``start`` and from ``end`` on are another chunk's. Here
    # they are lines of a real crash and a partial line, which must count for nothing.
    lines = _stream_lines(where, name)
    expected = log_reading.scan_lines(lines)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    noise = ("\n".join(corpus_text("sglang-0.5-oom-traceback-sigquit.log")[1]) + "\nINFO 12-01 partial").encode()
    buf = bytearray(noise + data + noise)
    for sizes in ((4096, 100, 70000), (200 * 1024,), (len(data),)):
        scanner = log_scanner.LogScanner()
        for begin, end in cuts_at_lines(data, sizes):
            log_reading.feed_bytes(scanner, buf, len(noise) + end, len(noise) + begin)
        assert scanner.result() == expected, sizes


def test_a_skipped_chunk_in_another_encoding_is_read_again_without_an_error():
    # journald export of a host with a Russian locale, as CP1251 rather than UTF-8: the bytes are not UTF-8.
    journald = corpus_text("vllm-fork-journald-localised-month.log")[1]
    head = corpus_text("vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    with open(fixture("vllm-0.19-mtp-illegal-memory-access.log"), encoding="utf-8") as handle:
        crash = handle.read().splitlines()
    scanner = log_scanner.LogScanner()
    log_reading.feed_bytes(scanner, ("\n".join(head) + "\n").encode("utf-8"))
    assert scanner.ready
    log_reading.feed_bytes(scanner, ("\n".join(journald[3:6]) + "\n").encode("cp1251"))  # counted, its tail kept
    log_reading.feed_bytes(scanner, ("\n".join(crash) + "\n").encode("utf-8"))
    result, expected = scanner.result(), log_reading.scan_lines(crash)["fatal"]
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    assert result["fatal"]["line"] == expected["line"]
    assert result["fatal"]["line_number"] == len(head) + 3 + expected["line_number"]
    assert result["log_lines_read"] == len(head) + 3 + len(crash)


def test_the_last_metrics_line_of_a_skipped_chunk_is_read_wherever_it_is():
    head = [VLLM + "Initializing a V1 LLM engine (v0.23.0) with config: model='m', speculative_config="
            "SpeculativeConfig(method='mtp', model='m', num_spec_tokens=2)"] + corpus_text(
        "vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    metrics = corpus_text("vllm-gb10-mtp2-spec-decoding-metrics.log")[1][0]
    second = metrics.replace("Mean acceptance length: 3.00", "Mean acceptance length: 2.41")
    scanner = log_scanner.LogScanner()
    log_reading.feed_bytes(scanner, ("\n".join(head) + "\n").encode("utf-8"))
    # A chunk that is one metrics line (at its first byte), then one with two: the last one counts.
    log_reading.feed_bytes(scanner, (metrics + "\n").encode("utf-8"))
    assert scanner.result()["observed"]["mean_acceptance_length"] == 3.0
    log_reading.feed_bytes(scanner, ("\n".join([REQUEST.strip(), second, REQUEST.strip(), metrics, REQUEST.strip()])
                                     + "\n").encode("utf-8"))
    assert scanner.result()["observed"]["mean_acceptance_length"] == 3.0
    log_reading.feed_bytes(scanner, ("\n".join([metrics, second]) + "\n").encode("utf-8"))
    assert scanner.result()["observed"]["mean_acceptance_length"] == 2.41
    # In a range of a larger buffer, a metrics line outside the range is not this chunk's.
    chunk = (REQUEST.strip() + "\n").encode("utf-8")
    buf = bytearray((metrics + "\n").encode("utf-8") + chunk + (metrics + "\n").encode("utf-8"))
    log_reading.feed_bytes(scanner, buf, len(buf) - len(metrics) - 1, len(metrics) + 1)
    assert scanner.result()["observed"]["mean_acceptance_length"] == 2.41


# --- what is decoded, what is only counted -------------------------------------------------------
# The scan keeps grep speed because, once the start-up is over and nothing is pending, lines are only
# counted and searched for the fatal needles: these tests count the lines decoded and read one by one
# (LogScanner.feed), which an always-line-by-line scan would give the same results with, far slower.
@pytest.fixture
def fed(monkeypatch):
    """The lines LogScanner.feed was given, in order."""
    lines = []
    real = log_scanner.LogScanner.feed

    def counting(self, raw):
        lines.append(raw)
        return real(self, raw)

    monkeypatch.setattr(log_scanner.LogScanner, "feed", counting)
    return lines


def _ok_head():
    with open(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), encoding="utf-8") as handle:
        return handle.read().splitlines()


@pytest.mark.parametrize("parallel", [False, True])
def test_after_readiness_healthy_lines_are_counted_not_read(tmp_path, monkeypatch, fed, parallel):
    monkeypatch.setattr(log_reading, "PARALLEL_MIN_BYTES", 1)
    head = _ok_head()
    path = tmp_path / "ok.log"
    path.write_text("\n".join(head + [STATS.strip(), REQUEST.strip()] * 2000) + "\n", encoding="utf-8")
    result = log_reading.scan_file(str(path), chunk_size=64 * 1024, parallel=parallel)
    assert result["ready"] and result["fatal"] is None and result["log_lines_read"] == len(head) + 4000
    assert len(fed) <= len(head), len(fed)  # not one of the 4000 lines after readiness


def test_after_a_root_cause_and_its_context_the_rest_is_counted_not_read(tmp_path, fed):
    # the GB10 field report's bad nightly: ready, then a CUDA illegal memory access; the API server logs on after it
    with open(fixture("vllm-0.19-mtp-illegal-memory-access.log"), encoding="utf-8") as handle:
        crash = handle.read().splitlines()
    path = tmp_path / "crash.log"
    path.write_text("\n".join(crash + [REQUEST.strip()] * 1000) + "\n", encoding="utf-8")
    result = log_reading.scan_file(str(path), chunk_size=4096, parallel=False)
    read = len(fed)
    after = [REQUEST.strip()] * 1000
    assert result["fatal"] == log_reading.scan_lines(crash + after)["fatal"] and result["log_lines_read"] == len(crash) + 1000
    assert result["fatal"]["kind"] == "cuda_illegal_memory_access"
    # read up to the fatal and its context after it; the 300-line look-ahead is for consequences only
    assert read <= result["fatal"]["line_number"] + log_scanner.CONTEXT_AFTER + 1, read


def test_a_large_remainder_goes_to_forked_workers_only_when_asked_and_possible(tmp_path, monkeypatch):
    monkeypatch.setattr(log_reading, "PARALLEL_MIN_BYTES", 1)
    calls = []
    real = log_reading.count_parallel

    def recording(path, start, stop, workers, needles=log_patterns.FATAL_NEEDLES):
        calls.append(workers)
        return real(path, start, stop, workers, needles)

    monkeypatch.setattr(log_reading, "count_parallel", recording)
    path = tmp_path / "ok.log"
    path.write_text("\n".join(_ok_head() + [REQUEST.strip()] * 500) + "\n", encoding="utf-8")
    expected = log_reading.scan_file(str(path), chunk_size=4096, parallel=False)
    assert calls == []  # parallel=False: one process
    monkeypatch.setattr(log_reading.os, "cpu_count", lambda: 2)
    assert log_reading.scan_file(str(path), chunk_size=4096) == expected and calls == [2]
    monkeypatch.setattr(log_reading.os, "cpu_count", lambda: None)  # unknown: one process
    assert log_reading.scan_file(str(path), chunk_size=4096) == expected and calls == [2]
    # a client's prompt with a fatal needle in the remainder: the workers count once, then the scan
    # reads on line by line (counting the rest again at every chunk would be quadratic)
    monkeypatch.setattr(log_reading.os, "cpu_count", lambda: 2)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(VLLM + "Received request chatcmpl-1: prompt: 'what does Traceback (most recent call last) mean?'\n")
        handle.write("\n".join([REQUEST.strip()] * 500) + "\n")
    expected = log_reading.scan_file(str(path), chunk_size=4096, parallel=False)
    del calls[:]
    assert log_reading.scan_file(str(path), chunk_size=4096) == expected and calls == [2]
    assert expected["fatal"] is None and expected["log_lines_read"] == len(_ok_head()) + 1001


# --- bytes that are not UTF-8, wherever they are read ----------------------------------------------
def test_invalid_utf8_is_read_with_replacement_characters_wherever_it_is(tmp_path):
    head = [line.encode("utf-8") for line in _ok_head()[:5]]  # a start, before readiness: read line by line
    bad = b"\xff\xfe"
    oom = (ERR + "torch.OutOfMemoryError: CUDA out of memory ").encode("utf-8") + bad
    # longer than the buffer grows to (it doubles while not over LINE_CAP): read as its first LINE_CAP bytes
    long_line = (VLLM + "prompt: ").encode("utf-8") + bad + b"z" * (3 * log_records.LINE_CAP)
    path = tmp_path / "bytes.log"
    # a short line, a line longer than the buffer, and the last line, without its newline
    path.write_bytes(b"\n".join(head + [b"INFO " + bad, long_line, oom]))
    result = log_reading.scan_file(str(path), chunk_size=4096)
    assert result["fatal"]["kind"] == "out_of_memory" and result["fatal"]["line"].endswith("\ufffd\ufffd")
    assert result["fatal"]["context"][-3] == "INFO \ufffd\ufffd"
    assert result["fatal"]["context"][-2].startswith(VLLM + "prompt: \ufffd\ufffdzzz")
    assert result["log_lines_read"] == len(head) + 3 and result["long_lines"] == 1
    path.write_bytes(b"\n".join(head + [long_line]))  # the long line is the last one
    result = log_reading.scan_file(str(path), chunk_size=4096)
    assert result["log_lines_read"] == len(head) + 1 and result["long_lines"] == 1
    # a start-up phase read from bytes
    tracker = startup_phases.StartupPhases("vllm")
    tracker.feed_bytes(b"\n".join(head + [b"\xff" + head[0]]) + b"\n")
    assert tracker.lines == len(head) + 1


def test_a_skipped_metrics_line_with_invalid_utf8_is_still_read():
    head = [VLLM + "Initializing a V1 LLM engine (v0.23.0) with config: model='m', speculative_config="
            "SpeculativeConfig(method='mtp', model='m', num_spec_tokens=2)"] + corpus_text(
        "vllm-0.2x-routes-ready-no-uvicorn.log")[1]
    metrics = corpus_text("vllm-gb10-mtp2-spec-decoding-metrics.log")[1][0].encode("utf-8")
    metrics = metrics.replace(b"Mean acceptance length: 3.00", b"Mean acceptance length: 2.41") + b" \xff"
    scanner = log_scanner.LogScanner()
    log_reading.feed_bytes(scanner, ("\n".join(head) + "\n").encode("utf-8"))
    log_reading.feed_bytes(scanner, REQUEST.encode() + metrics + b"\n" + REQUEST.encode())
    assert scanner.result()["observed"]["mean_acceptance_length"] == 2.41


@pytest.mark.parametrize("length", [3 * log_records.LINE_CAP, 10 * log_records.LINE_CAP, 10 * log_records.LINE_CAP - 1])
def test_lines_after_a_line_longer_than_the_buffer_are_read_whole(tmp_path, length):
    # the buffer grows to 128 KiB; the rest of a longer line is skipped over as many reads as it takes,
    # and the next line, from its first byte, is read as usual (here a start-up failure)
    head = [line.encode("utf-8") for line in _ok_head()[:5]]
    long_line = (VLLM + "prompt: ").encode("utf-8") + b"z" * (length - len(VLLM) - 8)
    oom = (ERR + "torch.OutOfMemoryError: CUDA out of memory.").encode("utf-8")
    path = tmp_path / "long.log"
    path.write_bytes(b"\n".join(head + [long_line, oom]) + b"\n")
    result = log_reading.scan_file(str(path), chunk_size=4096)
    assert result["fatal"]["kind"] == "out_of_memory" and result["fatal"]["line"] == oom.decode()
    assert result["fatal"]["line_number"] == len(head) + 2 and result["log_lines_read"] == len(head) + 2
    assert result["fatal"]["context"][-2] == log_records.show((VLLM + "prompt: ") + "z" * (log_records.LINE_CAP - len(VLLM) - 8))


# --- a stream's skipped tails: whole lines, at most TAIL_BYTES, forgotten after an untold range ----------
def test_long_lines_before_a_fatal_in_a_stream_are_its_context_whole():
    # Logged requests of ~6 KB each (SGLang --log-requests): the last ten lines before the fatal fill most
    # of TAIL_BYTES, so the tail of the skipped chunks is the fatal's whole context, and a tail cut
    # inside a line would show in it.
    with open(fixture("sglang-0.5.9-g7e-fp8-ok.log"), encoding="utf-8") as handle:
        head = handle.read().splitlines()
    requests = [SGL + "Receive: obj=GenerateReqInput(rid='%04d', text='%s')" % (i, ("%04d " % i) * 1200)
                for i in range(40)]
    fatal = "[2026-03-14 12:00:40] Received sigquit from a child process. It usually means the child failed."
    lines = head + requests + [fatal]
    expected = log_reading.scan_lines(lines)
    assert expected["fatal"]["line"] == fatal and expected["fatal"]["context"][0] == log_records.show(requests[-10])
    data = ("\n".join(lines) + "\n").encode("utf-8")
    for sizes in ((len(data) - len(fatal) - 1,), (30 * 1024,), (100 * 1024,), (7000,)):
        scanner = log_scanner.LogScanner()
        for begin, end in cuts_at_lines(data, sizes):
            log_reading.feed_bytes(scanner, data[begin:end])
        assert scanner.result() == expected, sizes


def test_a_range_counted_elsewhere_forgets_the_tail_before_it():
    head = _ok_head()
    scanner = log_scanner.LogScanner()
    log_reading.feed_bytes(scanner, ("\n".join(head) + "\n").encode("utf-8"))
    log_reading.feed_bytes(scanner, (REQUEST * 3).encode())
    scanner.skip(1000)  # counted by workers: the lines just before the fatal are unknown
    scanner.feed(ERR + "torch.OutOfMemoryError: CUDA out of memory.")
    result = scanner.result()
    assert result["fatal"]["line_number"] == len(head) + 3 + 1000 + 1
    assert result["fatal"]["context"] == [ERR + "torch.OutOfMemoryError: CUDA out of memory."]
