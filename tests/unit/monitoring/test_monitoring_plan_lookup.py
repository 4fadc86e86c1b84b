# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring role's one plan: the ``inferops.serving.monitoring_plan`` lookup over
``_monitoring.play_plan``, read from the play's ``hostvars``. A run limited to some serving hosts
reports them (the role keeps Prometheus' configuration), a host outside the inventory or without a
plan fails naming it, and an error never carries a secret."""
from __future__ import annotations

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.inferops.serving.plugins.lookup import monitoring_plan as plugin
from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "secret_env": [],
           "textfile_dir": "/var/lib/node_exporter"}


def hostvars(planned=("spark-1", "g7e-1")):
    plans = {"spark-1": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101)),
             "g7e-1": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102))}
    return {name: dict({"ansible_host": "10.0.0.%d" % (i + 1)},
                       **({"server_deployment": plans[name]} if name in planned else {}))
            for i, name in enumerate(plans)}


def lookup(*terms, variables=None, **kwargs):
    """``lookup('inferops.serving.monitoring_plan', *terms, **kwargs)`` in a play of these hostvars."""
    # What Ansible's plugin loader does for the lookup: its documented options become its configuration.
    name = "inferops.serving.monitoring_plan"
    C.config.initialize_plugin_configuration_definitions("lookup", name, yaml.safe_load(plugin.DOCUMENTATION)["options"])
    module = plugin.LookupModule()
    module._load_name = name
    return module.run(list(terms), variables={"hostvars": hostvars()} if variables is None else variables, **kwargs)


def test_the_lookup_returns_the_plan_of_the_filter_it_replaces():
    [plan] = lookup(["spark-1", "g7e-1"], options={"scrape_interval": "30s"})
    names = ["spark-1", "g7e-1"]
    expected = m.monitoring_plan([m.serving_host(n, hostvars()[n]) for n in names], {"scrape_interval": "30s"})
    assert plan == dict(expected, unplanned=[])
    assert plan["prometheus"]["global"]["scrape_interval"] == "30s"
    assert sorted(plan["node_exporters"]) == ["g7e-1", "spark-1"]
    assert {t["address"] for t in plan["targets"] if t["job"].startswith("inferops-node")} == {
        "10.0.0.1:9100", "10.0.0.2:9100"}


def test_one_host_as_a_term_and_hosts_as_several_terms():
    assert lookup("spark-1")[0]["node_exporters"]["spark-1"]["listen_address"] == ":9100"
    assert sorted(lookup("spark-1", "g7e-1")[0]["textfile_dirs"]) == ["g7e-1", "spark-1"]


def test_a_run_without_every_plan_reports_the_hosts_and_plans_nothing():
    variables = {"hostvars": hostvars(planned=("spark-1",))}
    assert lookup(["spark-1", "g7e-1"], variables=variables, unplanned="report") == [{"unplanned": ["g7e-1"]}]
    assert m.play_plan(["spark-1", "g7e-1"], variables["hostvars"], unplanned="report") == {"unplanned": ["g7e-1"]}


def test_a_host_without_a_plan_fails_naming_it_and_the_resolve():
    with pytest.raises(AnsibleLookupError, match=r"host g7e-1 has no deployment plan \(server_deployment\): "
                                                 r"run the server role's resolve"):
        lookup(["spark-1", "g7e-1"], variables={"hostvars": hostvars(planned=("spark-1",))})


def test_a_host_outside_the_inventory_is_refused_naming_the_variable():
    with pytest.raises(AnsibleLookupError, match="monitoring_serving_hosts names nope, not in the inventory"):
        lookup(["spark-1", "nope"])


def test_a_bad_threshold_names_the_variable():
    with pytest.raises(AnsibleLookupError, match="monitoring_ttft_margin is 0.5"):
        lookup("spark-1", options={"ttft_margin": 0.5})


def test_unplanned_takes_fail_or_report():
    with pytest.raises(m.MonitoringError, match="unplanned is 'skip': write fail or report"):
        m.play_plan(["spark-1"], hostvars(), unplanned="skip")


def test_an_error_carries_no_secret():
    variables = {"hostvars": dict(hostvars(), **{"sk-abcdefghijklmnopqrstuvwxyz012345": {}})}
    with pytest.raises(AnsibleLookupError) as raised:
        lookup(["sk-abcdefghijklmnopqrstuvwxyz0123456789"], variables=variables)
    assert "abcdefghijklmnopqrstuvwxyz" not in str(raised.value)


def test_without_the_plays_hostvars_it_says_where_to_call_it():
    with pytest.raises(AnsibleLookupError, match="needs the play's hostvars"):
        lookup("spark-1", variables={})
