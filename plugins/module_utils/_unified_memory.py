# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The unified-memory (GB10) start-up rule: may the engine start now, by the number its own
start-up check reads, and what stands in the way if not.

One rule for the pre-start check (the gpu_info module, through plugins/module_utils/_gpu.py) and
for the host watchdog's restarts (the watchdog role installs this file beside
roles/watchdog/files/inferops_watchdog.py as inferops_unified_memory.py, through the host_library
lookup). So: Python 3.8 standard library only, no imports, no I/O.

Why two numbers. On a unified-memory GPU the CUDA driver's free memory (cudaMemGetInfo,
torch.cuda.mem_get_info) is the kernel's MemFree: the page cache counts as used (unsloth PR 10704
measured cuda_free equal to MemFree on a GB10 while a 60 GB file sat in the page cache, with
MemAvailable unmoved). vLLM's start-up check ("Free memory on device ... on startup is less than
desired GPU memory utilization") corrects for it on integrated GPUs and compares MemAvailable
(vllm/utils/mem_utils.py MemorySnapshot.measure: psutil.virtual_memory().available; vLLM PR
35356; the reporter of vLLM issue 48140 traced the ValueError to MemAvailable, 55.87/119.56 GiB,
and withdrew its MemFree framing). The page cache a model load leaves behind still costs on GB10:
operators drop it before every start (vLLM 48140: only "sync && echo 3 > /proc/sys/vm/drop_caches"
before the load helped; sparkrun's launcher; NVIDIA's DGX Spark known issues). So the rule
reports both numbers, judges by the one the engine reads (``reads``), and names the page-cache
drop (the role variable ``server_drop_caches_before_start``) when only the cache is in the way.
"""
from __future__ import annotations

UNIFIED_MEMINFO_FIELDS = ("MemTotal", "MemFree", "MemAvailable", "Cached")
# The /proc/meminfo field an engine's start-up check compares with its share on unified memory.
UNIFIED_READS = ("MemAvailable", "MemFree")
# The page-cache drop before the start: not configured, configured and still to come (check
# mode predicts it), or done just before this reading.
UNIFIED_DROP = ("off", "planned", "done")
DROP_CACHES_VARIABLE = "server_drop_caches_before_start"


class UnifiedMemoryError(ValueError):
    """A meminfo text without the fields the rule needs, or an argument out of its range."""


def meminfo_fields(text):
    """KiB of MemTotal, MemFree, MemAvailable and Cached (those present) in /proc/meminfo text."""
    values = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and name.strip() in UNIFIED_MEMINFO_FIELDS and parts and parts[0].isdigit():
            values[name.strip()] = int(parts[0])
    return values


def _gib(kib):
    return "%.1f GiB" % (kib / 1048576.0)


def unified_memory_verdict(meminfo, fraction, reads="MemAvailable", drop_caches="off"):
    """Whether the engine may claim ``fraction`` x MemTotal of unified memory now.

    ``meminfo``: a dict from meminfo_fields. ``reads``: the field the engine's start-up check
    compares (UNIFIED_READS). ``drop_caches``: UNIFIED_DROP. Returns a dict: the four fields in
    KiB (``cached_kib`` None when absent), ``needed_kib`` = int(fraction x MemTotal), ``reads``,
    ``short`` (do not start now), ``cache_bound`` (MemFree < needed <= MemAvailable: only the page
    cache is in the way), ``action`` and ``message``. Actions:

    * ``start``: the engine's number covers its share (a cache-bound host the engine does not
      judge by MemFree starts, with a message naming the page-cache drop);
    * ``drop_caches``: cache-bound, and the drop is still to come: it frees the difference;
    * ``wait``: MemAvailable lacks the share: memory is held (the old engine, a leak), which no
      cache drop frees; stop what holds it and wait;
    * ``refuse``: cache-bound, the engine reads MemFree, and no drop is configured (or the cache
      outlived one): the engine would refuse.
    """
    if reads not in UNIFIED_READS:
        raise UnifiedMemoryError("reads must be one of %s, got %r" % (", ".join(UNIFIED_READS), reads))
    if drop_caches not in UNIFIED_DROP:
        raise UnifiedMemoryError("drop_caches must be one of %s, got %r" % (", ".join(UNIFIED_DROP), drop_caches))
    missing = [name for name in UNIFIED_MEMINFO_FIELDS[:3] if name not in meminfo]
    if missing:
        raise UnifiedMemoryError("meminfo has no %s line" % " or ".join(missing))
    total, free, available = meminfo["MemTotal"], meminfo["MemFree"], meminfo["MemAvailable"]
    cached = meminfo.get("Cached")
    needed = int(float(fraction) * total)
    numbers = "MemFree %s, MemAvailable %s%s" % (_gib(free), _gib(available),
                                                 ", page cache %s" % _gib(cached) if cached is not None else "")
    share = "the engine's share %s x MemTotal %s = %s" % (fraction, _gib(total), _gib(needed))
    verdict = {"mem_total_kib": total, "mem_free_kib": free, "mem_available_kib": available,
               "cached_kib": cached, "needed_kib": needed, "reads": reads,
               "cache_bound": free < needed <= available}
    if available < needed:
        action, message = "wait", (
            "MemAvailable %s is less than %s (%s): processes hold that memory, not the page cache, so "
            "dropping the cache cannot free it; stop what holds it (the old engine) and wait"
            % (_gib(available), share, numbers))
    elif free >= needed:
        action, message = "start", "MemFree %s covers %s (MemAvailable %s)" % (_gib(free), share, _gib(available))
    else:
        cache = ("MemFree %s is less than %s; MemAvailable %s covers it, so the page cache%s holds the difference"
                 % (_gib(free), share, _gib(available), " (%s)" % _gib(cached) if cached is not None else ""))
        if drop_caches == "planned":
            action, message = "drop_caches", "%s: it is dropped before the start (%s)" % (cache, DROP_CACHES_VARIABLE)
        elif drop_caches == "done":
            action = "refuse" if reads == "MemFree" else "start"
            message = ("%s although it was just dropped: what stays cached is in use (mapped or dirty files)%s"
                       % (cache, "; the engine's start-up check reads MemFree and would refuse: stop what maps "
                                 "those files, or lower the engine's memory share" if action == "refuse" else
                          "; the engine's start-up check reads MemAvailable and passes"))
        elif reads == "MemFree":
            action = "refuse"
            message = ("%s, and the engine's start-up check reads MemFree, so it would refuse. Set %s: true to "
                       "drop the page cache (sync; echo 1 > /proc/sys/vm/drop_caches) before the start"
                       % (cache, DROP_CACHES_VARIABLE))
        else:
            action = "start"
            message = ("%s. The engine's start-up check reads MemAvailable and passes, but CUDA's free memory "
                       "(MemFree on unified memory) stays short until the kernel reclaims the cache; set %s: true "
                       "to start on free memory" % (cache, DROP_CACHES_VARIABLE))
    verdict.update(short=action in ("wait", "refuse"), action=action, message=message)
    return verdict
