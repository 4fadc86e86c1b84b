# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Which kernel works on which hardware and engine version: the one table the lint and the lab
simulator (tests/lab/engine_sim/engine_sim/decide.py) both read.

Plain data and standard library only (no collection imports), so the simulator can load this
file on its own. Versions are compared by the caller (``at_least(version, first)``): the lint
with ``_engine_catalog.version_in``, the simulator with ``engine_sim.versions.at_least``.
"""
from __future__ import annotations

# vLLM NVFP4 MoE kernels (NvFp4MoeBackend names, as the engine logs them) on sm_12x (compute
# capability 12.x: RTX PRO 6000 sm_120, GB10 sm_121): backend -> (first vLLM release whose
# kernel runs NVFP4 MoE there, source). A backend not listed does not run on sm_12x.
NVFP4_MOE_SM12X = {
    "MARLIN": ("0.17.0", "the GB10 field report, findings.md section 1: the model card's Spark recipe "
                         "(v0.17.1) serves on Marlin"),
    "FLASHINFER_CUTLASS": (
        "0.19.0",
        "vllm/model_executor/layers/fused_moe/flashinfer_cutlass_moe.py (0.19.0 lines 125-133: "
        "_supports_current_device admits is_device_capability_family(120); _supports_quant_scheme allows "
        "nvfp4 on has_device_capability(100)); the GB10 field report: 'Since v0.19.0 NVFP4 MoE auto-selects "
        "FLASHINFER_CUTLASS ... on sm_120-class'"),
    "EMULATION": ("0.20.0", "vLLM 0.20.0 adds the EMULATION NvFp4MoeBackend (vllm/model_executor/layers/fused_moe/oracle/nvfp4.py)"),
    "FLASHINFER_B12X": (
        "0.22.0",
        "vllm/model_executor/layers/fused_moe/experts/flashinfer_b12x_moe.py (0.22.0 line 121: "
        "_supports_current_device is is_device_capability_family(120))"),
    "HUMMING": ("0.21.0", "--moe-backend humming exists from vLLM 0.21.0 (engine catalog: vllm/config/kernel.py "
                          "MoEBackend)"),
    "B12X": ("0.29.0", "vllm/model_executor/layers/fused_moe/b12x.py (0.29.0+; 0.33.0 line 499: "
                       "_supports_current_device)"),
}
# What the field reports measured, whatever a newer release's code allows: on the report's image
# (0.19.2rc1.dev134) FLASHINFER_CUTLASS "regresses on sm_120/121" and Marlin is the path served.
NVFP4_MOE_SEED_PREFERRED = ("MARLIN", "the GB10 field report, findings.md section 1 and Gotchas; vLLM #38971")

# --moe-backend value -> the NvFp4MoeBackend it selects (vLLM's map_nvfp4_backend), per release.
NVFP4_MOE_CLI = {
    "marlin": ("MARLIN", "0.17.0"), "flashinfer_cutlass": ("FLASHINFER_CUTLASS", "0.17.0"),
    "flashinfer_trtllm": ("FLASHINFER_TRTLLM", "0.17.0"), "flashinfer_cutedsl": ("FLASHINFER_CUTEDSL", "0.17.0"),
    "cutlass": ("VLLM_CUTLASS", "0.17.0"), "emulation": ("EMULATION", "0.20.0"),
    "flashinfer_b12x": ("FLASHINFER_B12X", "0.22.0"), "humming": ("HUMMING", "0.21.0"), "b12x": ("B12X", "0.29.0"),
    "flashinfer_moe_ep_cutedsl": ("FLASHINFER_MOE_EP_CUTEDSL", "0.32.0"),
}


def nvfp4_moe_supported(backend, capability_major, version, at_least):
    """Whether the NVFP4 MoE kernel ``backend`` runs on a GPU of ``capability_major`` in ``version``.

    sm_10x runs every kernel; sm_12x those of :data:`NVFP4_MOE_SM12X` from their release; any
    other GPU only Marlin, emulation and Humming.
    """
    if capability_major == 10:
        return True
    if capability_major == 12:
        known = NVFP4_MOE_SM12X.get(backend)
        return bool(known) and at_least(version, known[0])
    return backend in ("MARLIN", "EMULATION", "HUMMING")


def nvfp4_moe_sm12x_backends(version, at_least):
    """The NVFP4 MoE kernels that run on sm_12x in ``version``, in table order."""
    return [name for name, (first, _source) in NVFP4_MOE_SM12X.items() if at_least(version, first)]


# SGLang on SM120 (RTX PRO 6000, g7e) for an FP8 checkpoint, from the g7e field report's SM120 backend matrix:
# component -> {backend: (works, evidence)}.
SGLANG_SM120_FP8 = {
    "fp8_gemm": {
        "deep_gemm": (False, "the g7e field report, SM120 matrix: DeepGemm FAIL, kernel_runtime.hpp:45 assert"),
        "cutlass": (False, "the g7e field report, SM120 matrix: CUTLASS FAIL, SM100/SM90-only gate"),
        "triton": (True, "the g7e field report, SM120 matrix: Triton WORKS"),
    },
    "moe_runner": {
        "deep_gemm": (False, "the g7e field report: DeepGEMM asserts on SM120 (kernel_runtime.hpp:45)"),
        "triton": (True, "the g7e field report, SM120 matrix: MoE runner Triton WORKS"),
    },
    "attention": {
        "trtllm_mha": (False, "the g7e field report, SM120 matrix: trtllm_mha FAIL (prefill SM100-only gate; decode "
                              "AssertionError in nemotron_h.py:408)"),
        "flashinfer": (True, "the g7e field report, SM120 matrix: FlashInfer WORKS"),
        "triton": (True, "the g7e field report, SM120 matrix: Triton WORKS"),
    },
}
# The g7e field report: "Required flags: --fp8-gemm-backend triton --moe-runner-backend triton".
SGLANG_SM120_REQUIRED = {"fp8-gemm-backend": "triton", "moe-runner-backend": "triton"}

# Interconnect per hardware platform (profiles' hardware.platform): DeepEP needs NVLink/P2P.
PLATFORM_INTERCONNECT = {
    "rtx-pro-6000": ("pcie", "AWS g7e.48xlarge: 8x RTX PRO 6000 on PCIe; the g7e field report, SM120 matrix: "
                             "DeepEP FAIL, PCIe P2P topology (universal g7e blocker)"),
    "gb10": ("single-gpu", "DGX Spark: one GB10"),
}
