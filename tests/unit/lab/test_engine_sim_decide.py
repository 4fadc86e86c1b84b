# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine simulator decisions: backends selected and the field reports' failure modes, per version."""
from __future__ import annotations

import pytest
from engine_sim_cases import (SEED000_ENV, SEED002_ARGS, SEED002_EAGLE, SEED002_ENV, replace_value, seed000_args,
                              without)

from engine_sim import sglang_cli, sglang_log, vllm_cli
from engine_sim.decide import decide_sglang, decide_vllm
from engine_sim.models import model_facts

NIGHTLY = "0.19.2rc1.dev134"


def vllm_plan(version, argv, gpu, env=None):
    args = vllm_cli.parse(["serve", *argv], version)[0]
    return decide_vllm(version, args, env or {}, gpu, model_facts(args.model))


def sglang_plan(version, argv, gpu, env=None):
    args = sglang_cli.parse(argv, version)
    return decide_sglang(version, args, env or {}, gpu, model_facts(args.model_path))


# ---------------------------------------------------------------------------------------- vLLM

def test_seed000_mtp_script_on_nightly_selects_marlin_and_triton(gb10):
    plan = vllm_plan(NIGHTLY, seed000_args(), gb10, SEED000_ENV)
    assert plan.fault is None
    assert plan.selected_backends() == {
        "attention": "TRITON_ATTN", "draft_attention": "TRITON_ATTN", "moe_kind": "nvfp4", "moe": "MARLIN",
        "draft_moe": "TRITON", "nvfp4_gemm": "MARLIN", "mamba_ssm_cache_dtype": "float32"}
    assert plan.attention_forced and plan.num_spec_tokens == 2 and plan.async_scheduling


def test_seed000_throughput_script_on_nightly(gb10):
    argv = seed000_args(max_num_seqs="32")
    argv[argv.index("--async-scheduling"):argv.index("--async-scheduling")] = ["--max-num-batched-tokens", "8192"]
    plan = vllm_plan(NIGHTLY, argv, gb10, SEED000_ENV)
    assert plan.fault is None and plan.max_num_seqs == 32 and plan.max_num_batched_tokens == 8192


def test_known_good_v0171_fallback_without_mtp(gb10):
    env = {k: v for k, v in SEED000_ENV.items() if k != "VLLM_USE_FLASHINFER_MOE_FP4"}
    plan = vllm_plan("0.17.1", replace_value(seed000_args(spec=None), "--gpu-memory-utilization", "0.82"), gb10, env)
    assert plan.fault is None and plan.moe == "MARLIN" and plan.spec is None


def test_v0171_nested_moe_backend_is_a_pydantic_error(gb10):
    plan = vllm_plan("0.17.1", seed000_args(), gb10, SEED000_ENV)
    assert (plan.fault.name, plan.fault.phase) == ("speculative_config_unexpected_key", "config")
    assert "1 validation error for SpeculativeConfig\nmoe_backend\n  Unexpected keyword argument" in plan.fault.message


@pytest.mark.parametrize("key,since", [("moe_backend", "0.19.0"), ("attention_backend", "0.21.0"),
                                       ("kv_cache_dtype", "0.26.0")])
def test_nested_speculative_keys_per_version(gb10, key, since):
    spec = '{"method":"mtp","num_speculative_tokens":1,"%s":"triton_attn"}' % key
    if key == "moe_backend":
        spec = spec.replace("triton_attn", "triton")
    if key == "kv_cache_dtype":
        spec = spec.replace("triton_attn", "fp8")
    older = vllm_plan("0.19.0" if since != "0.19.0" else "0.18.0", seed000_args(spec=spec), gb10)
    assert older.fault.name == "speculative_config_unexpected_key"
    newer = vllm_plan(since, seed000_args(spec=spec), gb10)
    assert newer.fault is None or newer.fault.name != "speculative_config_unexpected_key"


@pytest.mark.parametrize("version,expected", [
    ("0.17.1", "['triton', 'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter']"),
    (NIGHTLY, "['triton', 'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter']"),
    ("0.28.0", "['triton', 'batched_triton', 'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter']"),
])
def test_mtp_with_global_marlin_fails_on_unquantized_draft_moe(gb10, version, expected):
    plan = vllm_plan(version, seed000_args(spec='{"method":"mtp","num_speculative_tokens":2}'), gb10, SEED000_ENV)
    assert (plan.fault.name, plan.fault.phase) == ("unquantized_moe_backend_unsupported", "draft_load")
    assert plan.fault.message == ("ValueError: moe_backend='marlin' is not supported for unquantized MoE. "
                                  f"Expected one of {expected}.")


def test_marlin_exempt_for_unquantized_moe_from_033(gb10):
    plan = vllm_plan("0.33.0", seed000_args(spec='{"method":"mtp","num_speculative_tokens":2}'), gb10)
    assert plan.fault is None and plan.draft_moe == "TRITON"


@pytest.mark.parametrize("version,env,expected", [
    ("0.17.1", {}, "MARLIN"),
    ("0.19.0", {}, "FLASHINFER_CUTLASS"),
    (NIGHTLY, {}, "FLASHINFER_CUTLASS"),
    (NIGHTLY, {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, "MARLIN"),
    ("0.23.0", {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, "MARLIN"),
    ("0.24.0", {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, "FLASHINFER_CUTLASS"),
])
def test_nvfp4_moe_auto_selection_on_sm12x(gb10, rtx6000, version, env, expected):
    for gpu in (gb10, rtx6000):
        plan = vllm_plan(version, seed000_args(spec=None, moe_backend=None), gpu, env)
        assert plan.fault is None and plan.moe == expected
        assert plan.moe_potential[plan.moe_potential.index(expected)] == expected


@pytest.mark.parametrize("version,env,linear,expected,unknown", [
    (NIGHTLY, {"VLLM_NVFP4_GEMM_BACKEND": "marlin"}, None, "MARLIN", False),
    ("0.23.0", {"VLLM_NVFP4_GEMM_BACKEND": "marlin"}, None, "MARLIN", False),
    ("0.24.0", {"VLLM_NVFP4_GEMM_BACKEND": "marlin"}, None, "FLASHINFER_CUTLASS", True),
    ("0.24.0", {"VLLM_NVFP4_GEMM_BACKEND": "marlin"}, "marlin", "MARLIN", True),
    (NIGHTLY, {}, None, "FLASHINFER_CUTLASS", False),
])
def test_nvfp4_gemm_backend(gb10, version, env, linear, expected, unknown):
    argv = seed000_args(spec=None) + (["--linear-backend", linear] if linear else [])
    plan = vllm_plan(version, argv, gb10, env)
    assert plan.fault is None and plan.nvfp4_gemm == expected
    assert ("VLLM_NVFP4_GEMM_BACKEND" in plan.env_warnings) is unknown


def test_removed_env_vars_are_unknown_from_024(gb10):
    plan = vllm_plan("0.24.0", seed000_args(spec=None), gb10, SEED000_ENV)
    assert plan.env_warnings == ["VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_FLASHINFER_MOE_FP4"]
    assert vllm_plan("0.22.0", seed000_args(spec=None), gb10, SEED000_ENV).env_future_warnings
    strict = vllm_plan("0.24.0", seed000_args(spec=None) + ["--fail-on-environ-validation"], gb10, SEED000_ENV)
    assert strict.fault.name == "unknown_environment_variable"


@pytest.mark.parametrize("attention", ["FLASHINFER", "flashinfer", None])
def test_flashinfer_attention_with_mtp_crashes_on_gb10(gb10, attention):
    argv = seed000_args() if attention else without(seed000_args(), "--attention-backend")
    if attention:
        argv = replace_value(argv, "--attention-backend", attention)
    plan = vllm_plan(NIGHTLY, argv, gb10, SEED000_ENV)
    assert (plan.fault.name, plan.fault.phase) == ("flashinfer_mtp_cuda_graph_crash", "cuda_graph")


def test_flashinfer_attention_with_mtp_is_fine_off_sm121_and_without_mtp(gb10, rtx6000):
    argv = replace_value(seed000_args(), "--attention-backend", "FLASHINFER")
    assert vllm_plan(NIGHTLY, argv, rtx6000, SEED000_ENV).fault is None
    no_mtp = replace_value(seed000_args(spec=None), "--attention-backend", "FLASHINFER")
    assert vllm_plan(NIGHTLY, no_mtp, gb10, SEED000_ENV).fault is None


def test_flash_attn_forced_on_blackwell_is_invalid(gb10):
    plan = vllm_plan(NIGHTLY, replace_value(seed000_args(), "--attention-backend", "FLASH_ATTN"), gb10)
    assert plan.fault.name == "attention_backend_invalid"
    assert "AttentionBackendEnum.FLASH_ATTN is not valid" in plan.fault.message


def test_drafter_attention_not_inherited_from_021(gb10):
    spec = '{"method":"mtp","num_speculative_tokens":2,"moe_backend":"triton"}'
    old = vllm_plan("0.20.0", seed000_args(spec=spec), gb10)
    new = vllm_plan("0.21.0", seed000_args(spec=spec), gb10)
    assert (old.draft_attention, old.draft_attention_forced) == ("TRITON_ATTN", True)
    assert (new.draft_attention, new.draft_attention_forced) == ("FLASHINFER", False)
    assert new.fault is None  # only the target's FlashInfer path crashes


def test_bad_nightly_faults_only_on_speculative_requests(gb10):
    env = dict(SEED000_ENV, ENGINE_SIM_FAULT="illegal_memory_access_on_first_spec")
    plan = vllm_plan(NIGHTLY, seed000_args(), gb10, env)
    assert (plan.fault.name, plan.fault.phase) == ("illegal_memory_access_on_first_spec", "first_spec_request")
    assert "an illegal memory access was encountered" in plan.fault.message
    assert vllm_plan(NIGHTLY, seed000_args(spec=None), gb10, env).fault is None


def test_bad_compile_nightly_crashes_in_cuda_graph_capture_with_speculation(gb10):
    env = dict(SEED000_ENV, ENGINE_SIM_FAULT="crash_on_cuda_graph_capture")
    plan = vllm_plan(NIGHTLY, seed000_args(), gb10, env)
    assert (plan.fault.name, plan.fault.phase) == ("crash_on_cuda_graph_capture", "cuda_graph")
    assert "torch._dynamo.exc.BackendCompilerFailed" in plan.fault.message
    assert "RuntimeError: CUDA error: an illegal instruction was encountered" in plan.fault.message
    # The GB10 write-up: the same image started cleanly until --speculative-config was added.
    assert vllm_plan(NIGHTLY, seed000_args(spec=None), gb10, env).fault is None


@pytest.mark.parametrize("version,ok", [("0.17.0", False), ("0.17.1", True)])
def test_reasoning_parser_nemotron_v3_from_0171(gb10, version, ok):
    plan = vllm_plan(version, seed000_args(spec=None), gb10)
    if ok:
        assert plan.fault is None
    else:
        assert plan.fault.name == "invalid_reasoning_parser"
        assert plan.fault.message.startswith("KeyError: 'invalid reasoning parser: nemotron_v3 (chose from {")


def test_mamba_dtype_auto_and_prefix_caching_defaults(gb10):
    argv = replace_value(seed000_args(spec=None), "--mamba-ssm-cache-dtype", "auto")
    assert vllm_plan("0.19.0", argv, gb10).mamba_ssm_cache_dtype == "float16"
    assert vllm_plan("0.20.0", argv, gb10).mamba_ssm_cache_dtype == "float32"
    assert vllm_plan("0.25.0", argv, gb10).prefix_caching is False
    assert vllm_plan("0.26.0", argv, gb10).prefix_caching is True
    assert vllm_plan("0.19.0", argv + ["--enable-prefix-caching"], gb10).prefix_caching is True


def test_out_of_memory_for_kv_cache(gb10):
    plan = vllm_plan(NIGHTLY, replace_value(seed000_args(), "--gpu-memory-utilization", "0.6"), gb10)
    assert plan.fault.name == "kv_cache_no_memory"


# -------------------------------------------------------------------------------------- SGLang

def test_seed002_command_resolves_required_backends(rtx6000):
    plan = sglang_plan("0.5.13", SEED002_ARGS, rtx6000, SEED002_ENV)
    assert plan.fault is None
    args = plan.server_args
    assert (args["fp8_gemm_runner_backend"], args["moe_runner_backend"], args["attention_backend"]) == (
        "triton", "triton", "flashinfer")
    assert args["mamba_scheduler_strategy"] == "no_buffer" and args["quantization"] == "modelopt_fp8"
    assert 17_000_000 < plan.kv_cache_tokens < 19_000_000  # the g7e field report: 17,892,656
    assert len(plan.cuda_graph_bs) == 52


def test_seed002_eagle_flags(rtx6000):
    plan = sglang_plan("0.5.13", SEED002_ARGS + SEED002_EAGLE, rtx6000, SEED002_ENV)
    assert plan.fault is None
    assert plan.server_args["speculative_moe_runner_backend"] == "triton"
    assert plan.server_args["max_running_requests"] == 48
    assert len(plan.cuda_graph_bs) == 23
    assert "Max running requests is reset to 48" in plan.warnings[-1]


def test_eagle_without_speculative_moe_triton_is_oom_killed(rtx6000):
    argv = without(SEED002_ARGS + SEED002_EAGLE, "--speculative-moe-runner-backend")
    plan = sglang_plan("0.5.13", argv, rtx6000, SEED002_ENV)
    assert (plan.fault.name, plan.fault.phase, plan.fault.exit_code) == ("eagle_draft_moe_oom", "draft_load", 137)
    assert plan.server_args["speculative_moe_runner_backend"] == "auto"


def test_eagle_needs_disable_radix_cache_on_hybrid(rtx6000):
    argv = without(SEED002_ARGS + SEED002_EAGLE, "--disable-radix-cache", has_value=False)
    assert sglang_plan("0.5.13", argv, rtx6000, SEED002_ENV).fault.name == "speculative_radix_cache"


@pytest.mark.parametrize("drop_env,fp8_flag,fault", [
    (False, "triton", None),
    (True, "triton", None),
    (False, None, None),
    (True, None, "deep_gemm_sm120"),
    (False, "deep_gemm", "deep_gemm_sm120"),
    (False, "cutlass", "cutlass_fp8_sm120"),
])
def test_fp8_gemm_backend_matrix_on_sm120(rtx6000, drop_env, fp8_flag, fault):
    argv = without(SEED002_ARGS, "--fp8-gemm-backend")
    if fp8_flag:
        argv += ["--fp8-gemm-backend", fp8_flag]
    plan = sglang_plan("0.5.13", argv, rtx6000, {} if drop_env else SEED002_ENV)
    assert (plan.fault.name if plan.fault else None) == fault
    if fault:
        assert plan.fault.exit_code == 137


def test_moe_runner_auto_resolves_to_flashinfer_cutlass_for_modelopt(rtx6000):
    plan = sglang_plan("0.5.13", without(SEED002_ARGS, "--moe-runner-backend"), rtx6000, SEED002_ENV)
    assert plan.fault is None and plan.server_args["moe_runner_backend"] == "flashinfer_cutlass"


@pytest.mark.parametrize("version,extra,fault_text", [
    ("0.5.12", ["--mamba-scheduler-strategy", "extra_buffer"],
     "AssertionError: mamba extra_buffer is not supported for NemotronHForCausalLM model"),
    ("0.5.13", ["--mamba-scheduler-strategy", "extra_buffer"], None),
    ("0.5.20", ["--mamba-radix-cache-strategy", "extra_buffer", "--linear-attn-backend", "cutedsl"],
     "AssertionError: extra_buffer is not supported for NemotronHForCausalLM; use no_buffer."),
    ("0.5.20", ["--mamba-radix-cache-strategy", "extra_buffer"], None),
])
def test_mamba_extra_buffer_per_version(rtx6000, version, extra, fault_text):
    argv = without(SEED002_ARGS, "--mamba-scheduler-strategy") + extra
    plan = sglang_plan(version, argv, rtx6000, SEED002_ENV)
    if fault_text:
        assert (plan.fault.name, plan.fault.phase, plan.fault.message) == (
            "mamba_extra_buffer_unsupported", "config", fault_text)
    else:
        assert plan.fault is None


def test_nextn_is_rewritten_to_eagle(rtx6000):
    argv = replace_value(SEED002_ARGS + SEED002_EAGLE, "--speculative-algorithm", "NEXTN")
    assert sglang_plan("0.5.13", argv, rtx6000, SEED002_ENV).server_args["speculative_algorithm"] == "EAGLE"


def test_server_args_dump_format_changes_at_0519(rtx6000):
    old = sglang_log.dump_server_args(sglang_plan("0.5.18", without(SEED002_ARGS, "--mamba-scheduler-strategy"),
                                                  rtx6000, SEED002_ENV))
    new = sglang_log.dump_server_args(sglang_plan("0.5.19", without(SEED002_ARGS, "--mamba-scheduler-strategy"),
                                                  rtx6000, SEED002_ENV))
    assert old.startswith("server_args=ServerArgs(model_path='nvidia/") and "moe_runner_backend='triton'" in old
    assert new.startswith("server_args={'model_path': 'nvidia/") and "'moe_runner_backend': 'triton'" in new
