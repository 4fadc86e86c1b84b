# SPDX-License-Identifier: GPL-3.0-or-later
"""What the server role's undeploy entry point removes, decided from the real plan of a shipped
profile with the role's default directories (issue 26): the plan's ``undeploy``, and the shared
files only when no other deployment's launch script is left on the host."""
from __future__ import annotations

import os
import re

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._undeploy import SHARED_PROGRAMS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# The server role's defaults (roles/server/defaults/main.yml) as its plan options.
OPTIONS = {"name": "inferops-serving", "port": 8000, "config_dir": "/etc/inferops-serving",
           "script_dir": "/usr/local/lib/inferops-serving", "state_dir": "/var/lib/inferops-serving",
           "textfile_dir": "/var/lib/node_exporter"}
STATE = "/var/lib/inferops-serving/inferops-serving.json"
SCRIPT = "/usr/local/lib/inferops-serving/inferops-serving.sh"
WATCHDOG = {"interval": 30, "probe_deadline": 20, "probe_max_tokens": 4, "probe_prompt": "What is 2+2?",
            "restart_budget": 3, "startup_grace": 600, "crash_loop_restarts": 2, "crash_loop_window": 600,
            "meminfo_path": "/proc/meminfo", "drop_caches_before_start": False,
            "drop_caches_file": "/proc/sys/vm/drop_caches", "memory_wait_timeout": 300, "slow_floor": None,
            "slow_fraction": 0.3, "slow_window": None, "docker_host": "unix:///var/run/docker.sock", "log_lines": 50}


def removed(deployment, scripts):
    """What roles/server/tasks/undeploy.yml removes: the plan's own files, and the shared ones when
    the scripts found on the host are this deployment's alone (the task's expression, below)."""
    undeploy = deployment["undeploy"]
    others = [path for path in scripts if path != deployment["script_path"]]
    return {"services": undeploy["services"], "containers": undeploy["containers"], "shared": not others,
            "files": undeploy["files"] + (undeploy["shared_files"] if not others else [])}


def paths(result):
    return [entry["path"] for entry in result["files"]]


def test_the_undeploy_task_decides_the_shared_files_as_this_test_does():
    with open(os.path.join(ROOT, "roles", "server", "tasks", "undeploy.yml"), encoding="utf-8") as handle:
        text = handle.read()
    assert "reject('eq', server_deployment.script_path)" in text
    assert "server_deployment.undeploy.files + (server_deployment.undeploy.shared_files" in text


def test_the_hosts_only_deployment_goes_whole():
    deployment = plan("gb10-nvfp4-mtp-throughput", dict(OPTIONS, secret_env=["HF_TOKEN"]))
    assert deployment["state_file"] == STATE
    result = removed(deployment, [SCRIPT])
    assert result["services"] == ["inferops-watchdog@inferops-serving.service", "inferops-serving@inferops-serving.service"]
    assert result["containers"] == ["inferops-serving", "inferops-serving-next"]
    assert paths(result) == [
        "/etc/inferops-serving/inferops-serving.env", SCRIPT,
        "/etc/inferops-serving/watchdog-inferops-serving.json", "/var/lib/inferops-serving/watchdog-inferops-serving.json",
        "/var/lib/node_exporter/inferops_watchdog_inferops_serving.prom", STATE,
        "/etc/systemd/system/inferops-serving@.service", "/etc/systemd/system/inferops-watchdog@.service",
        "/usr/local/lib/inferops-serving/inferops_watchdog.py", "/usr/local/lib/inferops-serving/inferops_unified_memory.py",
        "/usr/local/lib/inferops-serving/inferops_docker_api.py", "/usr/local/lib/inferops-serving/inferops_prometheus.py",
        "/usr/local/lib/inferops-serving/inferops_bounded_http.py", "/usr/local/lib/inferops-serving/inferops_host_files.py"]
    assert all(entry["state"] == "absent" for entry in result["files"]) and result["shared"]


def test_an_env_file_left_by_an_earlier_converge_goes_too():
    # Without secrets the plan has no env file, but a former one (with a token) may be there.
    deployment = plan("gb10-nvfp4-mtp-throughput", OPTIONS)
    assert deployment["env_file"] is None
    assert "/etc/inferops-serving/inferops-serving.env" in paths(removed(deployment, []))


def test_another_deployment_on_the_host_keeps_the_shared_files():
    deployment = plan("g7e-fp8-sglang", dict(OPTIONS, name="sglang-b", textfile_dir=""))
    other = "/usr/local/lib/inferops-serving/inferops-serving.sh"
    result = removed(deployment, ["/usr/local/lib/inferops-serving/sglang-b.sh", other])
    assert not result["shared"]
    assert paths(result) == ["/etc/inferops-serving/sglang-b.env", "/usr/local/lib/inferops-serving/sglang-b.sh",
                             "/etc/inferops-serving/watchdog-sglang-b.json",
                             "/var/lib/inferops-serving/watchdog-sglang-b.json", "/var/lib/inferops-serving/sglang-b.json"]
    # The model cache and the engine cache are data, never removed.
    assert not any("cache" in path for path in paths(result))


def test_the_shared_programs_are_the_files_the_watchdog_installs_in_the_script_dir():
    # Until session 16 the list named the watchdog and unified_memory only, and an undeploy left
    # the three other files the watchdog imports (docker_api, prometheus, bounded_http) behind.
    # The watchdog role installs the plan's watchdog.files and its program (watchdog.program).
    deployment = plan("gb10-nvfp4-mtp-throughput", OPTIONS, watchdog=WATCHDOG)
    installed = [entry["path"].rsplit("/", 1)[1] for entry in deployment["watchdog"]["files"]
                 if entry["path"].startswith(OPTIONS["script_dir"] + "/")]
    installed.append(deployment["watchdog"]["program"].rsplit("/", 1)[1])
    with open(os.path.join(ROOT, "roles", "watchdog", "tasks", "install.yml"), encoding="utf-8") as handle:
        assert re.search(r"server_deployment\.watchdog\.program", handle.read())
    assert sorted(installed) == sorted(SHARED_PROGRAMS) and len(installed) == 6
