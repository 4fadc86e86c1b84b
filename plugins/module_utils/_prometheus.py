# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The Prometheus text exposition format (0.0.4), read and written: the one parser of the
collection, and the writer of the watchdog's node_exporter textfile (``family``).

The controller reads an engine's ``/metrics`` with it (status, benchmark, speculative
acceptance) and the server role installs this file beside the watchdog on every serving host as
``inferops_prometheus.py`` (the ``host_library`` lookup), so it is standard library only and
imports nothing from the collection.

A sample line is ``name[{label="value",...}] value [timestamp]``. Label values may hold any
character, ``}``, ``,`` and ``=`` included, with ``\\"``, ``\\\\`` and ``\\n`` escaped; the
optional timestamp (integer milliseconds) follows the value. Lines that are comments or not a
sample are passed over, so an odd line never hides the rest.
"""
from __future__ import annotations

import math

_ESCAPES = {"n": "\n", "\\": "\\", '"': '"'}


def _labels(line, pos):
    """(labels dict, index after the closing ``}``) of the label set starting after ``{`` at ``pos``;
    None when the set is not well formed."""
    labels = {}
    end = len(line)
    while True:
        while pos < end and line[pos] in " \t,":
            pos += 1
        if pos < end and line[pos] == "}":
            return labels, pos + 1
        equals = line.find("=", pos)
        if equals < 0 or equals + 1 >= end or line[equals + 1] != '"':
            return None
        name = line[pos:equals].strip()
        pos, chars = equals + 2, []
        while pos < end and line[pos] != '"':
            if line[pos] == "\\" and pos + 1 < end:
                pos += 1
                chars.append(_ESCAPES.get(line[pos], "\\" + line[pos]))
            else:
                chars.append(line[pos])
            pos += 1
        if pos >= end or not name:
            return None
        labels[name] = "".join(chars)
        pos += 1


def parse_sample(line):
    """``(name, labels, value)`` of one exposition line, or None for a comment or a line that is
    no sample. The timestamp, when there is one, is dropped (the value is what was sampled)."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    brace, space = line.find("{"), line.find(" ")
    if brace != -1 and (space == -1 or brace < space):
        parsed = _labels(line, brace + 1)
        if parsed is None:
            return None
        name, (labels, rest) = line[:brace].strip(), parsed
        fields = line[rest:].split()
    else:
        fields = line.split()
        name, labels, fields = fields[0], {}, fields[1:]
    if not name or not fields or len(fields) > 2:
        return None
    try:
        return name, labels, float(fields[0])
    except ValueError:
        return None


def samples(text, name=None):
    """Every ``(name, labels, value)`` sample of an exposition, only metric ``name``'s when given."""
    for line in (text or "").splitlines():
        if name is not None and not line.startswith(name):
            continue
        sample = parse_sample(line)
        if sample is not None and (name is None or sample[0] == name):
            yield sample


def metric_sums(text):
    """``{metric name: sum over its label sets}`` of an exposition."""
    sums = {}
    for name, _labels_, value in samples(text):
        sums[name] = sums.get(name, 0.0) + value
    return sums


def metric_sum(text, name):
    """Sum of the samples of metric ``name`` (one per label set); None if absent."""
    if not name:
        return None
    values = [value for _name, _labels_, value in samples(text, name)]
    return sum(values) if values else None


def metric_max(text, name):
    """Largest sample of metric ``name``; None if absent."""
    if not name:
        return None
    values = [value for _name, _labels_, value in samples(text, name)]
    return max(values) if values else None


def metric_by_label(text, name, label):
    """``{label value: sum of the samples}`` of metric ``name``, grouped by one label.

    E.g. vLLM's ``..._per_pos_total{...,position="1"} 3.0`` by ``position``: ``{"1": 3.0}``.
    Samples without the label are left out; {} if the metric is absent.
    """
    grouped = {}
    if not name:
        return grouped
    for _name, labels, value in samples(text, name):
        if label in labels:
            grouped[labels[label]] = grouped.get(labels[label], 0.0) + value
    return grouped


def label_value(value):
    """``value`` as a label value between double quotes (backslash, newline and quote escaped)."""
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def sample_value(value):
    """A sample's value as text: an integer as such, a float by repr, NaN as ``NaN``."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def family(name, kind, help_text, samples):
    """The lines of one metric family: ``# HELP``, ``# TYPE``, then one line per ``(labels, value)``
    of ``samples`` (labels: the text between the braces, already escaped with label_value)."""
    lines = ["# HELP %s %s" % (name, help_text), "# TYPE %s %s" % (name, kind)]
    return lines + ["%s{%s} %s" % (name, labels, sample_value(value)) for labels, value in samples]
