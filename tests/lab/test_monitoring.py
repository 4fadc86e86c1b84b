# SPDX-License-Identifier: GPL-3.0-or-later
"""Fleet monitoring in the lab (issue 23): ``make site`` brings Prometheus up on lab-spark (the
``monitoring`` group; its host network is this machine's loopback, so http://127.0.0.1:9090),
scraping every lab engine and node_exporter from the plans; a 64-request burst fires nothing; the
simulator's wedge fault on lab-spark fires ``InferopsEngineWedged`` naming the host within 3
minutes; after the burst every dashboard panel's expression returns data.

Uses the lab fleet of ``inventories/lab`` (fleet.yml then site.yml, as ``make site``); the wedge
runs from a copy of that inventory whose ``group_vars/spark.yml`` adds the simulator's runtime
fault (``ENGINE_SIM_FAULT=wedge_after_requests``, tests/lab/engine_sim/README.md) and a watchdog
that does not restart (budget 0: a restart would end the wedge before the alert's window); the
shipped inventory is converged again at the end.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

import labkit
from ansible_collections.inferops.serving.plugins.plugin_utils import _dashboards as dashboards

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

PROMETHEUS = "http://127.0.0.1:9090"
SHIPPED = os.path.join(labkit.ROOT, "inventories", "lab")
# inventories/lab: the engines' ports, the node_exporters' (hosts.yml, group_vars/g7e.yml).
ENGINES = {"lab-spark": 8101, "lab-spark-2": 8103, "lab-g7e": 8102}
NODES = {"lab-spark": 9101, "lab-spark-2": 9103, "lab-g7e": 9102}
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
# The converge's own requests (3 warm-ups and the smoke test) and a few watchdog probes pass
# before the engine wedges.
WEDGE_AFTER = 12
WEDGE_WITHIN = 180


def get(path):
    with urllib.request.urlopen(PROMETHEUS + path, timeout=10) as response:
        return json.loads(response.read())["data"]


def inferops_alerts(state=None):
    return [a for a in get("/api/v1/alerts")["alerts"]
            if a["labels"]["alertname"].startswith("Inferops") and (state is None or a["state"] == state)]


def chat(port, max_tokens, timeout):
    body = json.dumps({"model": MODEL, "max_tokens": max_tokens,
                       "messages": [{"role": "user", "content": "Count to fifty."}]}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except (urllib.error.URLError, OSError):
        return None


def burst(port, count, max_tokens, timeout):
    """``count`` concurrent requests on threads; returns the threads and their statuses."""
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(chat(port, max_tokens, timeout)), daemon=True)
               for index in range(count)]
    for thread in threads:
        thread.start()
    return threads, statuses


@pytest.fixture(scope="module")
def monitored(request):
    """The lab fleet converged as ``make site`` does, Prometheus scraping it, no Inferops alert
    firing. The watchdogs' histories are emptied first, as a new fleet's are: a converge keeps them
    (the restart budget spans converges), and restarts an earlier module or the lab's own restart
    (``lab.sh up`` restarts Docker, so every engine) made within the hour would fire
    InferopsWatchdogRestartBudgetLow in the burst test, which is about the burst."""
    labkit.shipped_fleet(request.module, SHIPPED)
    for host in ENGINES:
        labkit.reset_watchdog(host)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            targets = get("/api/v1/targets")["activeTargets"]
            if targets and all(t["health"] == "up" for t in targets) and not inferops_alerts("firing"):
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(3)
    return SHIPPED


def test_every_lab_engine_and_node_is_scraped_and_up(monitored):
    targets = get("/api/v1/targets")["activeTargets"]
    found = {(t["labels"].get("host"), t["labels"].get("inferops_role")): t for t in targets
             if t["labels"].get("inferops_role")}
    expected = {(host, "engine") for host in ENGINES} | {(host, "node") for host in NODES}
    assert set(found) == expected, sorted(found)
    assert {key: t["health"] for key, t in found.items()} == {key: "up" for key in expected}, \
        {key: t.get("lastError") for key, t in found.items()}
    assert found[("lab-spark", "engine")]["scrapeUrl"] == "http://127.0.0.1:8101/metrics"
    assert found[("lab-g7e", "engine")]["labels"]["inference_engine"] == "sglang"
    # The watchdog's textfile metrics arrive through each host's node_exporter. Only series with a
    # sample in the last minute (4 scrapes): without a start, the series API also lists hosts other
    # runs scraped hours ago (the no-op benchmark's lab-bench-* hosts failed this on 2026-12-01).
    series = get("/api/v1/series?match[]=inferops_watchdog_up&start=%d" % (time.time() - 60))
    assert {s["host"] for s in series} == set(ENGINES)


def test_a_64_request_burst_fires_nothing(monitored):
    threads, statuses = burst(ENGINES["lab-spark"], 64, 128, 240)
    started = time.monotonic()
    seen = set()
    while any(t.is_alive() for t in threads) or time.monotonic() - started < 90:
        seen |= {(a["labels"]["alertname"], a["labels"].get("host"), a["state"]) for a in inferops_alerts()}
        time.sleep(5)
    assert statuses.count(200) == 64, statuses
    assert not [alert for alert in seen if alert[2] == "firing"], sorted(seen)
    # Every dashboard panel has data for the GB10 host after the load, but the acceptance
    # objective: its profile (gb10-nvfp4-mtp-throughput) measured no acceptance figure.
    empty = []
    for board in dashboards.dashboards().values():
        for title, expr in dashboards.panel_expressions(board):
            if "inferops:objective_spec_accepted_per_draft" in expr:
                continue
            query = urllib.parse.urlencode({"query": expr.replace("$host", "lab-spark")})
            if not get("/api/v1/query?" + query)["result"]:
                empty.append((board["title"], title, expr))
    assert not empty, empty


def test_the_wedge_fault_fires_the_wedge_alert_within_3_minutes(monitored, tmp_path):
    wedging = str(tmp_path / "lab")
    shutil.copytree(SHIPPED, wedging)
    spark = os.path.join(wedging, "group_vars", "spark.yml")
    with open(spark, encoding="utf-8") as handle:
        group_vars = yaml.safe_load(handle)
    group_vars["server_profile_overrides"]["env"] = {"ENGINE_SIM_FAULT": "wedge_after_requests",
                                                     "ENGINE_SIM_FAULT_AFTER_REQUESTS": str(WEDGE_AFTER)}
    group_vars["watchdog_restart_budget"] = 0
    with open(spark, "w", encoding="utf-8") as handle:
        yaml.safe_dump(group_vars, handle)
    try:
        labkit.playbook(wedging, "site.yml", "-l", "lab-spark")
        # Enough requests to pass the fault's count; the ones past it hang, running, never served.
        burst(ENGINES["lab-spark"], WEDGE_AFTER + 8, 64, WEDGE_WITHIN + 60)
        started = time.monotonic()
        fired = []
        while time.monotonic() - started < WEDGE_WITHIN and not fired:
            fired = [a for a in inferops_alerts("firing") if a["labels"]["alertname"] == "InferopsEngineWedged"]
            time.sleep(5)
        assert fired, "no InferopsEngineWedged within %d s: %s" % (WEDGE_WITHIN, inferops_alerts())
        assert {a["labels"]["host"] for a in fired} == {"lab-spark"}
        assert re.search(r"lab-spark", fired[0]["annotations"]["summary"])
    finally:
        labkit.playbook(SHIPPED, "site.yml", "-l", "lab-spark")
        labkit.reset_watchdog("lab-spark")
