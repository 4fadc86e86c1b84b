# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine simulator CLI: the real parsers' semantics, per engine and version."""
from __future__ import annotations

import pytest
from engine_sim_cases import SEED000_MODEL, SEED002_ARGS, SEED002_EAGLE, seed000_args

from engine_sim import sglang_cli, vllm_cli
from engine_sim.gpu import parse_query


def vllm_error(argv, version, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        vllm_cli.parse(["serve", *argv], version)
    assert exc.value.code == 2
    return capsys.readouterr().err


def sglang_error(argv, version, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        sglang_cli.parse(argv, version)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_nvidia_smi_rows():
    gb10, = parse_query("0, NVIDIA GB10, 12.1, [N/A]\n")
    assert (gb10.sm, gb10.unified_memory, gb10.memory_total_mib) == (121, True, None)
    rtx = parse_query("0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887\n")[0]
    assert (rtx.sm, rtx.unified_memory, round(rtx.total_gib, 1)) == (120, False, 95.6)


def test_vllm_seed000_args_parse_with_underscore_flag():
    args, non_default = vllm_cli.parse(["serve", *seed000_args()], "0.19.2rc1.dev134")
    assert args.model == SEED000_MODEL
    assert args.speculative_config == {"method": "mtp", "num_speculative_tokens": 2, "moe_backend": "triton"}
    assert (args.moe_backend, args.attention_backend, args.max_num_seqs) == ("marlin", "TRITON_ATTN", 4)
    assert args.async_scheduling is True and args.enable_chunked_prefill is True
    assert non_default["speculative_config"]["num_speculative_tokens"] == 2
    assert "port" not in non_default


def test_vllm_flexible_parser_normalises_underscores_and_dotted_keys():
    args = vllm_cli.parse(["serve", "m", "--mamba_ssm_cache_dtype", "float32", "--moe_backend", "MARLIN",
                           "--max_num_seqs=4", "--speculative_config.method", "mtp",
                           "--speculative-config.num_speculative_tokens", "3",
                           "--attention-backend", "triton_attn", "--moe-backend", "flashinfer-cutlass"],
                          "0.19.0")[0]
    assert args.mamba_ssm_cache_dtype == "float32"
    assert args.max_num_seqs == 4
    assert args.speculative_config == {"method": "mtp", "num_speculative_tokens": 3}
    assert args.attention_backend == "TRITON_ATTN"
    assert args.moe_backend == "flashinfer_cutlass"


def test_vllm_model_option_moves_to_positional():
    args = vllm_cli.parse(["serve", "--port", "9000", "--model", "org/model"], "0.19.0")[0]
    assert (args.model, args.model_tag, args.port) == ("org/model", "org/model", 9000)


def test_vllm_unknown_flag_is_reported_by_top_level_parser(capsys):
    err = vllm_error(["m", "--swap-space", "4"], "0.19.2rc1.dev134", capsys)
    assert "vllm: error: unrecognized arguments: --swap-space 4" in err
    assert err.startswith("usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...")


def test_vllm_invalid_choice_is_reported_by_serve_parser(capsys):
    err = vllm_error(["m", "--moe-backend", "bogus"], "0.17.1", capsys)
    assert "usage: vllm serve [model_tag] [options]" in err
    assert "vllm serve: error: argument --moe-backend: invalid choice: 'bogus'" in err


@pytest.mark.parametrize("version,argv,ok", [
    ("0.16.0", ["--moe-backend", "marlin"], False),
    ("0.17.0", ["--moe-backend", "marlin"], True),
    ("0.19.2rc1.dev134", ["--linear-backend", "marlin"], False),
    ("0.22.0", ["--linear-backend", "marlin"], True),
    ("0.17.1", ["-sc", '{"method":"mtp"}'], False),
    ("0.19.0", ["-sc", '{"method":"mtp"}'], True),
    ("0.21.0", ["--spec-tokens", "2"], False),
    ("0.22.0", ["--spec-tokens", "2"], True),
    ("0.19.2", ["--mamba-ssm-cache-dtype", "bfloat16"], False),
    ("0.22.0", ["--mamba-ssm-cache-dtype", "bfloat16"], True),
    ("0.17.1", ["--kv-cache-dtype", "float16"], False),
    ("0.19.0", ["--kv-cache-dtype", "float16"], True),
    ("0.31.0", ["--mamba-cache-mode", "all"], True),
    ("0.32.0", ["--mamba-cache-mode", "all"], False),
    ("0.19.0", ["--moe-backend", "emulation"], False),
    ("0.20.0", ["--moe-backend", "emulation"], True),
])
def test_vllm_flags_per_version(version, argv, ok, capsys):
    if ok:
        vllm_cli.parse(["serve", "m", *argv], version)
    else:
        err = vllm_error(["m", *argv], version, capsys)
        assert "unrecognized arguments" in err or "invalid choice" in err


def test_sglang_seed002_args_parse():
    args = sglang_cli.parse(SEED002_ARGS + SEED002_EAGLE, "0.5.13")
    assert (args.fp8_gemm_runner_backend, args.moe_runner_backend) == ("triton", "triton")
    assert args.speculative_moe_runner_backend == "triton" and args.mem_fraction_static == 0.80
    assert args.mamba_scheduler_strategy == "no_buffer" and args.disable_radix_cache


def test_sglang_does_not_normalise_underscores(capsys):
    err = sglang_error(["--model-path", "m", "--moe_runner_backend", "triton"], "0.5.13", capsys)
    assert "launch_server.py: error: unrecognized arguments: --moe_runner_backend triton" in err


def test_sglang_mamba_scheduler_strategy_lifecycle(capsys):
    assert sglang_cli.parse(["--model-path", "m", "--mamba-scheduler-strategy", "no_buffer"],
                            "0.5.7").mamba_scheduler_strategy == "no_buffer"
    args = sglang_cli.parse(["--model-path", "m", "--mamba-scheduler-strategy", "no_buffer"], "0.5.15")
    assert args.mamba_radix_cache_strategy == "no_buffer"
    assert "is deprecated" in args.deprecated_flags[0]
    err = sglang_error(["--model-path", "m", "--mamba-scheduler-strategy", "no_buffer"], "0.5.20", capsys)
    assert "unrecognized arguments: --mamba-scheduler-strategy no_buffer" in err


@pytest.mark.parametrize("version,parser,ok", [
    ("0.5.9", "nemotron_3", False), ("0.5.9", "nano_v3", True),
    ("0.5.10", "nemotron_3", True), ("0.5.10", "nano_v3", False), ("0.5.6", "nano_v3", False),
])
def test_sglang_reasoning_parser_names(version, parser, ok, capsys):
    argv = ["--model-path", "m", "--reasoning-parser", parser]
    if ok:
        sglang_cli.parse(argv, version)
    else:
        assert "invalid choice" in sglang_error(argv, version, capsys)


@pytest.mark.parametrize("version,flag,ok", [
    ("0.5.6", "--fp8-gemm-backend", False), ("0.5.7", "--fp8-gemm-backend", True),
    ("0.5.4", "--speculative-moe-runner-backend", False), ("0.5.5", "--speculative-moe-runner-backend", True),
])
def test_sglang_flags_per_version(version, flag, ok, capsys):
    argv = ["--model-path", "m", flag, "triton"]
    if ok:
        sglang_cli.parse(argv, version)
    else:
        assert "unrecognized arguments" in sglang_error(argv, version, capsys)
