# SPDX-License-Identifier: GPL-3.0-or-later
"""Alerts reach someone or say they cannot (_monitoring.alert_delivery, alerting_rows): the role's
default receiver (a name, no *_configs) drops every alert, and so does a fleet without
Alertmanager; the warning names the variable and the fix, never the receiver's settings."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

HOOK = "https://hooks.example/alertmanager/secret-token-123"


@pytest.mark.parametrize("receiver, enabled, delivers", [
    ({"name": "operator"}, True, False),  # the role's default
    (None, True, False),
    ({"name": "oncall", "webhook_configs": []}, True, False),
    ({"name": "oncall", "webhook_configs": [{"url": HOOK}]}, True, True),
    ({"name": "oncall", "email_configs": [{"to": "ops@example.com"}]}, "true", True),
    ({"name": "oncall", "webhook_configs": [{"url": HOOK}]}, False, False),
    ({"name": "oncall", "webhook_configs": [{"url": HOOK}]}, "false", False),
])
def test_the_alerts_are_delivered_only_through_a_receivers_configs(receiver, enabled, delivers):
    result = m.alert_delivery(receiver, enabled)
    assert result["delivers"] is delivers
    assert (result["warning"] is None) is delivers
    if not delivers:
        assert "alerts reach no one" in result["warning"]
        assert ("monitoring_alertmanager_enabled" if enabled in (False, "false") else "monitoring_alertmanager_receiver") \
            in result["warning"]


def test_the_monitoring_row_reads_each_hosts_own_receiver():
    hostvars = {"mon-1": {},
                "mon-2": {"monitoring_alertmanager_receiver": {"name": "oncall", "webhook_configs": [{"url": HOOK}]}}}
    rows = m.alerting_rows(["mon-1", "mon-2"], hostvars)
    assert [(row["host"], row["ok"]) for row in rows] == [("mon-1 (monitoring)", False), ("mon-2 (monitoring)", True)]
    assert rows[0]["state"].startswith("ALERTS DROPPED: alerts reach no one: monitoring_alertmanager_receiver has no "
                                       "*_configs (got a name only)")
    assert rows[1]["state"] == "alerts delivered" and rows[1]["problems"] == []
    # The role's own values win over the host's (the role passes them).
    assert m.alerting_rows(["mon-2"], hostvars, receiver={"name": "operator"})[0]["ok"] is False
    # The receiver's settings (a webhook URL carries a token) are never in a row.
    assert HOOK not in repr(rows)
