# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Can this host serve its deployment? The preflight role's checks, decided from gpu_info's facts.

``host_checks(deployment, gpu, options)`` returns one check per fact the profile's hardware names
(GPU model, count, compute capability, per-GPU memory; unified memory free for the engine's
share; disk for the model cache), and the NVIDIA driver against the CUDA version the image is
built for, each ``{name, ok, message}``: a host that fails several shows
every reason in one run, each message naming what was found and the fix.
"""
from __future__ import annotations

import re

from ansible_collections.inferops.serving.plugins.plugin_utils._rollback import hardware_group
from ansible_collections.inferops.serving.plugins.plugin_utils._rollback import refusals as rollback_refusals

GIB_KIB = 1048576

# The oldest NVIDIA driver (Linux) that runs an application built with each CUDA major version:
# NVIDIA's CUDA Toolkit release notes, table "CUDA Toolkit and Minimum Required Driver Version for
# CUDA Minor Version Compatibility" (CUDA 13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02). An
# older driver fails the engine at its first CUDA call ("CUDA driver version is insufficient for
# CUDA runtime version"), after the image is pulled and the old container stopped.
CUDA_MINIMUM_DRIVER = {13: "580", 12: "525.60.13", 11: "450.80.02"}
# The CUDA build in an image tag: vLLM's and SGLang's release images say it as cu<major><minor>
# (vllm/vllm-openai:v0.17.1-cu130, cu130-nightly; lmsysorg/sglang:v0.5.13-cu130, -cu129), some
# mirrors as cu12.8.
_CUDA_TAG_RE = re.compile(r"(?:^|[-_.])cu(\d{2})\.?(\d)(?=$|[-_])")


def image_cuda(image):
    """The CUDA version (major, minor) the image's tag says it is built for, or None."""
    match = _CUDA_TAG_RE.search(str((image or {}).get("tag") or ""))
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


def _version(text):
    return tuple(int(part) for part in re.findall(r"\d+", str(text)))


def driver_check(image, driver_version):
    """(ok, message) of the host's NVIDIA driver against the image's CUDA; None when either is unknown."""
    cuda = image_cuda(image)
    if cuda is None or not driver_version or cuda[0] not in CUDA_MINIMUM_DRIVER:
        return None
    needed = CUDA_MINIMUM_DRIVER[cuda[0]]
    if _version(driver_version) >= _version(needed):
        return True, None
    return False, ("image %s is built for CUDA %d.%d (its tag %s), which needs NVIDIA driver >= %s; nvidia-smi shows "
                   "driver %s. Upgrade the host's NVIDIA driver to %s or later (and reboot), or give this host an "
                   "image built for an older CUDA (server_profile_overrides: {image: {tag: ...}})."
                   % (image.get("ref"), cuda[0], cuda[1], image.get("tag"), needed, driver_version, needed))


def _gib(kib):
    return round(float(kib or 0) / GIB_KIB, 1)


def host_checks(deployment, gpu, options=None):
    """The preflight checks of ``gpu`` (gpu_info's result) against ``deployment`` (the plan).

    ``options``: ``meminfo_path`` (named in the memory message), ``disk_free_gib`` (free space
    needed to download the model, default 200) and ``disk_free_gib_cached`` (with the model
    already cached, default 10); ``known_bad`` (the inventory's known-bad list), ``groups`` and
    ``hardware_group`` (the host's, as the pin groups hosts): a plan a rollback left on a host of
    this group is refused.
    """
    options = options or {}
    profile = deployment["profile"]
    name = profile.get("name")
    hardware = profile.get("hardware") or {}
    gpus = gpu.get("gpus") or []
    names = sorted({g.get("name") for g in gpus if g.get("name")})
    capabilities = sorted({str(g.get("compute_capability")) for g in gpus if g.get("compute_capability") is not None})
    memories = sorted({g.get("memory_total_mib") for g in gpus if g.get("memory_total_mib") is not None})
    unified = bool(gpu.get("unified_memory"))
    checks = []

    def check(label, ok, message):
        checks.append({"name": label, "ok": bool(ok), "message": None if ok else message})

    # A deployment playbooks/rollback.yml left on a host of this hardware group (its known-bad
    # record in the inventory, plugins/plugin_utils/_rollback.py) is not deployed again.
    if options.get("known_bad"):
        group = hardware_group(options.get("groups"), options.get("hardware_group"))
        refused = rollback_refusals(deployment, options["known_bad"], group)
        check("not rolled back", not refused, " ".join(refused))

    if "gpu_name" in hardware:
        check("GPU model", names == [hardware["gpu_name"]],
              "profile %s needs %s GPUs, nvidia-smi shows %s. Give this host a profile for its hardware "
              "(server_profile) or move it to the right inventory group."
              % (name, hardware["gpu_name"], ", ".join(names) or "no GPU"))
    if "gpu_count" in hardware:
        check("GPU count", gpu.get("count") == int(hardware["gpu_count"]),
              "profile %s needs %s GPUs, nvidia-smi shows %s. A missing GPU usually means a fallen-off device "
              "(check dmesg for Xid errors) or a driver that did not load." % (name, hardware["gpu_count"], gpu.get("count")))
    if "compute_capability" in hardware:
        check("compute capability", capabilities == [str(hardware["compute_capability"])],
              "profile %s is tuned for compute capability %s (its kernels and backends are chosen for it), "
              "nvidia-smi shows %s." % (name, hardware["compute_capability"], ", ".join(capabilities) or "none"))
    if "gpu_memory_mib" in hardware and not unified:
        check("GPU memory", bool(memories) and min(memories) >= int(hardware["gpu_memory_mib"]),
              "profile %s needs %s MiB per GPU, nvidia-smi shows %s MiB."
              % (name, hardware["gpu_memory_mib"], ", ".join(str(m) for m in memories) or "no"))
    if unified:
        # GB10 is unified memory: nvidia-smi reports none, and the engine claims its share of
        # MemTotal at start, so that much must be free (the GB10 field report: "free >= util x total at start").
        # The serving container's own memory is freed when it is replaced.
        # gpu_info words it by the unified-memory rule (plugins/module_utils/_unified_memory.py):
        # MemFree, MemAvailable, the page cache, and server_drop_caches_before_start when only
        # the cache is in the way.
        if gpu.get("memory_message"):
            message = "%s (from %s)." % (gpu["memory_message"], options.get("meminfo_path") or "/proc/meminfo")
        else:
            message = ("MemAvailable %s GiB (from %s) is less than the engine's share %s x MemTotal %s GiB = %s GiB of "
                       "unified memory." % (_gib(gpu.get("mem_available_kib")), options.get("meminfo_path") or "/proc/meminfo",
                                            gpu.get("memory_fraction"), _gib(gpu.get("mem_total_kib")),
                                            _gib(gpu.get("memory_needed_kib"))))
        if gpu.get("memory_action", "wait") == "wait":
            message += (" Stop the other model servers on this host, or lower gpu-memory-utilization in "
                        "server_profile_overrides.")
        check("unified memory available", gpu.get("container_running") or not gpu.get("memory_short"), message)
    driver = driver_check(deployment.get("image") or {}, gpu.get("driver_version"))
    if driver is not None:
        check("NVIDIA driver", *driver)
    disk = gpu.get("cache_disk")
    if disk:
        cached = bool(gpu.get("model_cached"))
        needed = options.get("disk_free_gib_cached", 10) if cached else options.get("disk_free_gib", 200)
        needed = int(float(needed)) if float(needed).is_integer() else float(needed)
        free = _gib(disk.get("free_kib"))
        check("model cache disk", free >= needed,
              "The file system of %s (holding %s) has %s GiB free, %s GiB needed %s. Free space there or set "
              "server_model_cache_dir to a larger disk."
              % (disk.get("path"), (deployment.get("options") or {}).get("model_cache_dir"), free, needed,
                 "with the model already cached" if cached else "to download " + str(deployment.get("model"))))
    return checks
