# SPDX-License-Identifier: GPL-3.0-or-later
"""site.yml rolls the lab fleet by itself, per model group, and a failing host does not hide it.

Uses the lab fleet of ``inventories/lab`` (lab-spark and lab-spark-2 serve one model, one model
group behind lab-gateway; lab-g7e another, a group of one) through copies of that inventory that
carry each change, as an operator writes it: a plain ``ansible-playbook site.yml``, no ``-e``.
(Before the rolling default, a plain site.yml took every host at once: 4 streaming clients through
the gateway saw 547 of 622 requests answered 503 while both Sparks swapped, with the lab's
gateway_allow_outage: true; the lab's gateway now refuses outages as a real fleet's does.)

1. A flag of the two Sparks and one of lab-g7e changed together: clients streaming through the
   gateway to the Sparks' model lose no request, the Sparks swap one after the other, lab-g7e's
   new engine starts beside the first Spark's (its wave), not after both; the wall time is printed.
   lab-g7e's outage (its group has one host) is accepted in that copy (gateway_allow_outage on the
   gateway group): its clients are not the ones counted, and the Sparks' drain still waits for
   the other Spark to be healthy in the gateway (plugins/modules/gateway_drain.py).
2. lab-spark-2's new engine crashes at start (the simulator's crash_on_cuda_graph_capture fault,
   with MTP): it is rolled back and serves, its summary row says NOT SERVED and why, the gateway
   and monitoring plays still converge for the fleet, and the run exits non-zero.
"""
from __future__ import annotations

import http.client
import json
import os
import re
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
GATEWAY = "http://127.0.0.1:4000/v1"
SPARK_MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
SPARKS = {"lab-spark": 8101, "lab-spark-2": 8103}
CLIENTS = 4


def master_key():
    with open(os.path.join(SHIPPED, "group_vars", "gateway.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gateway_master_key"]


def changed_inventory(directory, spark_args=None, g7e_args=None, spark_2_env=None, allow_outage=False):
    """A copy of inventories/lab with the changes written into its group_vars and host_vars."""
    inventory = os.path.join(directory, "lab")
    shutil.copytree(SHIPPED, inventory)

    def edit(path, change):
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        change(data)
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(data, handle)

    group_vars = os.path.join(inventory, "group_vars")
    if spark_args:
        edit(os.path.join(group_vars, "spark.yml"), lambda data: data["server_profile_overrides"]["args"].update(spark_args))
    if g7e_args:
        edit(os.path.join(group_vars, "g7e.yml"), lambda data: data["server_profile_overrides"]["args"].update(g7e_args))
    if spark_2_env:
        with open(os.path.join(group_vars, "spark.yml"), encoding="utf-8") as handle:
            overrides = yaml.safe_load(handle)["server_profile_overrides"]
        overrides = dict(overrides, env=dict(overrides.get("env") or {}, **spark_2_env))
        os.makedirs(os.path.join(inventory, "host_vars"), exist_ok=True)
        with open(os.path.join(inventory, "host_vars", "lab-spark-2.yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump({"server_profile_overrides": overrides}, handle)
    if allow_outage:
        edit(os.path.join(inventory, "hosts.yml"),
             lambda data: data["all"]["children"]["gateway"]["vars"].update(gateway_allow_outage=True))
    return inventory


class Clients:
    """CLIENTS threads streaming chat completions of the Sparks' model through lab-gateway until stopped."""

    def __init__(self, key):
        self.key, self.stop, self.outcomes, self.served, self.threads = key, threading.Event(), [], [], []

    def one(self):
        body = {"model": SPARK_MODEL, "max_tokens": 48, "temperature": 0, "stream": True,
                "messages": [{"role": "user", "content": "Tell me a long story about a lighthouse."}]}
        request = urllib.request.Request(GATEWAY + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json",
                                                  "authorization": "Bearer " + self.key})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                self.served.append(response.headers.get("x-litellm-model-id"))
                finished = done = False
                # read() raises IncompleteRead on a chunked body cut short
                for line in response.read().decode().splitlines():
                    line = line.strip()
                    if line == "data: [DONE]":
                        done = True
                    elif line.startswith("data: "):
                        chunk = json.loads(line[6:])
                        if "error" in chunk:
                            return "stream error: %s" % str(chunk["error"])[:120]
                        finished = finished or any(c.get("finish_reason") for c in chunk.get("choices") or [])
                return "ok" if finished and done else "truncated stream"
        except urllib.error.HTTPError as exc:
            return "HTTP %d" % exc.code
        except (OSError, ValueError, http.client.HTTPException) as exc:
            return "%s: %s" % (type(exc).__name__, exc)

    def run(self):
        while not self.stop.is_set():
            self.outcomes.append(self.one())

    def __enter__(self):
        self.threads = [threading.Thread(target=self.run, daemon=True) for _client in range(CLIENTS)]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=150)

    def losses(self):
        return [outcome for outcome in self.outcomes if outcome != "ok"]


def summary_state(output, host):
    """The state cell of ``host``'s row in site.yml's serving summary."""
    table = labkit.folded(output[output.index("TASK [Print the serving summary]"):])
    start = table.index("%s " % host, table.index("=+="))
    return table[start:].split("| ")[7].split(" - ")[0].strip(" '\"")


@pytest.fixture(scope="module")
def fleet(request):
    """The lab fleet as shipped; as shipped again at the end (lab-g7e's change undone: its outage accepted)."""
    labkit.shipped_fleet(request.module, SHIPPED)
    yield SHIPPED
    labkit.mark_fleet_shipped(labkit.playbook(SHIPPED, "site.yml", "-e", "gateway_allow_outage=true").stdout)


def test_a_plain_site_yml_rolls_the_sparks_one_at_a_time_and_loses_nothing(fleet, tmp_path):
    inventory = changed_inventory(str(tmp_path), spark_args={"max-num-seqs": 8},
                                  g7e_args={"max-running-requests": 64}, allow_outage=True)
    before = {host: labkit.container(host) for host in ("lab-spark", "lab-spark-2", "lab-g7e")}
    with Clients(master_key()) as clients:
        time.sleep(3)
        begun = time.monotonic()
        result = labkit.playbook(inventory, "site.yml", check=False)
        seconds = time.monotonic() - begun
        time.sleep(3)
    print("plain site.yml, the two Sparks and lab-g7e changed: %.0f s wall; %d streamed requests, %d lost"
          % (seconds, len(clients.outcomes), len(clients.losses())))
    output = result.stdout
    assert result.returncode == 0, output[-6000:]
    waves = re.findall(r"(\d+ wave\(s\) by .*?)'? (?=PLAY \[|TASK \[)", labkit.folded(output))
    assert len(waves) == 1 and waves[0].startswith("2 wave(s) by inferops_max_unavailable: "), (waves, output[-6000:])
    # (each wave's hosts in the play's order)
    assert [set(wave.split(", ")) for wave in waves[0].split(": ", 1)[1].split(" | ")] == [
        {"lab-spark", "lab-g7e"}, {"lab-spark-2"}], waves
    after = {host: labkit.container(host) for host in before}
    assert all(after[host]["id"] != before[host]["id"] for host in before), "site.yml replaced no container"
    # lab-g7e's new engine started in the first Spark's wave: before the second Spark's, not after both.
    assert after["lab-g7e"]["started"] < after["lab-spark-2"]["started"], after
    assert after["lab-spark"]["started"] < after["lab-spark-2"]["started"], after
    assert len(clients.outcomes) > 20, clients.outcomes
    assert set(clients.served) >= set(SPARKS), clients.served  # both Sparks answered during the roll
    assert clients.losses() == [], sorted(set(clients.losses()))
    # Each Spark left the gateway's routing and came back (none left out).
    assert output.count("TASK [inferops.serving.routing : Take the host out of the gateway's routing]") >= 2
    state = labkit.exec_on("lab-gateway", "cat /var/lib/inferops-gateway/drained.json").stdout
    assert json.loads(state) == {"hosts": {}}


def test_a_host_failing_mid_run_keeps_its_row_and_the_rest_of_the_fleet_converges(fleet, tmp_path):
    # (lab-g7e's outage accepted: after the test above, this run also puts its shipped flags back.)
    inventory = changed_inventory(str(tmp_path), spark_2_env={"ENGINE_SIM_FAULT": "crash_on_cuda_graph_capture"},
                                  allow_outage=True)
    result = labkit.playbook(inventory, "site.yml", check=False)
    output = result.stdout
    assert result.returncode != 0, output[-6000:]
    state = summary_state(output, "lab-spark-2")
    assert state.startswith("NOT SERVED: "), state
    assert summary_state(output, "lab-spark").startswith("serving"), output[-6000:]
    assert summary_state(output, "lab-g7e").startswith("serving"), output[-6000:]
    # The gateway and monitoring plays ran after the failure, for the whole fleet.
    assert "PLAY [Run the gateway in front of the serving fleet]" in output
    assert "routes to 3 of 3 hosts" in labkit.folded(output), output[-6000:]
    assert "PLAY [Run Prometheus and Alertmanager]" in output
    recap = labkit.recap(output)
    assert recap["lab-spark-2"]["failed"] == 1 and recap["lab-spark"]["failed"] == 0, recap
    assert recap["lab-gateway"]["failed"] == 0 and recap["lab-gateway"]["unreachable"] == 0, recap
    # The last play failed the host, after everything else ran, naming why.
    assert "lab-spark-2: NOT SERVED: " in labkit.folded(output[output.rindex("PLAY [Fail the run when a serving host failed]"):])
    # Rolled back to its last known-good: it serves, and is back in the gateway's routing.
    assert labkit.serving(SPARKS["lab-spark-2"], timeout=60)
    assert json.loads(labkit.exec_on("lab-gateway", "cat /var/lib/inferops-gateway/drained.json").stdout) == {"hosts": {}}
