# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU fact parsing against the output shapes nvidia-smi really prints (the GB10 field report, the g7e field report)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _gpu
from ansible_collections.inferops.serving.plugins.module_utils._gpu import (
    NVIDIA_SMI_ARGS,
    GpuParseError,
    gpu_facts,
    parse_meminfo,
    parse_nvidia_smi,
)

# DGX Spark / GB10: unified memory, so memory.total is not reported.
GB10 = "0, NVIDIA GB10, 12.1, [N/A], 580.95.05\n"
# AWS g7e.48xlarge (the g7e field report's nvidia-smi table: 97887MiB, driver 580.126.09).
RTX_PRO_6000 = "".join(
    "%d, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887, 580.126.09\n" % i for i in range(8))
MEMINFO = """MemTotal:       127506252 kB
MemFree:         2412284 kB
MemAvailable:   121334560 kB
Buffers:           81232 kB
"""
MEMINFO_FACTS = {"mem_total_kib": 127506252, "mem_free_kib": 2412284, "mem_available_kib": 121334560,
                 "cached_kib": None}


def test_query_is_the_documented_one():
    assert NVIDIA_SMI_ARGS == ["--query-gpu=index,name,compute_cap,memory.total,driver_version",
                               "--format=csv,noheader,nounits"]


def test_gb10_reports_no_memory():
    gpus = parse_nvidia_smi(GB10)
    assert gpus == [{"index": 0, "name": "NVIDIA GB10", "compute_capability": "12.1",
                     "memory_total_mib": None, "driver_version": "580.95.05"}]
    facts = gpu_facts(gpus, MEMINFO_FACTS)
    assert facts["unified_memory"] is True
    assert facts["memory_total_mib"] is None
    assert (facts["count"], facts["name"], facts["compute_capability"]) == (1, "NVIDIA GB10", "12.1")
    assert facts["mem_available_kib"] == 121334560


def test_eight_rtx_pro_6000():
    facts = gpu_facts(parse_nvidia_smi(RTX_PRO_6000), MEMINFO_FACTS)
    assert facts["count"] == 8
    assert [gpu["index"] for gpu in facts["gpus"]] == list(range(8))
    assert facts["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert facts["compute_capability"] == "12.0"
    assert facts["memory_total_mib"] == 97887
    assert facts["driver_version"] == "580.126.09"
    assert facts["unified_memory"] is False


@pytest.mark.parametrize("unavailable", ["[N/A]", "N/A", "[Not Supported]", "[Unknown Error]"])
def test_every_unavailable_spelling_is_null(unavailable):
    assert parse_nvidia_smi("0, NVIDIA GB10, 12.1, %s, 580.95.05" % unavailable)[0]["memory_total_mib"] is None


def test_mixed_gpus_have_no_common_name():
    text = "0, NVIDIA GB10, 12.1, [N/A], 580.95.05\n1, NVIDIA H100, 9.0, 81559, 580.95.05\n"
    facts = gpu_facts(parse_nvidia_smi(text), MEMINFO_FACTS)
    assert facts["count"] == 2
    assert facts["name"] is None and facts["compute_capability"] is None
    assert facts["driver_version"] == "580.95.05"


def test_no_gpus():
    facts = gpu_facts(parse_nvidia_smi("\n"), MEMINFO_FACTS)
    assert facts["count"] == 0 and facts["name"] is None and facts["unified_memory"] is False


@pytest.mark.parametrize("text", [
    "0, NVIDIA GB10, 12.1, [N/A]",                       # a field short
    "zero, NVIDIA GB10, 12.1, [N/A], 580.95.05",         # index not a number
    "0, NVIDIA H100, 9.0, lots, 580.95.05",              # memory not a number
    "No devices were found",
])
def test_unexpected_output_is_an_error(text):
    with pytest.raises(GpuParseError):
        parse_nvidia_smi(text)


def test_meminfo():
    assert parse_meminfo(MEMINFO) == MEMINFO_FACTS


@pytest.mark.parametrize("text", ["MemTotal: 100 kB\n", "", "MemTotal: x kB\nMemFree: 1 kB\nMemAvailable: 1 kB\n",
                                  "MemTotal: 100 kB\nMemAvailable: 1 kB\n"])
def test_meminfo_needs_total_free_and_available(text):
    with pytest.raises(GpuParseError):
        parse_meminfo(text)


def test_existing_ancestor_is_the_deepest_existing_directory():
    existing = {"/", "/root", "/root/.cache"}
    assert _gpu.existing_ancestor("/root/.cache/huggingface/hub", existing.__contains__) == "/root/.cache"
    assert _gpu.existing_ancestor("/root/.cache/", existing.__contains__) == "/root/.cache"
    assert _gpu.existing_ancestor("/srv/models", existing.__contains__) == "/"


def test_model_cache_path_follows_the_hub_layout():
    assert _gpu.model_cache_path("/root/.cache/huggingface/", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8") == (
        "/root/.cache/huggingface/hub/models--nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")


def test_memory_claim_on_unified_memory_only():
    facts = {"unified_memory": True, "mem_total_kib": 1000, "mem_free_kib": 700, "mem_available_kib": 800,
             "cached_kib": 100}
    claim = _gpu.memory_claim(facts, 0.9)
    assert {k: claim[k] for k in ("memory_fraction", "memory_needed_kib", "memory_short", "memory_action")} == {
        "memory_fraction": 0.9, "memory_needed_kib": 900, "memory_short": True, "memory_action": "wait"}
    assert _gpu.memory_claim(facts, 0.8)["memory_short"] is False
    assert _gpu.memory_claim(dict(facts, unified_memory=False), 0.9)["memory_needed_kib"] is None


def test_memory_claim_judges_by_the_field_the_engine_reads():
    facts = {"unified_memory": True, "mem_total_kib": 1000, "mem_free_kib": 700, "mem_available_kib": 950,
             "cached_kib": 250}
    assert _gpu.memory_claim(facts, 0.9)["memory_action"] == "start"
    claim = _gpu.memory_claim(facts, 0.9, reads="MemFree")
    assert claim["memory_short"] is True and claim["memory_cache_bound"] is True
    assert "server_drop_caches_before_start" in claim["memory_message"]
    assert _gpu.memory_claim(facts, 0.9, reads="MemFree", drop_caches="planned")["memory_action"] == "drop_caches"
