# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout_plan lookup (over plugins/plugin_utils/_rollout.py, whose decisions
tests/unit/plugins/plugin_utils/test_rollout.py covers): the model groups read from each host's
published plan, the failures and holds read from the hosts' variables, as site.yml calls it."""
from __future__ import annotations

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.inferops.serving.plugins.lookup import rollout_plan as lookup_plugin
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan

C.config.initialize_plugin_configuration_definitions(
    "lookup", "rollout_plan", yaml.safe_load(lookup_plugin.DOCUMENTATION)["options"])

SPARK = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101})
G7E = plan("g7e-fp8-sglang-eagle", {"name": "inferops-serving", "port": 8102})
HOSTVARS = {"spark-1": {"server_deployment": SPARK}, "spark-2": {"server_deployment": SPARK},
            "g7e-1": {"server_deployment": G7E}, "bad-1": {"inferops_serving_failure": "Plan: unknown profile x"}}


def rollout_plan(terms, hostvars=None, **options):
    lookup = lookup_plugin.LookupModule()
    lookup._load_name = "rollout_plan"
    return lookup.run(terms, {"hostvars": HOSTVARS if hostvars is None else hostvars}, **options)[0]


def running(deployment, same):
    """A deployment_state read of a running container: the plan's own (``same``) or an older one."""
    labels = {deployment["spec_label"]: deployment["spec_sha256"] if same else "0" * 64}
    return {"exists": True, "container": {"State": {"Running": True},
                                          "Config": {"Image": deployment["spec"]["image"], "Labels": labels}}}


def test_the_waves_follow_the_plans_model_groups_and_leave_out_a_failed_plan():
    result = rollout_plan([], hosts=["spark-1", "spark-2", "g7e-1", "bad-1"], read=False)
    assert result["waves"] == [["spark-1", "g7e-1"], ["spark-2"]] and result["serial"] == [2, 1]
    assert result["hosts"] == ["spark-1", "g7e-1", "spark-2"] and result["total"] == 4
    assert result["groups"]["spark-1"] == SPARK["served_model_name"] != result["groups"]["g7e-1"]
    assert rollout_plan(["plan"], hosts=["spark-1", "spark-2"], serial="100%")["waves"] == [["spark-1", "spark-2"]]
    assert rollout_plan([], hosts=["spark-1", "spark-2"], max_unavailable="50%", read=False)["waves"] == [
        ["spark-1"], ["spark-2"]]


def test_only_the_hosts_whose_running_engine_differs_take_a_wave_of_their_own():
    """spark-1 runs an older plan (it changes), spark-2 runs its plan, spark-3's read failed, spark-4
    has no container: only spark-1 is taken out of routing, so one wave holds them all."""
    hostvars = {"spark-1": {"server_deployment": SPARK, "server_rollout_read": running(SPARK, False)},
                "spark-2": {"server_deployment": SPARK, "server_rollout_read": running(SPARK, True)},
                "spark-3": {"server_deployment": SPARK, "server_rollout_read": {"failed": True, "msg": "x"}},
                "spark-4": {"server_deployment": SPARK, "server_rollout_read": {"exists": False}}}
    hosts = ["spark-1", "spark-2", "spark-3", "spark-4"]
    assert rollout_plan([], hostvars, hosts=hosts)["waves"] == [hosts]
    hostvars["spark-2"]["server_rollout_read"] = running(SPARK, False)
    assert rollout_plan([], hostvars, hosts=hosts)["waves"] == [["spark-1", "spark-3", "spark-4"], ["spark-2"]]


def test_hold_reads_the_failures_from_the_hosts_variables():
    result = rollout_plan([], hosts=["spark-1", "spark-2", "g7e-1"], read=False)
    assert rollout_plan(["hold"], plan=result, host="spark-2") == ""
    failed = dict(HOSTVARS, **{"spark-1": {"server_deployment": SPARK, "inferops_serving_failure": "smoke: 5"}})
    assert "spark-1 of its model group" in rollout_plan(["hold"], failed, plan=result, host="spark-2")
    assert rollout_plan(["hold"], failed, plan=result, host="g7e-1") == ""


def test_rows_name_the_failure_and_the_hold():
    hostvars = {"spark-1": {"server_summary": {"state": "serving", "smoke_answer": "4"}},
                "spark-2": {"inferops_serving_held": "not converged: spark-3 failed"},
                "g7e-1": {"server_summary": {"state": "serving"}, "inferops_serving_failure": "smoke: 5"}}
    rows = rollout_plan(["rows"], hostvars, hosts=["spark-1", "spark-2", "g7e-1"])
    assert [row["state"] for row in rows] == [
        "serving", "NOT CONVERGED (serves what it served before): not converged: spark-3 failed", "NOT SERVED: smoke: 5"]


@pytest.mark.parametrize("terms, options, message", [
    (["waves"], {}, "rollout_plan: got waves; expected one of plan, hold, rows"),
    (["hold"], {"host": "a"}, "rollout_plan hold: give plan="),
    ([], {"hosts": ["spark-1"], "max_unavailable": "0%"}, "inferops_max_unavailable: got '0%'"),
    ([], {"hosts": ["spark-1"], "max_fail_percentage": "most"}, "inferops_max_fail_percentage: got 'most'"),
])
def test_a_setting_it_cannot_use_fails_naming_it(terms, options, message):
    with pytest.raises(AnsibleLookupError, match=message.replace("(", r"\(")):
        rollout_plan(terms, **options)
