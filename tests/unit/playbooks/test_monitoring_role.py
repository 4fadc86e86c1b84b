# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring role's decisions on a local inventory, before anything on a host changes: a
run limited to some serving hosts keeps Prometheus' configuration (it would lose the others'
targets), and a bad threshold fails naming its variable. The serving hosts' plans are given as
inventory variables (``server_deployment``, what the server role's resolve sets), rendered by the
real plan function; nothing is installed (the role ends or fails before its first package)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPTIONS = {"name": "inferops-serving", "network_mode": "host", "secret_env": [],
           "textfile_dir": "/var/lib/node_exporter"}
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def run(tmp_path, planned, extra=None, group_vars=None, tasks=None):
    """The role on host ``mon`` with serving hosts spark-1 and g7e-1, of which ``planned`` have a plan.

    ``group_vars``: inventory variables of every host; ``tasks``: a play of these tasks instead of the role.
    """
    plans = {"spark-1": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101)),
             "g7e-1": d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102))}
    hosts = {name: dict(LOCAL, **({"server_deployment": json.loads(json.dumps(plans[name]))} if name in planned else {}))
             for name in plans}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": group_vars or {}, "children": {
        "serving": {"hosts": hosts}, "monitoring": {"hosts": {"mon": dict(LOCAL)}}}}}))
    play = tmp_path / "play.yml"
    body = {"tasks": tasks} if tasks else {"roles": [{"role": "inferops.serving.monitoring", "vars": extra or {}}]}
    play.write_text(yaml.safe_dump([dict({"name": "Monitoring", "hosts": "monitoring", "gather_facts": False}, **body)]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run([playbook, "-i", str(inventory), str(play), "--check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_run_that_did_not_plan_every_serving_host_keeps_the_configuration(tmp_path):
    result = run(tmp_path, ["spark-1"])
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0, out
    assert "The Prometheus configuration is kept: this run has no deployment plan for g7e-1 (a --limit)" in out
    assert "Install Prometheus" not in out


def test_a_bad_threshold_fails_naming_the_variable_before_anything_changes(tmp_path):
    result = run(tmp_path, ["spark-1", "g7e-1"], {"monitoring_ttft_margin": 0.5})
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode != 0
    assert "monitoring_ttft_margin is 0.5: it must be between 1.0 and any" in out
    assert "Install Prometheus" not in out


# prometheus-community/ansible's variables (roles/prometheus/defaults/main.yml), as an inventory
# written for that collection sets them.
PROMETHEUS_COLLECTION_VARS = {
    "prometheus_config_dir": "/srv/prometheus",
    "prometheus_web_listen_address": "127.0.0.1:9099",
    "prometheus_storage_retention": "30d",
    "prometheus_global": {"scrape_interval": "30s", "scrape_timeout": "10s", "evaluation_interval": "1m"},
    "prometheus_targets": {"node": [{"targets": ["localhost:9100"], "labels": {"env": "test"}}]},
}


def test_the_prometheus_collections_variables_are_the_roles_defaults(tmp_path):
    check = {"monitoring_config_dir": "/srv/prometheus", "monitoring_prometheus_listen_address": "127.0.0.1:9099",
             "monitoring_prometheus_retention": "30d", "monitoring_scrape_interval": "30s",
             "monitoring_evaluation_interval": "1m",
             "monitoring_extra_targets": PROMETHEUS_COLLECTION_VARS["prometheus_targets"]}
    tasks = [{"name": "Load the role's defaults and plan (nothing is installed)",
              "ansible.builtin.include_role": {"name": "inferops.serving.monitoring", "tasks_from": "plan.yml",
                                               "public": True}},
             {"name": "Check the defaults", "ansible.builtin.assert": {
                 "that": ["%s == %s" % (name, json.dumps(value)) for name, value in check.items()],
                 "quiet": True}}]
    result = run(tmp_path, ["spark-1", "g7e-1"], group_vars=PROMETHEUS_COLLECTION_VARS, tasks=tasks)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0, out
    assert "TASK [Check the defaults]" in out and "failed=0" in out


def test_without_them_the_documented_defaults_hold(tmp_path):
    check = {"monitoring_config_dir": "/etc/prometheus", "monitoring_prometheus_listen_address": "0.0.0.0:9090",
             "monitoring_prometheus_retention": "15d", "monitoring_scrape_interval": "15s",
             "monitoring_evaluation_interval": "15s", "monitoring_extra_targets": {}}
    tasks = [{"name": "Load the role's defaults and plan (nothing is installed)",
              "ansible.builtin.include_role": {"name": "inferops.serving.monitoring", "tasks_from": "plan.yml",
                                               "public": True}},
             {"name": "Check the defaults", "ansible.builtin.assert": {
                 "that": ["%s == %s" % (name, json.dumps(value)) for name, value in check.items()], "quiet": True}}]
    result = run(tmp_path, ["spark-1", "g7e-1"], tasks=tasks)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0, out


def test_bad_prometheus_targets_fail_naming_both_variables_before_anything_changes(tmp_path):
    result = run(tmp_path, ["spark-1", "g7e-1"], group_vars={"prometheus_targets": {"node": ["localhost:9100"]}})
    # ansible-core 2.18's YAML callback doubles the quotes inside a single-quoted message
    out = " ".join((result.stdout + result.stderr).split()).replace("''", "'")
    assert result.returncode != 0
    assert "monitoring_extra_targets (prometheus_targets)[node] has 'localhost:9100'" in out
    assert "Install Prometheus" not in out
