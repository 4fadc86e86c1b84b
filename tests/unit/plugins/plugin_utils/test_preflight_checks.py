# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight role's host checks, decided in Python from gpu_info's result (its real shape)."""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._preflight import host_checks, image_cuda

import pytest

LOCK = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "a" * 64},
                   "lmsysorg/sglang:v0.5.13-cu130": {"digest": "sha256:" + "b" * 64}}}
GB10_PLAN = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "model_cache_dir": "/models"}, lock=LOCK)
G7E_PLAN = plan("g7e-fp8-sglang-eagle", {"name": "inferops-serving"}, lock=LOCK)

# gpu_info on the lab's GB10 (MemTotal 121.6 GiB, MemAvailable 117.3 GiB).
GB10 = {"count": 1, "gpus": [{"index": 0, "name": "NVIDIA GB10", "compute_capability": "12.1",
                              "memory_total_mib": None, "driver_version": "580.95.05"}],
        "driver_version": "580.95.05", "unified_memory": True, "mem_total_kib": 127506252, "mem_available_kib": 123000000,
        "memory_fraction": 0.8, "memory_needed_kib": 102005001, "memory_short": False,
        "cache_disk": {"path": "/models", "free_kib": 300 * 1048576}, "model_cached": False,
        "container_running": False}
RTX = {"count": 8, "gpus": [{"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                             "compute_capability": "12.0", "memory_total_mib": 97887} for i in range(8)],
       "driver_version": "580.126.09", "unified_memory": False, "mem_total_kib": 2 * 1024 ** 3, "mem_available_kib": 2 * 1024 ** 3}


def failed(checks):
    return {c["name"]: c["message"] for c in checks if not c["ok"]}


def test_each_profile_passes_on_its_own_hardware():
    assert failed(host_checks(GB10_PLAN, GB10)) == {}
    assert failed(host_checks(G7E_PLAN, RTX)) == {}
    names = [c["name"] for c in host_checks(GB10_PLAN, GB10)]
    assert names == ["GPU model", "GPU count", "compute capability", "unified memory available", "NVIDIA driver",
                     "model cache disk"]


def test_the_other_hardware_fails_every_check_it_names_with_what_was_found():
    messages = failed(host_checks(G7E_PLAN, GB10))
    assert set(messages) >= {"GPU model", "GPU count", "compute capability"}
    assert messages["GPU model"].startswith("profile g7e-fp8-sglang-eagle needs NVIDIA RTX PRO 6000 Blackwell Server "
                                            "Edition GPUs, nvidia-smi shows NVIDIA GB10")
    assert "needs 8 GPUs, nvidia-smi shows 1" in messages["GPU count"]
    assert "nvidia-smi shows 12.1" in messages["compute capability"]


def test_short_unified_memory_fails_unless_the_serving_container_holds_it():
    short = dict(GB10, mem_available_kib=10485760, memory_short=True)
    message = failed(host_checks(GB10_PLAN, short, {"meminfo_path": "/proc/meminfo"}))["unified memory available"]
    assert message.startswith("MemAvailable 10.0 GiB (from /proc/meminfo) is less than the engine's share 0.8 x MemTotal")
    assert "lower gpu-memory-utilization in server_profile_overrides" in message
    assert failed(host_checks(GB10_PLAN, dict(short, container_running=True))) == {}


def test_disk_needed_depends_on_whether_the_model_is_cached():
    small = dict(GB10, cache_disk={"path": "/", "free_kib": 50 * 1048576})
    message = failed(host_checks(GB10_PLAN, small))["model cache disk"]
    assert "has 50.0 GiB free, 200 GiB needed to download" in message and "server_model_cache_dir" in message
    assert failed(host_checks(GB10_PLAN, dict(small, model_cached=True))) == {}
    assert "model cache disk" in failed(host_checks(GB10_PLAN, dict(small, model_cached=True), {"disk_free_gib_cached": 60}))


def test_too_little_memory_per_discrete_gpu():
    small = dict(RTX, gpus=[dict(g, memory_total_mib=49152) for g in RTX["gpus"]])
    assert "MiB per GPU, nvidia-smi shows 49152 MiB" in failed(host_checks(G7E_PLAN, small))["GPU memory"]


# The NVIDIA driver against the CUDA the image is built for (issue 26).
@pytest.mark.parametrize("tag,cuda", [("cu130-nightly", (13, 0)), ("v0.17.1-cu130", (13, 0)), ("v0.5.13-cu129", (12, 9)),
                                      ("v0.9.2-cu118", (11, 8)), ("v0.11.0", None), ("cuda-latest", None),
                                      ("v0.5.1-cu12.8", (12, 8)), ("cu1300", None), (None, None)])
def test_the_cuda_version_comes_from_the_image_tag(tag, cuda):
    assert image_cuda({"tag": tag}) == cuda


def test_a_driver_older_than_the_images_cuda_needs_is_refused_with_both_versions():
    # CUDA 12.9's driver (R575) under a cu130 image.
    old = dict(GB10, driver_version="575.57.08")
    messages = failed(host_checks(GB10_PLAN, old))
    assert list(messages) == ["NVIDIA driver"]
    assert messages["NVIDIA driver"] == (
        "image %s is built for CUDA 13.0 (its tag cu130-nightly), which needs NVIDIA driver >= 580; nvidia-smi shows "
        "driver 575.57.08. Upgrade the host's NVIDIA driver to 580 or later (and reboot), or give this host an image "
        "built for an older CUDA (server_profile_overrides: {image: {tag: ...}})." % GB10_PLAN["image"]["ref"])


def test_the_driver_is_not_judged_when_a_version_is_unknown():
    mixed = dict(RTX, driver_version=None)  # GPUs with different drivers: gpu_info has no common version
    assert "NVIDIA driver" not in [c["name"] for c in host_checks(G7E_PLAN, mixed)]
    untagged = dict(G7E_PLAN, image=dict(G7E_PLAN["image"], tag="v0.5.13"))
    assert "NVIDIA driver" not in [c["name"] for c in host_checks(untagged, dict(RTX, driver_version="470.1"))]
