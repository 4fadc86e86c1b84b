# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a play of the roles' own task files on this machine (local connection, no lab) and read
back what happened: the exit code, the output on one line, and a record of each task result
(callbacks/task_record.py: the action, its templated arguments, the status). Used by the tests of
the roles' failure paths (test_role_failure_paths.py, test_gateway_env_file.py); the mutations
they catch are scripts/role-mutations'. (Not a conftest.py: see tests/unit/watchdog/watchdog_program.py.)"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CALLBACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callbacks")
# A host that is this machine.
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}

Run = collections.namedtuple("Run", "code output records")


def run(tmp_path, inventory, plays, *args, timeout=240):
    """ansible-playbook of ``plays`` (a list of plays) over ``inventory`` (a YAML inventory as a
    dict) with ``args``; returns Run(code, output on one line, [task records])."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    record = tmp_path / "tasks.jsonl"
    if record.exists():
        record.unlink()
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
               ANSIBLE_CALLBACKS_ENABLED="inferops.serving.gc_freeze,task_record", INFEROPS_TASK_RECORD=str(record),
               ANSIBLE_RETRY_FILES_ENABLED="0")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([playbook, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), *args],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    records = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    # ansible-core 2.18's callback escapes a message's double quotes (a backslash before each); 2.19 does not.
    return Run(result.returncode, " ".join((result.stdout + result.stderr).split()).replace('\\"', '"'), records)


def server_host(tmp_path, docker_host, profile, **changes):
    """A serving host's variables for the server role on this machine: its container ``engine``
    behind ``docker_host``, every directory the role writes under ``tmp_path`` (a run that goes
    further than the test expects, a mutant's, still writes nothing outside it), no watchdog."""
    host = dict(LOCAL, inferops_become=False, server_profile=profile, server_port=8101, server_container_name="engine",
                server_docker_host=docker_host, server_state_dir=str(tmp_path / "state"),
                server_config_dir=str(tmp_path / "etc"), server_script_dir=str(tmp_path / "lib"),
                server_engine_cache_dir=str(tmp_path / "engine-cache"), server_model_cache_dir=str(tmp_path / "hf"),
                server_watchdog_textfile_dir=str(tmp_path / "textfile"), server_watchdog_enabled=False)
    host.update(changes)
    return host


def collections_path(*first):
    """ANSIBLE_COLLECTIONS_PATH for a test's ansible-playbook: ``first`` (its doubles), the repository's
    link, then the caller's path (the lowest-core check passes the pinned ansible package's there)."""
    return ":".join(filter(None, [*map(str, first), os.path.join(ROOT, ".collections"),
                                  os.environ.get("ANSIBLE_COLLECTIONS_PATH")]))
