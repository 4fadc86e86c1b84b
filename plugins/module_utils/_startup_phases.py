# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""How far an engine's start got: the start-up phase of a log (readiness progress).

A phase line is not evidence of what the engine selected, only of how far its start got, so it may
also be a headerless progress bar. The lines that enter a phase are the entries of the one pattern
table (``_log_patterns.PATTERNS``) that carry a phase.
"""
from __future__ import annotations

import re

from ._log_patterns import PATTERNS, PHASE_KINDS
from ._log_records import ENGINES, LINE_CAP, clean_line, parse_line, show

# The phases of a cold start, in order; both engines map onto the same names so budgets can be
# set per phase whatever the engine (SGLang has no separate compile phase in its log).
STARTUP_PHASES = (
    ("process_start", "the container started; no engine start-up line yet"),
    ("engine_init", "engine configuration and distributed init"),
    ("weight_loading", "weight download and loading (a first deploy downloads and processes the checkpoint here)"),
    ("compile", "torch.compile and the profiling run"),
    ("kv_cache", "memory profiling and KV cache allocation"),
    ("cuda_graphs", "CUDA graph capture"),
    ("server_start", "engine warm-up and API server start"),
    ("ready", "the server is ready"),
)
STARTUP_PHASE_NAMES = tuple(name for name, dummy in STARTUP_PHASES)

# The phase entries of the one pattern table: (name, engine, phase, line kinds, needle, regex), in
# table order. The line whose pattern matched last sets the phase.
_PHASE_ENTRIES = [(p.name, p.engine, p.phase, PHASE_KINDS[p.scope], p.needle, re.compile(p.regex))
                  for p in PATTERNS if p.phase is not None]


def phase_of_line(line, engine=None):
    """``(phase, pattern name)`` a cleaned log line marks the start of, or ``(None, None)``.

    ``engine`` (``vllm``/``sglang``) restricts the patterns to that engine's; None tries both.
    A progress bar's carriage-return updates count as their last non-empty state.
    """
    if "\r" in line:
        parts = [part for part in line.split("\r") if part.strip()]
        line = parts[-1] if parts else ""
    msg, dummy, kind, line_engine, dummy3, dummy4, dummy5 = parse_line(line)
    for name, pat_engine, phase, kinds, needle, rx in _PHASE_ENTRIES:
        if (engine in ENGINES and pat_engine != engine) or (line_engine is not None and pat_engine != line_engine):
            continue
        if kind in kinds and needle in msg and rx.search(msg):
            return phase, name
    return None, None


class StartupPhases(object):
    """The start-up phase of one engine start, fed its log lines (str) in order."""

    def __init__(self, engine="auto"):
        self.engine = engine if engine in ENGINES else None
        self.phase = "process_start"
        self.line = None  # the line that entered the phase
        self.line_number = 0
        self.lines = 0

    def feed(self, raw):
        self.lines += 1
        if self.phase == "ready":
            return
        line = clean_line(raw[:LINE_CAP])
        if not line:
            return
        phase, dummy = phase_of_line(line, self.engine)
        if phase is not None:
            self.phase, self.line, self.line_number = phase, show(line), self.lines

    def feed_bytes(self, data):
        """Feed newline-terminated log bytes (the form backend_assert's reader passes on)."""
        if self.phase == "ready":
            self.lines += data.count(b"\n")
            return
        for raw in bytes(data).decode("utf-8", "replace").split("\n")[:-1]:
            self.feed(raw)

    def state(self):
        return {"phase": self.phase, "line": self.line, "line_number": self.line_number}


def startup_phase(lines_or_state, engine="auto"):
    """The start-up phase of a log: ``{phase, line, line_number}``.

    ``lines_or_state`` is an iterable of log lines (str) of one engine start, or a state such a
    call returned (returned as it is, checked); ``phase`` is one of STARTUP_PHASE_NAMES and
    ``line`` the log line that entered it (None for ``process_start``).
    """
    if isinstance(lines_or_state, dict):
        if lines_or_state.get("phase") not in STARTUP_PHASE_NAMES:
            raise ValueError("not a start-up phase state: %r" % (lines_or_state,))
        return dict(lines_or_state)
    tracker = StartupPhases(engine)
    for line in lines_or_state:
        tracker.feed(line.rstrip("\r\n"))
    return tracker.state()
