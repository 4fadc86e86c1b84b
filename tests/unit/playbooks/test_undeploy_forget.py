# SPDX-License-Identifier: GPL-3.0-or-later
"""The `forget` entry points playbooks/undeploy.yml includes once for the removed hosts (the routing
role's and the monitoring role's), run on this machine: the gateway host and the monitoring host
are local hosts whose files live in the test's directory, written as the gateway and monitoring
roles write them from the real plans. The play names only the leaving host (as `-l spark-2`
would): the others have no plan in it, and the gateway and monitoring hosts are reached by
delegation. In check mode (the restart, the reload and the proxy's proof need systemd and a
LiteLLM: they are skipped there, and the lab test covers them), the task records hold what each
file would become: the leaving host is gone from LiteLLM's config.yaml, its routing file, its env
file and from prometheus.yml and the rules, the other host stays, and the files are what the
gateway and monitoring roles' own templates make of them; with those files in place a second run
changes nothing."""
from __future__ import annotations

import yaml

import role_runs
from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

OPTIONS = {"name": "inferops-serving", "network_mode": "host", "textfile_dir": "/var/lib/node_exporter",
           "secret_env": ["VLLM_API_KEY"]}
PLANS = {"spark-1": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8101)),
         "spark-2": d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, port=8103))}
MASTER = "sk-unit-test-master-0123"
PLAYS = [{"name": "Forget the removed hosts", "hosts": "spark-2", "gather_facts": False, "tasks": [
    {"name": "Take them out of each gateway's configuration",
     "ansible.builtin.include_role": {"name": "inferops.serving.routing", "tasks_from": "forget"},
     "vars": {"routing_hosts": "{{ ansible_play_hosts }}"}, "run_once": True},
    {"name": "Take them out of Prometheus",
     "ansible.builtin.include_role": {"name": "inferops.serving.monitoring", "tasks_from": "forget"},
     "vars": {"monitoring_forget_hosts": "{{ ansible_play_hosts }}"}, "run_once": True}]}]


def fleet(tmp_path):
    """The running files of a two-host fleet, and the inventory (every host this machine)."""
    backends = [{"host": host, "address": "127.0.0.1", "deployment": plan} for host, plan in PLANS.items()]
    gateway = tmp_path / "gateway"
    (gateway / "state").mkdir(parents=True)
    (gateway / "config.yaml").write_text(yaml.safe_dump(g.gateway_config(backends)["config"], sort_keys=False))
    (gateway / "gateway.env").write_text("LITELLM_MASTER_KEY=%s\nGATEWAY_SPARK_1_VLLM_API_KEY=k1\n"
                                         "GATEWAY_SPARK_2_VLLM_API_KEY=k2\n" % MASTER)
    prometheus = tmp_path / "prometheus"
    prometheus.mkdir()
    plan = m.monitoring_plan(backends, {"rules_file": str(prometheus / "inferops_rules.yml"),
                                        "credentials_dir": str(prometheus / "inferops")})
    (prometheus / "prometheus.yml").write_text(yaml.safe_dump(plan["prometheus"], sort_keys=False))
    (prometheus / "inferops_rules.yml").write_text(yaml.safe_dump(plan["rules"], sort_keys=False))
    local = dict(role_runs.LOCAL)
    inventory = {"all": {"vars": {"inferops_become": False}, "children": {
        "serving": {"hosts": {"spark-1": local, "spark-2": local}},
        "gateway": {"hosts": {"gw": dict(local, gateway_config_dir=str(gateway), gateway_state_dir=str(gateway / "state"),
                                         gateway_master_key=MASTER)}},
        "monitoring": {"hosts": {"mon": dict(local, monitoring_config_dir=str(prometheus))}}}}}
    return inventory, gateway, prometheus


def written(records, dest):
    """What the run's template or copy task would make ``dest`` (--diff's after, of its item's record)."""
    found = []
    for record in records:
        diffs = record.get("diff") or []
        for diff in diffs if isinstance(diffs, list) else [diffs]:
            if record["changed"] and record["args"].get("dest") == str(dest) and "after" in diff:
                found.append(diff["after"])
    assert len(found) == 1, [(r["action"], r["args"].get("dest")) for r in records if r.get("diff")]
    return found[0]


def test_the_leaving_host_goes_from_the_gateway_and_prometheus_and_only_it(tmp_path):
    inventory, gateway, prometheus = fleet(tmp_path)
    run = role_runs.run(tmp_path, inventory, PLAYS, "--check", "--diff")
    assert run.code == 0, run.output[-3000:]
    # The gateway role's template: its header, then the configuration.
    assert ("# LiteLLM proxy configuration derived from the serving hosts' deployment plans\n# (the "
            "inferops.serving.gateway_plan lookup); keys are os.environ/ references to %s/gateway.env." % gateway) \
        in written(run.records, gateway / "config.yaml")
    config = yaml.safe_load(written(run.records, gateway / "config.yaml"))
    assert [e["model_info"]["inferops_host"] for e in config["model_list"]] == ["spark-1"]
    assert yaml.safe_load(written(run.records, gateway / "state" / "routing.json")) == {
        "groups": {PLANS["spark-1"]["served_model_name"]: ["spark-1"]}}
    env = next(r for r in run.records if r["action"] == "ansible.builtin.replace" and r["status"] == "ok"
               and r["args"].get("path") == str(gateway / "gateway.env"))
    assert env["no_log"] and env["args"]["regexp"] == r"^(?:GATEWAY_SPARK_2_VLLM_API_KEY)=.*\n"
    scrape = yaml.safe_load(written(run.records, prometheus / "prometheus.yml"))
    jobs = [job["job_name"] for job in scrape["scrape_configs"]]
    assert jobs == ["prometheus", "inferops-engine-spark-1", "inferops-node-spark-1"]
    rules = yaml.safe_load(written(run.records, prometheus / "inferops_rules.yml"))
    # The rule labels as the monitoring role writes them (Go template literals, _monitoring.template_literal),
    # and the hosts the expressions select: spark-2's absent(up{...}) rules are gone, spark-1's stay.
    alerting = [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    alerted = {rule["labels"].get("host") for rule in alerting}
    assert m.template_literal("spark-2") not in alerted and m.template_literal("spark-1") in alerted
    assert not [rule for rule in alerting if 'host="spark-2"' in rule["expr"]]
    assert [rule for rule in alerting if 'host="spark-1"' in rule["expr"]]
    # Prometheus reloads on the new files in the same run (a removed target's alerts leave at the
    # next evaluation only once its rules are gone from what Prometheus runs): planned, on the
    # monitoring host, skipped only because this is check mode.
    reloads = [r for r in run.records if r["action"] == "ansible.builtin.systemd_service"
               and r["args"].get("name") == "prometheus"]
    assert [(r["args"].get("state"), r["status"]) for r in reloads] == [("reloaded", "skipped")], reloads
    # The restart, the reload and the proof act only outside check mode.
    assert {r["action"]: r["status"] for r in run.records if r["action"] in (
        "ansible.builtin.systemd_service", "inferops.serving.gateway_info")} == {
        "ansible.builtin.systemd_service": "skipped", "inferops.serving.gateway_info": "skipped"}
    # The master key is never in a record's output.
    assert MASTER not in run.output

    # With the new files in place, a second run changes nothing.
    (gateway / "config.yaml").write_text(written(run.records, gateway / "config.yaml"))
    (prometheus / "prometheus.yml").write_text(written(run.records, prometheus / "prometheus.yml"))
    (prometheus / "inferops_rules.yml").write_text(written(run.records, prometheus / "inferops_rules.yml"))
    again = role_runs.run(tmp_path, inventory, PLAYS, "--check", "--diff")
    assert again.code == 0, again.output[-3000:]
    assert not [r for r in again.records if r["changed"]]


def test_a_gateway_and_prometheus_never_configured_are_left_alone(tmp_path):
    inventory, gateway, prometheus = fleet(tmp_path)
    (gateway / "config.yaml").unlink()
    (prometheus / "prometheus.yml").unlink()
    run = role_runs.run(tmp_path, inventory, PLAYS, "--check", "--diff")
    assert run.code == 0, run.output[-3000:]
    assert not [r for r in run.records if r["changed"]]
