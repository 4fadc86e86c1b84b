# SPDX-License-Identifier: GPL-3.0-or-later
"""The systemd starts after a converge wrote its files: the start-with-Docker unit (the server
role's tasks/persist.yml) and the watchdog (the watchdog role's tasks/install.yml), each from what
its own host_files task changed, as Ansible templates the real tasks. A converge that changes
nothing starts both without a reload; a changed unit file reloads systemd; the watchdog restarts
for its program, configuration or unit, never for its data directories; in check mode a unit
whose file is not written yet is not started."""
from __future__ import annotations

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader

try:
    from ansible.template import Templar, trust_as_template
except ImportError:  # ansible-core < 2.19 has no trust API nor Templar.evaluate_conditional
    pytest.skip("templates the tasks with ansible-core 2.19's Templar API; the pinned core runs it",
                allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SERVING_UNIT = "/etc/systemd/system/inferops-serving@.service"
WATCHDOG_UNIT = "/etc/systemd/system/inferops-watchdog@.service"
DEPLOYMENT = {"serving_unit": {"path": SERVING_UNIT, "service": "inferops-serving@inferops-serving.service"},
              "watchdog": {"service": "inferops-watchdog@inferops-serving.service", "unit_file": WATCHDOG_UNIT,
                           "data_dirs": ["/var/lib/inferops-serving", "/var/lib/node_exporter"]}}


def task(*path, name):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as handle:
        return next(t for t in yaml.safe_load(handle) if t["name"] == name)


def start(the_task, variables):
    """The task's systemd_service arguments as Ansible templates them, or None when its condition is false."""
    templar = Templar(loader=DataLoader(), variables=dict(variables, server_deployment=DEPLOYMENT))
    when = the_task.get("when") or []
    for condition in when if isinstance(when, list) else [when]:
        if not templar.evaluate_conditional(trust_as_template(condition)):
            return None
    args = the_task["ansible.builtin.systemd_service"]
    return {key: templar.template(trust_as_template(args[key]) if isinstance(args[key], str) else args[key])
            for key in ("name", "state", "daemon_reload")}


def serving(written, check_mode=False, persist=True):
    variables = {"ansible_check_mode": check_mode, "__server_persist": persist}
    if written is not None:
        variables["__server_files"] = written
    return start(task("roles", "server", "tasks", "persist.yml", name="Start the container whenever Docker starts"),
                 variables)


def watchdog(written, check_mode=False):
    return start(task("roles", "watchdog", "tasks", "install.yml", name="Start the watchdog"),
                 {"ansible_check_mode": check_mode, "__watchdog_files": written})


def files(*paths):
    """A host_files result that changed ``paths``."""
    return {"changed": bool(paths), "changed_paths": list(paths)}


def test_a_converge_that_changed_nothing_starts_both_units_without_a_reload():
    assert serving(files()) == {"name": "inferops-serving@inferops-serving.service", "state": "started",
                                "daemon_reload": False}
    assert watchdog(files()) == {"name": "inferops-watchdog@inferops-serving.service", "state": "started",
                                 "daemon_reload": False}


def test_a_changed_unit_file_reloads_systemd_before_its_start():
    assert watchdog(files(WATCHDOG_UNIT)) == {"name": "inferops-watchdog@inferops-serving.service",
                                              "state": "restarted", "daemon_reload": True}
    assert serving(files(SERVING_UNIT))["daemon_reload"] is True
    assert serving(files("/usr/local/lib/inferops-serving/inferops-serving.sh"))["daemon_reload"] is False


def test_the_watchdog_restarts_for_its_program_or_configuration_not_for_its_data_directories():
    assert watchdog(files("/usr/local/lib/inferops-serving/inferops_watchdog.py"))["state"] == "restarted"
    assert watchdog(files("/etc/inferops-serving/watchdog-inferops-serving.json"))["state"] == "restarted"
    started = watchdog(files("/var/lib/node_exporter"))
    assert started == {"name": "inferops-watchdog@inferops-serving.service", "state": "started", "daemon_reload": False}


def test_units_not_wanted_or_not_written_in_this_run_are_not_started():
    # server_start_with_docker false (or no systemd), or the role's files not written in this run
    # (--tags), or skipped.
    assert serving(files(), persist=False) is None
    assert serving(None) is None
    assert serving({"changed": False, "skipped": True}) is None


def test_check_mode_leaves_out_a_unit_whose_file_is_not_written_yet():
    assert serving(files(SERVING_UNIT), check_mode=True) is None
    assert watchdog(files(WATCHDOG_UNIT), check_mode=True) is None
    assert watchdog(files(), check_mode=True)["state"] == "started"
    assert serving(files(), check_mode=True)["state"] == "started"
