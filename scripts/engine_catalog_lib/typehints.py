# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a type annotation means as ``typing.get_type_hints`` sees it; dataclasses and enums."""
from __future__ import annotations

import ast


_BUILTIN_TYPES = {"bool", "str", "int", "float", "dict", "list", "tuple", "set", "bytes"}


def _decorators(node):
    names = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.append(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return names


def is_dataclass_node(node):
    return isinstance(node, ast.ClassDef) and any(d in ("dataclass", "config") for d in _decorators(node))


def is_enum_node(src, module, node, depth=0):
    if not isinstance(node, ast.ClassDef) or depth > 6:
        return False
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name in ("Enum", "StrEnum", "IntEnum"):
            return True
        found = src.lookup(module, name)
        if found and is_enum_node(src, found[0], found[1], depth + 1):
            return True
    return False


def enum_members(node):
    members = []
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            members.append(stmt.targets[0].id)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            members.append(stmt.target.id)
    return [m for m in members if not m.startswith("_")]


def hints(src, module, node, depth=0):
    """The flattened type hints of an annotation: ``[(kind, detail)]`` as ``get_type_hints`` sees them."""
    if depth > 20 or node is None:
        return [("other", None)]
    if isinstance(node, ast.Constant):
        if node.value is None:
            return [("none", None)]
        if isinstance(node.value, str):
            return hints(src, module, ast.parse(node.value, mode="eval").body, depth + 1)
        return [("other", None)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return hints(src, module, node.left, depth + 1) + hints(src, module, node.right, depth + 1)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            values = []
            for arg in args:
                if isinstance(arg, ast.Constant):
                    values.append(arg.value)
                else:  # a Literal alias inside a Literal: Python flattens it
                    for kind, detail in hints(src, module, arg, depth + 1):
                        if kind == "literal":
                            values.extend(detail)
            return [("literal", values)]
        if head in ("Optional",):
            return hints(src, module, args[0], depth + 1) + [("none", None)]
        if head == "Union":
            return [h for arg in args for h in hints(src, module, arg, depth + 1)]
        if head in ("Annotated", "SkipValidation", "ClassVar", "InitVar"):
            return hints(src, module, args[0], depth + 1) if head not in ("ClassVar", "InitVar") else [("classvar", None)]
        if head in ("list", "List", "tuple", "Tuple", "set", "Set", "Sequence"):
            inner = [h for arg in args if not (isinstance(arg, ast.Constant) and arg.value is Ellipsis)
                     for h in hints(src, module, arg, depth + 1)]
            return [(head.lower() if head != "Sequence" else "list", inner)]
        if head in ("dict", "Dict", "Mapping"):
            return [("dict", None)]
        return hints(src, module, node.value, depth + 1)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    if name in _BUILTIN_TYPES:
        return [(name, None)]
    if name in ("Any",):
        return [("other", None)]
    if name is None:
        return [("other", None)]
    found = src.lookup(module, name)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # module.Name (e.g. me_quant.QuantizationMethods): resolve through the module alias
        base = src.lookup(module, node.value.id)
        if base and base[1] is None:
            found = src.lookup(base[0], name)
    if found is None:
        return [("other", name)]
    mod, target = found
    if isinstance(target, ast.ClassDef):
        if is_dataclass_node(target):
            return [("dataclass", name)]
        if is_enum_node(src, mod, target):
            return [("enum", (name, enum_members(target)))]
        return [("other", name)]
    if target is None:
        return [("other", name)]
    if isinstance(target, ast.Call):  # TypeVar, NewType, ...
        return [("other", name)]
    return hints(src, mod, target, depth + 1)
