# SPDX-License-Identifier: GPL-3.0-or-later
"""Readiness in the lab (issue 15): a slow cold start shows its phase and elapsed time at least
every 30 s, a killed controller's re-run resumes the wait without a second container start, and a
start that stops making progress fails naming the phase it was stuck in.

The shared simulated DGX Spark of the readiness and watchdog tests (``labkit.SPARK_3``, made once per session by
the first module needing it: tests/lab/labkit.py), taken with an inventory of this module's own and
converged from it first (``labkit.module_fleet``): that deployment is the canary's last known-good.
The simulator's start-up is slowed with ENGINE_SIM_STARTUP_DELAY (its phase lines spread over it)
and stopped in one phase with ENGINE_SIM_STALL_IN_PHASE (tests/lab/engine_sim/README.md), both in
the profile's env through server_profile_overrides: each test's start is a new deployment (another
spec) on the canary. Tests run in file order: the stuck start rolls back to the module's own
deployment (fast), then the two slow starts. About 15 min when the module built its own two-host
fleet (set-up included); not yet measured on the shared hosts.

What it leaves on the host for the next module's start to undo: the canary serving the
ENGINE_SIM_STARTUP_DELAY=80 deployment, watchdog history (the killed controller's start).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from labkit import ALL_SPARKS, ROOT, SPARK_3, container, exec_on, module_fleet, playbook_env, recap, serving

CANARY = SPARK_3
HOSTS = {CANARY: ALL_SPARKS[CANARY]}

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("spark_3")]  # one pytest-xdist worker: labkit.SPARK_3

STATE = "/var/lib/inferops-serving/inferops-serving.json"
WAIT_TASK = "Assert the backends the engine selected"
# The retry line of a bounded wait as the default callback prints it (YAML result format):
# "FAILED - RETRYING: [host]: <task> (N retries left).Result was: ..." and, in the result, "msg: <phase>, <s> s".
RETRY = re.compile(r"^FAILED - RETRYING: \[(?P<host>[^\]]+)\]: (?P<task>.+) \(\d+ retries left\)")
PROGRESS = re.compile(r"^\s+msg: (?P<phase>[a-z_]+), (?P<elapsed>\d+) s$")


@pytest.fixture(scope="module")
def fleet(spark_3, tmp_path_factory):
    with module_fleet(spark_3, tmp_path_factory, "readiness", HOSTS, restore_tag=False) as inventory:
        yield inventory


def overrides(env):
    return json.dumps({"server_profile_overrides": {"args": {"host": "127.0.0.1"},
                                                    "env": {key: str(value) for key, value in env.items()}}})


def converge_args(inventory, env, *extra):
    return [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", inventory, "site.yml", "-l", CANARY,
            "-e", overrides(env), "-e", "server_ready_timeout=600 server_ready_first_deploy_timeout=600", *extra]


class Converge:
    """site.yml on the canary in the background; every output line with the time it arrived."""

    def __init__(self, inventory, env, *extra):
        self.lines = []
        process_env = playbook_env(PYTHONUNBUFFERED="1")
        # A session of its own: killing it is killing the whole controller (its forks included).
        self.proc = subprocess.Popen(converge_args(inventory, env, *extra), cwd=ROOT, env=process_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)

    def read_until(self, predicate, timeout):
        """Read lines until ``predicate(line)`` or the end of the output; True when it matched."""
        deadline = time.monotonic() + timeout
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))
            if predicate(line):
                return True
            if time.monotonic() > deadline:
                raise AssertionError("no matching line within %s s:\n%s" % (timeout, self.text[-4000:]))
        return False

    def finish(self, timeout=900):
        self.read_until(lambda line: False, timeout)
        return self.proc.wait(timeout=60)

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    @property
    def text(self):
        return "\n".join(line for dummy, line in self.lines)

    def progress(self):
        """``[(arrival time, phase, elapsed)]`` of the wait task's retry lines, in order."""
        found = []
        in_retry = False
        for arrived, line in self.lines:
            retry = RETRY.match(line)
            if retry:
                in_retry = retry.group("task").endswith(WAIT_TASK)
                retry_at = arrived
                continue
            match = PROGRESS.match(line) if in_retry else None
            if match:
                found.append((retry_at, match.group("phase"), int(match.group("elapsed"))))
                in_retry = False
        return found


def task_started_at(run, name):
    return next(arrived for arrived, line in run.lines if line.startswith("TASK [") and name in line)


def test_a_start_stuck_in_a_phase_fails_naming_it(fleet):
    before = container(CANARY)
    run = Converge(fleet, {"ENGINE_SIM_STALL_IN_PHASE": "compile"}, "-e", "server_ready_stall_timeout=60")
    assert run.finish() != 0
    out = run.text
    # the simulator printed "Model loading took ..." and then nothing: stuck in torch.compile/profiling
    assert "the start is stuck in phase compile (torch.compile and the profiling run): no new log line for" in out
    assert "(its stall budget is 60 s)" in out and "server_ready_phase_budgets.compile" in out
    assert "Model loading took" in out  # the last log lines are in the failure
    assert recap(out)[CANARY]["failed"] == 1
    # rescue rolled the host back to the fleet's deployment, serving
    assert "Rolled back to the last known-good" in out
    assert serving(HOSTS[CANARY])
    assert container(CANARY)["image"] == before["image"]


def test_a_slow_cold_start_shows_phase_and_elapsed_every_30_s(fleet):
    run = Converge(fleet, {"ENGINE_SIM_STARTUP_DELAY": 150})
    assert run.finish() == 0, run.text[-6000:]
    progress = run.progress()
    assert len(progress) >= 4, run.text[-6000:]
    begin = task_started_at(run, WAIT_TASK)
    times = [begin] + [arrived for arrived, dummy, dummy2 in progress]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) <= 30, gaps  # a line at least every 30 s (server_ready_wait_chunk 20 + the module's start, seconds under load)
    elapsed = [seconds for dummy, dummy2, seconds in progress]
    assert elapsed == sorted(elapsed) and elapsed[-1] >= 100
    phases = [phase for dummy, phase, dummy2 in progress]
    # the simulator's phase lines, as the engines print them, read by the collection
    assert {"engine_init", "weight_loading"} <= set(phases) and len(set(phases)) >= 3, phases
    assert serving(HOSTS[CANARY])


def test_a_killed_controller_resumes_the_wait_without_a_second_start(fleet):
    run = Converge(fleet, {"ENGINE_SIM_STARTUP_DELAY": 80})
    # the container is started and the wait began (its first progress line): kill the controller
    assert run.read_until(lambda line: RETRY.match(line) and WAIT_TASK in line, timeout=600), run.text[-6000:]
    started = container(CANARY)
    run.kill()
    assert not serving(HOSTS[CANARY], timeout=1)  # still loading

    again = Converge(fleet, {"ENGINE_SIM_STARTUP_DELAY": 80})
    assert again.finish() == 0, again.text[-6000:]
    after = container(CANARY)
    assert (after["id"], after["started"]) == (started["id"], started["started"])  # no second start
    out = again.text
    # the resumed wait followed the same start, and the engine got the whole proof (warm-up included)
    assert "warm-up request 1/" in out and "Smoke-test a completion" in out
    assert re.search(r"ok: \[%s\] => \(item=warm-up request 1/" % re.escape(CANARY), out), out[-6000:]
    state = json.loads(exec_on(CANARY, "cat " + STATE).stdout)
    assert state["last_known_good"]["started_at"] == after["started"]
    assert serving(HOSTS[CANARY])

    # and a converge now finds this start proven: no warm-up again
    third = Converge(fleet, {"ENGINE_SIM_STARTUP_DELAY": 80})
    assert third.finish() == 0, third.text[-6000:]
    assert not re.search(r"ok: \[%s\] => \(item=warm-up request" % re.escape(CANARY), third.text)
    assert container(CANARY)["started"] == after["started"]
