# SPDX-License-Identifier: GPL-3.0-or-later
"""serving_rows: site.yml's summary rows, one per host, from each host's server_summary."""
from __future__ import annotations

from types import MappingProxyType

from ansible_collections.inferops.serving.plugins.filter.serving_rows import FilterModule
from ansible_collections.inferops.serving.plugins.filter.summary_table import NOT_SERVED, summary_lines
from ansible_collections.inferops.serving.plugins.plugin_utils._status import serving_rows

serving_rows_filter = FilterModule().filters()["serving_rows"]

# The keys the server role's verify.yml records as server_summary (check mode: a state, no smoke).
SERVED = {"profile": "gb10-nvfp4-mtp-latency", "digest": "sha256:" + "ab" * 32, "backends_proven": 3,
          "backends_expected": {"attention": "TRITON_ATTN", "moe": "marlin", "speculative": "mtp"},
          "smoke_answer": "4", "smoke_latency_seconds": 0.31, "url": "http://spark-01:8000/v1", "state": "serving"}
CHECKED = {"profile": "gb10-nvfp4-mtp-latency", "url": "http://spark-02:8000/v1", "state": "unchanged (check mode)"}


def test_each_host_gets_its_summary_with_its_name_in_the_order_given():
    hostvars = {"spark-02": {"server_summary": CHECKED, "ansible_host": "10.0.0.2"},
                "spark-01": {"server_summary": SERVED}}
    rows = serving_rows_filter(["spark-01", "spark-02"], hostvars)
    assert rows == [dict(SERVED, host="spark-01"), dict(CHECKED, host="spark-02")]
    assert "host" not in SERVED and "host" not in CHECKED  # copies: the facts are not changed


def test_a_host_without_a_summary_is_a_row_with_its_name_alone_and_shows_not_served():
    hostvars = {"spark-01": {"server_summary": SERVED}, "g7e-01": {"ansible_host": "10.0.0.3"},
                "g7e-02": {"server_summary": None}}
    rows = serving_rows_filter(["g7e-01", "spark-01", "g7e-02", "g7e-03"], hostvars)
    assert [row["host"] for row in rows] == ["g7e-01", "spark-01", "g7e-02", "g7e-03"]
    assert rows[0] == {"host": "g7e-01"} and rows[2] == {"host": "g7e-02"} and rows[3] == {"host": "g7e-03"}
    lines = summary_lines(rows)
    assert lines[2].startswith("g7e-01 ") and lines[2].endswith("| " + NOT_SERVED)
    assert [line for line in lines if line.startswith("spark-01 ")][0].endswith("| serving")


def test_the_host_name_wins_over_a_host_key_in_the_summary_and_mappings_of_any_type_are_read():
    hostvars = MappingProxyType({"spark-01": MappingProxyType({"server_summary": MappingProxyType(
        dict(SERVED, host="stale-name"))})})
    rows = serving_rows_filter(["spark-01"], hostvars)
    assert rows == [dict(SERVED, host="spark-01")] and isinstance(rows[0], dict)


def test_no_hosts_no_rows():
    assert serving_rows([], {}) == []
