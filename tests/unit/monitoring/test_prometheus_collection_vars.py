# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The prometheus.prometheus collection's variables, where they mean what one of the role's does.

An operator whose inventory was written for prometheus-community/ansible (roles/prometheus and
roles/node_exporter, defaults/main.yml) keeps it: ``node_exporter_web_listen_address``,
``node_exporter_web_telemetry_path`` and ``node_exporter_textfile_dir`` of a serving host say where
its node_exporter listens and reads, ``prometheus_targets`` adds the operator's scrape jobs. The
role's defaults that follow ``prometheus_*`` variables are checked by ansible-playbook in
tests/unit/playbooks/test_monitoring_role.py.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "secret_env": [],
           "textfile_dir": "/var/lib/node_exporter"}


def monitoring_plan(names, hostvars, options=None):
    """The plan the role's lookup (plugins/lookup/monitoring_plan.py) returns for these hosts."""
    return m.play_plan(names, hostvars, options)


def hostvars(**spark):
    """Two serving hosts as the monitoring_plan lookup reads them from ``hostvars``; ``spark``: spark-1's own variables."""
    return {"spark-1": dict({"ansible_host": "10.0.0.1",
                             "server_deployment": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101))}, **spark),
            "g7e-1": {"ansible_host": "10.0.0.2",
                      "server_deployment": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102))}}


def node_target(plan, host):
    return next(t for t in plan["targets"] if t["job"] == "inferops-node-%s" % host)


def test_without_them_nothing_changes():
    plan = monitoring_plan(["spark-1", "g7e-1"], hostvars())
    assert node_target(plan, "spark-1")["address"] == "10.0.0.1:9100"
    assert node_target(plan, "spark-1")["metrics_path"] == "/metrics"
    assert plan["node_exporters"]["spark-1"] == {"listen_address": ":9100", "metrics_path": "/metrics",
                                                 "textfile_dir": "/var/lib/node_exporter"}
    assert [j["job_name"] for j in plan["prometheus"]["scrape_configs"]] == [
        "prometheus", "inferops-engine-g7e-1", "inferops-node-g7e-1", "inferops-engine-spark-1", "inferops-node-spark-1"]


def test_node_exporter_listen_address_and_path_of_the_collection_are_scraped():
    plan = monitoring_plan(["spark-1", "g7e-1"], hostvars(node_exporter_web_listen_address="0.0.0.0:9200",
                                                          node_exporter_web_telemetry_path="/node"))
    assert node_target(plan, "spark-1")["address"] == "10.0.0.1:9200"
    assert node_target(plan, "spark-1")["metrics_path"] == "/node"
    assert node_target(plan, "g7e-1")["address"] == "10.0.0.2:9100"  # a host without them: the default
    # The role's own node_exporter (when it installs one) listens there too.
    assert plan["node_exporters"]["spark-1"]["listen_address"] == "0.0.0.0:9200"
    assert plan["node_exporters"]["spark-1"]["metrics_path"] == "/node"


def test_the_role_variable_set_for_a_host_wins():
    plan = monitoring_plan(["spark-1"], hostvars(monitoring_node_exporter_port=9101,
                                                 node_exporter_web_listen_address="0.0.0.0:9200"))
    assert node_target(plan, "spark-1")["address"] == "10.0.0.1:9101"
    assert plan["node_exporters"]["spark-1"]["listen_address"] == ":9101"


def test_a_bad_port_set_for_a_host_names_the_host():
    with pytest.raises(m.MonitoringError, match="host spark-1: monitoring_node_exporter_port is 0: it must be between"):
        monitoring_plan(["spark-1"], hostvars(monitoring_node_exporter_port=0))


@pytest.mark.parametrize("address, port", [("0.0.0.0:9100", 9100), (":9300", 9300), ("[::]:9101", 9101),
                                           ("10.1.2.3:9100", 9100)])
def test_listen_addresses(address, port):
    assert m.node_exporter_port(address) == port


@pytest.mark.parametrize("address", ["9100", "0.0.0.0", "0.0.0.0:http", "[:::9100", "0.0.0.0:70000"])
def test_a_bad_listen_address_names_the_host_and_variable(address):
    with pytest.raises(m.MonitoringError, match=re.escape(
            "host spark-1: node_exporter_web_listen_address is %r: write host:port" % address)):
        monitoring_plan(["spark-1"], hostvars(node_exporter_web_listen_address=address))


def test_the_operators_node_exporter_must_read_where_the_watchdog_writes():
    # prometheus.prometheus.node_exporter reads /srv/textfile; the watchdog was told to write elsewhere.
    vars_ = hostvars(node_exporter_textfile_dir="/srv/textfile")
    with pytest.raises(m.MonitoringError, match=r"host spark-1: the watchdog writes its metrics to "
                       r"/var/lib/node_exporter \(watchdog_textfile_dir\), but the operator's node_exporter "
                       r"reads node_exporter_textfile_dir /srv/textfile"):
        monitoring_plan(["spark-1", "g7e-1"], vars_, {"node_exporter_install": False})
    # The role's own node_exporter reads the plan's directory whatever the variable says.
    assert monitoring_plan(["spark-1"], vars_, {"node_exporter_install": True})["node_exporters"]["spark-1"][
        "textfile_dir"] == "/var/lib/node_exporter"
    # The same directory (as the server role's default makes it): accepted.
    same = hostvars(node_exporter_textfile_dir="/var/lib/node_exporter/")
    assert monitoring_plan(["spark-1"], same, {"node_exporter_install": "false"})["textfile_dirs"]["spark-1"] == \
        "/var/lib/node_exporter"


PROMETHEUS_TARGETS = {  # prometheus-community/ansible roles/prometheus/defaults/main.yml's example, and a second job
    "node": [{"targets": ["localhost:9100"], "labels": {"env": "test"}}],
    "blackbox": [{"targets": ["10.0.0.9:9115", "10.0.0.10:9115"]}],
}


def test_prometheus_targets_become_scrape_jobs_beside_the_derived_ones(tmp_path):
    plan = monitoring_plan(["spark-1", "g7e-1"], hostvars(), {"extra_targets": PROMETHEUS_TARGETS})
    jobs = {j["job_name"]: j for j in plan["prometheus"]["scrape_configs"]}
    assert jobs["node"] == {"job_name": "node",
                            "static_configs": [{"targets": ["localhost:9100"], "labels": {"env": "test"}}]}
    assert jobs["blackbox"]["static_configs"] == [{"targets": ["10.0.0.9:9115", "10.0.0.10:9115"]}]
    assert "inferops-engine-spark-1" in jobs
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is missing: install Debian's prometheus package (tests/lab/lab.sh up installs it)")
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(plan["rules"]))
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(dict(plan["prometheus"], rule_files=[str(rules)])))
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("extra, message", [
    ({"inferops-node-x": [{"targets": ["a:1"]}]}, "has the job 'inferops-node-x': name it otherwise"),
    ({"prometheus": [{"targets": ["a:1"]}]}, "has the job 'prometheus'"),
    ({"node": {"targets": ["a:1"]}}, r"monitoring_extra_targets \(prometheus_targets\)\[node\] is not a list"),
    ({"node": [{"targets": "a:1"}]}, r"\[node\] has \{'targets': 'a:1'\}: write \{job name"),
    ({"node": [{"targets": ["a:1"], "scheme": "https"}]}, r"\[node\] has"),
    (["node"], r"monitoring_extra_targets \(prometheus_targets\) is a list"),
])
def test_bad_prometheus_targets_are_refused_naming_the_variables(extra, message):
    with pytest.raises(m.MonitoringError, match=message):
        m.settings({"extra_targets": extra})


def test_node_exporter_install_must_be_a_boolean():
    with pytest.raises(m.MonitoringError, match="monitoring_node_exporter_install is 'maybe': write true or false"):
        m.settings({"node_exporter_install": "maybe"})
