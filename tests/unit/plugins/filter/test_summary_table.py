# SPDX-License-Identifier: GPL-3.0-or-later
"""summary_table: the fleet summary as lines, columns as wide as their longest value."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.serving.plugins.filter.summary_table import NOT_SERVED, FilterModule, summary_lines

DIGEST = "sha256:" + "0123456789abcdef" * 4
# The keys the server role's verify.yml records as server_summary, plus the host's name.
SERVED = {
    "host": "spark-01.dc1.inferops.example.com",
    "profile": "gb10-nvfp4-mtp-latency",
    "engine": "vllm",
    "image": "127.0.0.1:5000/vllm/vllm-openai@" + DIGEST,
    "digest": DIGEST,
    "container": "inferops-serving",
    "url": "http://spark-01.dc1.inferops.example.com:8000/v1",
    "backends_expected": {"attention": "TRITON_ATTN", "moe": "marlin", "speculative": "mtp"},
    "backends_observed": {"attention": "TRITON_ATTN", "moe": "marlin", "speculative": "mtp"},
    "backends_proven": 3,
    "ready_seconds": 412,
    "smoke_answer": "4",
    "smoke_latency_seconds": 0,
}


def columns(line):
    return [cell.strip() for cell in line.split(" | ")]


def test_a_served_host_row_keeps_the_site_table_content():
    lines = summary_lines([SERVED])
    assert columns(lines[0]) == ["host", "profile", "image digest", "backends", "ready",
                                 "smoke answer, latency", "endpoint", "state"]
    assert columns(lines[2]) == ["spark-01.dc1.inferops.example.com", "gb10-nvfp4-mtp-latency", DIGEST[:19],
                                 "3/3 proven", "412 s", '"4" in <1 s',
                                 "http://spark-01.dc1.inferops.example.com:8000/v1", "serving"]
    assert lines[3].strip() == "backends observed: attention=TRITON_ATTN, moe=marlin, speculative=mtp"
    assert len(lines) == 4


def test_columns_align_with_host_names_of_any_length():
    short = dict(SERVED, host="g7e-1", url="http://g7e-1:8000/v1", backends_observed={})
    lines = summary_lines([SERVED, short])
    rows = [lines[0], lines[2], lines[4]]
    # Every column separator sits at the same offset on every line (the separator line too).
    offsets = [[i for i in range(len(line)) if line.startswith(" | ", i)] for line in rows]
    assert offsets[0] == offsets[1] == offsets[2]
    assert [i for i, c in enumerate(lines[1]) if c == "+"] == [i + 1 for i in offsets[0]]
    assert lines[4].startswith("g7e-1" + " " * (len(SERVED["host"]) - len("g7e-1")) + " | ")


def test_a_host_without_a_summary_is_not_served():
    lines = summary_lines([{"host": "g7e-02"}])
    assert columns(lines[2]) == ["g7e-02", "-", "-", "-", "-", "-", "-", NOT_SERVED]


@pytest.mark.parametrize("state", ["unchanged", "would deploy vllm/vllm-openai@" + DIGEST, "NOT SERVED"])
def test_an_explicit_state_is_shown_and_widens_nothing(state):
    lines = summary_lines([dict(SERVED, state=state)])
    assert columns(lines[2])[-1] == state
    assert len(lines[0]) == len(lines[2]) - len(state) + len("state")


def test_numbers_as_strings_from_older_ansible_render_the_same():
    as_strings = dict(SERVED, backends_proven="3", ready_seconds="412", smoke_latency_seconds="0")
    assert summary_lines([as_strings]) == summary_lines([SERVED])


@pytest.mark.parametrize("latency,shown", [(0, "<1 s"), (2, "2 s"), (0.4213, "0.42 s"), ("1.5", "1.50 s"), (None, None)])
def test_latency(latency, shown):
    cell = columns(summary_lines([dict(SERVED, smoke_latency_seconds=latency)])[2])[5]
    assert cell == ('"4"' if shown is None else '"4" in %s' % shown)


def test_a_long_answer_is_cut_and_quoted():
    answer = "The answer is four, because two plus two is four.\nDone."
    cell = columns(summary_lines([dict(SERVED, smoke_answer=answer)], answer_width=20)[2])[5]
    assert cell == '"The answer is fo... in <1 s'
    assert "\n" not in "".join(summary_lines([dict(SERVED, smoke_answer=answer)]))


def test_no_line_ends_in_spaces():
    lines = summary_lines([dict(SERVED, url=None, state="unchanged"), {"host": "x"}])
    assert all(line == line.rstrip() for line in lines)


@pytest.mark.parametrize("rows,message", [
    ("spark-01", "expects a list of per-host mappings, got str"),
    ([{"profile": "gb10-nvfp4-mtp-latency"}], "item 0 has no host"),
])
def test_bad_input_says_what_to_give(rows, message):
    with pytest.raises(AnsibleFilterError, match=message):
        summary_lines(rows)


def test_the_filter_is_registered():
    table = FilterModule().filters()["summary_table"]
    assert table([SERVED], "30") == summary_lines([SERVED], 30)
