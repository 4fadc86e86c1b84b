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
# What the lab's nested Docker engines once ran with (no overlay, no iptables, no bridge inside a
# container), and what DGX OS ships.
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


@pytest.mark.parametrize("data, message", [
    (b'{"labels": ["\xff"]}', r"^not UTF-8 text: byte 0xff at offset 13 cannot be decoded$"),
    (b"[" * 100000 + b"]" * 100000, r"^nested too deeply to be a daemon configuration \(more than 64 levels\)$"),
    ('{"a": ' * 70 + "1" + "}" * 70, r"^nested too deeply"),
    ('{"max-concurrent-downloads": 1e400}', r"^the number 1e400 is out of range for a 64-bit float"),
    ('{"x": -1E999}', r"^the number -1E999 is out of range"),
    ('{"x": NaN}', r"^NaN is not a JSON number"),
    ('{"x": Infinity}', r"^Infinity is not a JSON number"),
])
def test_files_dockerd_cannot_read_are_refused_with_a_message(data, message):
    with pytest.raises(DaemonJsonError, match=message):
        load(data)


def test_numbers_docker_accepts_are_written_back_as_numbers():
    text = '{"max-concurrent-downloads": 3, "shutdown-timeout": 1.5e1, "big": 12345678901234567890, "neg": -0.25}'
    data = load(text)
    assert json.loads(dump(data)) == {"max-concurrent-downloads": 3, "shutdown-timeout": 15.0,
                                      "big": 12345678901234567890, "neg": -0.25}
    assert "Infinity" not in dump(data) and "NaN" not in dump(data)


def test_dump_refuses_non_finite_settings():
    with pytest.raises(DaemonJsonError, match="a number JSON cannot write"):
        dump({"x": float("inf")})


def test_bytes_and_text_load_the_same():
    assert load(b'{"a": "\xc3\xa9"}') == load('{"a": "\u00e9"}') == {"a": "\u00e9"}
