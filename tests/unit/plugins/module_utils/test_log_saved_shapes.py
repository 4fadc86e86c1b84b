# SPDX-License-Identifier: GPL-3.0-or-later
"""Logs as operators save them (issue 26): every log is judged as the clean log it holds.

``docker logs -t`` puts an RFC3339Nano timestamp and a space before each line, ``docker compose logs``
the service's ``name-1  | ``, journald ``Mon DD hh:mm:ss host ident[pid]: ``, a log collector's export
a date and `` | ``; a line the engine printed empty keeps its prefix. Each transformation is applied
to every log of the real corpus (fixtures/real_logs, sources in each file's header) and of the composed
fixtures (fixtures/logs): the result must be the clean log's. The corpus also holds one file of each
shape as saved (index.yml), and excerpts that start mid-traceback.
"""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _log_reading as log_reading

from log_corpus import FIXTURES, corpus_index, corpus_text, fixture, hostile_lines  # this directory

SHAPES = {
    "docker-logs-t": lambda i, line: "2026-12-01T12:%02d:%02d.%09dZ %s" % (
        i // 60 % 60, i % 60, i * 7919 % 10 ** 9, line),
    "compose": lambda i, line: "vllm-gb10-1  | " + line,
    "journald": lambda i, line: "Dec  1 12:%02d:%02d spark-01 vllm-nemotron[812]: %s" % (i // 60 % 60, i % 60, line),
    "collector": lambda i, line: "2026-12-01 12:%02d:%02d.%03d | %s" % (i // 60 % 60, i % 60, i % 1000, line),
    # compose's own timestamps (docker compose logs -t) in front of what docker logs -t would print
    "compose-t": lambda i, line: "vllm-gb10-1  | 2026-12-01T12:00:%02d.000000001Z %s" % (i % 60, line),
}


def _logs():
    logs = [("real_logs/" + entry["file"], corpus_text(entry["file"])[1]) for entry in corpus_index()]
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".log"):
            with open(fixture(name), encoding="utf-8") as handle:
                logs.append(("logs/" + name, handle.read().splitlines()))
    return logs


LOGS = _logs()


def judged(result):
    """What backend_assert decides from a result: values, which keys have proof, the fatal and its place."""
    fatal = result["fatal"]
    observed = dict(result["observed"])
    warnings = observed.pop("warnings")
    return {"observed": observed, "warnings": len(warnings), "evidence": sorted(result["evidence"]),
            "fatal": fatal and (fatal["kind"], fatal["line_number"], len(fatal["context"])),
            "ready": result["ready"], "lines": result["log_lines_read"], "conflicts": sorted(result["conflicts"]),
            "long_lines": result["long_lines"]}


def _scan(tmp_path, lines, chunk_size=1 << 20):
    path = tmp_path / "saved.log"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return log_reading.scan_file(str(path), chunk_size=chunk_size)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name, lines", LOGS, ids=[name for name, dummy in LOGS])
def test_a_saved_log_is_judged_as_the_clean_log(tmp_path, shape, name, lines):
    clean = judged(_scan(tmp_path, lines))
    saved = [SHAPES[shape](i, line) for i, line in enumerate(lines)]
    assert judged(_scan(tmp_path, saved)) == clean
    assert judged(log_reading.scan_lines(saved)) == clean


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_clients_decide_no_fatal_in_any_saved_shape(tmp_path, shape):
    with open(fixture("vllm-0.19-gb10-nvfp4-mtp-ok.log"), encoding="utf-8") as handle:
        healthy = handle.read().splitlines()
    lines = healthy + hostile_lines() + healthy[-3:]
    saved = [SHAPES[shape](i, line) for i, line in enumerate(lines)]
    for chunk_size in (4096, 1 << 20):
        result = _scan(tmp_path, saved * 50, chunk_size)
        assert result["fatal"] is None, result["fatal"]
        assert result["ready"]


# A C++ abort as PyTorch prints it (c10's terminate handler), real text from
# https://github.com/huggingface/accelerate/pull/613 (description by muellerzr): a paste that starts at
# its "what():" line, without the "terminate called ..." line, is a fatal to any reader.
CPP_ABORT = [
    "  what():  CUDA error: device-side assert triggered",
    "CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "Exception raised from create_event_internal at ../c10/cuda/CUDACachingAllocator.cpp:1387 (most recent call "
    "first):",
]


@pytest.mark.parametrize("tag", ["", "(EngineCore pid=97) ", "(Worker_TP1 pid=301) "])
def test_a_cpp_abort_pasted_from_its_what_line_is_a_fatal(tag):
    result = log_reading.scan_lines([tag + line for line in CPP_ABORT])
    assert (result["fatal"]["kind"], result["fatal"]["line_number"]) == ("cuda_error", 1)
