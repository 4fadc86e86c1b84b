# SPDX-License-Identifier: GPL-3.0-or-later
"""The watchdog's I/O: one tick end to end against a fake host (the restart budget, the memory
wait, the evidence), and its Docker Engine API client against a fake daemon on a unix socket."""
from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from watchdog_program import base_config, load_program

NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def wd():
    return load_program()


@pytest.fixture
def config():
    """``config(**changes)``: the configuration the server role writes for the lab's GB10 host."""
    return base_config


# Real vLLM log lines (vllm-project/vllm issue 50934, GB10, Nemotron NVFP4 + Marlin + MTP), as the
# container's log ends when the engine core died.
CRASH_LOG = [
    "(EngineCore pid=198) ERROR 08-03 09:26:14 [dump_input.py:79] Dumping scheduler output for model execution: "
    "SchedulerOutput(scheduled_new_reqs=[], ...)",
    "(EngineCore pid=198) ERROR 08-03 09:26:14 [core.py:1073] torch.AcceleratorError: CUDA error: misaligned address",
]
METRICS = ('vllm:num_requests_running{engine="0",model_name="m"} %s\n'
           'vllm:generation_tokens_total{engine="0",model_name="m"} %s\n')
# The lab's GB10 meminfo shape (tests/lab/toolkit/set-hardware): page cache of 1.5 GiB unless a
# test says otherwise.
GB10_MEMINFO = "MemTotal:       127526272 kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nCached:         %d kB\n"
CACHED = 1524748


class Clock(object):
    """Time that moves only when the watchdog sleeps or waits for an answer."""

    def __init__(self, now=NOW):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class FakeHost(object):
    """Stands for the host: the Docker Engine API (container state, logs, start/stop/restart), the
    engine's HTTP API and /proc/meminfo. ``engine`` is healthy, wedged, dead or crashing."""

    def __init__(self, clock, engine="healthy", meminfo=(123000000,), cached=CACHED):
        self.clock = clock
        self.cached = cached
        self.engine = engine
        self.running = engine != "dead"
        self.started = NOW - 3600
        self.restart_count = 0
        self.meminfo = list(meminfo)
        self.calls = []
        self.tokens = 5000

    def inspect(self):
        return {"exists": True, "id": "c0ffee", "running": self.running, "restarting": False,
                "status": "running" if self.running else "exited", "exit_code": 0 if self.running else 1,
                "oom_killed": False, "started_at": self.started, "restart_count": self.restart_count}

    def http(self, method, url, body=None, timeout=5.0):
        path = urlsplit(url).path
        if path == "/health":
            return 200, ""
        if path == "/metrics":
            running = 2 if self.engine == "wedged" else 0
            return 200, METRICS % (running, self.tokens)
        if self.engine == "wedged":
            self.clock.sleep(timeout)
            raise socket.timeout("timed out")
        if self.engine == "crashing":
            self.running = False
            return 500, json.dumps({"error": {"message": "EngineCore encountered an issue."}})
        self.tokens += 1
        return 200, json.dumps({"usage": {"completion_tokens": 1}})

    def log_tail(self, lines):
        self.calls.append(("logs", lines))
        return CRASH_LOG[-lines:]

    def lifecycle(self, verb, timeout=None):
        self.calls.append((verb, timeout))
        if verb == "stop":
            self.running = False
        else:
            self.running, self.started, self.restart_count = True, self.clock(), 0
            if self.engine == "wedged":
                self.engine = "healthy"

    def read_meminfo(self):
        available = self.meminfo.pop(0) if len(self.meminfo) > 1 else self.meminfo[0]
        return GB10_MEMINFO % (available - self.cached, available, self.cached)

    def drop_caches(self):
        # What dropping the clean page cache does to meminfo: Cached goes back into MemFree.
        self.calls.append(("drop_caches", None))
        self.cached = CACHED


def run_ticks(wd, cfg, host, clock, count, out):
    state = wd.new_state(cfg)
    for dummy in range(count):
        state = wd.tick(host, cfg, state, clock, clock.sleep, out, monotonic=clock)
        clock.sleep(cfg["interval"])
    return state


@pytest.fixture
def setup(wd, config, tmp_path):
    def make(engine="healthy", meminfo=(123000000,), cached=CACHED, **changes):
        clock = Clock()
        cfg = wd.load_config(config(state_file=str(tmp_path / "state.json"), textfile=str(tmp_path / "w.prom"),
                                    **changes))
        return cfg, FakeHost(clock, engine, meminfo, cached), clock
    return make


def journal_lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_healthy_engine_is_left_alone(wd, setup, capsys):
    cfg, host, clock = setup()
    state = run_ticks(wd, cfg, host, clock, 3, None)
    assert state["status"] == "healthy" and state["counters"]["probes"] == 3
    assert host.calls == []
    lines = journal_lines(capsys)
    assert [line["outcome"] for line in lines] == ["healthy"] * 3
    with open(cfg["state_file"], encoding="utf-8") as handle:
        assert json.load(handle)["last_success"] == NOW + 60
    with open(cfg["textfile"], encoding="utf-8") as handle:
        assert 'inferops_watchdog_up{container="inferops-serving"} 1' in handle.read()
    assert sorted(os.listdir(os.path.dirname(cfg["textfile"]))) == ["state.json", "w.prom"]  # no temp files left


def test_wedged_engine_is_restarted_after_the_memory_came_back(wd, setup, capsys):
    # MemAvailable low right after the stop (the old engine's memory still held), then back.
    cfg, host, clock = setup("wedged", meminfo=(10485760, 10485760, 120000000), memory_poll=5)
    state = run_ticks(wd, cfg, host, clock, 1, None)
    assert host.calls == [("logs", 50), ("stop", 5), ("start", None)]  # wedged: the short stop
    action = state["actions"][-1]
    assert action["kind"] == "restart" and action["result"] == "started" and action["outcome"] == "wedged"
    assert {k: action["memory"][k] for k in ("enough", "action", "mem_free_kib", "mem_available_kib", "needed_kib",
                                             "waited_s")} == {
        "enough": True, "action": "start", "mem_free_kib": 120000000 - CACHED, "mem_available_kib": 120000000,
        "needed_kib": 114773644, "waited_s": 10.0}
    assert action["evidence"]["log_tail"] == CRASH_LOG
    assert action["evidence"]["metrics"] == {"vllm:num_requests_running": 2.0, "vllm:generation_tokens_total": 5000.0}
    assert state["counters"] == {"probes": 1, "wedges": 1, "restarts": 1}
    line = journal_lines(capsys)[0]
    assert line["outcome"] == "wedged" and line["action"] == "restart" and line["result"] == "started"
    assert "misaligned address" in line["evidence"]["log_tail"][-1]


def test_memory_that_does_not_come_back_is_never_started_into(wd, setup):
    cfg, host, clock = setup("wedged", meminfo=(10485760,), memory_wait_timeout=30, restart_budget=2)
    state = run_ticks(wd, cfg, host, clock, 4, None)
    assert ("start", None) not in host.calls and ("restart", 30) not in host.calls
    assert [a["result"] for a in state["actions"] if a["kind"] == "restart"] == ["memory_not_back"] * 2
    assert state["actions"][-1]["kind"] == "give_up" and state["status"] == "gave_up"
    assert state["actions"][0]["memory"]["mem_available_kib"] == 10485760


# 70 GiB of page cache (the weights the last load read), MemAvailable 115 GiB: only the cache is in
# the way of the 0.9 share (MemFree 45 GiB).
WEIGHTS_CACHED = 73400320


def test_restart_drops_the_page_cache_when_configured(wd, setup):
    cfg, host, clock = setup("wedged", meminfo=(120586240,), cached=WEIGHTS_CACHED, drop_caches_before_start=True,
                             memory_reads="MemFree")
    state = run_ticks(wd, cfg, host, clock, 1, None)
    assert host.calls == [("logs", 50), ("stop", 5), ("drop_caches", None), ("start", None)]
    action = state["actions"][-1]
    assert action["result"] == "started" and action["dropped_caches"] is True
    assert action["memory"]["action"] == "start" and action["memory"]["waited_s"] == 0


def test_an_engine_reading_memfree_is_not_started_into_page_cache(wd, setup):
    # Waiting does not shrink the page cache: the watchdog says so at once and names the variable.
    cfg, host, clock = setup("wedged", meminfo=(120586240,), cached=WEIGHTS_CACHED, memory_reads="MemFree",
                             restart_budget=1)
    state = run_ticks(wd, cfg, host, clock, 1, None)
    assert ("start", None) not in host.calls and ("drop_caches", None) not in host.calls
    action = [a for a in state["actions"] if a["kind"] == "restart"][0]
    assert action["result"] == "memory_not_back" and action["memory"]["waited_s"] == 0
    assert action["memory"]["action"] == "refuse"
    assert "Set server_drop_caches_before_start: true" in action["memory"]["message"]


def test_an_engine_reading_memavailable_restarts_past_the_page_cache(wd, setup):
    cfg, host, clock = setup("wedged", meminfo=(120586240,), cached=WEIGHTS_CACHED)
    state = run_ticks(wd, cfg, host, clock, 1, None)
    assert host.calls[-1] == ("start", None)
    assert state["actions"][-1]["memory"]["action"] == "start"
    assert "set server_drop_caches_before_start: true" in state["actions"][-1]["memory"]["message"]


def test_host_drop_caches_syncs_and_writes_one(wd, config, tmp_path):
    target = tmp_path / "drop_caches"
    target.write_text("0\n")
    host = wd.Host(wd.load_config(config(drop_caches_file=str(target))))
    host.drop_caches()
    assert target.read_text() == "1\n"


def test_crash_loop_stops_after_the_budget(wd, setup, capsys):
    cfg, host, clock = setup("crashing", unified_memory=False, restart_budget=3, startup_grace=0)
    state = run_ticks(wd, cfg, host, clock, 12, None)
    verbs = [verb for verb, dummy in host.calls if verb != "logs"]
    assert verbs == ["restart"] * 3, "three restarts, then none"
    assert state["status"] == "gave_up" and state["counters"]["restarts"] == 3
    assert "restart budget (3 per hour) is spent" in state["gave_up"]["reason"]
    actions = [line["action"] for line in journal_lines(capsys)]
    assert actions.count("give_up") == 1 and actions[-1] == "hold"
    with open(cfg["textfile"], encoding="utf-8") as handle:
        text = handle.read()
    assert 'inferops_watchdog_gave_up{container="inferops-serving"} 1' in text
    assert 'inferops_watchdog_restart_budget_remaining{container="inferops-serving"} 0' in text


def test_state_survives_a_watchdog_restart(wd, setup):
    cfg, host, clock = setup("crashing", unified_memory=False, restart_budget=1, startup_grace=0)
    run_ticks(wd, cfg, host, clock, 3, None)
    reloaded = wd.load_state(cfg)
    assert reloaded["status"] == "gave_up"
    wd.tick(host, cfg, reloaded, clock, clock.sleep, None, monotonic=clock)
    assert [verb for verb, dummy in host.calls if verb != "logs"] == ["restart"]


# --------------------------------------------------------------- Docker Engine API over a socket
class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeDocker(object):
    """Stands for the Docker daemon: inspect, logs (multiplexed frames), start/stop/restart."""

    def __init__(self):
        self.calls = []
        self.running = True
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status, data=b"", kind="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlsplit(self.path)
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                fake.calls.append(("GET", parts[1], parts[2], parse_qs(url.query)))
                if parts[1] != "inferops-serving":
                    return self._answer(404, b'{"message": "No such container"}')
                if parts[2] == "json":
                    body = {"Id": "4f1c2d3e4b5a69788796a5b4c3d2e1f0", "RestartCount": 2, "State": {
                        "Status": "running" if fake.running else "exited", "Running": fake.running,
                        "Restarting": False, "OOMKilled": False, "ExitCode": 0 if fake.running else 1,
                        "StartedAt": "2026-11-29T15:37:01.123456789Z", "FinishedAt": "0001-01-01T00:00:00Z"}}
                    return self._answer(200, json.dumps(body).encode())
                frames = b"".join(b"%c\0\0\0%s%s" % (1 + i % 2, len(line).to_bytes(4, "big"), line)
                                  for i, line in enumerate(x.encode() + b"\n" for x in CRASH_LOG))
                return self._answer(200, frames, "application/vnd.docker.multiplexed-stream")

            def do_POST(self):
                url = urlsplit(self.path)
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                fake.calls.append(("POST", parts[1], parts[2], parse_qs(url.query)))
                if parts[2] == "stop":
                    was, fake.running = fake.running, False
                    return self._answer(204 if was else 304)
                was, fake.running = fake.running, True
                return self._answer(304 if was and parts[2] == "start" else 204)

        self.handler = Handler


@pytest.fixture
def docker(tmp_path):
    fake = FakeDocker()
    path = str(tmp_path / "docker.sock")
    server = UnixHTTPServer(path, fake.handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield fake, "unix://" + path
    server.shutdown()
    server.server_close()


def test_docker_client_over_the_unix_socket(wd, config, docker):
    fake, docker_host = docker
    host = wd.Host(wd.load_config(config(docker_host=docker_host)))
    found = host.inspect()
    assert found["exists"] and found["running"] and found["restart_count"] == 2 and found["id"] == "4f1c2d3e4b5a"
    assert found["started_at"] == pytest.approx(1795966621.123457)
    assert host.log_tail(2) == CRASH_LOG
    host.lifecycle("restart", 30)
    host.lifecycle("stop", 30)
    host.lifecycle("stop", 30)  # 304: already stopped is fine
    host.lifecycle("start")
    assert [(c[0], c[2], c[3]) for c in fake.calls if c[0] == "POST"] == [
        ("POST", "restart", {"t": ["30"]}), ("POST", "stop", {"t": ["30"]}), ("POST", "stop", {"t": ["30"]}),
        ("POST", "start", {})]
    assert ("GET", "inferops-serving", "logs", {"stdout": ["1"], "stderr": ["1"], "timestamps": ["1"],
                                                "tail": ["2"]}) in fake.calls


def test_docker_client_unknown_container_and_no_daemon(wd, config, docker, tmp_path):
    fake, docker_host = docker
    assert wd.Host(wd.load_config(config(docker_host=docker_host, container="gone"))).inspect() == {"exists": False}
    with pytest.raises(wd.DockerError) as caught:
        wd.Host(wd.load_config(config(docker_host="unix://" + str(tmp_path / "none.sock")))).inspect()
    assert "Docker daemon at unix://" in str(caught.value)


def test_main_refuses_a_bad_config_file(wd, config, tmp_path, capsys):
    path = tmp_path / "watchdog.json"
    path.write_text(json.dumps(config(interval=0)))
    assert wd.main(["--config", str(path)]) == 2
    assert "interval must be > 0, got 0" in capsys.readouterr().err


def test_once_reports_without_acting(wd, setup, capsys):
    cfg, host, clock = setup("wedged")
    state = wd.tick(host, cfg, wd.new_state(cfg), clock, clock.sleep, None, act=False, monotonic=clock)
    assert host.calls == [] and state["status"] == "unhealthy"
    assert not os.path.exists(cfg["state_file"])
    line = journal_lines(capsys)[0]
    assert line["outcome"] == "wedged" and line["would"] == "restart"
