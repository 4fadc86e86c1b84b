# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Prometheus metrics a release defines for its ``/metrics``, from its metrics modules.

Every ``prometheus_client`` metric the engine builds is a call of ``Gauge``/``Counter``/
``Histogram``/``Summary``/``Info``/``Enum`` (or the class attributes vLLM keeps them in,
``self._gauge_cls``, ``self._counter_cls``, ``self._histogram_cls``) with a ``name=`` (or first
positional) argument. The name is a string literal, a local variable assigned literals in the
same function (vLLM's ``log_metrics_info``), or a loop variable over a literal list of tuples
(vLLM 0.33's spec-decode ``counter_specs``). A name this module cannot evaluate is an error: the
catalog would otherwise miss a metric silently.

The stored name is the one a query selects, as ``prometheus_client`` exposes it: a counter is
``<name>_total`` (its ``_total`` suffix stripped and added back), an info ``<name>_info``, a
histogram or summary its base name (the samples are ``_bucket``/``_sum``/``_count``).
"""
from __future__ import annotations

import ast
import os

# The modules that build what the engine's HTTP server exports on /metrics (connector and
# benchmark metrics elsewhere in the package are left out).
MODULE_DIRS = {
    "vllm": ("vllm/v1/metrics", "vllm/v1/spec_decode/metrics.py"),
    # sglang/srt/metrics up to 0.5.9, sglang/srt/observability from 0.5.10
    "sglang": ("sglang/srt/metrics", "sglang/srt/observability"),
}
PREFIX = {"vllm": "vllm:", "sglang": "sglang:"}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_KINDS = ("histogram", "counter", "gauge", "summary", "info", "enum")


class MetricNameError(ValueError):
    """A metric constructor whose name this module cannot evaluate."""


def _kind(func):
    """The metric kind a call builds (``counter``...), or None when it builds no metric."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    for kind in _KINDS:
        if name in (kind.capitalize(), "_%s_cls" % kind):
            return kind
    return None


def _strings(node):
    """The string literals of a tuple/list of tuples (``[(name, doc), ...]``), per position."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [[e.value if isinstance(e, ast.Constant) else None for e in item.elts]
                for item in node.elts if isinstance(item, (ast.Tuple, ast.List))]
    return []


def _bindings(function):
    """``{variable: {literal values}}``: the string literals each local name is given in ``function``."""
    found, lists = {}, {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                found.setdefault(target, set()).add(node.value.value)
            elif _strings(node.value):
                lists.setdefault(target, []).extend(_strings(node.value))
    for node in ast.walk(function):
        if isinstance(node, ast.For) or isinstance(node, ast.comprehension):
            rows = _strings(node.iter) or (lists.get(node.iter.id, []) if isinstance(node.iter, ast.Name) else [])
            if isinstance(node.target, ast.Tuple):
                for index, element in enumerate(node.target.elts):
                    if isinstance(element, ast.Name):
                        values = {row[index] for row in rows if index < len(row) and isinstance(row[index], str)}
                        if values:
                            found.setdefault(element.id, set()).update(values)
    return found


def _parameters(scope):
    if not isinstance(scope, _FUNCTIONS):
        return set()
    arguments = scope.args
    return {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}


def _own_nodes(scope):
    """The nodes of ``scope`` (a module or function), not those of the functions inside it."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, _FUNCTIONS):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _exposed(kind, name):
    if kind == "counter":
        return (name[:-len("_total")] if name.endswith("_total") else name) + "_total"
    if kind == "info":
        return name + "_info"
    return name


def _module_paths(root, engine):
    paths = []
    for entry in MODULE_DIRS[engine]:
        path = os.path.join(root, entry)
        if os.path.isdir(path):
            paths.extend(os.path.join(entry, f) for f in sorted(os.listdir(path)) if f.endswith(".py"))
        elif os.path.isfile(path):
            paths.append(entry)
    return paths


def metrics(src, engine):
    """``{exposed name: kind}`` of every ``<engine>:`` metric ``src``'s release defines."""
    found = {}
    prefix = PREFIX[engine]
    for relative in _module_paths(src.root, engine):
        info = src.module(relative[:-len(".py")].replace("/", "."))
        if info is None:
            continue
        for scope in [info["tree"]] + [n for n in ast.walk(info["tree"]) if isinstance(n, _FUNCTIONS)]:
            bindings = None
            for node in _own_nodes(scope):
                if not (isinstance(node, ast.Call) and _kind(node.func)):
                    continue
                keyword = next((k.value for k in node.keywords if k.arg == "name"), None)
                argument = keyword if keyword is not None else (node.args[0] if node.args else None)
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    names = {argument.value}
                elif isinstance(argument, ast.Name):
                    if bindings is None:
                        bindings = _bindings(scope)
                    names = bindings.get(argument.id)
                    if not names and (keyword is None or argument.id in _parameters(scope)):
                        continue  # collections.Counter(iterable); a wrapper passing its caller's name on
                    if not names:
                        raise MetricNameError("%s line %d: the metric name %s is not a literal this script can read"
                                              % (relative, node.lineno, argument.id))
                elif isinstance(argument, (ast.JoinedStr, ast.BinOp)):  # a name built at run time
                    raise MetricNameError("%s line %d: the metric name is not a literal this script can read"
                                          % (relative, node.lineno))
                else:
                    continue
                for name in names:
                    if name.startswith(prefix):
                        found[_exposed(_kind(node.func), name)] = _kind(node.func)
    return dict(sorted(found.items()))
