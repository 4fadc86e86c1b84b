# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Accumulate what one engine start printed: ``LogScanner``, fed log lines one by one.

For each line: parse its record structure (``_log_records``), follow its stream's traceback, match
the message against the table entries of its scope (``_log_patterns``), accumulate ``observed``
(first evidence of the highest priority wins; a later one of the same weight that disagrees is a
conflict), and record the first fatal signature with 20 lines of context. Once the server is ready
the reader (``_log_reading``) may only count lines (``skip``) and replay their tail later.
"""
from __future__ import annotations

from collections import deque

from ._log_patterns import (
    AFTER,
    API_SERVER_EXC,
    BY_SCOPE,
    CONSEQUENCE,
    ENGINE_FATAL_NEEDLES,
    EXC,
    FATAL_NEEDLES,
    OBSERVED_KEYS,
    RECORD_SCOPE,
    RESOLVED,
    ROOT_CAUSE,
    SGLANG_MARKERS,
    USAGE,
    UVICORN_SCOPE,
    VLLM_MARKERS,
)
from ._log_records import (
    ENGINES,
    LINE_CAP,
    OPEN_STATES,
    RAW,
    RECORD,
    UVICORN,
    clean_line,
    follow_traceback,
    is_api_server,
    parse_line,
    show,
)

CONTEXT_BEFORE = 10
CONTEXT_AFTER = 9  # + the fatal line itself = 20 lines of context
MAX_WARNINGS = 50
# A consequence signature (engine_dead) is followed by the root cause within a traceback or
# two; keep looking this many lines for it before settling for the consequence.
ROOT_CAUSE_LOOKAHEAD = 300

# A raw tail kept from a chunk that was only counted: replayed for the traceback structure.
TAIL_BYTES = 64 * 1024
# A traceback still waiting for its exception line after this many lines is not waited for.
TRACEBACK_SPAN = 2000


class LogScanner(object):
    """Accumulates what one engine start printed. Feed it lines; read ``result()``."""

    def __init__(self, engine="auto"):
        self.engine_option = engine
        self.engine = engine if engine in ENGINES else None  # the pattern set in use
        self.detected = None  # the engine the log itself shows
        self.values = {}
        self.evidence = {}
        self.priority = {}
        self.conflicts = {}
        self.warnings = []
        self.ready = False
        self.ready_line = None
        self.api_server_line = None
        self.fatal = None
        self.fatal_tier = None
        self.fatal_after = 0  # lines still to append to the fatal's context
        self.lookahead = 0  # lines left to look for a root cause after a consequence
        self.lines = 0
        self.long_lines = 0
        self.context = deque(maxlen=CONTEXT_BEFORE)
        self.blocks = {}  # process tag -> [traceback state, record header it belongs to, line it opened at]
        self.pending_tail = None  # raw bytes (whole lines, at most TAIL_BYTES) of the last counted-only lines
        self.skipped = 0  # lines counted since the last one read (fed or replayed)
        self.replay_back = 0  # while replaying that tail: how many counted lines follow the current one
        self.drafter_tags = set()
        self.quantized_moe_seen = False
        self.unquantized_moe = []

    # -- recording ------------------------------------------------------------------------------
    def observe(self, key, value, line, priority):
        if value is None:
            return
        old = self.priority.get(key)
        if old is not None and old > priority:
            return
        if old == priority:
            if key.endswith("_backend") and priority >= RESOLVED and value != self.values[key]:
                seen = self.conflicts.setdefault(key, [])
                if value not in [c["value"] for c in seen] and len(seen) < 5:
                    seen.append({"value": value, "line": show(line)})
                    self.warn("conflicting evidence for %s: %s, then %s in: %s" % (
                        key, self.values[key], value, show(line)))
            return  # the first evidence of the highest priority stays the value
        self.values[key] = value
        self.evidence[key] = show(line)
        self.priority[key] = priority

    def latest(self, key, value, line):
        """Record a running measurement (LATEST_KEYS, never observe()d): the last line wins."""
        self.values[key] = value
        self.evidence[key] = show(line)

    def warn(self, text):
        if text not in self.warnings and len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)

    def set_ready(self, line):
        if not self.ready:
            self.ready = True
            self.ready_line = show(line)

    def in_drafter(self, tag):
        return tag in self.drafter_tags or (tag == "" and bool(self.drafter_tags))

    @property
    def fatal_needles(self):
        """The byte needles that a line starting a fatal of this log's engine contains (FATAL_NEEDLES)."""
        return ENGINE_FATAL_NEEDLES.get(self.engine, FATAL_NEEDLES)

    @property
    def speculating(self):
        return self.values.get("speculative_method") not in (None, "none") or "mean_acceptance_length" in self.values

    def set_fatal(self, kind, line, tier, startup_only):
        if startup_only and self.ready:
            return  # a ValueError after start-up is a request error, not a configuration error
        if self.fatal is not None and (tier >= self.fatal_tier or self.fatal_tier == ROOT_CAUSE or self.done):
            return  # the first fatal is the headline (a root cause close after a consequence replaces it)
        line = show(line)
        self.fatal = {"kind": kind, "line": line, "line_number": self.lines - self.replay_back,
                      "context": list(self.context) + [line]}
        self.fatal_tier = tier
        self.fatal_after = CONTEXT_AFTER
        self.lookahead = ROOT_CAUSE_LOOKAHEAD if tier == CONSEQUENCE else 0

    # -- state ------------------------------------------------------------------------------------
    @property
    def done(self):
        """True once a root cause (or a consequence with no root cause nearby) has its context."""
        return self.fatal is not None and self.fatal_after <= 0 and self.lookahead <= 0

    @property
    def in_traceback(self):
        """True while a traceback opened in the last TRACEBACK_SPAN lines waits for its exception line."""
        return any(block[0] in OPEN_STATES and self.lines - block[2] < TRACEBACK_SPAN
                   for block in self.blocks.values())

    @property
    def wants_every_line(self):
        """False once the start-up is over and nothing is pending: only fatal needles matter then."""
        return not self.ready or (self.fatal is not None and not self.done) or self.in_traceback

    # -- input ------------------------------------------------------------------------------------
    def feed(self, raw):
        """Process one log line (str, without its newline)."""
        self.lines += 1
        if len(raw) > LINE_CAP:
            self.long_lines += 1
            if self.long_lines == 1:
                self.warn("log line %d is longer than %d characters: such lines are cut to that length "
                          "before they are read" % (self.lines, LINE_CAP))
            raw = raw[:LINE_CAP]
        self._line(clean_line(raw))

    def _line(self, line):
        if self.fatal is not None and not self.done:
            if self.fatal_after > 0:
                self.fatal["context"].append(show(line))
                self.fatal_after -= 1
            if self.lookahead > 0:
                self.lookahead -= 1
        if line:
            self._match(line)
        self.context.append(show(line))

    def skip(self, count, tail=b""):
        """Account for ``count`` lines not fed one by one; ``tail`` are the raw bytes they end with.

        Consecutive skips add up: a container's stream comes a few lines a chunk, and the context of a
        fatal in the next chunk is the last lines before it, not only the last chunk's. Without a tail
        (a range counted elsewhere), or when the tail had to be cut (TAIL_BYTES), the lines read before
        are no longer the ones just before what follows: a fatal's context then starts with the tail.
        """
        self.lines += count
        self.skipped += count
        tail = (self.pending_tail or b"") + tail if tail else b""
        if len(tail) > TAIL_BYTES:  # whole lines only (a tail ends with its newline)
            tail = tail[tail.find(b"\n", len(tail) - TAIL_BYTES - 1) + 1:]
        if tail.count(b"\n") < self.skipped:
            self.context.clear()  # lines the tail lacks lie between them and the tail
        self.pending_tail = tail or None

    def replay_tail(self):
        """Before feeding lines after a skip: read the last skipped lines (already counted) after all.

        They give the context and the traceback state, and a fatal without a needle of its own
        close before the chunk that has one (a C++ abort's "what():" before vLLM's "died unexpectedly").
        """
        tail, self.pending_tail, self.skipped = self.pending_tail, None, 0
        if not tail:
            return
        lines = tail.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for index, raw in enumerate(lines):
            self.replay_back = len(lines) - index - 1
            self._line(clean_line(raw[:LINE_CAP]))
        self.replay_back = 0

    def observe_line(self, raw):
        """Match one engine record found in a counted-only chunk (a metrics line), without counting it and
        without following its stream's traceback state: the lines before it in the chunk are read after it
        (replay_tail), if at all, and must find the state they left."""
        line = clean_line(raw[:LINE_CAP])
        if line:
            msg, tag, kind = parse_line(line)[:3]
            if kind == RECORD:
                self._run(BY_SCOPE[AFTER], msg, line, tag)

    def _run(self, entries, text, line, tag):
        engine = self.engine
        for dummy, pat_engine, dummy2, needle, rx, handler, is_fatal in entries:
            if pat_engine is not None and engine is not None and pat_engine != engine:
                continue
            if needle not in text:
                continue
            m = rx.search(text)
            if m:
                handler(self, m, line, tag)
                if is_fatal:
                    return True
        return False

    def _match(self, line):
        msg, tag, kind, engine, level, source, outer = parse_line(line)
        if kind == RECORD and self.detected is None:
            self._detect(msg, engine, line)
        # A bare exception line (an excerpt cut above its traceback) counts before readiness: no client has
        # written anything yet. After it, a crash brings its traceback, a dead-engine record or the
        # container's exit (the needles after readiness: a bare line alone would not be read).
        exception, continued, earlier = follow_traceback(self.blocks, self.lines, outer, msg, kind, engine, level,
                                                         source, bare=not self.ready)
        if exception is not None:
            if not (self.ready and is_api_server(outer)):
                self._run(BY_SCOPE[EXC], exception, line, tag)
            elif not earlier:
                # After readiness the API server's exceptions are its requests' (whatever words they
                # quote), but for the ones it raises itself; after a first exception line the record's
                # message is the client's to write, so only that first line can say so.
                self._run(API_SERVER_EXC, exception, line, tag)
        if kind == RECORD:
            if not self.ready:
                self._run(BY_SCOPE[RECORD_SCOPE], msg, line, tag)
            if not continued:  # a line of a traceback record's message is not a record of its own
                self._run(BY_SCOPE[AFTER], msg, line, tag)
        elif kind == UVICORN:
            if not self.ready:
                self._run(BY_SCOPE[UVICORN_SCOPE], msg, line, tag)
        elif kind == RAW and exception is None and not self.ready:
            self._run(BY_SCOPE[USAGE], msg, line, tag)

    def _detect(self, msg, engine, line):
        if engine == "vllm" or any(marker in msg for marker in VLLM_MARKERS):
            self.detected = "vllm"
        elif engine == "sglang" or any(marker in msg for marker in SGLANG_MARKERS):
            self.detected = "sglang"
        else:
            return
        if self.engine is None:
            self.engine = self.detected
        self.evidence["engine"] = line[:300]

    # -- output -----------------------------------------------------------------------------------
    def result(self):
        values = dict(self.values)
        evidence = dict(self.evidence)
        for backend, line, after_drafter in self.unquantized_moe:
            key = "draft_moe_backend" if after_drafter or self.quantized_moe_seen else "moe_backend"
            if key not in values:
                values[key] = backend
                evidence[key] = show(line)
        if self.detected:
            values["engine"] = self.detected
        values["ready"] = self.ready
        if self.ready_line:
            evidence["ready"] = self.ready_line
        values["warnings"] = list(self.warnings)
        observed = dict((k, values[k]) for k in OBSERVED_KEYS if k in values)
        return {
            "observed": observed,
            "evidence": dict((k, evidence[k]) for k in OBSERVED_KEYS if k in evidence),
            "fatal": self.fatal,
            "ready": self.ready,
            "log_lines_read": self.lines,
            "conflicts": dict((k, list(v)) for k, v in self.conflicts.items()),
            "long_lines": self.long_lines,
        }
