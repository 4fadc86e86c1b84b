#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""Downtime of one host during a swap, minus the engine's own start-up time (issue 5; not a test).

Converges one serving host (the server role of site.yml) with one changed engine arg, so the
container is replaced, while polling its /health every 50 ms. The unavailable interval is the
time from the first failed poll to the next successful one. The engine's start-up time is read
from the new container itself: StartedAt to the Docker timestamp of the engine's "ready" log line.
What remains is the rollout's overhead (the old engine's stop and the new container's start; the
new container is created while the old one serves): target < 2 s.

    sudo .venv/bin/python benchmarks/rollout_swap_bench.py -i <inventory> --host lab-spark --port 8101 [--runs 3]

Needs a converged lab host (make site; the lab tests' shared Sparks of tests/lab/conftest.py last only as long as a pytest session).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKER = "/usr/bin/docker"
READY_LINES = ("Application startup complete", "The server is fired up and ready to roll")


def parse_time(stamp):
    """A Docker RFC 3339 timestamp (nanoseconds) as epoch seconds."""
    stamp = stamp.strip().replace("Z", "+00:00")
    main, _sep, rest = stamp.partition(".")
    fraction, _sep2, zone = rest.partition("+")
    moment = datetime.datetime.fromisoformat(main + "+" + (zone or "00:00"))
    return moment.timestamp() + float("0." + (fraction or "0"))


class Poller(threading.Thread):
    """Polls /health every interval; records (time, ok)."""

    def __init__(self, port, interval=0.05):
        super().__init__(daemon=True)
        self.url = "http://127.0.0.1:%d/health" % port
        self.interval = interval
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            started = time.time()
            try:
                with urllib.request.urlopen(self.url, timeout=1) as response:
                    ok = response.status == 200
            except (urllib.error.URLError, OSError):
                ok = False
            self.samples.append((started, ok))
            self.stop.wait(max(0.0, self.interval - (time.time() - started)))

    def outage(self):
        """(first failed poll, next successful poll) of the longest outage, or None."""
        best, down = None, None
        for moment, ok in self.samples:
            if not ok and down is None:
                down = moment
            elif ok and down is not None:
                if best is None or moment - down > best[1] - best[0]:
                    best = (down, moment)
                down = None
        return best


def on_host(host, *argv):
    result = subprocess.run([DOCKER, "exec", host, *argv], capture_output=True, text=True, check=True)
    return result.stdout


def engine_startup(host, container):
    """Seconds from the container's start to the engine's ready line, from Docker's own timestamps."""
    state = json.loads(on_host(host, "docker", "inspect", container))[0]["State"]
    started = parse_time(state["StartedAt"])
    logs = subprocess.run([DOCKER, "exec", host, "docker", "logs", "--timestamps", container],
                          capture_output=True, text=True, check=True)
    for line in (logs.stdout + logs.stderr).splitlines():
        if any(marker in line for marker in READY_LINES):
            return parse_time(line.split(" ", 1)[0]) - started
    raise RuntimeError("no ready line in the log of %s on %s" % (container, host))


def converge(inventory, host, overrides):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               PATH=os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ["PATH"])
    subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", inventory, "site.yml",
                    "-l", host, "-t", "server", "-e", json.dumps({"server_profile_overrides": overrides})],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-i", "--inventory", default="inventories/lab")
    parser.add_argument("--host", default="lab-spark")
    parser.add_argument("--port", type=int, default=8101)
    parser.add_argument("--container", default="inferops-serving")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--flag", default="max-cudagraph-capture-size", help="engine arg changed between runs")
    parser.add_argument("--values", default="120,128", help="values the arg alternates between")
    parser.add_argument("--base-args", default='{"host": "127.0.0.1"}', help="the host's other arg overrides (JSON)")
    options = parser.parse_args()
    values = options.values.split(",")
    print("run  downtime_s  engine_startup_s  overhead_s")
    overheads = []
    for run in range(options.runs):
        args = dict(json.loads(options.base_args), **{options.flag: int(values[run % len(values)])})
        poller = Poller(options.port)
        poller.start()
        converge(options.inventory, options.host, {"args": args})
        time.sleep(0.5)
        poller.stop.set()
        poller.join()
        outage = poller.outage()
        if outage is None:
            print("%3d  no outage seen (the container was not replaced?)" % (run + 1))
            continue
        downtime = outage[1] - outage[0]
        startup = engine_startup(options.host, options.container)
        overheads.append(downtime - startup)
        print("%3d  %10.2f  %16.2f  %10.2f" % (run + 1, downtime, startup, downtime - startup))
    if overheads:
        print("overhead: mean %.2f s, max %.2f s (target < 2 s)" % (sum(overheads) / len(overheads), max(overheads)))


if __name__ == "__main__":
    main()
