# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Evaluating the few expressions argument tables are made of (names, choices, enums)."""
from __future__ import annotations

import ast
import itertools

from .typehints import hints, is_enum_node


class Unknown(Exception):
    """An expression this script does not evaluate statically."""


# Names assigned in the function ParserBuilder is walking: name -> (module, value node)
# (SGLang: ``tool_call_parser_choices = list(FunctionCallParser.ToolCallParserEnum.keys())``).
LOCALS = {}
# The platform the collection deploys to: NVIDIA GPUs (vLLM's current_platform.device_type is
# "cuda" there; vLLM 0.28+ --mm-processor-device offers it beside auto and cpu).
PLATFORM_DEVICE_TYPE = "cuda"
# Class bodies being evaluated (innermost last): name -> (module, value node).
SCOPES = []


def literal(src, module, node, depth=0):
    """The value of a constant expression (lists, names of module-level lists, ``A + B``, ...)."""
    if depth > 20:
        raise Unknown("too deep")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                values.extend(literal(src, module, element.value, depth + 1))
            else:
                values.append(literal(src, module, element, depth + 1))
        return values
    if isinstance(node, ast.Dict):
        return {literal(src, module, k, depth + 1): None for k in node.keys if k is not None}
    if isinstance(node, ast.Name):
        if SCOPES and node.id in SCOPES[-1]:  # a class attribute naming another one (Backend.ALL)
            return literal(src, SCOPES[-1][node.id][0], SCOPES[-1][node.id][1], depth + 1)
        if node.id in LOCALS:  # a name assigned in the function being walked
            return literal(src, LOCALS[node.id][0], LOCALS[node.id][1], depth + 1)
        found = src.lookup(module, node.id)
        if found is None or found[1] is None or isinstance(found[1], ast.ClassDef):
            raise Unknown(node.id)
        return literal(src, found[0], found[1], depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):
        left, right = literal(src, module, node.left, depth + 1), literal(src, module, node.right, depth + 1)
        if isinstance(left, dict) and isinstance(right, dict):
            return dict(left, **right)
        return list(left) + list(right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("list", "sorted", "set", "frozenset", "tuple") and node.args:
        return list(literal(src, module, node.args[0], depth + 1))
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "get_args" and node.args:
        values = [v for kind, detail in hints(src, module, node.args[0]) if kind == "literal" for v in detail]
        if values:
            return values
        raise Unknown("get_args")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
        return list(literal(src, module, node.func.value, depth + 1))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # Class.TABLE (SGLang: ReasoningParser.DetectorMap, FunctionCallParser.ToolCallParserEnum,
        # Backend.ALL = (FULL, BREAKABLE, DISABLED): names in the class body first)
        found = src.lookup(module, node.value.id)
        if found is not None and isinstance(found[1], ast.ClassDef):
            scope = class_scope(found[0], found[1])
            if node.attr in scope:
                SCOPES.append(scope)
                try:
                    return literal(src, found[0], scope[node.attr][1], depth + 1)
                finally:
                    SCOPES.pop()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        # a module-level helper returning the list (SGLang 0.5.23 _reasoning_parser_choices():
        # its last return reads the dependency-free name list, imported inside the function)
        function = _function(src, module, node.func.id)
        if function is not None:
            return _function_result(src, function[0], function[1], depth)
    if isinstance(node, ast.Attribute) and ast.unparse(node) == "current_platform.device_type":
        return PLATFORM_DEVICE_TYPE
    if isinstance(node, ast.IfExp):
        return literal(src, module, node.body if _test(src, module, node.test, depth) else node.orelse, depth + 1)
    if isinstance(node, ast.ListComp) and len(node.generators) == 1 and \
            isinstance(node.generators[0].target, ast.Name) and not node.generators[0].ifs and \
            isinstance(node.generators[0].iter, ast.Call) and \
            getattr(node.generators[0].iter.func, "id", "") in ("permutations", "combinations"):
        # ",".join(p) for p in permutations(get_args(DetailedTraceModules), r=2) (vLLM 0.17-0.32)
        call = node.generators[0].iter
        items = literal(src, module, call.args[0], depth + 1)
        size = [literal(src, module, k.value, depth + 1) for k in call.keywords if k.arg == "r"] or \
            [literal(src, module, a, depth + 1) for a in call.args[1:2]]
        if ast.unparse(node.elt) != '",".join(%s)' % node.generators[0].target.id and \
                ast.unparse(node.elt) != "','.join(%s)" % node.generators[0].target.id:
            raise Unknown("comprehension")
        return [",".join(p) for p in getattr(itertools, call.func.id)(items, *size)]
    if isinstance(node, ast.ListComp) and len(node.generators) == 1 and \
            isinstance(node.generators[0].target, ast.Name) and not node.generators[0].ifs:
        # [m.name.lower() for m in EnumClass] (SGLang 0.5.23 --kv-canary-real-data)
        members = enum_values(src, module, node.generators[0].iter, depth)
        variable, text = node.generators[0].target.id, ast.unparse(node.elt)
        if text == variable + ".name.lower()":
            return [name.lower() for name, _value in members]
        if text == variable + ".name":
            return [name for name, _value in members]
        if text == variable + ".value":
            return [value for _name, value in members]
    raise Unknown(ast.dump(node)[:80])


def _test(src, module, node, depth):
    """The truth of an ``if`` test made of literals and ``current_platform.device_type``."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = literal(src, module, node.left, depth + 1)
        right = literal(src, module, node.comparators[0], depth + 1)
        op = type(node.ops[0])
        if op in (ast.In, ast.NotIn):
            return (left in right) == (op is ast.In)
        if op in (ast.Eq, ast.NotEq):
            return (left == right) == (op is ast.Eq)
    raise Unknown("test %s" % ast.unparse(node)[:60])


def class_scope(module, node):
    """``{name: (module, value node)}`` of a class body's plain assignments."""
    scope = {}
    for stmt in node.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and stmt.value is not None:
            scope[target.id] = (module, stmt.value)
    return scope


def _function(src, module, name, depth=0):
    """``(module, FunctionDef)`` a name means in ``module`` (following imports), or None."""
    info = src.module(module)
    if info is None or depth > 12:
        return None
    if name in info["functions"]:
        return module, info["functions"][name]
    if name in info["imports"]:
        source, original = info["imports"][name]
        return _function(src, source, original, depth + 1)
    return None


def _function_result(src, module, function, depth):
    """The value of a helper's last top-level ``return``, with its in-function imports and assignments."""
    saved = dict(LOCALS)
    try:
        for stmt in function.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                for alias in stmt.names:
                    found = src.lookup(stmt.module, alias.name)
                    if found is not None and found[1] is not None:
                        LOCALS[alias.asname or alias.name] = found
                    elif src.module(stmt.module + "." + alias.name) is None and found is None:
                        LOCALS.pop(alias.asname or alias.name, None)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                LOCALS[stmt.targets[0].id] = (module, stmt.value)
        returns = [stmt for stmt in function.body if isinstance(stmt, ast.Return) and stmt.value is not None]
        if not returns:
            raise Unknown("no return in %s" % function.name)
        return literal(src, module, returns[-1].value, depth + 1)
    finally:
        LOCALS.clear()
        LOCALS.update(saved)


def enum_values(src, module, node, depth=0):
    """``[(member name, value)]`` of the enum ``node`` means (a class, ``list(Class)`` or a helper returning it)."""
    if depth > 20:
        raise Unknown("too deep")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list" and node.args:
        return enum_values(src, module, node.args[0], depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        function = _function(src, module, node.func.id)
        if function is not None:
            saved = dict(LOCALS)
            try:
                for stmt in function[1].body:
                    if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                        for alias in stmt.names:
                            found = src.lookup(stmt.module, alias.name)
                            if found is not None:
                                LOCALS[alias.asname or alias.name] = found
                returns = [stmt for stmt in function[1].body if isinstance(stmt, ast.Return) and stmt.value]
                if returns:
                    return enum_values(src, function[0], returns[-1].value, depth + 1)
            finally:
                LOCALS.clear()
                LOCALS.update(saved)
    if isinstance(node, ast.Name):
        found = LOCALS.get(node.id) or src.lookup(module, node.id)
        if found is not None and is_enum_node(src, found[0], found[1]):
            members = []
            for stmt in found[1].body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                        and not stmt.targets[0].id.startswith("_"):
                    try:
                        value = literal(src, found[0], stmt.value, depth + 1)
                    except Unknown:
                        value = None
                    members.append((stmt.targets[0].id, value))
            return members
    raise Unknown("enum %s" % ast.dump(node)[:60])


def choices_of(src, module, node):
    try:
        values = literal(src, module, node)
    except Unknown:
        return None
    return sorted({str(v) for v in values}) if isinstance(values, (list, dict)) else None
