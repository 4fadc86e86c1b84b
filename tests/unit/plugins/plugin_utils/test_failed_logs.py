# SPDX-License-Identifier: GPL-3.0-or-later
"""Failed-deployment logs (issue 25, finding 8): saved 0600 (they were 0644) and pruned to the
newest server_failed_logs_kept per container (they were never pruned)."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import stale_failed_logs
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RESCUE = os.path.join(ROOT, "roles", "server", "tasks", "rescue.yml")


def _log(container, stamp, directory="/var/lib/inferops-serving"):
    return "%s/failed-%s-%s.log" % (directory, container, stamp)


def test_only_the_newest_logs_of_the_container_stay():
    mine = [_log("inferops-serving", "202612%02dT120000Z" % day) for day in (3, 1, 2, 5, 4)]
    others = [_log("inferops-serving-next", "20261201T000000Z"), "/var/lib/inferops-serving/inferops-serving.json",
              _log("inferops-serving", "latest")]
    assert stale_failed_logs(mine + others, "inferops-serving", 2) == [
        _log("inferops-serving", "202612%02dT120000Z" % day) for day in (1, 2, 3)]
    assert stale_failed_logs(mine, "inferops-serving", 10) == []
    assert stale_failed_logs([], "inferops-serving", 1) == []


@pytest.mark.parametrize("keep", [0, -1, True, "3", None])
def test_a_bad_count_is_refused_naming_the_variable(keep):
    with pytest.raises(ProfileError, match="^server_failed_logs_kept: got .*; expected a whole number >= 1"):
        stale_failed_logs([], "x", keep)


def _task(name):
    with open(RESCUE, encoding="utf-8") as handle:
        return next(task for task in yaml.safe_load(handle) if task.get("name") == name)


def test_the_saved_log_is_0600():
    """The rescue saves the log with inferops.serving.container_log (the Docker Engine API, no
    ``docker`` CLI in a shell), which writes it 0600 whatever the umask
    (tests/unit/plugins/modules/test_container_log.py), with the role's variables."""
    task = _task("Save the failed container's log")
    assert task["inferops.serving.container_log"] == {
        "container": "{{ server_deployment.container }}", "dest": "{{ __server_failed_log }}",
        "lines": "{{ server_failed_log_lines | int }}", "docker_host": "{{ server_docker_host }}",
        "docker_timeout": "{{ server_docker_timeout }}"}
    assert task["failed_when"] is False and task["register"] == "__server_failed_log_saved"
    assert "ansible.builtin.shell" not in open(RESCUE, encoding="utf-8").read()


def test_the_rescue_prunes_with_the_role_variable():
    task = _task("Keep only the newest failure logs (server_failed_logs_kept)")
    assert task["ansible.builtin.file"] == {"path": "{{ item }}", "state": "absent"}
    assert "inferops.serving.stale_failed_logs(server_deployment.container, server_failed_logs_kept)" in task["loop"]
