# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/role-mutations' data against the tree as it is (cheap: no copy, no test run): every
mutation's before text is in its file exactly once, so a refactor that moves or rewrites a planted
line fails here, in `make test`, and not only when someone runs the script; the tests it names
exist. Also its parts: the mutation applied, the data problems it reports, pytest's exit codes."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LOADER = importlib.machinery.SourceFileLoader("role_mutations", os.path.join(ROOT, "scripts", "role-mutations"))
_SPEC = importlib.util.spec_from_loader("role_mutations", _LOADER)
role_mutations = importlib.util.module_from_spec(_SPEC)
_LOADER.exec_module(role_mutations)


def test_every_mutation_anchors_once_and_names_existing_tests():
    assert role_mutations.problems(role_mutations.MUTATIONS) == []
    assert len(role_mutations.MUTATIONS) >= 6


@pytest.mark.parametrize("mutation", role_mutations.MUTATIONS, ids=lambda m: m["id"])
def test_each_mutation_changes_its_file(mutation):
    with open(os.path.join(ROOT, mutation["file"]), encoding="utf-8") as handle:
        text = handle.read()
    mutated = role_mutations.mutate(text, mutation)
    assert mutated != text and mutation["after"] in mutated and mutation["before"] not in mutated.replace(
        mutation["after"], "")


def test_data_problems_are_named(tmp_path):
    (tmp_path / "roles").mkdir()
    (tmp_path / "roles" / "x.yml").write_text("when: a\nwhen: a\nmode: '0600'\n")
    (tmp_path / "test_x.py").write_text("def test_one():\n    pass\n")
    good = {"id": "A", "what": "w", "file": "roles/x.yml", "before": "mode: '0600'", "after": "mode: '0644'",
            "tests": ["test_x.py::test_one"]}
    assert role_mutations.problems([good], tmp_path) == []
    found = role_mutations.problems([
        dict(good, before="when: a"), dict(good, id="B", before="absent"), dict(good, id="B"),
        dict(good, id="C", tests=["test_x.py::test_two", "test_y.py"]), {"id": "D"},
        dict(good, id="E", after=good["before"])], tmp_path)
    assert found == [
        "A: the before text 'when: a' is found 2 times in roles/x.yml: update the anchor to the code as it is now",
        "B: the before text 'absent' is not found in roles/x.yml: update the anchor to the code as it is now",
        "B: the id is used twice",
        "C: test_x.py has no test test_two",
        "C: test file test_y.py does not exist",
        "D: has fields ['id'], wants ['id', 'what', 'file', 'before', 'after', 'tests']",
        "E: before must be a non-empty text other than after",
    ]
    with pytest.raises(ValueError, match="A: the before text is not in roles/x.yml exactly once"):
        role_mutations.mutate("when: a\nwhen: a\n", dict(good, before="when: a"))


def test_pytest_exit_codes_as_verdicts():
    assert role_mutations.verdict(1) == "caught"
    assert role_mutations.verdict(0) == "SURVIVED"  # passed, or every test skipped
    assert role_mutations.verdict(5) == "ERROR (pytest exit 5)"  # no test collected: a stale node id
