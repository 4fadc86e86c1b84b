# SPDX-License-Identifier: GPL-3.0-or-later
"""Day two in the lab: maintenance of a host and alerts that reach someone or say they cannot.

* playbooks/maintenance.yml takes lab-spark-2 out of lab-gateway's routing with its engine
  stopped and its watchdog held, while clients of the front door (CLIENTS threads, whole chat
  completions to the Sparks' model group, which lab-spark keeps serving) run on; then puts it back
  after the server role's proof. Not one client request fails, and some were sent while the host
  was out. Both steps refuse without a -l.
* a converge of playbooks/monitoring.yml with the lab's inventory (no
  monitoring_alertmanager_receiver) warns that alerts reach no one, and playbooks/status.yml's
  monitoring row says ALERTS DROPPED; with a receiver set (a webhook nobody listens on, from a
  copy of the inventory) the warning is gone and the row says alerts delivered. The shipped
  inventory is converged again at the end (its Alertmanager configuration restored).

Uses the lab fleet of inventories/lab (fleet.yml then site.yml, as ``make site``); leaves it as
shipped.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

import labkit

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

SHIPPED = os.path.join(labkit.ROOT, "inventories", "lab")
GATEWAY = "http://127.0.0.1:4000"
MASTER_KEY = "sk-inferops-lab-gateway-not-a-secret"  # inventories/lab/group_vars/gateway.yml (lab only)
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"  # the Sparks' model group: lab-spark, lab-spark-2
HOST = "lab-spark-2"
CLIENTS = 4


@pytest.fixture(scope="module")
def fleet(request):
    labkit.shipped_fleet(request.module, SHIPPED)
    yield SHIPPED
    labkit.mark_fleet_shipped(labkit.playbook(SHIPPED, "site.yml").stdout)


def drained():
    out = labkit.exec_on("lab-gateway", "cat /var/lib/inferops-gateway/drained.json").stdout
    return json.loads(out)["hosts"]


class Clients:
    """CLIENTS threads sending whole chat completions through the gateway until stopped; each
    result is (time sent, HTTP status or the error)."""

    def __init__(self):
        self.results, self.stop = [], threading.Event()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _client in range(CLIENTS)]

    def _loop(self):
        body = json.dumps({"model": MODEL, "max_tokens": 24,
                           "messages": [{"role": "user", "content": "Count to twenty."}]}).encode()
        while not self.stop.is_set():
            sent = time.monotonic()
            request = urllib.request.Request(GATEWAY + "/v1/chat/completions", data=body, headers={
                "Content-Type": "application/json", "Authorization": "Bearer " + MASTER_KEY})
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    response.read()
                    self.results.append((sent, response.status))
            except urllib.error.HTTPError as exc:
                self.results.append((sent, exc.code))
            except (urllib.error.URLError, OSError) as exc:
                self.results.append((sent, repr(exc)))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(180)


def test_maintenance_refuses_without_a_limit(fleet):
    for step in ("out", "in"):
        result = labkit.playbook(fleet, "playbooks/maintenance.yml", "-e", "inferops_maintenance=%s" % step, check=False)
        assert result.returncode != 0
        assert "No -l: this would take every serving host" in result.stdout, result.stdout[-3000:]
    assert HOST not in drained()


def test_maintenance_out_and_back_loses_no_request(fleet):
    with Clients() as clients:
        time.sleep(10)
        out = labkit.playbook(fleet, "playbooks/maintenance.yml", "-l", HOST, "-e", "inferops_maintenance=out",
                              "-e", "inferops_maintenance_stop_engine=true").stdout
        went_out = time.monotonic()
        try:
            assert HOST in drained() and drained()[HOST]["by"] == "maintenance.yml", out[-3000:]
            state = labkit.exec_on(HOST, "docker inspect -f '{{.State.Running}}' inferops-serving").stdout.strip()
            assert state == "false"
            watchdog = labkit.exec_on(HOST, "systemctl is-active inferops-watchdog@inferops-serving.service",
                                      check=False).stdout.strip()
            assert watchdog != "active"
            time.sleep(30)  # the group is served by lab-spark alone
        finally:
            back = labkit.playbook(fleet, "playbooks/maintenance.yml", "-l", HOST, "-e", "inferops_maintenance=in").stdout
        came_back = time.monotonic()
        time.sleep(10)
    assert HOST not in drained(), back[-3000:]
    assert labkit.serving(8103)
    assert labkit.exec_on(HOST, "systemctl is-active inferops-watchdog@inferops-serving.service",
                          check=False).stdout.strip() == "active"
    failed = [(round(sent - went_out, 1), status) for sent, status in clients.results if status != 200]
    assert failed == [], failed
    assert len([1 for sent, _outcome in clients.results if went_out < sent < came_back]) > 0
    assert len(clients.results) > 20


def both_streams(result):
    """stdout and stderr, folded: Ansible prints its [WARNING]s on stderr, the callback's task
    output on stdout (folded: the YAML callback breaks long lines)."""
    return labkit.folded(result.stdout + "\n" + result.stderr)


# The receiver warning, as the monitoring_plan lookup raises it (plugins/plugin_utils/_monitoring.py
# alert_delivery, prefixed with "<monitoring host> (monitoring): ") - the same text as the unit
# test tests/unit/playbooks/test_monitoring_role.py asserts.
NO_RECEIVER = ("[WARNING]: lab-spark (monitoring): alerts reach no one: monitoring_alertmanager_receiver has no "
               "*_configs (got a name only), so Alertmanager drops every alert")


def test_a_converge_without_a_receiver_warns_and_status_says_so(fleet, tmp_path):
    warned = both_streams(labkit.playbook(fleet, "playbooks/monitoring.yml"))
    assert NO_RECEIVER in warned, warned[-3000:]
    status = both_streams(labkit.playbook(fleet, "playbooks/status.yml", check=False))
    assert "lab-spark (monitoring)" in status and "ALERTS DROPPED: alerts reach no one" in status, status[-3000:]
    # With a receiver (a webhook on a loopback port nothing listens on): no warning, delivered.
    inventory = tmp_path / "lab"
    shutil.copytree(fleet, inventory)
    with open(inventory / "group_vars" / "serving.yml", "a", encoding="utf-8") as handle:
        handle.write("\n" + yaml.safe_dump({"monitoring_alertmanager_receiver": {
            "name": "lab", "webhook_configs": [{"url": "http://127.0.0.1:9/alerts"}]}}))
    quiet = both_streams(labkit.playbook(str(inventory), "playbooks/monitoring.yml"))
    assert "alerts reach no one" not in quiet and "127.0.0.1:9/alerts" not in quiet
    status = both_streams(labkit.playbook(str(inventory), "playbooks/status.yml", check=False))
    assert "lab-spark (monitoring)" in status and "alerts delivered" in status, status[-3000:]
