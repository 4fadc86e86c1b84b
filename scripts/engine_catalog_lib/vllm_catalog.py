# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM: the serve parser, ``--speculative-config`` keys and env vars of a release."""
from __future__ import annotations

import ast

from .arguments import ParserBuilder, finish, module_functions
from .config_fields import class_fields
from .evaluate import literal
from .source import Source

# How vllm/envs.py's environment_variables is told from its other dicts: its keys start so (or are upper-case).
_ENV_PREFIXES = ("VLLM_", "CUDA_", "LD_", "S3_", "K_", "LOCAL_", "MAX_", "CMAKE_", "NVCC_", "VERBOSE", "Q_SCALE",
                 "V_SCALE", "NO_")


def vllm_catalog(root):
    src = Source(root)
    arg_utils = "vllm.engine.arg_utils"
    if src.module(arg_utils) is None:
        raise SystemExit("%s: no vllm/engine/arg_utils.py" % root)
    with open(src.path(arg_utils), encoding="utf-8") as handle:
        optional_str_bool = "type_hints == {bool, str, type(None)}" in handle.read()
    builder = ParserBuilder(src, "vllm", optional_str_bool)
    # The serve parser: the frontend's make_arg_parser module, EngineArgs, and `vllm serve`.
    # The frontend's make_arg_parser: where `vllm serve` imports it from (it moved:
    # entrypoints/openai/cli_args.py, launchers/cli_args.py in 0.29-0.32, common/cli_args.py).
    frontend = None
    serve_info = src.module("vllm.entrypoints.cli.serve")
    if serve_info is not None:
        for node in ast.walk(serve_info["tree"]):
            if isinstance(node, ast.ImportFrom) and any(a.name == "make_arg_parser" for a in node.names):
                frontend = node.module
    if frontend is None or src.module(frontend) is None:
        raise SystemExit("%s: cannot find the module of make_arg_parser" % root)
    for func, _cls in module_functions(src.module(frontend)["tree"]):
        if func.name == "make_arg_parser":
            builder.frontend_parser = (frontend, func)
    # `vllm serve`: ServeSubcommand.subparser_init adds its own options and calls make_arg_parser,
    # which calls FrontendArgs.add_cli_args and AsyncEngineArgs.add_cli_args (followed as called).
    serve = "vllm.entrypoints.cli.serve"
    entries = [(serve, f, c) for f, c in module_functions(src.module(serve)["tree"]) if f.name == "subparser_init"] \
        if src.module(serve) else []
    if not entries:
        entries = [(frontend, f, c) for f, c in module_functions(src.module(frontend)["tree"]) if f.name == "make_arg_parser"]
    for module, func, cls in entries:
        builder.function(func, module, class_node=cls)
    # EnableDisableAction (0.33+): --enable-x/--disable-x pairs for every BooleanOptionalAction.
    inverse = None
    argparse_utils = src.module("vllm.utils.argparse_utils")
    if argparse_utils is not None:
        found = argparse_utils["names"].get("EnableDisableAction")
        if isinstance(found, ast.ClassDef):
            for stmt in found.body:
                if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", "") == "_inverse_prefixes":
                    inverse = literal(src, "vllm.utils.argparse_utils", stmt.value)
                    inverse = dict(zip([k.value for k in stmt.value.keys], [v.value for v in stmt.value.values]))
    flags = finish(builder.options, inverse)
    # FlexibleArgumentParser turns -O<n>, -O <n> and -O=<n> into --optimization-level <n>.
    if argparse_utils is not None and "--optimization-level" in flags:
        with open(src.path("vllm.utils.argparse_utils"), encoding="utf-8") as handle:
            if 'arg.startswith("-O")' in handle.read():
                flags["--optimization-level"]["aliases"] = sorted(set(flags["--optimization-level"]["aliases"]) | {"-O"})
    # speculative_config keys: SpeculativeConfig's init fields
    spec_keys = []
    found = src.lookup("vllm.config", "SpeculativeConfig") or src.lookup("vllm.config.speculative", "SpeculativeConfig")
    if found:
        spec_keys = sorted(name for name, _a, _m, init in class_fields(src, found[0], found[1])
                           if init and not name.startswith("_"))
    # env vars: the keys of environment_variables in vllm/envs.py
    env = []
    envs = src.module("vllm.envs")
    if envs is not None:
        for node in ast.walk(envs["tree"]):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                if keys and all(k.startswith(_ENV_PREFIXES) or k.isupper() for k in keys) and len(keys) > 20:
                    env.extend(keys)
    return src, flags, spec_keys, sorted(set(env))
