# SPDX-License-Identifier: GPL-3.0-or-later
"""A host leaves the fleet (playbooks/undeploy.yml): the gateway's running configuration and
Prometheus' running configuration and rules lose it, and only it, without a plan of the other
hosts (_gateway.forget_hosts, _monitoring.forget_hosts); the gateway's readiness probe
(_gateway.probe_url, _monitoring.probe_targets) and its scrape job, checked by the real promtool."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "textfile_dir": "/var/lib/node_exporter"}
SPARK = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101, secret_env=["VLLM_API_KEY"]))
SPARK_2 = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8103, secret_env=["VLLM_API_KEY"]))
G7E = d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, port=8102, secret_env=[]))
BACKENDS = [{"host": "spark-1", "address": "10.0.0.1", "deployment": SPARK},
            {"host": "spark-2", "address": "10.0.0.3", "deployment": SPARK_2},
            {"host": "g7e-1", "address": "10.0.0.2", "deployment": G7E}]
SPARK_GROUP = SPARK["served_model_name"]
G7E_GROUP = G7E["served_model_name"]


def running_gateway(aliases=None):
    """config.yaml as the gateway role writes it (template: to_nice_yaml of the plan's config), read back."""
    config = g.gateway_config(BACKENDS, {"aliases": aliases or {}})["config"]
    return yaml.safe_load(yaml.safe_dump(config, sort_keys=False))


def hosts_of(config):
    return sorted(entry["model_info"]["inferops_host"] for entry in config["model_list"])


def test_the_gateway_loses_the_leaving_host_and_keeps_every_other_one_as_it_was():
    before = running_gateway()
    result = g.forget_hosts(before, ["spark-2"])
    assert hosts_of(result["config"]) == ["g7e-1", "spark-1"]
    assert result["removed"] == ["spark-2"]
    assert result["groups"] == {G7E_GROUP: ["g7e-1"], SPARK_GROUP: ["spark-1"]}
    assert result["expect"] == sorted([G7E_GROUP, SPARK_GROUP])
    # The others' entries and every setting are the running ones, untouched.
    assert [e for e in before["model_list"] if e["model_info"]["inferops_host"] != "spark-2"] == \
        result["config"]["model_list"]
    assert {k: v for k, v in result["config"].items() if k != "model_list"} == \
        {k: v for k, v in before.items() if k != "model_list"}
    # Its engine key's variable goes from the env file; spark-1's stays.
    assert result["env"] == [g.key_env_name("spark-2", "VLLM_API_KEY")]
    # The running configuration itself is not changed in place.
    assert hosts_of(before) == ["g7e-1", "spark-1", "spark-2"]


def test_a_host_the_gateway_does_not_list_changes_nothing():
    before = running_gateway()
    result = g.forget_hosts(before, ["spark-9"])
    assert result["config"] == before and result["removed"] == [] and result["env"] == []


def test_a_group_left_without_a_host_loses_its_aliases_too():
    before = running_gateway(aliases={"sglang": G7E_GROUP, "nemotron": SPARK_GROUP})
    result = g.forget_hosts(before, ["g7e-1"])
    assert G7E_GROUP not in result["groups"]
    aliases = result["config"]["router_settings"]["model_group_alias"]
    assert aliases.get("nemotron") == SPARK_GROUP and "sglang" not in aliases
    assert result["expect"] == [SPARK_GROUP, "nemotron"]
    everything = g.forget_hosts(before, ["g7e-1", "spark-1", "spark-2"])
    assert everything["config"]["model_list"] == [] and "model_group_alias" not in everything["config"]["router_settings"]


def test_a_configuration_the_role_did_not_write_is_refused_naming_the_fix():
    with pytest.raises(g.GatewayError, match="no model_list.*run playbooks/gateway.yml first"):
        g.forget_hosts({"general_settings": {}}, ["spark-1"])


def monitoring_hosts():
    return [dict(backend) for backend in BACKENDS]


PROBES = [{"host": "gw-1", "url": "http://10.0.0.9:4000/health/readiness"}]


def running_prometheus():
    """prometheus.yml and the rules file as the monitoring role writes them, read back."""
    plan = m.monitoring_plan(monitoring_hosts(), {"gateway_probes": PROBES,
                                                  "extra_targets": {"mine": [{"targets": ["10.0.0.50:9100"]}]}})
    return (yaml.safe_load(yaml.safe_dump(plan["prometheus"], sort_keys=False)),
            yaml.safe_load(yaml.safe_dump(plan["rules"], sort_keys=False)))


def read_back(label):
    """A rule's label as Prometheus gives it to the alert: _monitoring.template_literal's
    ``{{ "..." }}`` (a Go template printing a string literal) read back by hand, not by the code under test."""
    if label.startswith('{{ "') and label.endswith('" }}'):
        return json.loads(label[3:-3])
    return label


def alerted_hosts(rules):
    return sorted({read_back(rule["labels"]["host"]) for group in rules["groups"] for rule in group["rules"]
                   if "alert" in rule and rule["labels"].get("host")})


def test_prometheus_loses_the_leaving_hosts_targets_and_their_missing_target_alerts():
    prometheus, rules = running_prometheus()
    result = m.forget_hosts(prometheus, rules, ["spark-2"])
    jobs = [job["job_name"] for job in result["prometheus"]["scrape_configs"]]
    assert "inferops-engine-spark-2" not in jobs and "inferops-node-spark-2" not in jobs
    assert jobs == [job["job_name"] for job in prometheus["scrape_configs"]
                    if job["job_name"] not in ("inferops-engine-spark-2", "inferops-node-spark-2")]
    # The operator's own job, the gateway's probe and the other hosts' jobs stay.
    assert {"mine", "inferops-gateway-gw-1", "inferops-engine-spark-1", "inferops-node-g7e-1"} <= set(jobs)
    # Its absent(up{...}) alerts would fire once it is not scraped: they go; the others' stay.
    assert alerted_hosts(rules) == ["g7e-1", "gw-1", "spark-1", "spark-2"]
    assert alerted_hosts(result["rules"]) == ["g7e-1", "gw-1", "spark-1"]
    # Recording rules and fleet-wide alerts are kept as they are.
    kept = [rule for group in rules["groups"] for rule in group["rules"]
            if read_back(rule.get("labels", {}).get("host", "")) != "spark-2"]
    assert [rule for group in result["rules"]["groups"] for rule in group["rules"]] == kept
    assert result["removed"] == ["spark-2"]
    assert result["credentials"] == ["/etc/prometheus/inferops/spark-2.key"]
    assert {k: v for k, v in result["prometheus"].items() if k != "scrape_configs"} == \
        {k: v for k, v in prometheus.items() if k != "scrape_configs"}


def test_every_rule_naming_the_leaving_host_goes_its_label_escaped_or_its_selector():
    """The missing-target rule labels the host as a Go template literal and selects it as a PromQL
    string: a rule kept because its escaped label was compared as written would go pending for
    the host the run removed (absent() of a target no longer scraped), and fire."""
    prometheus, rules = running_prometheus()
    missing = [rule for group in rules["groups"] for rule in group["rules"] if rule.get("alert") == "InferopsScrapeTargetMissing"]
    assert any('host="spark-2"' in rule["expr"] for rule in missing)
    assert all(rule["labels"]["host"].startswith('{{ "') for rule in missing)  # escaped, as written
    # A rule that names the host only in its selector (no host label) goes with it too.
    rules["groups"].append({"name": "extra", "rules": [
        {"alert": "Selector", "expr": 'absent(up{inferops_role="node", host="spark-2"})', "for": "5m", "labels": {}},
        {"alert": "NotIt", "expr": 'up{host!="spark-2", host=~"spark-2.*"} == 0', "for": "5m", "labels": {}}]})
    result = m.forget_hosts(prometheus, rules, ["spark-2"])
    left = [rule for group in result["rules"]["groups"] for rule in group["rules"] if "alert" in rule]
    assert not [rule for rule in left if "spark-2" in read_back(rule["labels"].get("host", ""))]
    assert not [rule for rule in left if 'host="spark-2"' in rule["expr"]]
    assert [rule["alert"] for rule in left if rule["alert"] in ("Selector", "NotIt")] == ["NotIt"]
    # Fleet-wide alerts (no host) stay, every one of them.
    assert [r["alert"] for r in left if not r["labels"].get("host") and r["alert"] != "NotIt"] == \
        [r["alert"] for g in rules["groups"] for r in g["rules"]
         if "alert" in r and not r["labels"].get("host") and r["alert"] not in ("Selector", "NotIt")]


def test_a_host_named_with_quotes_and_braces_is_forgotten_and_only_it():
    odd = 'spark-"2"{{.Value}}'
    backends = [dict(BACKENDS[0]), dict(BACKENDS[1], host=odd)]
    plan = m.monitoring_plan(backends)
    prometheus = yaml.safe_load(yaml.safe_dump(plan["prometheus"], sort_keys=False))
    rules = yaml.safe_load(yaml.safe_dump(plan["rules"], sort_keys=False))
    assert odd in alerted_hosts(rules)
    result = m.forget_hosts(prometheus, rules, [odd])
    assert result["removed"] == [odd]
    assert alerted_hosts(result["rules"]) == ["spark-1"]
    assert [job["job_name"] for job in result["prometheus"]["scrape_configs"] if job["job_name"].startswith("inferops-")] == \
        ["inferops-engine-spark-1", "inferops-node-spark-1"]
    # The other host's name is not a prefix match: spark-1 stays when spark-1x leaves.
    assert m.forget_hosts(prometheus, rules, ["spark-1x"])["removed"] == []


def test_prometheus_is_unchanged_for_a_host_it_does_not_scrape():
    prometheus, rules = running_prometheus()
    result = m.forget_hosts(prometheus, rules, ["spark-9"])
    assert result["prometheus"] == prometheus and result["rules"] == rules
    assert result["removed"] == [] and result["credentials"] == []


def test_files_the_role_did_not_write_are_refused_naming_the_fix():
    prometheus, rules = running_prometheus()
    with pytest.raises(m.MonitoringError, match="no scrape_configs.*run playbooks/monitoring.yml first"):
        m.forget_hosts({"global": {}}, rules, ["spark-1"])
    with pytest.raises(m.MonitoringError, match="no groups.*run playbooks/monitoring.yml first"):
        m.forget_hosts(prometheus, None, ["spark-1"])


def test_the_files_without_the_host_pass_promtool(tmp_path):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is missing: install Debian's prometheus package (tests/lab/lab.sh up installs it)")
    prometheus, rules = running_prometheus()
    result = m.forget_hosts(prometheus, rules, ["spark-2", "g7e-1"])
    rules_path = tmp_path / "rules.yml"
    rules_path.write_text(yaml.safe_dump(result["rules"], sort_keys=False, width=1000))
    (tmp_path / "spark-1.key").write_text("not-a-real-key\n")
    config = dict(result["prometheus"], rule_files=[str(rules_path)])
    for job in config["scrape_configs"]:
        if "authorization" in job:
            job["authorization"]["credentials_file"] = str(tmp_path / "spark-1.key")
    config_path = tmp_path / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False, width=1000))
    checked = subprocess.run([promtool, "check", "config", str(config_path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_gateway_is_probed_where_its_clients_reach_it():
    hostvars = {"gw-1": {"gateway_listen_address": "0.0.0.0", "gateway_port": 4100, "ansible_host": "10.0.0.9"},
                "gw-2": {},
                "gw-3": {"monitoring_scrape_address": "gw3.internal", "gateway_listen_address": "127.0.0.1"},
                "gw-4": {"gateway_port": "http"}}
    assert g.probe_url("gw-1", hostvars) == "http://10.0.0.9:4100/health/readiness"
    # The role's default: it listens on its loopback, where the lab's monitoring host reaches it.
    assert g.probe_url("gw-2", hostvars) == "http://127.0.0.1:4000/health/readiness"
    assert g.probe_url("gw-3", hostvars) == "http://gw3.internal:4000/health/readiness"
    # An IPv6 scrape address in brackets, written with them or without (url_host, as the gateway's URLs).
    for address in ("fd00::9", "[fd00::9]"):
        assert g.probe_url("gw-5", {"gw-5": {"monitoring_scrape_address": address}}) == \
            "http://[fd00::9]:4000/health/readiness"
    assert g.probe_url("gw-6", {"gw-6": {"gateway_listen_address": "::", "ansible_host": "fd00::6"}}) == \
        "http://[fd00::6]:4000/health/readiness"
    with pytest.raises(g.GatewayError, match="gateway_port"):
        g.probe_url("gw-4", hostvars)


def test_the_gateway_probe_is_a_blackbox_job_with_its_own_alert():
    hostvars = {"spark-1": {"server_deployment": SPARK, "ansible_host": "10.0.0.1"},
                "gw-1": {"gateway_listen_address": "0.0.0.0", "ansible_host": "10.0.0.9"}}
    plan = m.play_plan(["spark-1"], hostvars, {"gateways": ["gw-1"], "blackbox": "127.0.0.1:9115"})
    assert plan["probes"] == [{"host": "gw-1", "url": "http://10.0.0.9:4000/health/readiness"}]
    job = next(j for j in plan["prometheus"]["scrape_configs"] if j["job_name"] == "inferops-gateway-gw-1")
    assert job["metrics_path"] == "/probe" and job["params"] == {"module": [m.BLACKBOX_MODULE]}
    assert job["static_configs"] == [{"targets": ["http://10.0.0.9:4000/health/readiness"],
                                      "labels": {"host": "gw-1", "inferops_role": "gateway"}}]
    assert {"target_label": "__address__", "replacement": "127.0.0.1:9115"} in job["relabel_configs"]
    # The module the job asks for is the one the blackbox exporter's configuration defines.
    assert list(plan["blackbox"]["modules"]) == [m.BLACKBOX_MODULE]
    alerts = {rule["alert"]: rule for group in plan["rules"]["groups"] for rule in group["rules"] if "alert" in rule}
    assert 'probe_success{inferops_role="gateway"} == 0' in alerts["InferopsGatewayDown"]["expr"]
    # No gateway group: no probe, no blackbox exporter to install.
    assert m.play_plan(["spark-1"], hostvars, {})["probes"] == []
    with pytest.raises(m.MonitoringError, match="monitoring_gateway_hosts names gw-9"):
        m.play_plan(["spark-1"], hostvars, {"gateways": ["gw-9"]})


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.1:9115 --web.config.file=/tmp/x", "0.0.0.0:0", '"a":1', ""])
def test_a_blackbox_listen_address_that_is_not_host_port_is_refused_by_name(listen):
    with pytest.raises(m.MonitoringError, match="monitoring_blackbox_listen_address is .*write host:port"):
        m.settings({"blackbox": listen})


@pytest.mark.parametrize("listen", ["127.0.0.1:9115", "[::1]:9115", "mon.internal:9115"])
def test_a_blackbox_listen_address_is_host_port(listen):
    assert m.settings({"blackbox": listen})["blackbox"] == listen
