# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers of the watchdog tests: the program (roles/server/files/inferops_watchdog.py) imported
from its file, as it is shipped to the hosts as a file beside the unified-memory rule it imports,
not as part of a Python package; and its
configuration as the server role writes it. (Not a conftest.py: a module imported by the name
``conftest`` is whichever folder's conftest came first; tests/unit/lab/engine_sim_cases.py is
named for the same reason.)"""
from __future__ import annotations

import importlib.util
import os
import sys

from ansible_collections.inferops.serving.plugins.module_utils import _unified_memory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROGRAM = os.path.join(ROOT, "roles", "server", "files", "inferops_watchdog.py")


def load_program():
    # The server role installs plugins/module_utils/_unified_memory.py beside the program as
    # inferops_unified_memory.py (the host_library lookup); the program imports it by that name.
    sys.modules["inferops_unified_memory"] = _unified_memory
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
        "interval_s": 30,
        "probe_deadline_s": 20,
        "startup_grace_s": 600,
        "max_restarts_per_hour": 3,
        "unified_memory": True,
        "memory_fraction": 0.9,
        "meminfo_path": "/proc/meminfo",
        "memory_wait_timeout_s": 60,
        "slow_floor_tps": 7.0,
        "state_file": "/var/lib/inferops-serving/watchdog-inferops-serving.json",
        "textfile": None,
    }
    config.update(changes)
    return config
