# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rebuilding an argument parser from the ``add_argument`` calls of the functions that build it."""
from __future__ import annotations

import ast

from .config_fields import class_fields, field_kwargs
from .evaluate import LOCALS, Unknown, choices_of, literal
from .typehints import hints


def _subscript_path(node):
    """``kw["a"]["b"]`` -> ("kw", ["a", "b"]); None for anything else."""
    keys = []
    while isinstance(node, ast.Subscript):
        if not isinstance(node.slice, ast.Constant):
            return None
        keys.insert(0, node.slice.value)
        node = node.value
    return (node.id, keys) if isinstance(node, ast.Name) else None


def _normalise_of(node):
    text = ast.unparse(node)
    found = []
    if ".lower()" in text:
        found.append("lower")
    if ".upper()" in text:
        found.append("upper")
    if 'replace("-", "_")' in text or "replace('-', '_')" in text:
        found.append("dash_to_underscore")
    return found


class ParserBuilder:
    """Walks the functions that add arguments and records each option."""

    def __init__(self, src, engine, optional_str_bool=False):
        self.src = src
        self.engine = engine
        self.optional_str_bool = optional_str_bool
        self.options = []  # (option strings, record)
        self.visited = set()
        self.frontend_parser = None  # (module, make_arg_parser) when imported inside a function
        self._class_kwargs = {}

    def kwargs_of_class(self, module, class_name):
        found = self.src.lookup(module, class_name)
        if not found or not isinstance(found[1], ast.ClassDef):
            raise Unknown("class %s" % class_name)
        mod, node = found
        table = {}
        validated = set()
        auto = set()  # fields whose validator maps "auto" (any case) to None before the enum lookup
        by_name = set()  # enum fields whose validator looks the value up by member name, upper-cased
        for stmt in node.body:
            if not isinstance(stmt, ast.FunctionDef):
                continue
            text = ast.unparse(stmt)
            fields = [a.value for decorator in stmt.decorator_list if isinstance(decorator, ast.Call)
                      and getattr(decorator.func, "id", "") == "field_validator"
                      for a in decorator.args if isinstance(a, ast.Constant)]
            if "Valid values" in text:
                validated.update(fields)
            if ".lower() == 'auto'" in text:  # AttentionConfig.validate_backend_before (vLLM 0.18.1+)
                auto.update(fields)
            if "[value.upper()]" in text:  # AttentionBackendEnum[value.upper()], MambaBackendEnum[...]
                by_name.update(fields)
        for name, annotation, fmod, init in class_fields(self.src, mod, node):
            if not init or name.startswith("_"):
                continue
            record = field_kwargs(self.src, fmod, annotation, self.optional_str_bool)
            if record is not None:
                members = record.pop("enum_members", None)
                if members and name in by_name:
                    record["validated_choices"] = members
                    record["normalise"] = ["upper"]
                if name in validated and record["choices"] is None:
                    # Literal | str, but a field_validator refuses what is not a known value
                    # ("Invalid kv_cache_dtype ... Valid values are": vLLM 0.33 CacheConfig).
                    values = [v for kind, d in hints(self.src, fmod, annotation) if kind == "literal" for v in d]
                    if values:
                        record["validated_choices"] = sorted({str(v) for v in values})
                if name in auto and record.get("validated_choices"):
                    record["validated_choices"] = sorted(set(record["validated_choices"]) | {
                        "AUTO" if "upper" in record["normalise"] else "auto"})
                table[name] = record
        return table, mod, node

    def apply_set(self, record, key, value_node, module):
        if key == "action":
            name = value_node.attr if isinstance(value_node, ast.Attribute) else (
                value_node.value if isinstance(value_node, ast.Constant) else getattr(value_node, "id", None))
            self.set_action(record, name, module)
        elif key == "choices":
            record["choices"] = choices_of(self.src, module, value_node)
            record.pop("validated_choices", None)
            # a closed choice this script cannot evaluate: the catalog says so (any value passes)
            record["choices_unknown"] = record["choices"] is None and not (
                isinstance(value_node, ast.Constant) and value_node.value is None)
        elif key == "nargs":
            if isinstance(value_node, ast.Constant) and value_node.value is None:
                record["value"] = "one"  # nargs=None: one value, whatever the action's default
                return
            value = value_node.value if isinstance(value_node, ast.Constant) else None
            by_nargs = {"?": "optional", "*": "many", "+": "many", 0: "none"}
            record["value"] = by_nargs.get(value, "one" if value else record["value"])
        elif key == "type":
            normalise = _normalise_of(value_node)
            if normalise:
                record["normalise"] = normalise
        elif key == "const" and record.get("value") == "one":
            pass

    def set_action(self, record, name, module):
        record["action"] = name
        if name in ("store_true", "store_false", "store_const", "BooleanOptionalAction", "count", "help",
                    "version"):
            record["value"] = "none"
            record["choices"] = None
        elif name in ("append", "store", "extend"):
            record["value"] = "many" if name == "extend" else record.get("value") if record.get("value") != "none" else "one"
        elif name:
            found = self.src.lookup(module, name)
            if found and isinstance(found[1], ast.ClassDef):
                for stmt in found[1].body:
                    if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                        args = stmt.args.args[-len(stmt.args.defaults):] if stmt.args.defaults else []
                        for arg, default in zip(args, stmt.args.defaults):
                            if arg.arg == "nargs" and isinstance(default, ast.Constant) and default.value == 0:
                                record["value"] = "none"
                                record["choices"] = None
                if "Deprecated" in name:
                    record["deprecated"] = True

    def new_record(self):
        return {"value": "one", "choices": None, "action": None, "normalise": []}

    def add(self, strings, record):
        if any(s.startswith("-") for s in strings):
            self.options.append(([s for s in strings if s.startswith("-")], record))

    def call(self, node, env, module, loop_env=None):
        strings, record = [], None
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                strings.append(arg.value)
            elif isinstance(arg, ast.JoinedStr) and loop_env is not None:
                strings.append(loop_env["option"])
            elif isinstance(arg, ast.Starred):
                continue
            else:
                return
        explicit = []
        for keyword in node.keywords:
            if keyword.arg is None:
                base = self.eval_kwargs(keyword.value, env, module, loop_env)
                if base is not None:
                    record = dict(base)
            else:
                explicit.append(keyword)
        if record is None:
            record = self.new_record()
        for keyword in explicit:
            if keyword.arg == "deprecated" and isinstance(keyword.value, ast.Constant) and keyword.value.value:
                record["deprecated"] = True
            else:
                self.apply_set(record, keyword.arg, keyword.value, module)
        self.add(strings, record)

    def eval_kwargs(self, node, env, module, loop_env):
        if isinstance(node, ast.Name):
            if loop_env is not None and node.id == loop_env["value_name"]:
                return loop_env["record"]
            return env.get(node.id) if isinstance(env.get(node.id), dict) and "value" in env.get(node.id) else None
        path = _subscript_path(node)
        if path and path[0] in env:
            value = env[path[0]]
            for key in path[1]:
                value = value.get(key) if isinstance(value, dict) else None
            return value
        if isinstance(node, ast.Dict):
            record = None
            for key, value in zip(node.keys, node.values):
                if key is None:
                    base = self.eval_kwargs(value, env, module, loop_env)
                    if base is not None:
                        record = dict(base)
            record = record or self.new_record()
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant):
                    self.apply_set(record, key.value, value, module)
            return record
        return None

    def function(self, func, module, env=None, class_node=None, class_module=None, in_customize=False):
        """Walk one function body in order: kwargs tables, their edits, add_argument calls.

        ``class_node`` is the class the method runs for (``cls``), defined in ``class_module``.
        """
        env = dict(env or {})
        class_module = class_module or module
        saved_locals = dict(LOCALS)
        self._walk(func, module, env, class_node, class_module, in_customize)
        LOCALS.clear()
        LOCALS.update(saved_locals)

    def _walk(self, func, module, env, class_node, class_module, in_customize):
        for stmt in self._statements(func.body):
            self.follow(stmt, module, class_node)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
                if isinstance(target, ast.Name):
                    LOCALS[target.id] = (module, value)
                if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                        getattr(value.func, "id", getattr(value.func, "attr", None)) == "get_kwargs" and value.args:
                    arg = value.args[0]
                    cname = arg.id if isinstance(arg, ast.Name) else None
                    try:
                        if cname == "cls" and class_node is not None:
                            table = self.kwargs_of_class(class_module, class_node.name)[0]
                        else:
                            table = self.kwargs_of_class(module, cname)[0]
                    except Unknown:
                        continue
                    env[target.id] = {k: dict(v) for k, v in table.items()}
                    continue
                if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                        isinstance(value.func, ast.Attribute) and value.func.attr.startswith("_customize") and \
                        value.args and isinstance(value.args[0], ast.Name) and value.args[0].id in env:
                    env[target.id] = env[value.args[0].id]
                    if not in_customize:  # customize() walks the whole super() chain itself
                        self.customize(class_node, class_module, env[target.id], value.func.attr)
                    continue
                if isinstance(target, ast.Name):
                    path = _subscript_path(value)
                    if path and path[0] in env:
                        found = env[path[0]]
                        for key in path[1]:
                            found = found.get(key) if isinstance(found, dict) else None
                        if found is not None:
                            env[target.id] = found
                    continue
                path = _subscript_path(target)
                if path and path[0] in env and path[1]:
                    found = env[path[0]]
                    for key in path[1][:-1]:
                        found = found.get(key) if isinstance(found, dict) else None
                    if isinstance(found, dict) and "value" in found:
                        self.apply_set(found, path[1][-1], value, module)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                    isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr in ("remove", "append", "extend"):
                path = _subscript_path(stmt.value.func.value)
                if path and path[0] in env and path[1] and path[1][-1] == "choices" and stmt.value.args:
                    found = env[path[0]]
                    for key in path[1][:-1]:
                        found = found.get(key) if isinstance(found, dict) else None
                    if isinstance(found, dict) and found.get("choices") is not None:
                        try:
                            item = literal(self.src, module, stmt.value.args[0])
                        except Unknown:
                            found["choices"] = None
                            continue
                        items = [str(i) for i in (item if stmt.value.func.attr == "extend" else [item])]
                        if stmt.value.func.attr == "remove":
                            found["choices"] = [c for c in found["choices"] if c not in items]
                        else:
                            found["choices"] = sorted(set(found["choices"]) | set(items))
            elif isinstance(stmt, ast.AugAssign):
                path = _subscript_path(stmt.target)
                if path and path[0] in env and path[1] and path[1][-1] == "choices":
                    found = env[path[0]]
                    for key in path[1][:-1]:
                        found = found.get(key) if isinstance(found, dict) else None
                    if isinstance(found, dict) and found.get("choices") is not None:
                        extra = choices_of(self.src, module, stmt.value)
                        found["choices"] = sorted(set(found["choices"]) | set(extra)) if extra is not None else None
                        found["choices_unknown"] = extra is None
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    path = _subscript_path(target)
                    if path and path[0] in env and path[1] and path[1][-1] == "nargs":
                        found = env[path[0]]
                        for key in path[1][:-1]:
                            found = found.get(key) if isinstance(found, dict) else None
                        if isinstance(found, dict) and found.get("value") == "many":
                            found["value"] = "one"
            elif isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Call) and \
                    isinstance(stmt.iter.func, ast.Attribute) and stmt.iter.func.attr == "items" and \
                    isinstance(stmt.iter.func.value, ast.Name) and stmt.iter.func.value.id in env and \
                    isinstance(stmt.target, ast.Tuple):
                table = env[stmt.iter.func.value.id]
                value_name = stmt.target.elts[1].id
                for key, record in table.items():
                    loop_env = {"option": "--" + key.replace("_", "-"), "value_name": value_name, "record": record}
                    for call in self._calls(stmt.body):
                        self.call(call, env, module, loop_env)
                continue
            for call in self._calls([stmt]):
                self.call(call, env, module)

    def follow(self, stmt, module, class_node):
        """Walk into ``X.add_cli_args(parser)`` and ``make_arg_parser(parser)`` calls the statement makes."""
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "add_cli_args":
                owner = func.value
                if isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super" and class_node is not None:
                    target = self.base_of(module, class_node)
                elif isinstance(owner, ast.Name) and owner.id != "cls":
                    found = self.src.lookup(module, owner.id)
                    target = found if found and isinstance(found[1], ast.ClassDef) else None
                else:
                    target = None
                if target is None:
                    continue
                invoked = target if not (isinstance(owner, ast.Call)) else (module, class_node)
                method = self.method_of(target[0], target[1], "add_cli_args")
                if method is not None:
                    key = (invoked[1].name, id(method[1]))
                    if key not in self.visited:
                        self.visited.add(key)
                        self.function(method[1], method[0], class_node=invoked[1], class_module=invoked[0])
            elif isinstance(func, ast.Name) and func.id == "make_arg_parser":
                found = self.src.lookup(module, func.id) or self.frontend_parser
                if found and isinstance(found[1], ast.FunctionDef) and id(found[1]) not in self.visited:
                    self.visited.add(id(found[1]))
                    self.function(found[1], found[0])

    def base_of(self, module, class_node):
        for base in class_node.bases:
            name = getattr(base, "id", None)
            found = self.src.lookup(module, name) if name else None
            if found and isinstance(found[1], ast.ClassDef):
                return found
        return None

    def method_of(self, module, class_node, name, depth=0):
        """``(module, FunctionDef)`` of ``name`` in the class or its first class base."""
        for stmt in class_node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return module, stmt
        base = self.base_of(module, class_node)
        if base and depth < 6:
            return self.method_of(base[0], base[1], name, depth + 1)
        return None

    def customize(self, class_node, module, table, method_name):
        """Apply a ``_customize_cli_kwargs`` chain (the class's and its bases') to ``table``."""
        seen = []
        node, mod = class_node, module
        while node is not None and len(seen) < 6:
            seen.append(node)
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == method_name:
                    param = stmt.args.args[1].arg if len(stmt.args.args) > 1 else None
                    if param:
                        self.function(stmt, mod, {param: table}, node, in_customize=True)
            parent = None
            for base in node.bases:
                name = getattr(base, "id", None)
                found = self.src.lookup(mod, name) if name else None
                if found and isinstance(found[1], ast.ClassDef):
                    mod, parent = found
                    break
            node = parent

    @staticmethod
    def _statements(body):
        for stmt in body:
            if isinstance(stmt, (ast.If, ast.With, ast.Try)):
                yield from ParserBuilder._statements(stmt.body)
                for handler in getattr(stmt, "handlers", []):
                    yield from ParserBuilder._statements(handler.body)
                yield from ParserBuilder._statements(getattr(stmt, "orelse", []))
            else:
                yield stmt

    @staticmethod
    def _calls(body):
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "add_argument":
                    yield node


def module_functions(tree):
    """``(function, class or None)`` for every function of a module, methods included."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, None
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item, node


def has_add_argument(func):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
               for n in ast.walk(func))


def finish(options, inverse_prefixes):
    """The per-option records merged into the catalog's ``flags``."""
    flags = {}
    for strings, record in options:
        longs = [s for s in strings if s.startswith("--")]
        canonical = longs[0] if longs else strings[0]
        aliases = [s for s in strings if s != canonical]
        negations = []
        if record.get("action") in ("BooleanOptionalAction", "EnableDisableAction"):
            negations = ["--no-" + s[2:] for s in strings if s.startswith("--")]
            if inverse_prefixes:
                for s in strings:
                    for prefix, inverse in inverse_prefixes.items():
                        if s.startswith(prefix):
                            negations.append(inverse + s[len(prefix):])
        entry = {"aliases": sorted(aliases), "negations": sorted(negations), "value": record["value"],
                 "choices": record.get("choices") if record["value"] != "none" else None}
        if record.get("validated_choices") and not entry["choices"]:
            entry["choices"] = record["validated_choices"]
            entry["validated_after_parse"] = True
        if record.get("normalise"):
            entry["normalise"] = record["normalise"]
        if record.get("deprecated"):
            entry["deprecated"] = True
        if record.get("json"):
            entry["json"] = True
        if record.get("choices_unknown") and entry["choices"] is None and record["value"] != "none":
            entry["choices_unknown"] = True
        flags[canonical] = entry
    return flags
