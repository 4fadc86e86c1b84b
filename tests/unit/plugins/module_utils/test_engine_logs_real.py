# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine log reading on real logs as operators save them (tests/unit/fixtures/real_logs, each
naming its source) and on an attacker's lines: clients that write every fatal signature, a
conflicting backend line, a fatal after 100 MB of healthy lines. Split from test_engine_logs.py."""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_records as log_records
from ansible_collections.inferops.serving.plugins.module_utils import _log_scanner as log_scanner
from ansible_collections.inferops.serving.plugins.module_utils import _log_reading as log_reading
from ansible_collections.inferops.serving.plugins.module_utils import _log_verdict as log_verdict

from log_corpus import (  # this directory
    CORPUS_HEADER,
    REAL,
    VLLM,
    corpus_index,
    corpus_text,
    cuts_at_lines,
    fixture,
    hostile_lines,
    write_filler,
)


# --- the real-log corpus --------------------------------------------------------------------------------
def test_corpus_is_complete_and_says_where_each_log_comes_from():
    entries = corpus_index()
    names = sorted(name for name in os.listdir(REAL) if name.endswith(".log"))
    assert sorted(e["file"] for e in entries) == names
    assert len(names) >= 25
    assert set(e["engine"] for e in entries) == {"vllm", "sglang"}
    assert any(e["fatal"] for e in entries) and any(e["ready"] for e in entries)
    for name in names:
        header, lines = corpus_text(name)
        fields = [h[len(CORPUS_HEADER):].strip().split(":", 1)[0] for h in header]
        assert fields == ["source", "engine", "excerpt"], name
        assert lines, name


@pytest.mark.parametrize("entry", corpus_index(), ids=lambda e: e["file"])
def test_real_log(entry, tmp_path):
    """backend_assert's reading (scan_file, the module's path) on each real log, as the index says."""
    _header, lines = corpus_text(entry["file"])
    path = tmp_path / entry["file"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = log_reading.scan_file(str(path))
    assert result == log_reading.scan_lines(lines)
    for key, value in entry["observed"].items():
        assert result["observed"].get(key) == value, key
        assert key in result["evidence"], key
    for key in entry.get("absent", []):
        assert key not in result["observed"], key
    fatal = result["fatal"]
    if entry["fatal"] is None:
        assert fatal is None, fatal
    else:
        assert (fatal["kind"], fatal["line_number"]) == (entry["fatal"]["kind"], entry["fatal"]["line_number"])
        assert fatal["line"] == log_records.clean_line(lines[fatal["line_number"] - 1])
    assert result["ready"] is entry["ready"]
    assert result["log_lines_read"] == len(lines)


# --- adversarial input ------------------------------------------------------------------------------------
GB10_EXPECT = {"moe_backend": "MARLIN", "draft_moe_backend": "TRITON", "linear_backend": "MARLIN",
               "attention_backend": "TRITON_ATTN", "speculative_method": "mtp", "num_speculative_tokens": 2,
               "kv_cache_dtype": "fp8", "ready": True}


def test_a_healthy_engine_whose_clients_write_every_fatal_signature_is_proven_healthy(tmp_path):
    with open(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), encoding="utf-8") as handle:
        healthy = handle.read().split("\n")
    lines = healthy + hostile_lines() + healthy[-3:]
    for result in (log_reading.scan_lines(lines), log_reading.scan_lines(hostile_lines() + healthy)):
        assert result["fatal"] is None, result["fatal"]
        assert log_verdict.compare_expect(GB10_EXPECT, result) == []
    path = tmp_path / "hostile.log"
    path.write_text("\n".join(lines * 200), encoding="utf-8")  # the counted-only path too
    for chunk_size in (512, 4096, 65536):
        assert log_reading.scan_file(str(path), chunk_size=chunk_size)["fatal"] is None, chunk_size
    # And as a container's stream, a few lines a chunk: the skipped lines before a needle are read again
    # (replay_tail) in the state they left, even when a metrics line after them was read first.
    data = path.read_bytes() + b"\n"
    for sizes in ((300,), (4096, 100, 20000)):
        scanner = log_scanner.LogScanner()
        for begin, end in cuts_at_lines(data, sizes):
            log_reading.feed_bytes(scanner, data[begin:end])
        assert scanner.result()["fatal"] is None, sizes


def test_evidence_only_from_engine_records():
    # A pasted, echoed or requested line supplies no evidence and overrides none.
    result = log_reading.scan_lines([
        VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: []",
        "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: []",
        "(APIServer pid=1) INFO:     Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: []",
        "(APIServer pid=1) INFO 06-09 10:09:02 [logger.py:41] Received request x: prompt: \"Using "
        "AttentionBackendEnum.FLASH_ATTN backend.\"",
        "2026-07-25 13:42:38,525 - INFO - x.py:1 - Using AttentionBackendEnum.FLASH_ATTN backend.",
    ])
    assert result["observed"]["moe_backend"] == "MARLIN"
    assert "attention_backend" not in result["observed"]
    assert result["conflicts"] == {}


def test_a_later_conflicting_backend_line_is_a_mismatch():
    lines = [VLLM + "Using 'MARLIN' NvFp4 MoE backend out of potential backends: []",
             VLLM + "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: []"]
    result = log_reading.scan_lines(lines)
    assert result["observed"]["moe_backend"] == "MARLIN"
    mismatch, = log_verdict.compare_expect({"moe_backend": "MARLIN"}, result)
    assert mismatch == {"key": "moe_backend", "expected": "MARLIN", "observed": "FLASHINFER_CUTLASS",
                        "evidence": lines[1], "conflict": True}
    assert log_verdict.describe_mismatch(mismatch, "vllm") == (
        "moe_backend: expected MARLIN, but a later log line says FLASHINFER_CUTLASS: %s" % lines[1])
    assert any("conflicting evidence for moe_backend: MARLIN, then FLASHINFER_CUTLASS" in w
               for w in result["observed"]["warnings"])
    # the same line again (TP workers) is no conflict
    assert log_reading.scan_lines([lines[0], lines[0].replace("pid=9", "pid=10")])["conflicts"] == {}


@pytest.mark.parametrize("engine, start, filler, crash, kind", [
    # a real healthy metrics line repeated, then a real worker crash (its records)
    ("vllm", "vllm-0.2x-routes-ready-no-uvicorn.log", "vllm-gb10-mtp2-spec-decoding-metrics.log",
     "vllm-0.25-windows-illegal-memory-access.log", "cuda_illegal_memory_access"),
    # a real decode line repeated, then a real headerless scheduler OOM traceback and its sigquit
    ("sglang", None, "sglang-decode-and-access-lines.log", "sglang-0.5-oom-traceback-sigquit.log",
     "out_of_memory"),
])
def test_a_fatal_after_100_mb_of_healthy_lines_is_found(tmp_path, engine, start, filler, crash, kind):
    import time
    if start:
        head = corpus_text(start)[1]
    else:
        with open(fixture("sglang-0.5.9-g7e-fp8-ok.log"), encoding="utf-8") as handle:
            head = handle.read().splitlines()
    filler_line = corpus_text(filler)[1][0]
    tail = corpus_text(crash)[1]
    path = str(tmp_path / "big.log")
    before = write_filler(path, head, filler_line, 100 << 20, tail)
    began = time.time()
    result = log_reading.scan_file(path)
    assert time.time() - began < 10
    assert result["ready"]
    assert result["fatal"]["kind"] == kind
    expected = log_reading.scan_lines(tail)["fatal"]
    assert result["fatal"]["line"] == expected["line"]
    assert result["fatal"]["line_number"] == before + expected["line_number"]
    assert result["log_lines_read"] == before + len(tail)
