# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""GPU facts from ``nvidia-smi --query-gpu`` and ``/proc/meminfo``, as pure functions."""
from __future__ import annotations

import csv

from ansible_collections.inferops.serving.plugins.module_utils._unified_memory import (
    UnifiedMemoryError,
    meminfo_fields,
    unified_memory_verdict,
)

QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "driver_version")
NVIDIA_SMI_ARGS = ["--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]

# What nvidia-smi prints for a value the device cannot report (GB10's memory.total: its
# memory is the host's unified LPDDR5X, so there is no dedicated framebuffer to report).
_UNAVAILABLE = {"[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", ""}


class GpuParseError(ValueError):
    """nvidia-smi or meminfo output is not in the expected shape."""


def _value(text):
    text = text.strip()
    return None if text.lower() in _UNAVAILABLE else text


def parse_nvidia_smi(text):
    """One dict per GPU from ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``.

    ``memory_total_mib`` is None where the device reports no dedicated memory (GB10).
    """
    gpus = []
    for row in csv.reader([line for line in text.splitlines() if line.strip()], skipinitialspace=True):
        if len(row) != len(QUERY_FIELDS):
            raise GpuParseError("expected %d comma-separated fields (%s) per GPU, got %r"
                                % (len(QUERY_FIELDS), ", ".join(QUERY_FIELDS), ", ".join(row)))
        index, name, compute_cap, memory, driver = (_value(field) for field in row)
        try:
            gpus.append({
                "index": int(index),
                "name": name,
                "compute_capability": compute_cap,
                "memory_total_mib": int(float(memory)) if memory is not None else None,
                "driver_version": driver,
            })
        except (TypeError, ValueError) as exc:
            raise GpuParseError("cannot read GPU line %r: %s" % (", ".join(row), exc)) from exc
    return gpus


def parse_meminfo(text):
    """``MemTotal``, ``MemFree``, ``MemAvailable`` and ``Cached`` (KiB; Cached None when absent)
    from the text of ``/proc/meminfo``."""
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and key in ("MemTotal", "MemFree", "MemAvailable") and not (parts and parts[0].isdigit()):
            raise GpuParseError("cannot read meminfo line %r" % line)
    values = meminfo_fields(text)
    missing = [key for key in ("MemTotal", "MemFree", "MemAvailable") if key not in values]
    if missing:
        raise GpuParseError("meminfo has no %s line" % " or ".join(missing))
    return {"mem_total_kib": values["MemTotal"], "mem_free_kib": values["MemFree"],
            "mem_available_kib": values["MemAvailable"], "cached_kib": values.get("Cached")}


def _common(gpus, key):
    """The value every GPU shares, or None when there are none or they differ."""
    values = {gpu[key] for gpu in gpus}
    return values.pop() if len(values) == 1 else None


def gpu_facts(gpus, meminfo):
    """The facts gpu_info returns: per-GPU list plus what the host's GPUs have in common.

    ``name``, ``compute_capability``, ``memory_total_mib`` and ``driver_version`` are None when
    the GPUs differ (a mixed host); ``unified_memory`` is true when a GPU reports no memory.
    """
    return {
        "gpus": gpus,
        "count": len(gpus),
        "name": _common(gpus, "name"),
        "compute_capability": _common(gpus, "compute_capability"),
        "memory_total_mib": _common(gpus, "memory_total_mib"),
        "driver_version": _common(gpus, "driver_version"),
        "unified_memory": any(gpu["memory_total_mib"] is None for gpu in gpus),
        "mem_total_kib": meminfo["mem_total_kib"],
        "mem_free_kib": meminfo["mem_free_kib"],
        "mem_available_kib": meminfo["mem_available_kib"],
        "cached_kib": meminfo["cached_kib"],
    }


def memory_claim(facts, fraction, reads="MemAvailable", drop_caches="off"):
    """The unified memory the engine claims at start and whether the host lacks it now.

    On unified memory (GB10) the engine claims ``fraction`` x MemTotal when it starts (the GB10 field report:
    "free >= util x total at start"); _unified_memory.unified_memory_verdict judges it by the
    number the engine's start-up check reads (``reads``) and says when only the page cache is in
    the way. Discrete GPUs: nothing to check on the host (``needed`` None, never short).
    """
    if fraction is None or not facts.get("unified_memory"):
        return {"memory_fraction": fraction, "memory_needed_kib": None, "memory_short": False,
                "memory_reads": reads, "memory_cache_bound": False, "memory_action": "start",
                "memory_message": None}
    meminfo = {"MemTotal": facts["mem_total_kib"], "MemFree": facts["mem_free_kib"],
               "MemAvailable": facts["mem_available_kib"]}
    if facts.get("cached_kib") is not None:
        meminfo["Cached"] = facts["cached_kib"]
    try:
        verdict = unified_memory_verdict(meminfo, float(fraction), reads, drop_caches)
    except UnifiedMemoryError as exc:
        raise GpuParseError(str(exc)) from exc
    return {"memory_fraction": float(fraction), "memory_needed_kib": verdict["needed_kib"],
            "memory_short": verdict["short"], "memory_reads": reads, "memory_cache_bound": verdict["cache_bound"],
            "memory_action": verdict["action"], "memory_message": verdict["message"]}


def existing_ancestor(path, isdir):
    """The deepest existing directory of ``path`` (itself, or a parent, or ``/``).

    The model cache is created later, by the server role; its free space is that of the file
    system that will hold it. Mount facts miss overlay, ZFS and container roots, so the caller
    asks ``statvfs`` about this directory instead.
    """
    current = path.rstrip("/") or "/"
    while current != "/" and not isdir(current):
        current = current.rsplit("/", 1)[0] or "/"
    return current


def model_cache_path(cache_dir, model):
    """Where the Hugging Face hub keeps ``model`` under ``cache_dir``: hub/models--<org>--<name>."""
    return "%s/hub/models--%s" % (cache_dir.rstrip("/"), str(model).replace("/", "--"))
