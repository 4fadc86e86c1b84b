# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape the roles keep: decisions are made in Python and read as plans, YAML only acts.

- A public filter stays only where a user calls it or it reads a task's registered result: at most
  20 of them (each file of plugins/filter/ is imported by ansible-core to resolve any one filter).
- No Jinja program under roles/ (outside templates/): a YAML value of five lines or more that
  holds a Jinja statement (``{% ... %}``), or an expression of five lines that decides (two
  conditionals) or builds data (a list of mappings). A filter call with its arguments over several
  lines, and a failure message of several lines, are not programs.
- Every entry point of every role that a task or playbook enters (``tasks_from``, ``main``) has
  an argument spec.
"""
from __future__ import annotations

import ast
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(ROOT, "roles")
MAX_PUBLIC_FILTERS = 20


def public_filters():
    """The names each plugins/filter/*.py file returns from FilterModule.filters(), read by AST."""
    names = []
    folder = os.path.join(ROOT, "plugins", "filter")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                        names.extend(key.value for key in ret.value.keys if isinstance(key, ast.Constant))
    return names


def test_at_most_twenty_public_filters():
    names = public_filters()
    assert names, "no filter found: the AST reading of plugins/filter/ is broken"
    assert len(names) <= MAX_PUBLIC_FILTERS, sorted(names)


def yaml_files(top):
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != "templates"]
        for name in files:
            if name.endswith((".yml", ".yaml")):
                yield os.path.join(folder, name)


def scalars(node):
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from scalars(key)
            yield from scalars(value)


EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


def is_program(expression):
    """One expression of five lines or more that decides (two conditionals or more) or builds data
    (a list of mappings); a filter call with its arguments over several lines is not one."""
    if len([line for line in expression.splitlines() if line.strip()]) < 5:
        return False
    return len(re.findall(r"\bif\b", expression)) >= 2 or re.search(r"\[\s*\{", expression) is not None


def jinja_programs(text):
    """The values of a YAML document that are Jinja programs of five lines or more."""
    found = []
    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if document is None:
            continue
        for node in scalars(document):
            # The lines the value spans in the file: a folded scalar (>-) joins them in its value.
            source = text[node.start_mark.index:node.end_mark.index]
            lines = [line for line in source.splitlines() if line.strip() and line.strip() not in (">", ">-", "|", "|-")]
            if len(lines) < 5:
                continue
            if "{%" in source or any(is_program(m) for m in EXPRESSION.findall(source)):
                found.append((node.start_mark.line + 1, lines[0].strip()))
    return found


def test_the_program_check_finds_a_namespace_loop_and_passes_a_message():
    program = "x: >-\n  {%- set f = namespace(i=[]) -%}\n  {%- for h in hs -%}\n  {%- set f.i = f.i + [h] -%}\n" \
              "  {%- endfor -%}\n  {{ f.i }}\n"
    message = "msg: >-\n  The host {{ inventory_hostname }} failed.\n  Line two.\n  Line three.\n  Line four.\n  Five.\n"
    assert jinja_programs(program) == [(1, "{%- set f = namespace(i=[]) -%}")]
    assert jinja_programs(message) == []


def test_no_jinja_program_under_roles():
    found = {}
    for path in yaml_files(ROLES):
        with open(path, encoding="utf-8") as handle:
            programs = jinja_programs(handle.read())
        if programs:
            found[os.path.relpath(path, ROOT)] = programs
    assert found == {}


ENTRY = re.compile(r"^\s*(?:- )?(?:ansible\.builtin\.)?(?:include_role|import_role):\s*$")


def entered_entry_points():
    """(role, entry point) for every include_role/import_role with tasks_from, and every role's main."""
    entered = set()
    roles = {name for name in os.listdir(ROLES) if os.path.isdir(os.path.join(ROLES, name))}
    for role in roles:
        if os.path.exists(os.path.join(ROLES, role, "tasks", "main.yml")):
            entered.add((role, "main"))
    tops = [ROLES, os.path.join(ROOT, "playbooks"), os.path.join(ROOT, "site.yml")]
    paths = [t for t in tops if os.path.isfile(t)] + [p for t in tops if os.path.isdir(t) for p in yaml_files(t)]

    def walk(node):
        if isinstance(node, dict):
            for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
                spec = node.get(key)
                if isinstance(spec, dict) and "tasks_from" in spec:
                    role = str(spec["name"]).rsplit(".", 1)[-1]
                    entered.add((role, str(spec["tasks_from"]).removesuffix(".yml")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for document in yaml.safe_load_all(handle):
                walk(document)
    return entered


@pytest.mark.parametrize("role, entry", sorted(entered_entry_points()))
def test_every_entry_point_has_an_argument_spec(role, entry):
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    assert entry in specs, f"roles/{role}/meta/argument_specs.yml has no entry point {entry!r}"
