# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang: ``ServerArgs.add_cli_args``, its dataclass fields and the env vars the package reads."""
from __future__ import annotations

import ast
import os

from .arguments import ParserBuilder, finish, has_add_argument, module_functions
from .evaluate import Unknown, choices_of, literal
from .source import Source
from .typehints import hints


def _sglang_field_option(src, module, name, annotation, builder):
    """``(option strings, record)`` of an ``A[T, help]`` / ``A[T, Arg(...)]`` field, as
    add_cli_args_from_dataclass registers it; None for a field without CLI metadata."""
    if not (isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", "") in ("A", "Annotated")
            and isinstance(annotation.slice, ast.Tuple) and len(annotation.slice.elts) >= 2):
        return None
    inner, meta = annotation.slice.elts[0], annotation.slice.elts[1]
    arg = {}
    if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
        pass
    elif isinstance(meta, ast.Call) and getattr(meta.func, "id", "") == "Arg":
        arg = {k.arg: k.value for k in meta.keywords if k.arg}
    else:
        return None
    if isinstance(arg.get("no_cli"), ast.Constant) and arg["no_cli"].value is True:
        return None
    cli_name = arg["cli_name"].value if isinstance(arg.get("cli_name"), ast.Constant) else "--" + name.replace("_", "-")
    names = [cli_name]
    if "aliases" in arg:
        try:
            names += [str(a) for a in literal(src, module, arg["aliases"])]
        except Unknown:
            pass
    record = builder.new_record()
    if "action" in arg:
        action = arg["action"]
        builder.set_action(record, action.attr if isinstance(action, ast.Attribute) else getattr(action, "id", None),
                           module)
        if isinstance(arg.get("action_kwargs"), ast.Dict):  # passed on to add_argument
            for key, value in zip(arg["action_kwargs"].keys, arg["action_kwargs"].values):
                if isinstance(key, ast.Constant) and key.value in ("nargs", "choices"):
                    builder.apply_set(record, key.value, value, module)
        return names, record
    flat = hints(src, module, inner)
    kinds = {kind for kind, _detail in flat}
    literal_values = [v for kind, detail in flat if kind == "literal" for v in detail]
    if "literal" in kinds:
        record["choices"] = choices_of(src, module, arg["choices"]) if "choices" in arg else \
            sorted({str(v) for v in literal_values})
    elif "list" in kinds and "type_parser" not in arg:
        record["value"] = "many"
        record["choices"] = choices_of(src, module, arg["choices"]) if "choices" in arg else None
    elif kinds - {"none"} == {"bool"}:
        record["value"] = "none"
    else:
        record["choices"] = choices_of(src, module, arg["choices"]) if "choices" in arg else None
        if isinstance(arg.get("nargs"), ast.Constant):
            builder.apply_set(record, "nargs", arg["nargs"], module)
    if "choices" in arg and record["choices"] is None and record["value"] != "none":
        record["choices_unknown"] = True
    return names, record


_ENV_READERS = {"get_bool_env_var", "get_int_env_var", "get_float_env_var", "get_str_env_var", "getenv",
                "get_env_var", "_get_bool_env_var", "get_env_bool", "get_env_int"}


def sglang_catalog(root):
    src = Source(root)
    modules = ["sglang.srt.server_args"]
    group_dir = os.path.join(root, "sglang", "srt", "arg_groups")
    if os.path.isdir(group_dir):
        modules += ["sglang.srt.arg_groups." + f[:-3] for f in sorted(os.listdir(group_dir))
                    if f.endswith(".py") and f != "__init__.py"]
    if src.module(modules[0]) is None:
        raise SystemExit("%s: no sglang/srt/server_args.py" % root)
    builder = ParserBuilder(src, "sglang")
    for module in modules:
        if src.module(module) is None:
            continue
        for func, cls in module_functions(src.module(module)["tree"]):
            if has_add_argument(func):
                builder.function(func, module, class_node=cls)
    # From 0.5.20-ish most options are dataclass fields ``A[T, "help"]`` / ``A[T, Arg(...)]`` in
    # sglang/srt/arg_groups/fields/*.py, registered by add_cli_args_from_dataclass.
    # 0.5.14-0.5.19 keep those fields in ServerArgs itself.
    uses_dataclass_fields = "add_cli_args_from_dataclass" in ast.unparse(src.module(modules[0])["tree"])
    field_classes = []
    if uses_dataclass_fields:
        for node in src.module(modules[0])["tree"].body:
            if isinstance(node, ast.ClassDef) and node.name == "ServerArgs":
                field_classes.append((modules[0], node))
        fields_dir = os.path.join(root, "sglang", "srt", "arg_groups", "fields")
        if os.path.isdir(fields_dir):
            for filename in sorted(os.listdir(fields_dir)):
                if filename.endswith(".py") and filename != "__init__.py":
                    module = "sglang.srt.arg_groups.fields." + filename[:-3]
                    field_classes += [(module, node) for node in src.module(module)["tree"].body
                                      if isinstance(node, ast.ClassDef)]
    for module, node in field_classes:
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                option = _sglang_field_option(src, module, stmt.target.id, stmt.annotation, builder)
                if option:
                    builder.add(*option)
    flags = finish(builder.options, None)
    # env vars: Envs in environ.py plus literal reads anywhere in the package
    env = set()
    package = os.path.join(root, "sglang")
    for directory, dirnames, filenames in os.walk(package):
        dirnames.sort()
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = os.path.join(directory, filename)
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            if "SGLANG_" not in text and "SGL_" not in text:
                continue
            try:
                tree = ast.parse(text, path)
            except SyntaxError:
                continue
            found = _env_reads(tree, filename == "environ.py")
            if found:
                src.read.add(os.path.relpath(path, root))
                env.update(found)
    return src, flags, [], sorted(env)


def _is_env_name(value):
    return isinstance(value, str) and value.startswith(("SGLANG_", "SGL_")) and value.replace("_", "").isalnum() \
        and value.upper() == value


def _env_reads(tree, declares):
    found = set()
    for node in ast.walk(tree):
        if declares and isinstance(node, ast.ClassDef) and node.name == "Envs":
            for stmt in node.body:
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
                if isinstance(target, ast.Name) and _is_env_name(target.id):
                    found.add(target.id)
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            is_environ_get = name in ("get", "pop", "setdefault") and isinstance(func, ast.Attribute) and \
                "environ" in ast.unparse(func.value)
            if (name in _ENV_READERS or is_environ_get) and _is_env_name(node.args[0].value):
                found.add(node.args[0].value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                "environ" in ast.unparse(node.value) and _is_env_name(node.slice.value) and \
                isinstance(node.ctx, ast.Load):
            found.add(node.slice.value)
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and _is_env_name(node.left.value) \
                and any(isinstance(op, ast.In) for op in node.ops) and \
                any("environ" in ast.unparse(c) for c in node.comparators):
            found.add(node.left.value)
    return found
