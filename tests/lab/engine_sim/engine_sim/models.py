# SPDX-License-Identifier: GPL-3.0-or-later
"""What the simulator knows about a model, from its name (no weights are ever read)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelFacts:
    architecture: str
    hybrid_mamba: bool  # Mamba-2 layers (NemotronH): mamba cache, page alignment lines
    moe: bool
    weight_format: str  # "nvfp4" | "fp8" | "bf16"
    has_mtp_head: bool  # built-in MTP draft layer (unquantized MoE on the NVFP4 checkpoint)
    weights_gib: float
    parameters_b: int

    @property
    def vllm_quantization(self) -> str | None:
        return {"nvfp4": "modelopt_mixed", "fp8": "modelopt"}.get(self.weight_format)

    @property
    def sglang_quantization(self) -> str | None:
        return {"nvfp4": "modelopt_fp4", "fp8": "modelopt_fp8"}.get(self.weight_format)


def model_facts(model: str) -> ModelFacts:
    """Infer the model's shape from its path; unknown names are a small dense BF16 model."""
    name = model.lower()
    weight_format = "nvfp4" if "nvfp4" in name else "fp8" if "fp8" in name else "bf16"
    if "nemotron" in name and ("super" in name or "nano" in name or "-3-" in name):
        big = "nano" not in name
        params = 120 if big else 30
        weights = {"nvfp4": 75.3, "fp8": 119.2, "bf16": 224.0}[weight_format] if big else {
            "nvfp4": 18.6, "fp8": 31.5, "bf16": 58.9}[weight_format]
        return ModelFacts("NemotronHForCausalLM", True, True, weight_format, True, weights, params)
    weights = {"nvfp4": 4.6, "fp8": 8.1, "bf16": 15.0}[weight_format]
    return ModelFacts("LlamaForCausalLM", False, False, weight_format, False, weights, 8)
