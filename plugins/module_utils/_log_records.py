# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The structure of a vLLM / SGLang log line: its prefixes, its record header, its traceback.

A line is stripped of its prefixes (ANSI colour, compose ``name-1  |``, ``docker logs -t`` and
journald timestamps, a log collector's ``<date> |``, vLLM ``(EngineCore pid=N)`` process tags), its
record header parsed (vLLM
``INFO MM-DD hh:mm:ss [file.py:N]``, SGLang ``[YYYY-MM-DD hh:mm:ss TP0]``), and told an engine
record from a uvicorn line, a library's line or a headerless one. ``follow_traceback`` follows
each stream's Python traceback / C++ abort structure and returns the exception text at its place.
What a message means is the pattern table's job (``_log_patterns``).
"""
from __future__ import annotations

import re

ENGINES = ("vllm", "sglang")

# ---------------------------------------------------------------------------------------------
# Line prefixes and record headers
# ---------------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\^\[\[[0-9;]*m")  # the escape itself, or pasted as "^[[0;36m"
# The prefixes a saved log puts in front of what the engine printed, as many as are stacked: each
# may end the line (an empty engine line under a prefix, trailing space stripped).
_OUTER_PREFIX = re.compile(
    r"""^(?:
        [\w.\-]+\s+\|(?:\s|$)                                                 # compose: "name-1  | "
      | \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?(?:\s|$)    # docker logs -t (RFC3339Nano)
      | \d{4}-\d\d-\d\d(?:[T\s]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\s?(?:Z|UTC|[+-]\d\d:?\d\d))?)?\s*\|(?:\s|$)
                                                                             # log collectors: "<date> | "
      | [^\W\d_]{3}\s+\d{1,2}\s\d\d:\d\d:\d\d\s\S+\s[^\s:\[]+(?:\[\d+\])?:(?:\s|$)  # journalctl (any locale)
      | \((?P<tag>[A-Za-z][\w]*)\s+pid=\d+\)\s?                              # vLLM process tag
    )""",
    re.X,
)
# vLLM logger header (0.17-0.33): "INFO 05-01 17:58:16 [nvfp4.py:279] "
_VLLM_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[(?P<src>[^\]]*)\]\s?"
)
# SGLang logger header (0.5.x): "[2026-07-24 08:09:27 TP0] " / "[2026-07-24 08:09:27.123 DP0 TP3] " /
# "[2026-07-24 08:09:27 DP1 ATTN_CP0 MOE_DP1 TP3 EP3] " (0.5.9+ rank names with underscores); a logging
# config with level and source adds "INFO server_args.py:1970: ".
_SGLANG_HEADER = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?P<rank>(?: [A-Z]+(?:_[A-Z]+)*\d+)*)\]\s?"
    r"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+:\d+: )?"
)
# Python logging default format used by libraries (flashinfer): "2026-07-25 13:42:38,525 - INFO - x.py:1 - "
_PYLOG_HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [A-Z]+ - (?:\S+ - )?")
_UVICORN_HEADER = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+")

# What a line is. Only RECORD lines (an engine logger's header) are evidence; UVICORN lines (the
# HTTP server's own lines and its access log, with client-chosen paths) only say "started"; RAW
# lines (no header: tracebacks, C++ aborts, progress bars) count only inside a traceback's structure.
RECORD, UVICORN, LIBRARY, RAW = "record", "uvicorn", "library", "raw"

# Lines longer than this are cut to it before matching (and reported once).
LINE_CAP = 64 * 1024
# Lines returned in a result (fatal line and context, evidence, warnings) are cut to this.
SHOW_CAP = 2000


def show(line):
    """A log line as returned in results: cut to SHOW_CAP characters, saying how much was cut."""
    if len(line) <= SHOW_CAP:
        return line
    return "%s ... [%d more characters]" % (line[:SHOW_CAP], len(line) - SHOW_CAP)


def clean_line(raw):
    """Return ``raw`` without ANSI colour codes and trailing whitespace (the evidence form)."""
    if "\x1b" in raw or "^[[" in raw:
        raw = _ANSI.sub("", raw)
    return raw.rstrip()


def parse_line(line):
    """Split a cleaned log line into ``(message, tag, kind, engine, level, source, outer)``.

    ``tag`` is the process tag (``EngineCore``, ``Worker_TP3``, SGLang ``TP0``...) or ``""``;
    ``outer`` only the tag in front of any header (vLLM's process tag; the stream a traceback is on);
    ``kind`` is RECORD, UVICORN, LIBRARY or RAW; ``engine`` is ``"vllm"``/``"sglang"`` for a record
    of that engine's logger header; ``level`` the record's level when its header has one;
    ``source`` the ``file.py:N`` of a vLLM record.
    """
    tag = ""
    msg = line
    for dummy in range(6):  # collector, journald, compose, docker -t, process tag: stacked
        m = _OUTER_PREFIX.match(msg)
        if not m or not m.group(0):
            break
        if m.group("tag"):
            tag = m.group("tag")
        msg = msg[m.end():]
    outer = tag
    kind, engine, level, source = RAW, None, None, None
    m = _VLLM_HEADER.match(msg)
    if m:
        kind, engine, level, source = RECORD, "vllm", m.group("level"), m.group("src")
        msg = msg[m.end():]
    else:
        m = _SGLANG_HEADER.match(msg)
        if m:
            kind, engine, level = RECORD, "sglang", m.group("level")
            if m.group("rank"):
                tag = m.group("rank").strip()
            msg = msg[m.end():]
        else:
            m = _PYLOG_HEADER.match(msg)
            if m:
                kind = LIBRARY
                msg = msg[m.end():]
    m = _UVICORN_HEADER.match(msg)
    if m and (kind == RAW or engine == "sglang"):
        kind, level = UVICORN, msg[:m.end()].rstrip(": \t")
        msg = msg[m.end():]
    return msg, tag, kind, engine, level, source, outer


def split_prefix(line):
    """Split a cleaned log line into ``(message, tag, header)``; ``header`` is the engine of a record."""
    msg, tag, kind, engine, _level, _source, _outer = parse_line(line)
    return msg, tag, engine if kind == RECORD else None


# ---------------------------------------------------------------------------------------------
# Traceback structure
# ---------------------------------------------------------------------------------------------
# A Python traceback, as both engines print it: "Traceback (most recent call last):" (SGLang:
# "Scheduler hit an exception: Traceback ..."), frame lines and their indented source lines, then
# the exception line at column 0, then the rest of its message. Only that exception line (or a C++
# abort's "what():" line) is exception text; the message lines after it can quote anything.
_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s+File "[^"]*", line \d+, in ')
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s|:?$)")
_WHAT = re.compile(r"^\s*what\(\):\s+(?P<text>.*)")
_TERMINATE = "terminate called after throwing an instance of"
# Traceback states, per stream (the process tag in front of the line).
_NONE, _FRAMES, _AFTER_EXCEPTION, _TERMINATING, _IGNORED = range(5)
# The states of a traceback still waiting for its exception line.
OPEN_STATES = (_FRAMES, _TERMINATING)
# vLLM's API server process tags: "(APIServer pid=1)", with --api-server-count "(ApiServer_0 pid=9)".
_API_SERVER_TAG = re.compile(r"^(?:APIServer|ApiServer_\d+)$")


def is_api_server(outer):
    """Whether the stream ``outer`` (parse_line's) is a vLLM API server process's: requests are served there."""
    return bool(outer) and _API_SERVER_TAG.match(outer) is not None


def follow_traceback(blocks, line_number, outer, msg, kind, engine, level, source, bare=False):
    """Follow the traceback structure of the stream ``outer``: ``(exception text or None, continued, earlier)``.

    ``blocks`` maps a stream (process tag) to ``[state, record header it belongs to, line it opened
    at, exception lines it gave]`` and is updated in place; ``line_number`` is the number of the
    line being read. ``continued`` is True for a line of a vLLM record whose earlier lines (same
    header: vLLM prefixes every line of a multi-line message with it) were a traceback: the line is
    part of that message, not a record of its own. ``earlier`` counts the exception lines the
    block gave before this one: after the first, a message can quote anything, tracebacks too.
    ``bare``: a headerless exception line or C++ ``what():`` line with no traceback (or ``terminate
    called ...``) line before it is exception text too (an excerpt that starts mid-traceback).
    """
    block = blocks.get(outer)
    if kind == UVICORN:
        # uvicorn's tracebacks are about requests ("Exception in ASGI application")
        blocks[outer] = [_IGNORED if "Exception in ASGI application" in msg else _NONE, None, 0, 0]
        return None, False, 0
    continued = False
    if kind == RECORD:
        header = (level, source) if engine == "vllm" else object()  # each SGLang record starts anew
        if block is None or block[1] != header:
            block = blocks[outer] = [_NONE, header, 0, 0]
        else:
            continued = block[0] != _NONE
    elif kind == RAW:
        if block is None:
            block = blocks[outer] = [_NONE, None, 0, 0]
    else:
        return None, False, 0
    text = _exception_text(block, line_number, msg, kind, engine, level, bare)
    earlier = block[3]
    if text is not None:
        block[3] += 1
    return text, continued, earlier


def _exception_text(block, line_number, msg, kind, engine, level, bare):
    """The exception text of one line at its place in ``block``'s traceback (updating its state), or None."""
    state = block[0]
    if state == _IGNORED:
        return None
    if msg == _TRACEBACK or msg.endswith(": " + _TRACEBACK) or (_FRAME.match(msg) and state != _FRAMES):
        block[0], block[2] = _FRAMES, line_number
        return None
    if _FRAME.match(msg):
        return None
    if msg.startswith(_TERMINATE):
        block[0], block[2] = _TERMINATING, line_number
        return None
    if state == _TERMINATING:
        m = _WHAT.match(msg)
        if m:
            block[0] = _AFTER_EXCEPTION
            return m.group("text")
        return None
    if state == _FRAMES:
        if not msg or msg[0].isspace():
            return None  # source lines, ^^^^ markers
        # torch._dynamo wraps the real error: "...BackendCompilerFailed: backend='...' raised:"
        # and, on the next line, the wrapped exception line (e.g. "RuntimeError: CUDA error: ...").
        block[0] = _FRAMES if msg.rstrip().endswith(" raised:") else _AFTER_EXCEPTION
        return msg if _EXCEPTION_LINE.match(msg) else None
    if state == _NONE and kind == RECORD and (engine == "sglang" or level not in ("DEBUG", "INFO")) \
            and _EXCEPTION_LINE.match(msg):
        block[0] = _AFTER_EXCEPTION  # an engine's error record that is an exception line
        return msg
    if state == _NONE and kind == RAW and bare:
        m = _WHAT.match(msg)
        if m or _EXCEPTION_LINE.match(msg):
            block[0] = _AFTER_EXCEPTION
            return m.group("text") if m else msg
    return None
