# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab targets' cache of Ansible's compiled module code (tests/lab/toolkit/inferops_lab_pyc.py).

Each case runs a fresh Python, as a target runs each task: it installs the hook, imports a package
from a zip named like an AnsiballZ payload (``ansible_<module>_payload.zip`` in a temporary
folder of its own) and reports how many files it compiled, what the package returned and the file
name a traceback shows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

TOOLKIT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "lab", "toolkit")

PROBE = r"""
import json, sys, traceback, zipimport
sys.path.insert(0, sys.argv[1])
import inferops_lab_pyc
inferops_lab_pyc.CACHE = sys.argv[2]
compiled = []
original = inferops_lab_pyc._compile
def counting(pathname, source):
    compiled.append(pathname)
    return original(pathname, source)
inferops_lab_pyc._compile = counting
sys.path.insert(0, sys.argv[3])
import pkg.mod
try:
    pkg.mod.fail()
except ValueError:
    where = traceback.extract_tb(sys.exc_info()[2])[-1].filename
print(json.dumps({"compiled": compiled, "answer": pkg.mod.answer(), "where": where,
                  "hooked": zipimport._compile_source is inferops_lab_pyc.cached_compile}))
"""


def payload(folder, answer=42, name="ansible_demo_payload.zip"):
    """A zip like the one AnsiballZ writes to a new temporary folder for every task."""
    os.makedirs(folder)
    path = os.path.join(folder, name)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("pkg/mod.py", "def answer():\n    return %d\n\n\ndef fail():\n    raise ValueError('x')\n" % answer)
    return path


def run(cache, archive):
    result = subprocess.run([sys.executable, "-c", PROBE, TOOLKIT, str(cache), archive],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def compiled_files(result):
    return {os.path.basename(path) for path in result["compiled"]}


def test_the_second_task_compiles_nothing_and_its_traceback_names_its_own_zip(tmp_path):
    cache = tmp_path / "cache"
    first = run(cache, payload(str(tmp_path / "run1")))
    assert first["hooked"] and first["answer"] == 42
    assert len(first["compiled"]) == 2 and len(os.listdir(cache)) == 2
    second_zip = payload(str(tmp_path / "run2"))
    second = run(cache, second_zip)
    assert second["compiled"] == [] and second["answer"] == 42
    assert second["where"] == os.path.join(second_zip, "pkg", "mod.py")


def test_a_changed_source_is_compiled_again_never_served_stale(tmp_path):
    cache = tmp_path / "cache"
    run(cache, payload(str(tmp_path / "run1"), answer=1))
    changed = run(cache, payload(str(tmp_path / "run2"), answer=2))
    assert changed["answer"] == 2
    assert [os.path.basename(p) for p in changed["compiled"]] == ["mod.py"]


def test_other_zips_are_left_to_zipimport(tmp_path):
    cache = tmp_path / "cache"
    result = run(cache, payload(str(tmp_path / "run1"), name="library.zip"))
    assert result["answer"] == 42 and compiled_files(result) == {"__init__.py", "mod.py"}
    assert not cache.exists()


def test_a_damaged_entry_is_compiled_again_and_replaced(tmp_path):
    cache = tmp_path / "cache"
    run(cache, payload(str(tmp_path / "run1")))
    for entry in os.listdir(cache):
        (cache / entry).write_bytes(b"\x00not marshal")
    again = run(cache, payload(str(tmp_path / "run2")))
    assert again["answer"] == 42 and compiled_files(again) == {"__init__.py", "mod.py"}
    third = run(cache, payload(str(tmp_path / "run3")))
    assert third["compiled"] == []


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    result = run(blocked / "cache", payload(str(tmp_path / "run1")))
    assert result["answer"] == 42 and compiled_files(result) == {"__init__.py", "mod.py"}
