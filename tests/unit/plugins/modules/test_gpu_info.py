# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_info as a whole module, with a stand-in nvidia-smi that prints the real output shapes."""
from __future__ import annotations

import http.server
import json

import pytest

from ansible_collections.inferops.serving.plugins.modules import gpu_info

GB10 = "0, NVIDIA GB10, 12.1, [N/A], 580.95.05"
RTX_PRO_6000 = "\n".join(
    "%d, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887, 580.126.09" % i for i in range(8))


@pytest.fixture
def meminfo(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       127506252 kB\nMemFree:         2412284 kB\nMemAvailable:   121334560 kB\n")
    return str(path)


def fake_nvidia_smi(tmp_path, stdout, rc=0, stderr=""):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n"
                    "[ \"$1\" = --query-gpu=index,name,compute_cap,memory.total,driver_version ] || exit 9\n"
                    "cat <<'OUT'\n%s\nOUT\necho '%s' >&2\nexit %d\n" % (stdout, stderr, rc))
    path.chmod(0o755)
    return str(path)


def test_gb10(run_module, tmp_path, meminfo):
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10),
                                           "meminfo_path": meminfo}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["count"] == 1 and result["name"] == "NVIDIA GB10"
    assert result["compute_capability"] == "12.1"
    assert result["memory_total_mib"] is None and result["unified_memory"] is True
    assert (result["mem_total_kib"], result["mem_available_kib"]) == (127506252, 121334560)


def test_rtx_pro_6000(run_module, tmp_path, meminfo):
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, RTX_PRO_6000),
                                           "meminfo_path": meminfo})
    assert not failed
    assert result["count"] == 8 and result["memory_total_mib"] == 97887
    assert result["driver_version"] == "580.126.09" and result["unified_memory"] is False


def test_missing_nvidia_smi(run_module, meminfo):
    failed, result = run_module(gpu_info, {"nvidia_smi": "nvidia-smi-not-installed", "meminfo_path": meminfo})
    assert failed and "install the NVIDIA driver" in result["msg"]
    # The variable a preflight user sets is named, not only this module's option.
    assert "preflight_nvidia_smi in the preflight role" in result["msg"]


def test_nvidia_smi_error(run_module, tmp_path, meminfo):
    smi = fake_nvidia_smi(tmp_path, "", rc=9,
                          stderr="Failed to initialize NVML: Driver/library version mismatch")
    failed, result = run_module(gpu_info, {"nvidia_smi": smi, "meminfo_path": meminfo})
    assert failed and "Driver/library version mismatch" in result["msg"] and result["rc"] == 9


def test_unreadable_meminfo(run_module, tmp_path):
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10),
                                           "meminfo_path": str(tmp_path / "absent")})
    assert failed and "cannot read host memory" in result["msg"]


class _Inspect(object):
    """Stands for the Docker Engine API's GET /containers/{name}/json: 200 with State.Running for a
    known container, 404 {"message": "No such container: <name>"} otherwise."""

    def __init__(self, running):
        self.running = running
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/containers/inferops-serving/json":
                    status, body = 200, {"Id": "c1", "State": {"Running": fake.running}}
                else:
                    status, body = 404, {"message": "No such container: " + self.path.split("/")[2]}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.handler = Handler


@pytest.mark.parametrize("name, running, expected", [
    ("inferops-serving", True, True), ("inferops-serving", False, False), ("other", True, False)])
def test_the_serving_container_running_is_reported(run_module, docker, tmp_path, meminfo, name, running, expected):
    _fake, host = docker(_Inspect(running))
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10), "meminfo_path": meminfo,
                                           "container": name, "docker_host": host})
    assert not failed and result["container_running"] is expected


def test_no_docker_means_no_container_running(run_module, tmp_path, meminfo):
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10), "meminfo_path": meminfo,
                                           "container": "inferops-serving",
                                           "docker_host": "unix://%s/absent.sock" % tmp_path})
    assert not failed and result["container_running"] is False
    assert "container_running" not in run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10),
                                                            "meminfo_path": meminfo})[1]


# CONSTRUCTED meminfo with the GiB figures unsloth PR 10704 measured on a GB10 after writing a 60 GB
# file (MemFree 41.52, MemAvailable 115.65, Cached 72.64; MemTotal 121.69 GiB).
GB10_PAGE_CACHE = ("MemTotal:       127601213 kB\nMemFree:        43536876 kB\nMemAvailable:   121267814 kB\n"
                   "Buffers:          182344 kB\nCached:         76168561 kB\n")


@pytest.mark.parametrize("reads, drop, action, short", [("MemAvailable", "off", "start", False),
                                                        ("MemFree", "off", "refuse", True),
                                                        ("MemFree", "planned", "drop_caches", False)])
def test_gb10_page_cache_verdict(run_module, tmp_path, reads, drop, action, short):
    path = tmp_path / "meminfo"
    path.write_text(GB10_PAGE_CACHE)
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, GB10), "meminfo_path": str(path),
                                           "memory_fraction": 0.9, "memory_reads": reads, "drop_caches": drop},
                                check_mode=True)
    assert not failed and result["changed"] is False
    memory = (result["mem_free_kib"], result["mem_available_kib"], result["cached_kib"])
    assert memory == (43536876, 121267814, 76168561)
    assert result["memory_cache_bound"] is True and result["memory_reads"] == reads
    assert (result["memory_action"], result["memory_short"]) == (action, short)
    assert "MemFree 41.5 GiB is less than the engine's share 0.9 x MemTotal 121.7 GiB" in result["memory_message"]


def test_discrete_gpus_have_no_memory_verdict(run_module, tmp_path, meminfo):
    failed, result = run_module(gpu_info, {"nvidia_smi": fake_nvidia_smi(tmp_path, RTX_PRO_6000),
                                           "meminfo_path": meminfo, "memory_fraction": 0.9, "memory_reads": "MemFree"})
    assert not failed
    assert (result["memory_short"], result["memory_action"], result["memory_message"]) == (False, "start", None)
