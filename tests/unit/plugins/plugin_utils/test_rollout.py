# SPDX-License-Identifier: GPL-3.0-or-later
"""site.yml's rollout (plugins/plugin_utils/_rollout.py): the waves of the serving play, the hold
of a host whose model group or too many hosts failed, Ansible's batches for inferops_serial, the
summary rows. Property tests: whatever the hosts, groups and max_unavailable, no wave holds more
changing hosts of a group than allowed, every host is in exactly one wave, the hosts that do not
change are in the first, the groups roll side by side (a group's k-th slice is in wave k)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inferops.serving.plugins.plugin_utils._container_action import container_action
from ansible_collections.inferops.serving.plugins.plugin_utils._rollout import (
    RolloutError,
    ansible_batches,
    changing_hosts,
    group_limit,
    halt_reason,
    parse_amount,
    rollout_plan,
    summary_rows,
    waves,
)

SPARK = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
G7E = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
LAB = {"lab-spark": SPARK, "lab-spark-2": SPARK, "lab-g7e": G7E}


def test_the_lab_rolls_its_sparks_one_at_a_time_and_the_g7e_beside_the_first():
    assert waves(["lab-spark", "lab-spark-2", "lab-g7e"], LAB) == [["lab-spark", "lab-g7e"], ["lab-spark-2"]]


def test_hosts_that_do_not_change_go_in_the_first_wave():
    hosts = ["a1", "a2", "a3", "b1"]
    groups = {"a1": "a", "a2": "a", "a3": "a", "b1": "b"}
    assert waves(hosts, groups, 1, changing=["a2", "a3"]) == [["a1", "a2", "b1"], ["a3"]]
    assert waves(hosts, groups, 1, changing=[]) == [hosts]


@pytest.mark.parametrize("value, size, limit", [
    (1, 4, 1), ("2", 4, 2), ("25%", 4, 1), ("50%", 4, 2), ("50%", 3, 1), ("10%", 2, 1), ("100%", 5, 5), (3, 1, 3),
])
def test_the_limit_of_a_group(value, size, limit):
    assert group_limit(size, parse_amount(value, "inferops_max_unavailable")) == limit


@pytest.mark.parametrize("value, problem", [
    (0, "at least 1 host"), ("0", "at least 1 host"), ("-1", "expected a count"), ("0%", "above 0%"),
    ("150%", "at most 100%"), ("one", "expected a count"), (True, "expected a count"), (None, "expected a count"),
])
def test_a_max_unavailable_the_rollout_cannot_use_is_refused_naming_the_variable(value, problem):
    with pytest.raises(RolloutError, match="inferops_max_unavailable") as error:
        waves(["a"], {}, value)
    assert problem in str(error.value)


@pytest.mark.parametrize("serial, batches", [
    (1, [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("2", [["a", "b"], ["c", "d"], ["e"]]),
    ("40%", [["a", "b"], ["c", "d"], ["e"]]),
    ("10%", [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("100%", [["a", "b", "c", "d", "e"]]),
    ([1, "50%"], [["a"], ["b", "c"], ["d", "e"]]),
    (0, [["a", "b", "c", "d", "e"]]),
])
def test_inferops_serial_gives_ansibles_own_batches_of_the_inventory_order(serial, batches):
    assert ansible_batches(list("abcde"), serial) == batches
    plan = rollout_plan(list("abcde"), {host: "g" for host in "abcde"}, serial=serial)
    assert plan["waves"] == batches and plan["by"] == "inferops_serial"
    assert plan["serial"] == [len(batch) for batch in batches]


def test_the_plan_leaves_out_a_host_whose_plan_failed_but_counts_it():
    plan = rollout_plan(["lab-spark", "lab-spark-2", "lab-g7e"], LAB, failed=["lab-spark"])
    assert plan["hosts"] == ["lab-spark-2", "lab-g7e"] and plan["serial"] == [2] and plan["total"] == 3
    assert plan["by"] == "inferops_max_unavailable"


def test_a_failure_holds_the_later_hosts_of_its_group_only():
    plan = rollout_plan(["s1", "s2", "s3", "g1", "g2", "g3"], {"s1": "s", "s2": "s", "s3": "s", "g1": "g", "g2": "g",
                                                               "g3": "g"}, max_fail_percentage=50)
    assert plan["waves"] == [["s1", "g1"], ["s2", "g2"], ["s3", "g3"]]
    reason = halt_reason(plan, "s2", ["s1"])
    assert "s1 of its model group s failed earlier" in reason
    assert halt_reason(plan, "g2", ["s1"]) is None
    assert halt_reason(plan, "s1", ["s1"]) is None  # its own failure is a failure, not a hold
    assert halt_reason(plan, "g1", ["s1"]) is None  # the same wave: it ran beside


def test_more_failures_than_the_percentage_hold_every_other_host():
    hosts = ["a", "b", "c"]
    plan = rollout_plan(hosts, {}, max_fail_percentage=34)
    assert plan["waves"] == [hosts]  # groups of one host each: every host in the first wave
    assert halt_reason(plan, "b", ["a"]) is None  # 1 of 3 is 33 %
    reason = halt_reason(plan, "c", ["a", "b"])
    assert reason == ("not converged: 2 of the run's 3 serving hosts failed (a, b), more than "
                      "inferops_max_fail_percentage=34% allows; fix them and run site.yml again")
    assert halt_reason(rollout_plan(hosts, {}, max_fail_percentage=0), "b", ["a"]) is not None
    assert halt_reason(rollout_plan(hosts, {}, max_fail_percentage="100%"), "c", ["a", "b"]) is None


@pytest.mark.parametrize("value", [-1, 101, "lots", True, None])
def test_a_failure_percentage_the_rollout_cannot_use_is_refused_naming_the_variable(value):
    with pytest.raises(RolloutError, match="inferops_max_fail_percentage: got"):
        rollout_plan(["a"], {}, max_fail_percentage=value)


def test_the_summary_rows_say_why_a_host_is_not_served_or_not_converged():
    rows = summary_rows(["a", "b", "c"], {"a": {"smoke_answer": "4", "state": "serving"}, "b": {"state": "serving"}},
                        {"b": "The tuned server: the engine answered 5"}, {"c": "not converged: b failed"})
    assert rows == [{"host": "a", "smoke_answer": "4", "state": "serving"},
                    {"host": "b", "state": "NOT SERVED: The tuned server: the engine answered 5"},
                    {"host": "c", "state": "NOT CONVERGED (serves what it served before): not converged: b failed"}]


names = st.lists(st.sampled_from(["h%d" % i for i in range(12)]), unique=True, min_size=0, max_size=12)


@st.composite
def fleets(draw):
    hosts = draw(names)
    groups = {host: draw(st.sampled_from(["m1", "m2", "m3", None])) for host in hosts}
    changing = draw(st.one_of(st.none(), st.lists(st.sampled_from(hosts), unique=True) if hosts else st.just([])))
    amount = draw(st.one_of(st.integers(1, 4), st.sampled_from(["1", "2", "25%", "50%", "33%", "100%"])))
    return hosts, groups, changing, amount


@given(fleets())
def test_the_waves_keep_every_model_group_served(fleet):
    hosts, groups, changing, amount = fleet
    result = waves(hosts, groups, amount, changing)
    moving = set(hosts) if changing is None else set(changing)
    key = {host: groups.get(host) or "host:" + host for host in hosts}
    members = {}
    for host in hosts:
        members.setdefault(key[host], []).append(host)
    # every host in exactly one wave, and no empty wave
    flat = [host for wave in result for host in wave]
    assert sorted(flat) == sorted(hosts) and len(flat) == len(set(flat))
    assert all(result)
    # no wave takes more changing hosts of a group out than allowed
    for wave in result:
        for group, group_hosts in members.items():
            limit = group_limit(len(group_hosts), parse_amount(amount, "x"))
            assert len([host for host in wave if key[host] == group and host in moving]) <= limit
    # the hosts that do not change are in the first wave
    assert all(host in result[0] for host in hosts if host not in moving)
    # the groups roll side by side: a group's k-th slice of changing hosts is in wave k, so the
    # number of waves is the most slices any group needs
    for group, group_hosts in members.items():
        limit = group_limit(len(group_hosts), parse_amount(amount, "x"))
        slices = [host for host in group_hosts if host in moving]
        for index, host in enumerate(slices):
            assert host in result[index // limit]
    needed = max([math.ceil(len([h for h in group_hosts if h in moving])
                            / group_limit(len(group_hosts), parse_amount(amount, "x")))
                  for group_hosts in members.values()] + [1 if hosts else 0])
    assert len(result) == needed
    # each wave keeps the hosts' order
    assert all(wave == sorted(wave, key=hosts.index) for wave in result)


def test_changing_hosts_are_those_whose_running_engine_differs_from_the_plan():
    plan = {"container": "inferops-serving", "spec": {"image": "repo@sha256:" + "a" * 64},
            "spec_label": "inferops.serving.spec-sha256", "spec_sha256": "b" * 64}

    def read(running=True, label="b" * 64, image=plan["spec"]["image"]):
        return {"exists": True, "container": {"State": {"Running": running},
                                              "Config": {"Image": image, "Labels": {plan["spec_label"]: label}}}}

    reads = {"same": read(), "label": read(label="c" * 64), "image": read(image="other"),
             "stopped": read(running=False, label="c" * 64), "none": {"exists": False, "container": None},
             "failed": {"failed": True, "msg": "no Docker"}, "unreachable": {"unreachable": True},
             "unread": None, "noplan": read(label="c" * 64)}
    hosts = list(reads)
    deployments = {host: plan for host in hosts if host != "noplan"}
    assert changing_hosts(hosts, deployments, reads) == ["label", "image"]


def test_a_running_engine_whose_secrets_were_not_read_counts_as_stopping():
    """A plan with secrets and a read without their keyed digest: container_action refuses to call
    them unchanged, so the rollout counts a running engine as stopping (a wave of its own group)."""
    plan = {"container": "inferops-serving", "spec": {"image": "repo@sha256:" + "a" * 64, "env": {}},
            "spec_label": "inferops.serving.spec-sha256", "spec_sha256": "b" * 64,
            "env_file": "/etc/inferops-serving/inferops-serving.env", "secret_files": {}}
    running = {"exists": True, "container": {"State": {"Running": True}, "Config": {
        "Image": plan["spec"]["image"], "Labels": {plan["spec_label"]: "b" * 64}}}}
    stopped = {"exists": True, "container": {"State": {"Running": False}, "Config": {
        "Image": plan["spec"]["image"], "Labels": {plan["spec_label"]: "b" * 64}}}}
    with pytest.raises(ValueError):
        container_action(plan, running)
    assert changing_hosts(["a", "b"], {"a": plan, "b": plan}, {"a": running, "b": stopped}) == ["a"]
