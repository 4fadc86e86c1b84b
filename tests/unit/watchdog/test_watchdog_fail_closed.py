# SPDX-License-Identifier: GPL-3.0-or-later
"""The watchdog fails closed (issue 25): its restart budget survives a full disk, bad files do not
crash it, a probe ends by its deadline and reads a bounded answer, its clocks do not jump."""
from __future__ import annotations

import errno
import http.client
import io
import json
import os
import re
import socket
import socketserver
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest
from test_watchdog_io import NOW, Clock, FakeHost
from watchdog_program import PROGRAM, base_config, load_program

HOUR = 3600.0
RESTART_SEC = 10  # the unit's RestartSec


@pytest.fixture(scope="module")
def wd():
    return load_program()


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs: stands for the state directory's disk; ``fill()`` leaves no byte free, so
    writes fail with ENOSPC as on a full disk (mounting needs root: skipped without it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    ran = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)],
                         capture_output=True, text=True, check=False)
    if ran.returncode:
        pytest.skip("cannot mount a small tmpfs here: %s" % ran.stderr.strip())

    def fill():
        handle = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                os.write(handle, b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(handle)
    try:
        yield mount, fill
    finally:
        subprocess.run(["umount", str(mount)], check=False)


class Over(Exception):
    """The simulated hour is over."""


def systemd_for_an_hour(wd, cfg, host, clock, on_tick=None):
    """Stands for systemd running the unit (Restart=on-failure, RestartSec=10) for one simulated
    hour: the program's real loop (run) from a fresh load of its state file, restarted 10 s after
    it dies. Returns how many times it died and the journal it wrote."""
    end = clock.now + HOUR
    out = io.StringIO()

    def sleep(seconds):
        clock.sleep(seconds)
        if on_tick:
            on_tick()
        if clock.now >= end:
            raise Over()

    deaths = 0
    while clock.now < end:
        try:
            wd.run(host, cfg, wd.load_state(cfg), clock=clock, monotonic=clock, sleep=sleep, out=out)
        except Over:
            break
        except Exception:  # what systemd sees as a failure: it starts the program again
            deaths += 1
            clock.sleep(RESTART_SEC)
    return deaths, [json.loads(line) for line in out.getvalue().splitlines()]


def crashing(wd, tmp_path, disk, budget=3):
    clock = Clock()
    cfg = wd.load_config(base_config(state_file=str(disk / "state" / "watchdog.json"),
                                     textfile=str(tmp_path / "watchdog.prom"), unified_memory=False,
                                     restart_budget=budget, startup_grace=0, interval=30))
    return cfg, FakeHost(clock, "crashing"), clock


def restarts(host):
    return [verb for verb, dummy in host.calls if verb in ("restart", "start", "stop")]


def test_a_full_disk_never_lets_it_restart_past_its_budget(wd, tmp_path, small_disk):
    disk, fill = small_disk
    fill()
    cfg, host, clock = crashing(wd, tmp_path, disk)
    deaths, journal = systemd_for_an_hour(wd, cfg, host, clock)
    assert deaths == 0
    assert len(restarts(host)) <= 3, "%d restarts in an hour with a budget of 3" % len(restarts(host))
    assert restarts(host) == [], "a restart it cannot record is one it must not make"
    refused = [line for line in journal if line.get("action") == "refused"]
    assert refused and refused[0]["level"] == "error" and "No space left on device" in refused[0]["action_reason"]
    with open(cfg["textfile"], encoding="utf-8") as handle:
        assert 'inferops_watchdog_state_write_failed{container="inferops-serving"} 1' in handle.read()


def test_a_disk_that_fills_after_a_restart_keeps_the_restart_counted(wd, tmp_path, small_disk):
    disk, fill = small_disk
    cfg, host, clock = crashing(wd, tmp_path, disk)

    def fill_after_the_first_restart():
        if restarts(host) and not os.path.exists(disk / "filler"):
            fill()
    deaths, journal = systemd_for_an_hour(wd, cfg, host, clock, fill_after_the_first_restart)
    assert deaths == 0 and restarts(host) == ["restart"]
    assert any(line.get("action") == "refused" for line in journal)


def test_with_room_on_disk_the_budget_holds_across_program_restarts(wd, tmp_path, small_disk):
    disk, dummy = small_disk
    cfg, host, clock = crashing(wd, tmp_path, disk)
    deaths, journal = systemd_for_an_hour(wd, cfg, host, clock)
    assert deaths == 0 and restarts(host) == ["restart"] * 3
    assert [line.get("action") for line in journal].count("give_up") == 1
    assert not [line for line in journal if line.get("level") == "error"]
    assert os.stat(cfg["state_file"]).st_mode & 0o777 == 0o600


# ------------------------------------------------------------ a deadline and a size per probe
class Trickle(socketserver.ThreadingTCPServer):
    """Stands for an engine's API server that answers slowly on purpose: /health sends its
    headers, then one byte every 0.25 s for 6 s; /metrics sends 9 MiB of samples."""
    daemon_threads = True
    allow_reuse_address = True


class TrickleHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        if self.path == "/metrics":
            line = b'vllm:generation_tokens_total{engine="0",model_name="m"} 1.0\n'
            count = (9 << 20) // len(line) + 1
            self.send_header("Content-Length", str(len(line) * count))
            self.end_headers()
            for dummy in range(count // 1024 + 1):
                try:
                    self.wfile.write(line * 1024)
                except OSError:
                    return
            return
        self.send_header("Content-Length", "24")
        self.end_headers()
        for dummy in range(24):
            try:
                self.wfile.write(b"x")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.25)


@pytest.fixture
def slow_engine():
    server = Trickle(("127.0.0.1", 0), TrickleHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_trickling_health_ends_at_the_probes_deadline(wd, slow_engine):
    host = wd.Host(wd.load_config(base_config()))
    started = time.monotonic()
    with pytest.raises(socket.timeout):
        host.http("GET", slow_engine + "/health", timeout=1.0)
    assert time.monotonic() - started < 1.5, "held past its 1 s deadline by a byte every 0.25 s"


def test_a_huge_metrics_answer_is_not_read_whole(wd, slow_engine):
    host = wd.Host(wd.load_config(base_config()))
    with pytest.raises(http.client.HTTPException, match="answered more than 8388608 bytes"):
        host.http("GET", slow_engine + "/metrics", timeout=10.0)


# --------------------------------------------------------------------------- clocks that jump
class JumpClock(Clock):
    """Wall-clock time that an operator (or NTP) can move; monotonic time only moves forward."""

    def __init__(self):
        Clock.__init__(self)
        self.offset = 0.0

    def wall(self):
        return self.now + self.offset


class LoadingHost(FakeHost):
    """Stands for a container whose engine loads its weights: running, /health refused."""

    def http(self, method, url, body=None, timeout=5.0):
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_wall_clock_jump_forward_does_not_restart_a_loading_engine(wd, tmp_path):
    clock = JumpClock()
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state.json"), startup_grace=1800,
                                     unified_memory=False))
    host = LoadingHost(clock, "healthy")
    host.started = clock.now - 60
    state = wd.tick(host, cfg, wd.new_state(cfg), clock.wall, clock.sleep, io.StringIO(), monotonic=clock)
    assert state["outcome"] == "starting"
    clock.sleep(30)
    clock.offset = 2 * HOUR  # the wall clock jumps two hours forward
    state = wd.tick(host, cfg, state, clock.wall, clock.sleep, io.StringIO(), monotonic=clock)
    assert state["outcome"] == "starting", state["reason"]
    assert not restarts(host)


def test_a_wall_clock_jump_backward_does_not_freeze_the_budget(wd, tmp_path):
    clock = JumpClock()
    cfg, host, dummy = crashing(wd, tmp_path, tmp_path)
    host.clock = clock
    state = wd.new_state(cfg)
    for dummy in range(8):
        state = wd.tick(host, cfg, state, clock.wall, clock.sleep, io.StringIO(), monotonic=clock)
        clock.sleep(30)
    assert restarts(host) == ["restart"] * 3 and state["gave_up"]
    # An operator starts the engine again; the wall clock is then set back a day.
    state["gave_up"] = None
    clock.sleep(HOUR)
    clock.offset = -24 * HOUR
    assert wd.budget_left(state["actions"], 3, {"t": clock.wall(), "m": clock()}) == 3


# ------------------------------------------------------------------------- files of bad shape
@pytest.mark.parametrize("text", ["[1, 2, 3]", "[" * 100000 + "]" * 100000, '{"version": 1, "container": '
                                  '"inferops-serving", "records": {}, "actions": []}', "not json"])
def test_a_state_file_of_the_wrong_shape_is_a_fresh_start_with_a_warning(wd, tmp_path, text):
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state.json")))
    (tmp_path / "state.json").write_text(text, encoding="utf-8")
    out = io.StringIO()
    state = wd.load_state(cfg, "boot", out)
    assert state["records"] == [] and state["status"] == "unknown"
    warning = json.loads(out.getvalue())
    assert warning["level"] == "warning" and "state file ignored" in warning["message"]


def test_a_deeply_nested_config_is_refused_not_crashed_on(wd, tmp_path, capsys):
    (tmp_path / "watchdog.json").write_text('{"a": ' * 100000 + "1" + "}" * 100000, encoding="utf-8")
    assert wd.main(["--config", str(tmp_path / "watchdog.json")]) == 2
    assert "RecursionError" in capsys.readouterr().err


def test_monotonic_times_of_another_boot_are_dropped(wd, tmp_path):
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state.json")))
    state = dict(wd.new_state(cfg), boot="old", actions=[{"t": 1.0, "m": 5.0, "kind": "restart"}])
    (tmp_path / "state.json").write_text(json.dumps(state), encoding="utf-8")
    assert wd.load_state(cfg, "old")["actions"][0]["m"] == 5.0
    assert "m" not in wd.load_state(cfg, "new")["actions"][0]


# ------------------------------------------------------------------------------ sd_notify
def test_systemd_hears_ready_then_a_heartbeat_per_tick_and_while_waiting(wd, tmp_path, monkeypatch):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify"))
    listener.settimeout(1)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    clock = Clock()
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state.json"), unified_memory=False))
    host = FakeHost(clock, "healthy")
    ticks = []

    def sleep(seconds):
        clock.sleep(seconds)
        ticks.append(seconds)
        if len(ticks) == 3:
            raise Over()
    with pytest.raises(Over):
        wd.run(host, cfg, wd.new_state(cfg), clock=clock, monotonic=clock, sleep=sleep, out=io.StringIO())
    heard = [listener.recv(100).decode() for dummy in range(4)]
    assert heard == ["READY=1", "WATCHDOG=1", "WATCHDOG=1", "WATCHDOG=1"]
    assert ticks == [15.0, 15.0, 15.0], "no wait between two heartbeats is longer than NOTIFY_EVERY"
    listener.close()
    monkeypatch.setenv("NOTIFY_SOCKET", "@inferops-test-%d" % os.getpid())
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    abstract.bind("\0inferops-test-%d" % os.getpid())
    assert wd.sd_notify("WATCHDOG=1") and abstract.recv(100) == b"WATCHDOG=1"
    abstract.close()
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert wd.sd_notify("READY=1") is False


def unit_watchdog_usec():
    """The unit's WatchdogSec= as systemd hands it to the program ($WATCHDOG_USEC)."""
    with open(os.path.join(os.path.dirname(PROGRAM), "..", "templates", "etc", "systemd", "system",
                           "inferops-watchdog@.service.j2"), encoding="utf-8") as handle:
        minutes = re.search(r"^WatchdogSec=(\d+)min$", handle.read(), re.M).group(1)
    return str(int(minutes) * 60 * 1000000)


@pytest.mark.parametrize("changes", [{"probe_deadline": 400, "interval": 600}, {}],
                         ids=["long probe deadline", "defaults"])
def test_no_tick_is_silent_longer_than_systemds_watchdog_allows(wd, tmp_path, monkeypatch, changes):
    """A wedged engine's probe takes its whole deadline and its restart a Docker call; with a long
    deadline (or graceful stop) a tick outlasted the unit's WatchdogSec=5min without a heartbeat,
    so systemd killed the program in the middle of it, every time, and the engine was never
    restarted. The program's real loop, each blocking call of a FakeHost taking its deadline."""
    monkeypatch.setenv("WATCHDOG_USEC", unit_watchdog_usec())
    clock = Clock()
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state.json"), unified_memory=False,
                                     startup_grace=0, **changes))
    host = FakeHost(clock, "wedged")

    def restart_taking_its_time(verb, timeout=None):
        clock.sleep(cfg.get("docker_timeout", 30) + (timeout or 0))  # the Docker client's timeout, then the stop
        FakeHost.lifecycle(host, verb, timeout)
    host.lifecycle = restart_taking_its_time
    heard = []
    notify = wd.sd_notify
    monkeypatch.setattr(wd, "sd_notify",
                        lambda message, env=None: heard.append((clock.now, message)) or notify(message, env))

    def sleep(seconds):
        clock.sleep(seconds)
        if clock.now > NOW + 3 * HOUR:
            raise Over()
    with pytest.raises(Over):
        wd.run(host, cfg, wd.new_state(cfg), clock=clock, monotonic=clock, sleep=sleep, out=io.StringIO())
    assert any(verb == "restart" for verb, dummy in host.calls), "the wedged engine was never restarted"
    allowed = int(unit_watchdog_usec())
    for (at, message), (later, dummy) in zip(heard, heard[1:]):
        if message.startswith("WATCHDOG_USEC="):
            allowed = int(message.split("=")[1])
        assert (later - at) * 1000000 < allowed, "%.0f s without a heartbeat, systemd allows %.0f s" % (
            later - at, allowed / 1e6)


def test_a_long_graceful_stop_lengthens_the_watchdog_timeout_too(wd):
    """A slow engine is stopped gracefully (stop_timeout: the plan's shutdown timeout, up to an hour
    and Docker's margin): the Docker call waits that long without a heartbeat."""
    cfg = wd.load_config(base_config(stop_timeout=630))
    assert wd.longest_silence(cfg) >= 630 + cfg["docker_timeout"] + cfg["probe_deadline"]
    assert wd.watchdog_usec(cfg, {"WATCHDOG_USEC": unit_watchdog_usec()}) == 2 * wd.longest_silence(cfg) * 1000000
    assert wd.watchdog_usec(cfg, {"WATCHDOG_USEC": str(10 ** 10)}) is None, "a longer WatchdogSec is kept"
    assert wd.watchdog_usec(cfg, {}) is None, "no watchdog (not run by systemd): nothing to tell"


# ------------------------------------------------------------------------------ its files
def test_the_state_file_is_private_and_keeps_log_tails_only_for_the_hour(wd, tmp_path):
    cfg = wd.load_config(base_config(state_file=str(tmp_path / "state" / "watchdog.json"), unified_memory=False,
                                     restart_budget=10, startup_grace=0))
    clock = Clock()
    host = FakeHost(clock, "crashing")
    host.log_tail = lambda lines: ["x" * 100000, "CUDA error: misaligned address"]
    state = wd.tick(host, cfg, wd.new_state(cfg), clock, clock.sleep, io.StringIO(), monotonic=clock)
    assert os.stat(cfg["state_file"]).st_mode & 0o777 == 0o600
    first = state["actions"][0]["evidence"]["log_tail"]
    assert first[1] == "CUDA error: misaligned address" and len(first[0]) == wd.LOG_LINE
    clock.sleep(2 * HOUR)
    state = wd.tick(host, cfg, state, clock, clock.sleep, io.StringIO(), monotonic=clock)
    with open(cfg["state_file"], encoding="utf-8") as handle:
        saved = json.load(handle)
    assert [("log_tail" in a["evidence"]) for a in saved["actions"]] == [False, True]
    assert saved["actions"][0]["evidence"]["probe"], "the rest of the evidence stays"
