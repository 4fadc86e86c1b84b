# SPDX-License-Identifier: GPL-3.0-or-later
"""The unified-memory start-up rule (plugins/module_utils/_unified_memory.py) against GB10 memory
states from public reports."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._unified_memory import (
    UnifiedMemoryError,
    meminfo_fields,
    unified_memory_verdict,
)

# CONSTRUCTED /proc/meminfo texts (no raw GB10 meminfo dump was found to quote); the numbers
# that decide come from GB10 reports, the other lines are shaped like a real meminfo:
#
# PAGE_CACHE_FULL: unsloth PR 10704 measured on a GB10, after writing a 60 GB file:
# "cuda_free= 41.52  MemFree= 41.52  MemAvailable=115.65  Cached=72.64" (GiB); MemTotal is the
# GB10's 121.69 GiB (MiaAI-Lab GLM-5.3-Flash-EXL3-2x-DGX-Sparks issue 47: "121.69 GiB").
PAGE_CACHE_FULL = """MemTotal:       127601213 kB
MemFree:        43536876 kB
MemAvailable:   121267814 kB
Buffers:          182344 kB
Cached:         76168561 kB
SwapCached:            0 kB
Active:          1043912 kB
Inactive:       75312004 kB
"""
# The same host after the file was deleted (unsloth PR 10704: "MemFree=103.30 MemAvailable=115.87
# Cached=12.61").
PAGE_CACHE_GONE = """MemTotal:       127601213 kB
MemFree:       108317901 kB
MemAvailable:  121498501 kB
Buffers:          182344 kB
Cached:         13222543 kB
"""
# vLLM issue 48140: "at the moment of the ValueError I had recorded MemFree=27812140 kB (26.5 GiB)
# and MemAvailable=59063644 kB (56.3 GiB)"; vLLM said "Free memory on device cuda:0
# (55.87/119.56 GiB)" for gpu_memory_utilization 0.5. MemTotal from its 119.56 GiB.
VLLM_48140 = """MemTotal:       125367747 kB
MemFree:        27812140 kB
MemAvailable:   59063644 kB
"""
GIB = 1048576


def verdict(text, fraction=0.9, reads="MemAvailable", drop="off"):
    return unified_memory_verdict(meminfo_fields(text), fraction, reads, drop)


def test_meminfo_fields_reads_the_four_numbers_and_ignores_the_rest():
    assert meminfo_fields(PAGE_CACHE_FULL) == {"MemTotal": 127601213, "MemFree": 43536876,
                                               "MemAvailable": 121267814, "Cached": 76168561}


def test_vllm_48140_is_short_by_memavailable_as_vllm_said():
    # vLLM refused: 55.87 GiB free (its psutil MemAvailable) < 0.5 x 119.56 GiB. The rule agrees,
    # and does not send the operator to the page cache: MemAvailable already counts it.
    result = verdict(VLLM_48140, fraction=0.5)
    assert result["needed_kib"] == 62683873
    assert result["short"] is True and result["action"] == "wait" and result["cache_bound"] is False
    assert "MemAvailable 56.3 GiB is less than the engine's share 0.5 x MemTotal 119.6 GiB = 59.8 GiB" \
        in result["message"]
    assert "MemFree 26.5 GiB" in result["message"] and "server_drop_caches_before_start" not in result["message"]


def test_page_cache_in_the_way_of_an_engine_that_reads_memavailable_starts_and_names_the_drop():
    result = verdict(PAGE_CACHE_FULL)
    assert result["needed_kib"] == int(0.9 * 127601213)
    assert result["cache_bound"] is True and result["short"] is False and result["action"] == "start"
    assert result["message"].startswith(
        "MemFree 41.5 GiB is less than the engine's share 0.9 x MemTotal 121.7 GiB = 109.5 GiB; MemAvailable "
        "115.6 GiB covers it, so the page cache (72.6 GiB) holds the difference.")
    assert "reads MemAvailable and passes" in result["message"]
    assert "set server_drop_caches_before_start: true" in result["message"]


def test_page_cache_in_the_way_of_an_engine_that_reads_memfree_is_refused_naming_the_variable():
    result = verdict(PAGE_CACHE_FULL, reads="MemFree")
    assert result["short"] is True and result["action"] == "refuse"
    assert "reads MemFree, so it would refuse. Set server_drop_caches_before_start: true" in result["message"]
    assert "echo 1 > /proc/sys/vm/drop_caches" in result["message"]


@pytest.mark.parametrize("reads", ["MemAvailable", "MemFree"])
def test_a_planned_drop_clears_a_cache_bound_host(reads):
    result = verdict(PAGE_CACHE_FULL, reads=reads, drop="planned")
    assert result["short"] is False and result["action"] == "drop_caches"
    assert "it is dropped before the start (server_drop_caches_before_start)" in result["message"]


def test_cache_that_outlives_a_drop_is_refused_for_memfree_and_reported_for_memavailable():
    refused = verdict(PAGE_CACHE_FULL, reads="MemFree", drop="done")
    assert refused["action"] == "refuse" and "although it was just dropped" in refused["message"]
    assert "server_drop_caches_before_start: true" not in refused["message"]
    started = verdict(PAGE_CACHE_FULL, drop="done")
    assert started["action"] == "start" and started["short"] is False
    assert "reads MemAvailable and passes" in started["message"]


@pytest.mark.parametrize("reads", ["MemAvailable", "MemFree"])
@pytest.mark.parametrize("drop", ["off", "planned", "done"])
def test_free_memory_starts_whatever_the_settings(reads, drop):
    result = verdict(PAGE_CACHE_GONE, fraction=0.8, reads=reads, drop=drop)
    assert result["action"] == "start" and result["short"] is False and result["cache_bound"] is False
    assert result["message"] == ("MemFree 103.3 GiB covers the engine's share 0.8 x MemTotal 121.7 GiB = 97.4 GiB "
                                 "(MemAvailable 115.9 GiB)")


def test_a_quiet_gb10_lacks_free_memory_for_a_0_9_share():
    # Why MemFree cannot be the judge for vLLM: with only 12.6 GiB of ordinary page cache, MemFree
    # (103.3 GiB) is below 0.9 x 121.7 GiB, the field reports' gpu-memory-utilization, while vLLM (which
    # reads MemAvailable) starts there.
    assert verdict(PAGE_CACHE_GONE)["action"] == "start"
    assert verdict(PAGE_CACHE_GONE)["cache_bound"] is True
    assert verdict(PAGE_CACHE_GONE, reads="MemFree")["action"] == "refuse"


def test_boundaries_are_inclusive_of_the_share():
    base = {"MemTotal": 1000, "Cached": 0}
    assert unified_memory_verdict(dict(base, MemFree=900, MemAvailable=900), 0.9)["action"] == "start"
    edge = unified_memory_verdict(dict(base, MemFree=899, MemAvailable=900), 0.9, "MemFree")
    assert edge["cache_bound"] is True and edge["action"] == "refuse"
    assert unified_memory_verdict(dict(base, MemFree=899, MemAvailable=899), 0.9)["action"] == "wait"


def test_a_held_host_waits_even_with_a_planned_drop():
    # MemAvailable already counts the reclaimable cache: a drop cannot free what processes hold.
    result = verdict(PAGE_CACHE_FULL, fraction=0.98, reads="MemFree", drop="planned")
    assert result["action"] == "wait" and result["short"] is True


def test_without_cached_the_message_leaves_it_out():
    result = unified_memory_verdict({"MemTotal": 1000 * GIB, "MemFree": 10 * GIB, "MemAvailable": 950 * GIB}, 0.9)
    assert result["cached_kib"] is None and result["action"] == "start"
    assert "page cache holds the difference" in result["message"]


@pytest.mark.parametrize("text, missing", [("MemTotal: 10 kB\nMemFree: 5 kB\n", "MemAvailable"),
                                           ("MemFree: 5 kB\nMemAvailable: 8 kB\n", "MemTotal"),
                                           ("MemTotal: 10 kB\nMemAvailable: 8 kB\n", "MemFree")])
def test_missing_fields_are_an_error_naming_them(text, missing):
    with pytest.raises(UnifiedMemoryError, match="meminfo has no %s line" % missing):
        verdict(text)


@pytest.mark.parametrize("reads, drop", [("Cached", "off"), ("MemAvailable", "always")])
def test_arguments_out_of_range(reads, drop):
    with pytest.raises(UnifiedMemoryError):
        verdict(PAGE_CACHE_FULL, reads=reads, drop=drop)
