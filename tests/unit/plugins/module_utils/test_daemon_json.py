# SPDX-License-Identifier: GPL-3.0-or-later
"""daemon.json merging: the NVIDIA runtime goes in, nobody else's settings come out."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._daemon_json import (
    DaemonJsonError,
    deep_merge,
    dump,
    load,
    merge_text,
)

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}
# What the lab's targets run with (DESIGN.md), and what DGX OS ships.
LAB = {"storage-driver": "vfs", "iptables": False, "bridge": "none"}


def test_merge_keeps_other_keys():
    merged = deep_merge(LAB, NVIDIA)
    assert merged == dict(LAB, **NVIDIA)
    assert list(merged) == ["storage-driver", "iptables", "bridge", "runtimes"]


def test_nested_runtimes_merge():
    current = {"runtimes": {"crun": {"path": "/usr/bin/crun"},
                            "nvidia": {"path": "/usr/bin/old-runtime", "runtimeArgs": ["--debug"]}}}
    merged = deep_merge(current, NVIDIA)
    assert merged["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert merged["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "args": [],
                                            "runtimeArgs": ["--debug"]}


def test_lists_and_scalars_replace():
    merged = deep_merge({"dns": ["1.1.1.1"], "debug": True}, {"dns": ["9.9.9.9"], "debug": False})
    assert merged == {"dns": ["9.9.9.9"], "debug": False}


def test_null_removes_a_key():
    current = dict(NVIDIA, **{"default-runtime": "nvidia"})
    assert deep_merge(current, {"default-runtime": None, "absent": None}) == NVIDIA


def test_inputs_are_not_modified():
    current = {"runtimes": {"crun": {"path": "/usr/bin/crun"}}}
    snapshot = json.dumps(current)
    deep_merge(current, NVIDIA)
    assert json.dumps(current) == snapshot


def test_merge_is_idempotent():
    before, after, changed = merge_text(dump(LAB), NVIDIA)
    assert changed and before == LAB
    again_before, again_after, changed_again = merge_text(dump(after), NVIDIA)
    assert not changed_again and again_before == again_after == after


def test_reformatting_is_not_a_change():
    compact = json.dumps(dict(LAB, **NVIDIA), separators=(",", ":"))
    assert merge_text(compact, NVIDIA)[2] is False


@pytest.mark.parametrize("text", ["", "   \n", None])
def test_empty_file_holds_no_settings(text):
    assert load(text) == {}


@pytest.mark.parametrize("text", ["{", "[]", '"vfs"'])
def test_unusable_file_is_an_error(text):
    with pytest.raises(DaemonJsonError):
        load(text)


def test_dump_is_indented_with_a_newline():
    assert dump({"a": 1}) == '{\n  "a": 1\n}\n'
