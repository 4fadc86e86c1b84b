# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/undeploy.yml on a lab host (issue 26): takes the host out of the gateway's routing
(lab-gateway's drained.json names it), removes the container, its systemd units, the watchdog, the
launch script and the watchdog's files, keeps the last known-good record aside (renamed) and the
model and engine caches; in the same run the host leaves lab-gateway's LiteLLM configuration (the
proxy no longer lists it) and Prometheus' targets on lab-spark, with no alert for it. Without a -l
nothing is touched. Then the host is added back as the runbook adds a host (docs/operations.md):
one site.yml without -l restores it, serving and proven, in the gateway's configuration and
routing and scraped by Prometheus.

Uses lab-g7e of inventories/lab (converged first); the host is restored at the end.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "lab")
HOST = "lab-g7e"
# lab-g7e is its model group's only host: the lab's gateway refuses taking it out unless accepted.
OUTAGE = ("-e", "gateway_allow_outage=true")
REMOVED = ["/usr/local/lib/inferops-serving/inferops-serving.sh", "/etc/inferops-serving/watchdog-inferops-serving.json",
           "/var/lib/inferops-serving/watchdog-inferops-serving.json", "/var/lib/inferops-serving/inferops-serving.json",
           "/etc/systemd/system/inferops-serving@.service", "/etc/systemd/system/inferops-watchdog@.service",
           "/usr/local/lib/inferops-serving/inferops_watchdog.py", "/usr/local/lib/inferops-serving/inferops_unified_memory.py",
           "/usr/local/lib/inferops-serving/inferops_docker_api.py", "/usr/local/lib/inferops-serving/inferops_prometheus.py",
           "/usr/local/lib/inferops-serving/inferops_bounded_http.py",
           "/usr/local/lib/inferops-serving/inferops_host_files.py"]


def run(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)


def playbook(*args):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, *args])
    assert result.returncode == 0, result.stdout[-4000:]
    return result.stdout


def on_host(command, host=HOST):
    return run(["docker", "exec", host, "bash", "-c", command])


PROMETHEUS = "http://127.0.0.1:9090"
GATEWAY = "http://127.0.0.1:4000"
MASTER_KEY = "sk-inferops-lab-gateway-not-a-secret"  # inventories/lab/group_vars/gateway.yml (lab only)
RECORD = "/var/lib/inferops-serving/inferops-serving.json"


def prometheus(path):
    with urllib.request.urlopen(PROMETHEUS + path, timeout=10) as response:
        return json.loads(response.read())["data"]


def scraped_hosts():
    """The hosts Prometheus' active targets are labelled with."""
    return {t["labels"].get("host") for t in prometheus("/api/v1/targets")["activeTargets"]}


def alerting_hosts():
    """The hosts of the alerts Prometheus holds, pending or firing (resolved ones are not listed)."""
    return {a["labels"].get("host") for a in prometheus("/api/v1/alerts")["alerts"]}


def alert_rule_hosts():
    """The hosts the alerting rules Prometheus runs name: in their host label or a host="..." matcher
    of their query."""
    hosts = set()
    for group in prometheus("/api/v1/rules?type=alert")["groups"]:
        for rule in group["rules"]:
            label = rule.get("labels", {}).get("host")
            # The API gives the label as written, a template: the monitoring role writes {{ "<host>" }}.
            hosts.add(json.loads(label[3:-3]) if label and label.startswith('{{ "') and label.endswith('" }}') else label)
            matchers = re.findall(r'(?<![\w:])host\s*=\s*("(?:[^"\\]|\\.)*")', rule.get("query", ""))
            hosts.update(json.loads(literal) for literal in matchers)
    return hosts - {None}


def seconds(duration):
    """A Prometheus duration (15s, 1m, 1m30s, as /api/v1/status/config prints it) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"([0-9]+)(ms|[smhdwy])", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, "not a Prometheus duration: %r" % duration
    return sum(int(number) * units[unit] for number, unit in parts)


def intervals():
    """(scrape, evaluation) intervals in seconds, from Prometheus' running configuration."""
    glob = (yaml.safe_load(prometheus("/api/v1/status/config")["yaml"]) or {}).get("global") or {}
    return seconds(str(glob.get("scrape_interval", "1m"))), seconds(str(glob.get("evaluation_interval", "1m")))


def alert_settle_seconds():
    """How long an alert of a target removed by a reload may stay, from the running configuration:
    Prometheus writes the stale markers of a removed target's series about two scrape intervals
    after it stopped scraping it (scrape loop's end-of-run staleness: two ticks and a tenth), and a
    pending or firing alert leaves at the first evaluation of its rule that finds no series (one
    evaluation interval later). Doubled, for a lab on two busy cores."""
    scrape, evaluation = intervals()
    return 2 * (2.1 * scrape + 2 * evaluation)


def routed_hosts():
    """The serving hosts the running proxy lists (its /v1/model/info, model_info.inferops_host)."""
    request = urllib.request.Request(GATEWAY + "/v1/model/info", headers={"Authorization": "Bearer " + MASTER_KEY})
    with urllib.request.urlopen(request, timeout=30) as response:
        return {entry["model_info"].get("inferops_host") for entry in json.loads(response.read())["data"]}


def configured_hosts():
    result = on_host("cat /etc/inferops-gateway/config.yaml", host="lab-gateway")
    assert result.returncode == 0, result.stderr
    return {line.split(":", 1)[1].strip() for line in result.stdout.splitlines() if "inferops_host:" in line}


def eventually(check, timeout=60):
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(3)
    return check()


def drained():
    """The hosts the lab's gateway keeps out of its routing (roles/gateway: gateway_state_dir)."""
    result = on_host("cat /var/lib/inferops-gateway/drained.json", host="lab-gateway")
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout)["hosts"])


def test_undeploy_without_a_limit_is_refused_and_touches_nothing():
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "playbooks/undeploy.yml",
                  "-e", "inferops_undeploy=true"])
    assert result.returncode != 0
    assert "No -l: this would take every serving host" in result.stdout, result.stdout[-3000:]
    assert "Remove the serving container" not in result.stdout


def test_undeploy_removes_what_the_role_made_and_a_converge_restores_it():
    playbook("site.yml")
    assert all(on_host("test -e %s" % path).returncode == 0 for path in REMOVED)
    assert HOST in configured_hosts() and HOST in routed_hosts() and HOST in scraped_hosts()
    assert HOST in alert_rule_hosts()  # its missing-target rules, which must go with it
    checked = playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true", *OUTAGE, "--check")
    assert on_host("docker inspect inferops-serving").returncode == 0, checked[-2000:]  # --check changed nothing
    assert HOST in configured_hosts() and HOST in scraped_hosts()
    try:
        playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true", *OUTAGE)
        assert on_host("docker inspect inferops-serving").returncode != 0
        assert on_host("systemctl is-active inferops-watchdog@inferops-serving.service").stdout.strip() != "active"
        left = [path for path in REMOVED if on_host("test -e %s" % path).returncode == 0]
        assert left == []
        # The last known-good record is kept aside, renamed.
        aside = on_host("ls %s.undeployed-*" % RECORD)
        assert aside.returncode == 0 and len(aside.stdout.split()) == 1, aside.stderr
        # The weights and the compile cache stay.
        assert on_host("test -d /root/.cache/huggingface").returncode == 0
        # The gateway no longer routes to it (drained, not put back: the host serves nothing), and
        # in the same run it left the gateway's configuration and Prometheus' targets.
        assert HOST in drained()
        assert HOST not in configured_hosts() and HOST not in routed_hosts()
        assert {"lab-spark", "lab-spark-2"} <= routed_hosts()
        assert eventually(lambda: HOST not in scraped_hosts()), scraped_hosts()
        # Prometheus runs no alerting rule that names it (the absent() of its targets went too).
        assert HOST not in alert_rule_hosts(), alert_rule_hosts()
        # Its alerts leave at the first evaluation after its series went stale (not at once: a
        # fixed wait raced that); a rule still naming it (absent() of its targets) would keep it
        # pending past that, then fire.
        assert eventually(lambda: HOST not in alerting_hosts(), timeout=alert_settle_seconds()), \
            prometheus("/api/v1/alerts")
        time.sleep(2 * intervals()[1])
        assert HOST not in alerting_hosts(), prometheus("/api/v1/alerts")  # and it does not come back
        again = playbook("playbooks/undeploy.yml", "-l", HOST, "-e", "inferops_undeploy=true", *OUTAGE)
        assert "changed=0" in again.split("PLAY RECAP")[-1]
    finally:
        # Added back as the runbook adds a host: one site.yml, no -l.
        restored = playbook("site.yml")
    assert "serving" in restored.split("Print the serving summary")[-1]
    assert on_host("systemctl is-active inferops-watchdog@inferops-serving.service").stdout.strip() == "active"
    assert HOST not in drained()  # proven again, so back in the gateway's routing
    assert HOST in configured_hosts() and HOST in routed_hosts()
    assert eventually(lambda: HOST in scraped_hosts()), scraped_hosts()
    on_host("rm -f %s.undeployed-*" % RECORD)
