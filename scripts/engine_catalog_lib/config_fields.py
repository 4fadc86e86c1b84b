# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM: the fields of a config dataclass and what ``_compute_kwargs`` makes of each."""
from __future__ import annotations

import ast

from .typehints import hints


def class_fields(src, module, node, depth=0):
    """``[(name, annotation, module, init)]`` of a dataclass, bases first (dataclass order)."""
    fields = []
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        found = src.lookup(module, name)
        if found and isinstance(found[1], ast.ClassDef) and depth < 6:
            fields.extend(class_fields(src, found[0], found[1], depth + 1))
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            init = True
            if isinstance(stmt.value, ast.Call):
                for keyword in stmt.value.keywords:
                    if keyword.arg == "init" and isinstance(keyword.value, ast.Constant) and keyword.value.value is False:
                        init = False
            fields = [f for f in fields if f[0] != stmt.target.id]
            fields.append((stmt.target.id, stmt.annotation, module, init))
    return fields


def field_kwargs(src, module, annotation, optional_str_bool):
    """What ``_compute_kwargs`` makes of one field: ``{"value", "choices", "negatable", ...}``."""
    flat = hints(src, module, annotation)
    kinds = {kind for kind, _detail in flat}
    if "classvar" in kinds:
        return None
    result = {"value": "one", "choices": None, "action": None, "normalise": []}
    if "dataclass" in kinds:
        result["json"] = True
        return result
    if optional_str_bool and kinds == {"bool", "str", "none"}:
        result["value"] = "optional"
        return result
    if "bool" in kinds:
        result["action"] = "BooleanOptionalAction"
        result["value"] = "none"
        return result
    literal_values = [v for kind, detail in flat if kind == "literal" for v in detail]
    if "literal" in kinds:
        if "str" not in kinds:
            result["choices"] = sorted({str(v) for v in literal_values})
            if "none" in kinds:
                result["choices"].append("None")
        return result
    for kind in ("tuple", "list", "set"):
        if kind in kinds:
            result["value"] = "many"
            inner = [detail for k, detail in flat if k == kind][0] or []
            inner_values = [v for k, d in inner if k == "literal" for v in d]
            inner_kinds = {k for k, _detail in inner}
            if inner_values and "str" not in inner_kinds:
                result["choices"] = sorted({str(v) for v in inner_values})
                if "none" in kinds:
                    result["choices"].append("None")
            return result
    # An enum field: kwargs_of_class keeps its member names as the choices when the class's
    # field_validator looks the value up by name (``SomeEnum[value.upper()]``: AttentionConfig,
    # MambaConfig); other enum fields convert differently.
    enums = [members for kind, detail in flat if kind == "enum" for _name, members in [detail]]
    if enums:
        result["enum_members"] = sorted(enums[0])
    return result
