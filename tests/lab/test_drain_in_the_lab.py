# SPDX-License-Identifier: GPL-3.0-or-later
"""The drain (issue 22): clients of the front door lose no request while site.yml rolls a model
group's two hosts, and do lose some without the drain.

Two simulated DGX Sparks of this module's own (drain-spark-1 on 8121, drain-spark-2 on 8122)
serve the same model behind a gateway of its own (drain-gateway, the gateway role's LiteLLM on
http://127.0.0.1:4001/v1), so the module shares no host with inventories/lab's fleet and runs as an
xdist group of its own beside it (make test's critical path was the lab fleet's group). Clients on this machine's
loopback (CLIENTS threads, streamed and whole chat completions of ~50 tokens, ~2.5 s each) run
while site.yml rolls a changed profile across both hosts, one at a time (inferops_serial=1):

1. without the drain (gateway_drain=false) and without the engine's graceful shutdown
   (server_shutdown_timeout=0, the stop as it was before issue 22): the stop cuts the streams in
   flight on the stopped host, and the test sees it. (Until session 10 it did not: the simulator
   sent its streams close-delimited, so a cut stream ended like a finished one and LiteLLM passed
   it on with a finish_reason of its own. It now sends them chunked, as the engines' uvicorn does,
   and the gateway's httpx sees "incomplete chunked read".);
2. with the drain (the defaults; the old engines still lack --shutdown-timeout, so it is the
   drain alone that saves them): 0 non-2xx responses and 0 truncated streams.

Then one host of a group of one is refused before anything changes (gateway_allow_outage), and
the clients run on through the group's other failures:

3. one engine killed (SIGKILL, ``docker kill`` on its host): every request sent after the kill gets
   2xx (LiteLLM's retry on the refused connection goes to the other host). Streams whose first
   chunks the gateway had already passed on from the killed engine cannot be saved by any proxy
   (what the client got cannot be taken back, the rest died with the process: LiteLLM 1.106.12's
   mid-stream fallback, router.py ``_acompletion_streaming_iterator``, re-sends a stream only
   while it has generated nothing); whole requests in flight there are retried whole. The test
   counts the losses and allows them only among the requests in flight at the kill (one run:
   7 in flight, 0 lost, 25 sent after the kill, all 2xx);
4. a group with no host in routing (both drained): a clear 503 at once, not a hang (the drain
   filter raises it; LiteLLM 1.106.12's own answer would be 429 ``No deployments available``);
5. the watchdog restarting one host (the simulator's ``slow_decode`` fault: decode five times
   slower, so the watchdog restarts it for ``slow``): the restart stops the engine with its
   graceful shutdown (``--shutdown-timeout``: new requests refused with 503, which LiteLLM retries
   on the other host; the ones in flight finished), so 0 non-2xx and 0 truncated streams.
"""
from __future__ import annotations

import http.client
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

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("drain")]  # one pytest-xdist worker: this module's hosts

HOSTS = {"drain-spark-1": 8121, "drain-spark-2": 8122}
GATEWAY_HOST = "drain-gateway"
GATEWAY_PORT = 4001  # inventories/lab's lab-gateway has 4000
GATEWAY = "http://127.0.0.1:%d/v1" % GATEWAY_PORT
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
CLIENTS = 6
COOLDOWN = 30  # gateway_cooldown_time (roles/gateway/defaults/main.yml), which the lab keeps
HEALTH_CHECK_INTERVAL = 30  # gateway_health_check_interval (the same defaults), which the lab keeps
LAB_GATEWAY_VARS = os.path.join(labkit.ROOT, "inventories", "lab", "group_vars", "gateway.yml")


def write_inventory(directory):
    """The two Sparks (serving, spark) and drain-gateway (gateway), reached with docker exec; the
    gateway's settings are the lab's (group_vars/gateway.yml) on a port of its own."""
    inventory = labkit.write_inventory(directory, HOSTS, dict(labkit.GROUP_VARS, gateway_backend_address="127.0.0.1",
                                                              server_ready_first_deploy_timeout=180))
    with open(os.path.join(inventory, "hosts.yml"), encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)
    hosts["all"]["children"]["gateway"] = {"vars": {"ansible_connection": "community.docker.docker"},
                                           "hosts": {GATEWAY_HOST: {"gateway_port": GATEWAY_PORT}}}
    with open(os.path.join(inventory, "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(hosts, handle)
    shutil.copy(LAB_GATEWAY_VARS, os.path.join(inventory, "group_vars", "gateway.yml"))
    return inventory


def master_key():
    with open(LAB_GATEWAY_VARS, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gateway_master_key"]


class Clients:
    """CLIENTS threads sending chat completions through the gateway until stopped; two of three streamed."""

    def __init__(self, key):
        self.key, self.stop, self.outcomes, self.threads = key, threading.Event(), [], []
        self.played = None  # when the playbook the clients ran through ended (monotonic)
        self.served = []  # the host (x-litellm-model-id) of each request the gateway answered 2xx

    def one(self, stream):
        body = {"model": MODEL, "max_tokens": 64, "temperature": 0, "stream": stream,
                "messages": [{"role": "user", "content": "Tell me a long story about a lighthouse."}]}
        request = urllib.request.Request(GATEWAY + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json",
                                                  "authorization": "Bearer " + self.key})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                # the deployment LiteLLM chose first: its model_info.id, the host's name
                self.served.append(response.headers.get("x-litellm-model-id"))
                if not stream:
                    answer = json.loads(response.read())
                    return "ok" if answer["choices"][0].get("finish_reason") else "no finish_reason"
                finished, done = False, False
                # read() raises IncompleteRead on a chunked body cut short (line iteration would not)
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

    def run(self, index):
        count = index
        while not self.stop.is_set():
            stream = count % 3 != 2
            begun = time.monotonic()
            outcome = self.one(stream)
            # (kind, outcome, sent, answered) on the monotonic clock
            self.outcomes.append(("stream" if stream else "whole", outcome, begun, time.monotonic()))
            count += 1

    def __enter__(self):
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(CLIENTS)]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=150)

    def losses(self):
        return [outcome for outcome in self.outcomes if outcome[1] != "ok"]


def roll(inventory, key, max_num_seqs, *extra):
    """site.yml rolling a changed profile (max-num-seqs) across both hosts while the clients run."""
    overrides = json.dumps({"server_profile_overrides": {"args": {"host": "127.0.0.1", "max-num-seqs": max_num_seqs}}})
    before = {host: labkit.container(host)["id"] for host in HOSTS}
    with Clients(key) as clients:
        time.sleep(3)
        result = labkit.playbook(inventory, "site.yml", "-e", "inferops_serial=1", "-e", overrides, *extra)
        clients.played = time.monotonic()
        time.sleep(3)
    assert all(labkit.container(host)["id"] != before[host] for host in HOSTS), "site.yml replaced no container"
    return clients, result.stdout


def wait_for_cooldown(clients):
    """Until the router's cooldowns from ``clients``' roll are over: every failure of a deployment
    (those the router retried on the other host too, which the clients never saw) happened before
    the playbook ended, and cools it down for COOLDOWN s from then."""
    time.sleep(max(0.0, clients.played + COOLDOWN + 1 - time.monotonic()))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    for host in (*HOSTS, GATEWAY_HOST):
        labkit.run([labkit.DOCKER, "rm", "-f", "-v", host], check=False)
    inventory = write_inventory(str(tmp_path_factory.mktemp("drain-inventory")))
    try:
        labkit.playbook(inventory, os.path.join(labkit.LAB, "fleet.yml"))
        # The engines as before issue 22: no graceful shutdown (the first roll stops these).
        labkit.playbook(inventory, "site.yml", "-e", "server_shutdown_timeout=0")
        yield inventory
    finally:
        for host in (*HOSTS, GATEWAY_HOST):
            labkit.run([labkit.DOCKER, "rm", "-f", "-v", host], check=False)


@pytest.fixture(scope="module")
def rolls(fleet):
    key = master_key()
    undrained, _output = roll(fleet, key, 16, "-e", "gateway_drain=false", "-e", "server_shutdown_timeout=0")
    # The failures just seen cooled both deployments down in the router (gateway_cooldown_time).
    wait_for_cooldown(undrained)
    drained, output = roll(fleet, key, 8)
    return {"undrained": undrained, "drained": drained, "output": output, "inventory": fleet}


def test_without_the_drain_the_roll_loses_requests(rolls):
    clients = rolls["undrained"]
    assert len(clients.outcomes) > 20, clients.outcomes
    print("without the drain: %d requests, %d lost: %s"
          % (len(clients.outcomes), len(clients.losses()), sorted({o[1][:60] for o in clients.losses()})))
    assert clients.losses(), "no loss seen without the drain: the test cannot tell the drain works"


def test_with_the_drain_the_roll_loses_nothing(rolls):
    clients = rolls["drained"]
    assert len(clients.outcomes) > 20, clients.outcomes
    streamed = [outcome for outcome in clients.outcomes if outcome[0] == "stream"]
    assert streamed and len(streamed) < len(clients.outcomes)
    assert set(clients.served) >= set(HOSTS), clients.served  # both hosts answered during the roll
    assert clients.losses() == [], clients.losses()


def test_the_roll_drained_each_host_and_put_it_back(rolls):
    recap = labkit.recap(rolls["output"])
    assert all(recap[host]["failed"] == 0 for host in HOSTS), recap
    assert rolls["output"].count("TASK [inferops.serving.routing : Take the host out of the gateway's routing]") == 2
    state = labkit.exec_on(GATEWAY_HOST, "cat /var/lib/inferops-gateway/drained.json").stdout
    assert json.loads(state) == {"hosts": {}}
    routing = json.loads(labkit.exec_on(GATEWAY_HOST, "cat /var/lib/inferops-gateway/routing.json").stdout)
    assert routing == {"groups": {MODEL: sorted(HOSTS)}}
    # The new engines stop gracefully: vLLM's --shutdown-timeout, Docker's stop timeout longer.
    for host in HOSTS:
        inspect = labkit.exec_on(host, "docker inspect -f '{{json .Config.Cmd}} {{.Config.StopTimeout}}' "
                                       "inferops-serving").stdout
        argv, stop_timeout = inspect.rsplit(" ", 1)
        argv = json.loads(argv)
        assert argv[argv.index("--shutdown-timeout") + 1] == "60" and int(stop_timeout) == 90, inspect


def test_the_last_host_in_routing_is_not_stopped_without_gateway_allow_outage(rolls):
    """One host drained by hand (as an earlier failed run would leave it): rolling the other is an outage."""
    inventory = rolls["inventory"]
    labkit.exec_on(GATEWAY_HOST, "printf '%s' '{\"hosts\": {\"drain-spark-2\": {\"since\": \"x\", \"by\": \"test\"}}}' "
                                 "> /var/lib/inferops-gateway/drained.json")
    try:
        before = labkit.container("drain-spark-1")["id"]
        overrides = json.dumps({"server_profile_overrides": {"args": {"host": "127.0.0.1", "max-num-seqs": 4}}})
        result = labkit.playbook(inventory, "playbooks/serving.yml", "-l", "drain-spark-1", "-e", overrides, check=False)
        text = labkit.folded(result.stdout)
        assert result.returncode != 0
        assert ("model group %s has no other host in routing than drain-spark-1" % MODEL) in text, text[-3000:]
        assert "gateway_allow_outage: true" in text
        assert labkit.container("drain-spark-1")["id"] == before  # nothing changed
        assert "drain-spark-1" not in labkit.exec_on(GATEWAY_HOST,
                                                     "cat /var/lib/inferops-gateway/drained.json").stdout
    finally:
        labkit.exec_on(GATEWAY_HOST, "printf '%s' '{\"hosts\": {}}' > /var/lib/inferops-gateway/drained.json")


def engine_back(host):
    """The host's engine serving again after a kill (Docker's on-failure policy or the watchdog start it)."""
    if not labkit.serving(HOSTS[host], timeout=45):
        labkit.exec_on(host, "docker start inferops-serving")
        assert labkit.serving(HOSTS[host], timeout=90), "%s's engine did not come back" % host


def test_requests_after_an_engine_is_killed_reach_the_other_host(fleet):
    """SIGKILL of drain-spark-1's engine: losses only among the requests in flight on it at that moment."""
    with Clients(master_key()) as clients:
        # Both hosts in the router's rotation before the kill: the roll before this test may leave
        # one cooling down (COOLDOWN) or marked unhealthy until the router's next health check
        # (HEALTH_CHECK_INTERVAL), and a kill then leaves the group no host (LiteLLM's 429). A CI
        # run on the loaded 2-core machine had every request after the kill answered 429 so.
        deadline = time.monotonic() + COOLDOWN + HEALTH_CHECK_INTERVAL + 15
        while not set(HOSTS) <= set(clients.served[-4 * CLIENTS:]) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert set(HOSTS) <= set(clients.served[-4 * CLIENTS:]), clients.served[-4 * CLIENTS:]
        before = time.monotonic()
        labkit.exec_on("drain-spark-1", "docker kill inferops-serving")
        after = time.monotonic()
        time.sleep(15)
    try:
        later = [outcome for outcome in clients.outcomes if outcome[2] > after]
        in_flight = [outcome for outcome in clients.outcomes if outcome[2] < after and outcome[3] > before]
        lost_in_flight = [outcome for outcome in in_flight if outcome[1] != "ok"]
        print("killed engine: %d requests in flight (%d lost: %s), %d sent after the kill"
              % (len(in_flight), len(lost_in_flight), [o[:2] for o in lost_in_flight], len(later)))
        assert len(later) > 10, clients.outcomes
        assert [outcome for outcome in later if outcome[1] != "ok"] == []
        # Nothing but the requests in flight at the kill may be lost, and only streams.
        assert set(clients.losses()) <= set(lost_in_flight), clients.losses()
        assert all(outcome[0] == "stream" for outcome in lost_in_flight), lost_in_flight
        assert len(lost_in_flight) <= CLIENTS
    finally:
        engine_back("drain-spark-1")


def test_a_group_without_a_host_in_routing_gets_a_clear_error_at_once(fleet):
    """Both hosts drained: 503 naming the group (roles/gateway/files/inferops_drain.py), within a bound."""
    drained = json.dumps({"hosts": {host: {"since": "x", "by": "test"} for host in HOSTS}})
    labkit.exec_on(GATEWAY_HOST, "printf '%%s' '%s' > /var/lib/inferops-gateway/drained.json" % drained)
    clients = Clients(master_key())
    try:
        answers = []
        for stream in (False, True, False, True):
            begun = time.monotonic()
            answers.append((clients.one(stream), time.monotonic() - begun))
    finally:
        labkit.exec_on(GATEWAY_HOST, "printf '%s' '{\"hosts\": {}}' > /var/lib/inferops-gateway/drained.json")
    assert [answer for answer, _seconds in answers] == ["HTTP 503"] * 4, answers
    assert max(seconds for _answer, seconds in answers) < 10, answers


def test_a_watchdog_restart_of_one_host_loses_nothing(fleet):
    """drain-spark-1 made slow (the simulator's slow_decode fault, from its 10th request): the
    watchdog restarts it for ``slow``, stopping it with vLLM's graceful shutdown."""
    key = master_key()
    overrides = json.dumps({
        "server_profile_overrides": {"args": {"host": "127.0.0.1", "max-num-seqs": 8},
                                     "env": {"ENGINE_SIM_FAULT": "slow_decode",
                                             "ENGINE_SIM_FAULT_AFTER_REQUESTS": "10"}},
        "watchdog_interval": 5, "watchdog_probe_deadline": 3, "watchdog_slow_window": 10,
        "watchdog_slow_floor": 16})
    labkit.playbook(fleet, "site.yml", "-l", "drain-spark-1", "-e", overrides)
    labkit.reset_watchdog("drain-spark-1")

    def restarted():
        out = labkit.exec_on("drain-spark-1", "cat %s" % labkit.WATCHDOG_STATE, check=False).stdout
        state = json.loads(out) if out.strip() else {}
        return [a for a in state.get("actions", []) if a.get("kind") == "restart" and a.get("result") == "started"]

    with Clients(key) as clients:
        deadline = time.monotonic() + 180
        while not restarted() and time.monotonic() < deadline:
            time.sleep(2)
        actions = restarted()
        if actions:
            assert labkit.serving(HOSTS["drain-spark-1"], timeout=60)
            time.sleep(10)
    assert actions, "the watchdog did not restart the slow engine within 180 s"
    assert actions[0]["outcome"] == "slow", actions
    logs = labkit.exec_on("drain-spark-1", "docker logs inferops-serving 2>&1").stdout
    assert "Shutdown initiated (timeout=60)" in logs and "Shutdown complete" in logs, logs[-2000:]
    assert len(clients.outcomes) > 20, clients.outcomes
    assert clients.losses() == [], clients.losses()
