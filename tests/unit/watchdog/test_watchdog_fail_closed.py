# SPDX-License-Identifier: GPL-3.0-or-later
"""The watchdog fails closed (issue 25): its restart budget survives a full disk, bad files do not
crash it, a probe ends by its deadline and reads a bounded answer, its clocks do not jump."""
from __future__ import annotations

import errno
import io
import json
import os
import subprocess

import pytest
from test_watchdog_io import FakeHost, Clock, journal_lines  # noqa: F401  (journal_lines for capsys users)
from watchdog_program import base_config, load_program

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
