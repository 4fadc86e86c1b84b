# SPDX-License-Identifier: GPL-3.0-or-later
"""A host's status from what status.yml reads: drift from the plan, health, a real completion, metrics."""
from __future__ import annotations

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._status import UNREAD, fleet_status, host_status, unread_status

LOCK = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "a" * 64}}}
DEPLOYMENT = plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101,
                                                "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 64}},
                  lock=LOCK)


def container(image, spec, running=True):
    """docker_container_info's result shape (community.docker: exists + the Engine API's inspect)."""
    return {"exists": True, "container": {"Config": {"Image": image, "Labels": {"inferops.serving.spec-sha256": spec}},
                                          "State": {"Running": running, "Status": "running" if running else "exited"}}}


ANSWER = {"status": 200, "elapsed": 0, "json": {"choices": [{"message": {"content": " 4 "}}]}}
METRICS = ('vllm:num_requests_running{engine="0",model_name="m"} 2.0\n'
           'vllm:num_requests_waiting{engine="0",model_name="m"} 1.0\n'
           'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
           'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0\n'
           'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 153.0\n')


def test_a_host_running_its_plan_and_answering_is_serving():
    status = host_status("s1", DEPLOYMENT, container(DEPLOYMENT["image"]["ref"], DEPLOYMENT["spec_sha256"]),
                         {"last_known_good": {"image": "x", "validated_at": "t", "engine_version": "0.19.2"}},
                         {"status": 200}, ANSWER, METRICS, {"status": "healthy"})
    assert status["ok"] and status["state"] == "serving"
    assert status["details"] == {"running": 2.0, "waiting": 1.0, "kv_cache_usage": 0.25,
                                 "mean_accepted_per_draft": 1.53, "watchdog": "healthy"}
    assert status["engine_version"] == "0.19.2" and status["digest"] == "sha256:" + "a" * 64


def test_another_digest_run_by_hand_is_drift_naming_both():
    other = "vllm/vllm-openai@sha256:" + "b" * 64
    status = host_status("s1", DEPLOYMENT, container(other, None), {}, {"status": 200}, ANSWER, METRICS)
    assert not status["ok"]
    assert status["state"].startswith("DRIFT: runs %s, the inventory (lock) says %s" % (other, DEPLOYMENT["image"]["ref"]))
    assert "was not created from this inventory's plan" in status["state"]


def test_a_wrong_answer_or_no_health_is_not_serving():
    good = container(DEPLOYMENT["image"]["ref"], DEPLOYMENT["spec_sha256"])
    wrong = {"status": 200, "json": {"choices": [{"message": {"content": "5"}}]}}
    status = host_status("s1", DEPLOYMENT, good, {}, {"status": 200}, wrong, "")
    assert not status["ok"] and "the completion answered '5'" in status["state"]
    down = host_status("s1", DEPLOYMENT, good, {}, {"status": -1, "msg": "connection refused"},
                       {"status": -1, "msg": "connection refused"}, "")
    assert down["state"].startswith("NOT SERVING: /health answered -1")


def test_no_container_is_drift():
    status = host_status("s1", DEPLOYMENT, {"exists": False}, {}, {}, {}, "")
    assert status["state"].startswith("DRIFT: no container inferops-serving")


# unread_status and fleet_status: every host has a row (issue 26).

PONG = {"changed": False, "ping": "pong"}
# The reach probe's result for an SSH host nobody listens for (ansible-core 2.21, ignore_unreachable).
UNREACHABLE = {"unreachable": True, "changed": False,
               "msg": "Task failed: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.9 port 22: "
                      "Connection timed out"}


def test_a_host_that_answered_has_no_unread_row():
    # A mapping, never None: ansible-core 2.18 turned a fact set to None into '' (one call, one boolean).
    assert unread_status(PONG, "s1", DEPLOYMENT) == {"host": "s1", "unread": False}


def test_an_unreachable_host_has_a_row_with_the_reason_and_its_plan():
    row = unread_status(UNREACHABLE, "s1", DEPLOYMENT)
    assert row["unread"] is True and not row["ok"]
    assert row["state"] == ("UNREACHABLE: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.9 "
                            "port 22: Connection timed out")
    assert row["profile"] == "gb10-nvfp4-mtp-throughput" and row["planned_digest"] == "sha256:" + "a" * 64


def test_a_failed_probe_that_is_not_unreachable_is_not_read():
    row = unread_status({"failed": True, "msg": "Missing sudo password"}, "s1", DEPLOYMENT)
    assert row["state"] == "NOT READ: the host answered nothing usable: Missing sudo password"


def test_a_failed_read_names_its_task_and_hides_a_no_log_message():
    failed = {"failed": True, "msg": "Error connecting: secret-looking text"}
    assert unread_status(failed, "s1", DEPLOYMENT, task="Read the watchdog's state")["state"] == (
        "NOT READ: \"Read the watchdog's state\" failed: Error connecting: secret-looking text")
    hidden = unread_status(failed, "s1", DEPLOYMENT, task="Look at the serving container", censored=True)
    assert "secret-looking" not in str(hidden)
    assert hidden["state"] == "NOT READ: 'Look at the serving container' failed (its message is hidden: the task is no_log)"


def test_fleet_status_gives_every_host_a_row_in_order():
    serving = {"host": "s1", "ok": True, "state": "serving"}
    rows = fleet_status(["s0", "s1", "s2"], {"s1": serving, "s2": None})
    assert [row["host"] for row in rows] == ["s0", "s1", "s2"]
    assert rows[1] is serving
    assert rows[0]["state"] == rows[2]["state"] == UNREAD and not rows[0]["ok"]
