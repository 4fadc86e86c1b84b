# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: summary_table
author: inferops.serving contributors (@inferops)
short_description: The fleet's serving summary as a table, one line per list item
version_added: 0.1.0
description:
  - Renders one row per host (host, profile, image digest, backends proven of expected, seconds
    to readiness, smoke answer and its latency, endpoint URL, state), each column as wide as its
    longest value, so fully qualified host names and long URLs keep the columns aligned.
  - Returns a list of lines, not one string, so any stdout callback (the default one with the
    JSON result format included) prints it line by line.
  - A host whose engine log showed backends gets a second line, C(backends observed), under its row.
  - Empty or missing values show as C(-). Numbers may arrive as strings (Ansible before 2.19
    templates them so).
options:
  _input:
    description:
      - One mapping per host. C(host) is required; the other keys are the server role's
        C(server_summary) keys, all optional.
      - C(profile), C(digest) (shown to its first 19 characters, C(sha256:) and 12 hex digits),
        C(backends_proven) (a count), C(backends_expected) (the profile's C(expect) mapping, or a
        count), C(backends_observed) (mapping of backend to value), C(ready_seconds),
        C(smoke_answer), C(smoke_latency_seconds), C(url) (the endpoint), C(state), C(details)
        (a mapping shown as C(key=value) under the row, e.g. the status playbook's live figures).
      - C(state) says what happened to the host, for example V(serving), V(unchanged),
        V(would deploy <image>), V(NOT SERVED). Missing, it is V(serving) when the row has a
        C(smoke_answer), else C(NOT SERVED) with a pointer to the host's errors above.
    type: list
    elements: dict
    required: true
  answer_width:
    description: Characters of the smoke answer shown (JSON-quoted); longer answers end in C(...).
    type: int
    default: 40
"""

EXAMPLES = r"""
- name: Print the table of two hosts
  ansible.builtin.debug:
    msg: "{{ rows | inferops.serving.summary_table }}"
  vars:
    rows:
      - host: spark-01.lab.example.com
        profile: gb10-nvfp4-mtp-latency
        digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
        backends_proven: 3
        backends_expected: {attention: TRITON_ATTN, moe: marlin, speculative: mtp}
        ready_seconds: 412
        smoke_answer: "4"
        smoke_latency_seconds: 0
        url: http://spark-01.lab.example.com:8000/v1
      - host: g7e-01.lab.example.com
        state: NOT SERVED

- name: Print the serving summary of every host of the play, once, from the controller
  ansible.builtin.debug:
    msg: "{{ rows | inferops.serving.summary_table }}"
  run_once: true
  delegate_to: localhost
  vars:
    rows: "{{ ansible_play_hosts_all | inferops.serving.fleet_status(hostvars, fact='server_summary') }}"
"""

RETURN = r"""
_value:
  description:
    - The table's lines, header first, then a separator of C(=), then each host's row (and its
      C(backends observed) line). No line ends in spaces.
  type: list
  elements: str
"""

import json

from ansible.errors import AnsibleFilterError

HEADER = ("host", "profile", "image digest", "backends", "ready", "smoke answer, latency", "endpoint", "state")
NOT_SERVED = "NOT SERVED: failed or not reached, see its errors above"
DIGEST_SHOWN = len("sha256:") + 12


def _number(value):
    """An int or float from a number or its string form; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        text = str(value).strip()
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except (TypeError, ValueError):
        return None


def _seconds(value):
    """Seconds as the table shows them: whole seconds as they are (0 is under one), floats to 0.01."""
    number = _number(value)
    if number is None:
        return None
    if isinstance(number, int):
        return "<1 s" if number == 0 else "%d s" % number
    return "%.2f s" % number


def _count(value):
    """How many: the length of a mapping or list, or a number."""
    if isinstance(value, (dict, list, tuple)):
        return len(value)
    number = _number(value)
    return None if number is None else int(number)


def _backends(row):
    proven, expected = _count(row.get("backends_proven")), _count(row.get("backends_expected"))
    if proven is None or expected is None:
        return None
    return "%d/%d proven" % (proven, expected)


def _smoke(row, answer_width):
    answer = row.get("smoke_answer")
    if answer is None:
        return None
    shown = json.dumps(str(answer))
    if len(shown) > answer_width:
        shown = shown[:max(answer_width - 3, 1)] + "..."
    latency = _seconds(row.get("smoke_latency_seconds"))
    return shown if latency is None else "%s in %s" % (shown, latency)


def _cells(row, answer_width):
    digest = row.get("digest")
    state = row.get("state") or ("serving" if row.get("smoke_answer") is not None else NOT_SERVED)
    cells = (row["host"], row.get("profile"), digest[:DIGEST_SHOWN] if digest else None, _backends(row),
             _seconds(row.get("ready_seconds")), _smoke(row, answer_width), row.get("url"), state)
    return ["-" if cell in (None, "") else str(cell) for cell in cells]


def summary_lines(rows, answer_width=40):
    """The summary table's lines: header, separator, then per host its row and observed backends."""
    if not isinstance(rows, (list, tuple)):
        raise AnsibleFilterError("summary_table expects a list of per-host mappings, got %s"
                                 % type(rows).__name__)
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not row.get("host"):
            raise AnsibleFilterError("summary_table: item %d has no host (give each mapping a host key): %r"
                                     % (index, row))
    table = [list(HEADER)] + [_cells(row, answer_width) for row in rows]
    # The last column (state) is free-width: a long state ('would deploy <image>') widens nothing.
    widths = [max(len(line[col]) for line in table) for col in range(len(HEADER) - 1)]

    def join(cells):
        return " | ".join([cell.ljust(width) for cell, width in zip(cells, widths)] + [cells[-1]]).rstrip()

    # '=' rather than '-': a YAML stdout callback would quote a line starting with '-'.
    lines = [join(table[0]), "=+=".join("=" * width for width in widths) + "=+=" + "=" * len(HEADER[-1])]
    for row, cells in zip(rows, table[1:]):
        lines.append(join(cells))
        observed = row.get("backends_observed") or {}
        if isinstance(observed, dict) and observed:
            shown = ", ".join("%s=%s" % (key, observed[key]) for key in observed)
            lines.append(("%s   backends observed: %s" % (" " * widths[0], shown)).rstrip())
        details = row.get("details") or {}
        if isinstance(details, dict) and details:
            shown = ", ".join("%s=%s" % (key, details[key]) for key in details)
            lines.append(("%s   %s" % (" " * widths[0], shown)).rstrip())
    return lines


def _summary_table(rows, answer_width=40):
    return summary_lines(rows, int(answer_width))


class FilterModule:
    def filters(self):
        return {"summary_table": _summary_table}
