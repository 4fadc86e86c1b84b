# SPDX-License-Identifier: GPL-3.0-or-later
"""fleet_status: one row per host of the play from the fact the server role records - site.yml's
summary rows from each host's server_summary (fact='server_summary', what the serving_rows filter
did), status.yml's from its server_status (the default)."""
from __future__ import annotations

from functools import partial
from types import MappingProxyType

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.serving.plugins.filter.fleet_status import FilterModule
from ansible_collections.inferops.serving.plugins.filter.summary_table import NOT_SERVED, summary_lines
from ansible_collections.inferops.serving.plugins.plugin_utils._status import UNREAD, serving_rows

fleet_status_filter = FilterModule().filters()["fleet_status"]
serving_rows_filter = partial(fleet_status_filter, fact="server_summary")

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


def test_status_rows_by_default_and_a_not_read_row_where_a_host_recorded_none():
    row = {"host": "spark-01", "ok": True, "state": "serving", "drift": [], "problems": [], "details": {}}
    hostvars = {"spark-01": {"server_status": row, "server_summary": {"state": "serving"}}, "spark-02": {}}
    rows = fleet_status_filter(["spark-01", "spark-02"], hostvars)
    assert rows[0] == row
    assert rows[1]["host"] == "spark-02" and rows[1]["state"] == UNREAD and rows[1]["ok"] is False


def test_an_unknown_fact_is_refused_naming_the_choices():
    with pytest.raises(AnsibleFilterError, match="server_status, server_summary"):
        fleet_status_filter(["spark-01"], {}, fact="server_facts")
