# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers of the watchdog tests: the program (roles/watchdog/files/inferops_watchdog.py) imported
from its file, as it is shipped to the hosts as a file beside the unified-memory rule it imports,
not as part of a Python package; and its
configuration as the server role writes it. (Not a conftest.py: a module imported by the name
``conftest`` is whichever folder's conftest came first; tests/unit/lab/engine_sim_cases.py is
named for the same reason.)"""
from __future__ import annotations

import importlib.util
import os
import sys

from ansible_collections.inferops.serving.plugins.module_utils import _bounded_http, _docker_api, _host_files
from ansible_collections.inferops.serving.plugins.module_utils import _prometheus, _unified_memory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROGRAM = os.path.join(ROOT, "roles", "watchdog", "files", "inferops_watchdog.py")


def load_program():
    # The server role installs plugins/module_utils/_<name>.py beside the program as
    # inferops_<name>.py (the host_library lookup); the program imports them by those names.
    for name, module in (("unified_memory", _unified_memory), ("docker_api", _docker_api),
                         ("prometheus", _prometheus), ("bounded_http", _bounded_http), ("host_files", _host_files)):
        sys.modules["inferops_" + name] = module
    spec = importlib.util.spec_from_file_location("inferops_watchdog", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def base_config(**changes):
    """A configuration as the server role writes it for the lab's GB10 host (vLLM)."""
    config = {
        "container": "inferops-serving",
        "docker_host": "unix:///var/run/docker.sock",
        "engine": "vllm",
        "served_model_name": "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        "urls": {"chat": "http://127.0.0.1:8101/v1/chat/completions", "health": "http://127.0.0.1:8101/health",
                 "metrics": "http://127.0.0.1:8101/metrics"},
        "metrics": {"running": "vllm:num_requests_running", "generation_tokens": "vllm:generation_tokens_total",
                    "waiting": "vllm:num_requests_waiting", "tokens_counted": "step"},
        "interval": 30,
        "probe_deadline": 20,
        "probe_max_tokens": 4,
        "probe_prompt": "What is 2+2? Answer with just the number.",
        "startup_grace": 600,
        "restart_budget": 3,
        "crash_loop_restarts": 2,
        "crash_loop_window": 600,
        "unified_memory": True,
        "memory_fraction": 0.9,
        "memory_reads": "MemAvailable",
        "meminfo_path": "/proc/meminfo",
        "memory_wait_timeout": 60,
        "drop_caches_file": "/proc/sys/vm/drop_caches",
        "log_lines": 50,
        "slow_floor": 7.0,
        "slow_window": 30,
        "drop_caches_before_start": False,
        "state_file": "/var/lib/inferops-serving/watchdog-inferops-serving.json",
        "textfile": None,
    }
    config.update(changes)
    return config
