# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment state file: anything unusable is "no last known-good"; records are bounded and idempotent."""
from __future__ import annotations

import datetime

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _state_file as sf

A = {"spec_sha256": "a" * 64, "spec": {"env": {"VLLM_X": "1"}}, "profile": {"env": {"VLLM_X": "1"}}}
B = {"spec_sha256": "b" * 64, "spec": {"env": {}}}


@pytest.mark.parametrize("data", [None, b"", b"  \n"])
def test_missing_or_empty_is_no_state_without_a_problem(data):
    assert sf.parse(data) == ({"last_known_good": {}, "history": []}, None)


@pytest.mark.parametrize("data, problem", [
    (b'{"last_known_good": {"spec_sha', r"^not valid JSON \(Unterminated string"),
    (b"\xff\xfe{}", r"^not UTF-8 text"),
    (b"[1, 2]", r"^the top level is a list, not a JSON object$"),
    (b'{"last_known_good": [], "history": []}', r"^last_known_good is a list"),
    (b'{"last_known_good": {}, "history": {"a": 1}}', r"^history is not a list of objects$"),
    (b'{"last_known_good": {"spec": {}}, "history": []}', r"^last_known_good has no spec_sha256$"),
    (b"[" * 100000 + b"]" * 100000, r"^not valid JSON"),
])
def test_unusable_files_are_no_state_with_the_reason(data, problem):
    state, found = sf.parse(data)
    assert state == {"last_known_good": {}, "history": []}
    assert found is not None
    assert __import__("re").match(problem, found), found


def test_a_good_file_round_trips():
    state, _changed = sf.record(sf.empty_state(), A)
    assert sf.parse(sf.dump(state).encode()) == (state, None)


def test_record_prepends_and_bounds_the_history():
    state = sf.empty_state()
    for i in range(7):
        state, changed = sf.record(state, dict(A, spec_sha256="%064d" % i), history=3)
        assert changed
    assert [e["spec_sha256"] for e in state["history"]] == ["%064d" % i for i in (6, 5, 4)]
    assert state["last_known_good"]["spec_sha256"] == "%064d" % 6


def test_recording_the_same_spec_changes_nothing():
    state, _changed = sf.record(sf.empty_state(), A)
    again, changed = sf.record(state, dict(A, validated_at="later"))
    assert not changed and again is state


def test_the_same_spec_proven_for_a_new_start_moves_the_record_of_the_proven_start():
    state, _changed = sf.record(sf.empty_state(), dict(A, started_at="2026-11-30T17:00:00Z"))
    state, _changed = sf.record(state, dict(B, started_at="2026-11-30T17:10:00Z"))
    again, changed = sf.record(state, dict(B, started_at="2026-11-30T17:10:00Z", validated_at="later"))
    assert not changed and again is state
    moved, changed = sf.record(state, dict(B, started_at="2026-11-30T18:00:00Z"))
    assert changed
    assert moved["last_known_good"]["started_at"] == "2026-11-30T18:00:00Z"
    assert [e.get("started_at") for e in moved["history"]] == ["2026-11-30T18:00:00Z", "2026-11-30T17:00:00Z"]


def test_record_keeps_unknown_top_level_keys():
    state, _changed = sf.record({"last_known_good": {}, "history": [], "note": "x"}, B)
    assert state["note"] == "x"


@pytest.mark.parametrize("entry, history, match", [
    ({"spec": {}}, 5, r"^entry needs a spec_sha256 .*got keys spec$"),
    ("x", 5, r"got a str$"),
    ({"spec_sha256": ""}, 5, r"needs a spec_sha256"),
    (A, 0, r"^history must be a whole number >= 1"),
    (A, True, r"^history must be"),
])
def test_bad_records_are_refused(entry, history, match):
    with pytest.raises(sf.StateError, match=match):
        sf.record(sf.empty_state(), entry, history)


def test_hide_env_keeps_names_and_hides_values():
    hidden = sf.hide_env({"last_known_good": A, "history": [A]})
    assert hidden["last_known_good"]["spec"]["env"] == {"VLLM_X": "<hidden>"}
    assert hidden["history"][0]["profile"]["env"] == {"VLLM_X": "<hidden>"}
    assert A["spec"]["env"] == {"VLLM_X": "1"}  # the input is not modified


def test_corrupt_path_is_utc_stamped():
    now = datetime.datetime(2026, 11, 30, 10, 0, 5, tzinfo=datetime.timezone.utc)
    assert sf.corrupt_path("/var/lib/x/s.json", now) == "/var/lib/x/s.json.corrupt-20261130T100005Z"


def test_a_record_writes_the_layout_version():
    state, _changed = sf.record(sf.empty_state(), A)
    assert state["schema_version"] == sf.SCHEMA_VERSION == 1
    assert '"schema_version": 1' in sf.dump({"last_known_good": {}, "history": []})


def test_the_unversioned_layout_is_read_as_layout_one():
    data = b'{"last_known_good": {"spec_sha256": "%s"}, "history": [{"spec_sha256": "%s"}]}' % (b"a" * 64, b"a" * 64)
    state, problem = sf.parse(data)
    assert problem is None and state["last_known_good"] == {"spec_sha256": "a" * 64}
    assert sf.schema_version(state) == 1


@pytest.mark.parametrize("version", [2, 99, 0, "2", 1.5, None, True])
def test_a_layout_this_code_does_not_know_is_refused_not_treated_as_corrupt(version):
    data = ('{"schema_version": %s, "last_known_good": {}, "history": []}' % __import__("json").dumps(version)).encode()
    with pytest.raises(sf.StateVersionError, match=r"^its schema_version is %s; this inferops.serving reads layouts "
                       r"up to 1$" % __import__("re").escape(__import__("json").dumps(version))):
        sf.parse(data)
