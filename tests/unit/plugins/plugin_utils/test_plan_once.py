# SPDX-License-Identifier: GPL-3.0-or-later
"""One plan per host per run: a plan made from the same inputs is kept; any changed input plans again."""
from __future__ import annotations

import os

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d

OPTIONS = {"name": "inferops-serving", "port": 8101, "network_mode": "host", "secret_env": [],
           "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 1024}}
OVERRIDES = {"args": {"host": "127.0.0.1"}}
LOCK = {"images": {"vllm/vllm-openai:cu130-nightly": {
    "digest": "sha256:" + "6e" * 32, "engine_version": "0.19.2rc1.dev134"}}}
PROFILE = "gb10-nvfp4-mtp-throughput"


@pytest.fixture(name="plans")
def count_plans(monkeypatch):
    """How many times plan() really ran."""
    calls = []
    real = d.plan

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(d, "plan", counted)
    return calls


def first():
    return d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES)


def test_the_same_inputs_keep_the_plan_of_this_run(plans):
    planned = first()
    # The server role's resolve after preflight's: equal inputs built anew (as Ansible templates them).
    again = d.plan_once(PROFILE, dict(OPTIONS, smoke=dict(OPTIONS["smoke"])), lock={**LOCK},
                        overrides={"args": {"host": "127.0.0.1"}}, previous=planned)
    assert again is planned and plans == [PROFILE]
    assert planned["plan_key"] == d.plan_key(PROFILE, OPTIONS, LOCK, OVERRIDES)
    assert planned["image"]["digest"] == "sha256:" + "6e" * 32


def test_a_pin_candidates_digest_overlay_is_planned_again(plans):
    planned = first()
    candidate = dict(OVERRIDES, image={"digest": "sha256:" + "ab" * 32})
    canary = d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=candidate, previous=planned)
    assert plans == [PROFILE, PROFILE]
    assert canary["image"]["digest"] == "sha256:" + "ab" * 32 and canary["spec_sha256"] != planned["spec_sha256"]
    # Back to the candidate's own inputs: kept, not planned a third time.
    assert d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=candidate, previous=canary) is canary
    assert len(plans) == 2


def test_a_tune_candidates_overrides_are_planned_again(plans):
    planned = first()
    candidate = {"args": {"host": "127.0.0.1", "max-num-seqs": 16, "speculative_config.num_speculative_tokens": 1}}
    tuned = d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=candidate, previous=planned)
    assert len(plans) == 2
    assert tuned["expect"]["max_num_seqs"] == 16 and tuned["expect"]["num_speculative_tokens"] == 1
    assert planned["expect"]["max_num_seqs"] == 32


@pytest.mark.parametrize("change", [
    {"lock": {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "cd" * 32,
                                                            "engine_version": "0.19.2rc1.dev134"}}}},
    {"options": dict(OPTIONS, port=8111)},
    {"options": dict(OPTIONS, smoke=dict(OPTIONS["smoke"], max_tokens=8))},
    {"profile": "gb10-nvfp4-mtp-latency"},
])
def test_any_other_changed_input_is_planned_again(plans, change):
    planned = first()
    inputs = dict({"profile": PROFILE, "options": OPTIONS, "lock": LOCK, "overrides": OVERRIDES}, **change)
    replanned = d.plan_once(inputs["profile"], inputs["options"], lock=inputs["lock"], overrides=inputs["overrides"],
                            previous=planned)
    assert replanned is not planned and len(plans) == 2 and replanned["plan_key"] != planned["plan_key"]


def test_a_profile_dir_and_an_edited_profile_file_are_inputs(plans, tmp_path):
    path = tmp_path / "mine.yml"
    path.write_text("extends: %s\nargs:\n  max-num-seqs: 8\n" % PROFILE)
    planned = d.plan_once("mine", OPTIONS, lock=LOCK, dirs=[str(tmp_path)])
    assert planned["expect"]["max_num_seqs"] == 8
    assert d.plan_once("mine", OPTIONS, lock=LOCK, dirs=[str(tmp_path)], previous=planned) is planned
    path.write_text("extends: %s\nargs:\n  max-num-seqs: 12\n" % PROFILE)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    edited = d.plan_once("mine", OPTIONS, lock=LOCK, dirs=[str(tmp_path)], previous=planned)
    assert edited["expect"]["max_num_seqs"] == 12 and len(plans) == 2
    # Another directory searched first is another input, even with the same profile name.
    other = tmp_path / "other"
    other.mkdir()
    d.plan_once("mine", OPTIONS, lock=LOCK, dirs=[str(other), str(tmp_path)], previous=edited)
    assert len(plans) == 3


def test_a_plan_rebuilt_from_a_record_is_never_kept(plans):
    rebuilt = d.from_record(d.record(first()))
    assert "plan_key" not in rebuilt
    assert d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES, previous=rebuilt) is not rebuilt


def test_a_bad_input_still_fails_with_a_kept_plan_at_hand():
    planned = first()
    with pytest.raises(d.ProfileError, match="server_port"):
        d.plan_once(PROFILE, dict(OPTIONS, port=0), lock=LOCK, overrides=OVERRIDES, previous=planned)


def test_a_profile_file_is_parsed_once_per_plan_and_read_again_when_edited(tmp_path, monkeypatch):
    # One memo only: the plan's (plan_once, by its inputs' digest). A profile and its parents are
    # parsed once per load (the extends chain is walked, then laid over, from the same parse), and
    # an edited file is read as it is now, with no cache of parses to invalidate.
    from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p
    path = tmp_path / "mine.yml"
    path.write_text("extends: %s\nargs:\n  max-num-seqs: 8\n" % PROFILE)
    loads = []
    real = p._LOADER

    class Counted(real):  # the real loader, counted
        def __init__(self, stream):
            loads.append(getattr(stream, "name", stream))
            super().__init__(stream)

    monkeypatch.setattr(p, "_LOADER", Counted)
    first = p.load_profile("mine", dirs=[str(tmp_path)])
    # mine.yml and each profile of its chain, once each.
    assert loads.count(str(path)) == 1 and len(loads) == len(set(loads)) == 3
    first["args"]["max-num-seqs"] = 99  # a caller's change reaches no later load
    assert p.load_profile("mine", dirs=[str(tmp_path)])["args"]["max-num-seqs"] == 8
    path.write_text("extends: %s\nargs:\n  max-num-seqs: 12\n" % PROFILE)
    assert p.load_profile("mine", dirs=[str(tmp_path)])["args"]["max-num-seqs"] == 12


def test_the_watchdogs_settings_are_inputs(plans):
    settings = {"interval": 30, "probe_deadline": 20, "probe_max_tokens": 4, "probe_prompt": "What is 2+2?",
                "restart_budget": 3, "startup_grace": 600, "crash_loop_restarts": 2, "crash_loop_window": 600,
                "meminfo_path": "/proc/meminfo", "drop_caches_before_start": False,
                "drop_caches_file": "/proc/sys/vm/drop_caches", "memory_wait_timeout": 300, "slow_floor": None,
                "slow_fraction": 0.3, "slow_window": None, "docker_host": "unix:///var/run/docker.sock",
                "log_lines": 50}
    watched = d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES, watchdog=settings)
    assert watched["watchdog"]["config"]["interval"] == 30
    assert d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES, watchdog=dict(settings),
                       previous=watched) is watched
    faster = d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES, watchdog=dict(settings, interval=10, probe_deadline=5),
                         previous=watched)
    assert faster["watchdog"]["config"]["interval"] == 10 and len(plans) == 2
    off = d.plan_once(PROFILE, OPTIONS, lock=LOCK, overrides=OVERRIDES, previous=faster)
    assert off["watchdog"]["config"] is None and off["watchdog"]["enabled"] is False and len(plans) == 3
