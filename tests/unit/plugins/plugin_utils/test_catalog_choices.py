# SPDX-License-Identifier: GPL-3.0-or-later
"""Every closed choice of every stored release (vLLM 0.17-0.33, SGLang 0.5.x): the catalog has it
evaluated, the lint accepts each choice and refuses a value outside them; and for a few releases
the choices are read again from the released source, without scripts/engine-catalog.

The source excerpts (tests/unit/fixtures/engine_src/choices-excerpts.tar.xz) are files of the
released wheels from PyPI (``pip download --no-deps vllm==X sglang==Y``), unchanged, under a
``<engine>-<release>/`` folder: the parser registries of SGLang 0.5.1, 0.5.10 and 0.5.23, SGLang
0.5.23's CUDA graph backends, sampling backends and KV canary modes, vLLM's AttentionConfig and
AttentionBackendEnum (0.17.1, 0.19.0, 0.33.0) and MambaConfig (0.26.0, 0.33.0).
"""
from __future__ import annotations

import ast
import os
import tarfile

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as c
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import lint_profile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXCERPTS = os.path.join(ROOT, "tests", "unit", "fixtures", "engine_src", "choices-excerpts.tar.xz")
ALL = [(engine, version) for engine in c.ENGINES for version in c.releases(engine)]


def _profile(engine, version, args):
    return {"name": "choices-check", "engine": engine, "model": "some/model",
            "image": {"repository": "x/y", "tag": "t", "digest": None, "engine_version": version},
            "hardware": {}, "args": args}


def _flag_value_findings(engine, version, args):
    return lint_profile(_profile(engine, version, args), known_bad=[], rules=("flag-value",))


def _closed(rel):
    return {name: entry for name, entry in rel.flags.items() if entry["value"] != "none" and c.choices(entry)}


def test_the_stored_releases_are_vllm_0_17_to_0_33_and_sglang_0_5():
    assert c.releases("vllm")[0] == "0.17.0" and c.releases("vllm")[-1] == "0.33.0"
    assert c.releases("sglang")[0] == "0.5.1" and c.releases("sglang")[-1] == "0.5.23"


@pytest.mark.parametrize("engine, version", ALL)
def test_every_closed_choice_is_evaluated(engine, version):
    # scripts/engine-catalog marks an argparse `choices=` it could not evaluate (the lint would then
    # accept any value there); since the parser registries, enums and helpers are read, none is left.
    rel = c.release(engine, version)
    assert [name for name, entry in rel.flags.items() if entry.get("choices_unknown")] == []


@pytest.mark.parametrize("engine, version", ALL)
def test_every_choice_is_accepted_and_nothing_else(engine, version):
    rel = c.release(engine, version)
    closed = _closed(rel)
    assert closed
    rounds = max(len(c.choices(entry)) for entry in closed.values())
    for round_index in range(rounds):
        args = {}
        for name, entry in closed.items():
            choice = c.choices(entry)[round_index % len(c.choices(entry))]
            # a flag the engine upper-cases (vLLM's enum backends) takes the value in any case
            args[name] = choice.lower() if "upper" in (entry.get("normalise") or []) else choice
        assert _flag_value_findings(engine, version, args) == [], (round_index, args)
    args = {name: "not-a-choice" for name in closed}
    refused = sorted(f["message"].split(" ", 1)[0][2:] for f in _flag_value_findings(engine, version, args)
                     if f["severity"] == "error")
    assert refused == sorted(closed)


# What the issue named, release by release (vLLM 0.17-0.33, SGLang 0.5.x), from the source:
@pytest.mark.parametrize("engine, flag, value, first, last", [
    # AttentionConfig.validate_backend_before: `if value.lower() == "auto": return None` from 0.18.0
    ("vllm", "attention-backend", "auto", "0.18.0", "0.33.0"),
    ("vllm", "attention-backend", "Auto", "0.18.0", "0.33.0"),
    # MambaConfig (0.20.0+): MambaBackendEnum[value.upper()]; CPU added in 0.27.0
    ("vllm", "mamba-backend", "triton", "0.20.0", "0.33.0"),
    ("vllm", "mamba-backend", "cpu", "0.27.0", "0.33.0"),
    # SGLang's NanoV3Detector: nano_v3 in 0.5.7-0.5.9, nemotron_3 from 0.5.10
    ("sglang", "reasoning-parser", "nano_v3", "0.5.7", "0.5.9"),
    ("sglang", "reasoning-parser", "nemotron_3", "0.5.10", "0.5.23"),
    ("sglang", "tool-call-parser", "qwen3_coder", "0.5.1", "0.5.23"),
    ("sglang", "sampling-backend", "flashinfer", "0.5.1", "0.5.23"),
])
def test_value_ranges_per_release(engine, flag, value, first, last):
    found = c.value_releases(engine, flag, value)
    assert found[0] == first and found[-1] == last, found
    assert found == [v for v in c.releases(engine) if c.version_in(v, first, last)], found


@pytest.mark.parametrize("engine, flag, value", [
    ("vllm", "mamba-backend", "mamba_ssm"), ("sglang", "reasoning-parser", "super_v3"),
    ("sglang", "tool-call-parser", "nemotron_3"), ("sglang", "cuda-graph-backend-decode", "piecewise"),
])
def test_values_no_release_has_are_refused_everywhere(engine, flag, value):
    assert c.value_releases(engine, flag, value) == []


# ---------------------------------------------------------------------------------------------
# The released source, read here without scripts/engine-catalog
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("excerpts")
    with tarfile.open(EXCERPTS) as archive:
        archive.extractall(root, filter="data")

    def tree(path):
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            return ast.parse(handle.read())
    return tree


def _assigned(tree, name, in_class=None):
    """The value node assigned to ``name`` (at module level, or in the body of class ``in_class``)."""
    body = tree.body
    if in_class:
        body = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == in_class][0].body
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return node.value
    raise AssertionError("%s not assigned" % name)


def _strings(node):
    return sorted({n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)})


def _dict_keys(node):
    return sorted(k.value for k in node.keys)


def _enum_names(tree, name):
    cls = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name][0]
    return sorted(s.targets[0].id for s in cls.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                  and not s.targets[0].id.startswith("_"))


def _choices(engine, version, flag):
    return c.choices(c.release(engine, version).flags[flag])


@pytest.mark.parametrize("version, reasoning, tools", [
    ("0.5.1", "sglang/srt/reasoning_parser.py", "sglang/srt/function_call/function_call_parser.py"),
    ("0.5.10", "sglang/srt/parser/reasoning_parser.py", "sglang/srt/function_call/function_call_parser.py"),
])
def test_sglang_parser_registries_match_the_source(source, version, reasoning, tools):
    # server_args.py: choices=list(ReasoningParser.DetectorMap.keys()) and
    # list(FunctionCallParser.ToolCallParserEnum.keys())
    detector_map = _assigned(source("sglang-%s/%s" % (version, reasoning)), "DetectorMap", "ReasoningParser")
    assert _choices("sglang", version, "reasoning-parser") == _dict_keys(detector_map)
    tool_map = _assigned(source("sglang-%s/%s" % (version, tools)), "ToolCallParserEnum", "FunctionCallParser")
    assert _choices("sglang", version, "tool-call-parser") == _dict_keys(tool_map)


def test_sglang_0_5_23_choices_match_the_source(source):
    # server_args.py: choices=["auto"] + _reasoning_parser_choices() (REASONING_PARSER_NAMES) and the
    # same for TOOL_CALL_PARSER_NAMES; Backend.ALL; set(SAMPLING_BACKEND_CHOICES);
    # [m.name.lower() for m in RealKvHashMode]
    names = _strings(_assigned(source("sglang-0.5.23/sglang/srt/parser/reasoning_parser_names.py"),
                               "REASONING_PARSER_NAMES"))
    assert "nemotron_3" in names
    assert _choices("sglang", "0.5.23", "reasoning-parser") == sorted(["auto"] + names)
    tools = _strings(_assigned(source("sglang-0.5.23/sglang/srt/function_call/parser_names.py"),
                               "TOOL_CALL_PARSER_NAMES"))
    assert _choices("sglang", "0.5.23", "tool-call-parser") == sorted(["auto"] + tools)
    backend = source("sglang-0.5.23/sglang/srt/model_executor/cuda_graph_config.py")
    members = [_assigned(backend, n.id, "Backend").value for n in _assigned(backend, "ALL", "Backend").elts]
    for flag in ("cuda-graph-backend-decode", "cuda-graph-backend-prefill"):
        assert _choices("sglang", "0.5.23", flag) == sorted(members)
    sampling = _strings(_assigned(source("sglang-0.5.23/sglang/srt/arg_groups/choices.py"),
                                  "BUILT_IN_SAMPLING_BACKENDS"))
    assert _choices("sglang", "0.5.23", "sampling-backend") == sampling
    modes = _enum_names(source("sglang-0.5.23/sglang/kernels/ops/kv_canary/consts.py"), "RealKvHashMode")
    assert _choices("sglang", "0.5.23", "kv-canary-real-data") == sorted(m.lower() for m in modes)


@pytest.mark.parametrize("version, auto", [("0.17.1", False), ("0.19.0", True), ("0.33.0", True)])
def test_vllm_attention_backend_matches_the_source(source, version, auto):
    members = _enum_names(source("vllm-%s/vllm/v1/attention/backends/registry.py" % version), "AttentionBackendEnum")
    config = ast.unparse(source("vllm-%s/vllm/config/attention.py" % version))
    assert ("value.lower() == 'auto'" in config) is auto
    assert _choices("vllm", version, "attention-backend") == sorted(members + (["AUTO"] if auto else []))
    assert bool(_flag_value_findings("vllm", version, {"attention-backend": "auto"})) is not auto


@pytest.mark.parametrize("version", ["0.26.0", "0.33.0"])
def test_vllm_mamba_backend_matches_the_source(source, version):
    tree = source("vllm-%s/vllm/config/mamba.py" % version)
    assert "MambaBackendEnum[value.upper()]" in ast.unparse(tree)
    assert _choices("vllm", version, "mamba-backend") == _enum_names(tree, "MambaBackendEnum")
