# SPDX-License-Identifier: GPL-3.0-or-later
"""container_swap: the plan (pure), and the swap against a fake Docker Engine API on a unix socket."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.modules import container_swap

from docker_double import FakeDocker

RUNNING = {"Id": "old", "State": {"Running": True}}
STOPPED = {"Id": "old", "State": {"Running": False}}
CREATED = {"Id": "new", "State": {"Running": False}}


@pytest.mark.parametrize("current, replacement, steps", [
    (RUNNING, CREATED, [("stop", "srv"), ("start", "srv-next"), ("remove", "srv"), ("rename", "srv-next", "srv")]),
    # The memory wait on GB10 stopped the old container already.
    (STOPPED, CREATED, [("start", "srv-next"), ("remove", "srv"), ("rename", "srv-next", "srv")]),
    (None, CREATED, [("start", "srv-next"), ("rename", "srv-next", "srv")]),
    # An interrupted swap left the replacement running under its staged name.
    (RUNNING, {"Id": "new", "State": {"Running": True}},
     [("stop", "srv"), ("remove", "srv"), ("rename", "srv-next", "srv")]),
    (RUNNING, None, []),
    (None, None, []),
])
def test_plan_swap(current, replacement, steps):
    assert container_swap.plan_swap("srv", "srv-next", current, replacement) == steps


def test_describe():
    assert container_swap.describe(("rename", "a", "b")) == "rename a to b"
    assert container_swap.describe(("stop", "a")) == "stop a"


def containers(old_running=True, with_old=True, with_new=True):
    found = {}
    if with_old:
        found["srv"] = {"Id": "old", "Image": "sha256:aaa", "State": {"Running": old_running},
                        "Config": {"StopTimeout": 45}}
    if with_new:
        found["srv-next"] = {"Id": "new", "Image": "sha256:bbb", "State": {"Running": False}, "Config": {}}
    return found


def test_swap_running_container(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert not failed and result["changed"]
    assert fake.changes() == [("POST", "srv", "stop"), ("POST", "srv-next", "start"),
                              ("DELETE", "srv", None), ("POST", "srv-next", "rename")]
    # The old container's own stop timeout, and a forced remove (volumes kept).
    queries = {(name, action): query for _method, name, action, query in fake.calls}
    assert queries[("srv", "stop")] == {"t": "45"}
    assert queries[("srv", None)] == {"force": "1"}
    assert queries[("srv-next", "rename")] == {"name": "srv"}
    assert list(fake.containers) == ["srv"] and fake.containers["srv"]["Id"] == "new"
    assert fake.containers["srv"]["State"]["Running"]
    assert result["container"] == "new"
    assert result["replaced"] == {"id": "old", "image": "sha256:aaa"}
    assert set(result["timings"]) == {"stop", "start", "remove", "rename", "outage"}
    assert result["timings"]["outage"] == pytest.approx(result["timings"]["stop"] + result["timings"]["start"], abs=0.002)


def test_second_run_changes_nothing(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert not failed and not result["changed"] and result["actions"] == []
    assert "nothing to swap" in result["msg"]
    assert fake.containers["srv"]["Id"] == "new"


def test_check_mode_plans_and_changes_nothing(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host},
                                check_mode=True)
    assert not failed and result["changed"]
    assert result["actions"] == ["stop srv", "start srv-next", "remove srv", "rename srv-next to srv"]
    assert fake.changes() == []
    assert fake.containers["srv"]["State"]["Running"] and "srv-next" in fake.containers


def test_stopped_old_container_is_not_stopped_again(run_module, docker):
    fake, host = docker(FakeDocker(containers(old_running=False)))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "stop_timeout": 5})
    assert not failed
    assert fake.changes() == [("POST", "srv-next", "start"), ("DELETE", "srv", None), ("POST", "srv-next", "rename")]


def test_first_deployment_without_old_container(run_module, docker):
    fake, host = docker(FakeDocker(containers(with_old=False)))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert not failed and result["replaced"] is None
    assert fake.changes() == [("POST", "srv-next", "start"), ("POST", "srv-next", "rename")]


def test_explicit_stop_timeout(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host, "stop_timeout": 120})
    assert [query for _m, name, action, query in fake.calls if action == "stop"] == [{"t": "120"}]


def test_refused_start_restores_the_old_container(run_module, docker):
    fake, host = docker(FakeDocker(containers(), refuse_start=["srv-next"]))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert failed
    assert "could not select device driver" in result["msg"]
    assert "the replacement srv-next was removed" in result["msg"]
    assert "srv was started again" in result["msg"]
    assert list(fake.containers) == ["srv"] and fake.containers["srv"]["Id"] == "old"
    assert fake.containers["srv"]["State"]["Running"]


def test_same_name_is_refused(run_module, docker):
    _fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv", "docker_host": host})
    assert failed and "srv-next" in result["msg"]


def test_a_remove_slower_than_the_timeout_fails_naming_it(run_module, docker):
    fake, host = docker(FakeDocker(containers(), remove_takes=1.5))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "docker_timeout": 1})
    assert failed and "did not answer within 1.0s" in result["msg"], result


def test_a_longer_timeout_waits_for_a_slow_remove(run_module, docker):
    fake, host = docker(FakeDocker(containers(), remove_takes=1.5))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "docker_timeout": 5})
    assert not failed and result["changed"], result
    assert fake.containers["srv"]["Id"] == "new" and "srv-next" not in fake.containers


def test_a_timeout_below_one_second_is_refused(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "docker_timeout": 0})
    assert failed and result["msg"] == "docker_timeout must be 1 or more seconds, not 0"
    assert fake.changes() == []


def test_unreachable_daemon(run_module, tmp_path):
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next",
                                                 "docker_host": "unix://%s/missing.sock" % tmp_path})
    assert failed and "cannot reach the Docker daemon" in result["msg"]


# --- mutation-tested details: exact sentences, timings, defaults --------------------------------------
def test_plan_swap_reads_a_container_without_state_as_not_running():
    # an inspect answer without "State" (a daemon that leaves it out) is a container that does not run
    assert container_swap.plan_swap("srv", "srv-next", {"Id": "old"}, {"Id": "new"}) == [
        ("start", "srv-next"), ("remove", "srv"), ("rename", "srv-next", "srv")]


class RecordingClient(object):
    """Stands for DockerClient in run_steps/undo_start: records the calls, raises DockerError(msg,
    status) for the (action, container) pairs in ``refuse``, as the daemon's API errors do."""

    def __init__(self, refuse=None):
        self.refuse = refuse or {}
        self.calls = []

    def _call(self, action, container, *args):
        self.calls.append((action, container) + args)
        if (action, container) in self.refuse:
            raise container_swap.DockerError(*self.refuse[(action, container)])

    def stop(self, container, timeout):
        self._call("stop", container, timeout)

    def start(self, container):
        self._call("start", container)

    def remove(self, container):
        self._call("remove", container)

    def rename(self, container, new_name):
        self._call("rename", container, new_name)


def fake_clock(*values):
    """A clock that reads ``values`` in turn (two readings per step: before and after)."""
    readings = list(values)
    return lambda: readings.pop(0)


def test_run_steps_times_each_step_to_the_millisecond():
    client = RecordingClient()
    steps = container_swap.plan_swap("srv", "srv-next", RUNNING, CREATED)
    timings = container_swap.run_steps(client, steps, 30, clock=fake_clock(
        100.0, 100.41234, 101.0, 101.12345, 102.0, 102.5, 103.0, 103.0301))
    assert timings == {"stop": 0.412, "start": 0.123, "remove": 0.5, "rename": 0.03, "outage": 0.535}
    assert client.calls == [("stop", "srv", 30), ("start", "srv-next"), ("remove", "srv"),
                            ("rename", "srv-next", "srv")]


def test_outage_without_a_stop_is_the_start_and_without_a_start_the_stop():
    first = container_swap.run_steps(RecordingClient(), container_swap.plan_swap("srv", "srv-next", None, CREATED),
                                     10, clock=fake_clock(5.0, 5.25, 6.0, 6.01))
    assert first == {"start": 0.25, "rename": 0.01, "outage": 0.25}
    running = {"Id": "new", "State": {"Running": True}}
    resumed = container_swap.run_steps(RecordingClient(), container_swap.plan_swap("srv", "srv-next", RUNNING, running),
                                       10, clock=fake_clock(5.0, 5.5, 6.0, 6.1, 7.0, 7.02))
    assert resumed == {"stop": 0.5, "remove": 0.1, "rename": 0.02, "outage": 0.5}


def test_a_refused_start_is_undone_and_says_so_in_one_sentence():
    client = RecordingClient(refuse={("start", "srv-next"): ("could not select device driver", 500)})
    steps = container_swap.plan_swap("srv", "srv-next", RUNNING, CREATED)
    with pytest.raises(container_swap.DockerError) as caught:
        container_swap.run_steps(client, steps, 10)
    assert str(caught.value) == ("could not select device driver; the replacement srv-next was removed, "
                                 "srv was started again")
    assert caught.value.status == 500
    assert client.calls == [("stop", "srv", 10), ("start", "srv-next"), ("remove", "srv-next"), ("start", "srv")]


def test_an_undo_that_fails_too_names_both_failures():
    client = RecordingClient(refuse={("remove", "srv-next"): ("container is paused",),
                                     ("start", "srv"): ("port 8000 is already allocated",)})
    assert container_swap.undo_start(client, "srv-next", ["srv"]) == (
        "; removing the replacement failed too: container is paused, "
        "srv could NOT be started again: port 8000 is already allocated")


class ClientFactory(object):
    """Stands for the DockerClient class (``DockerClient(docker_host, timeout=30.0)``): records the
    docker_host and timeout it is built with; the client answers every inspect with the daemon's
    connection error."""

    def __init__(self):
        self.hosts = []
        self.timeouts = []

    def __call__(self, host, timeout=30.0):
        self.hosts.append(host)
        self.timeouts.append(timeout)
        return self

    def inspect(self, container):
        raise container_swap.DockerError("cannot reach the Docker daemon at %s" % self.hosts[-1])


def test_docker_host_defaults_to_the_local_socket_and_a_daemon_error_carries_its_traceback(run_module, monkeypatch):
    factory = ClientFactory()
    monkeypatch.setattr(container_swap, "DockerClient", factory)
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next"})
    assert factory.hosts == ["unix:///var/run/docker.sock"] and factory.timeouts == [60.0]
    assert failed and result["msg"] == "cannot reach the Docker daemon at unix:///var/run/docker.sock"
    assert "Traceback" in result["exception"] and "DockerError" in result["exception"]


@pytest.mark.parametrize("missing", ["name", "staged"])
def test_name_and_staged_are_required(run_module, missing):
    args = {"name": "srv", "staged": "srv-next", "docker_host": "unix:///nonexistent.sock"}
    del args[missing]
    failed, result = run_module(container_swap, args)
    assert failed and result["msg"] == "missing required arguments: %s" % missing


def test_same_name_message_names_the_value_and_a_fix(run_module, docker):
    _fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv", "docker_host": host})
    assert failed and result["msg"] == ("name and staged are both 'srv': the staged container needs a name of "
                                        "its own (for example srv-next)")


def test_a_negative_stop_timeout_is_refused_and_zero_is_kept(run_module, docker):
    fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "stop_timeout": -1})
    assert failed and result["msg"] == "stop_timeout must be 0 or more seconds, not -1"
    assert fake.changes() == []
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host,
                                                 "stop_timeout": 0})
    assert not failed
    assert [query for _m, name, action, query in fake.calls if action == "stop"] == [{"t": "0"}]


def test_without_stop_timeout_anywhere_docker_waits_10_seconds(run_module, docker):
    found = containers()
    del found["srv"]["Config"]["StopTimeout"]
    fake, host = docker(FakeDocker(found))
    failed, _result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert not failed
    assert [query for _m, name, action, query in fake.calls if action == "stop"] == [{"t": "10"}]


def test_nothing_to_swap_says_which_container_is_missing(run_module, docker):
    _fake, host = docker(FakeDocker(containers(with_new=False)))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert not failed and result == {"changed": False, "actions": [], "container": None, "replaced": None,
                                     "msg": "no staged container srv-next: nothing to swap"}


def test_check_mode_returns_no_container(run_module, docker):
    _fake, host = docker(FakeDocker(containers()))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host},
                                check_mode=True)
    assert not failed and result["container"] is None
    assert result["replaced"] == {"id": "old", "image": "sha256:aaa"}


def test_a_failed_swap_reports_the_plan_and_its_traceback(run_module, docker):
    _fake, host = docker(FakeDocker(containers(), refuse_start=["srv-next"]))
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next", "docker_host": host})
    assert failed and result["msg"] == (
        "swapping srv for srv-next failed: start srv-next: Docker answered 500: could not select device driver "
        "\"nvidia\" with capabilities: [[gpu]]; the replacement srv-next was removed, srv was started again")
    assert result["actions"] == ["stop srv", "start srv-next", "remove srv", "rename srv-next to srv"]
    assert result["container"] is None and result["replaced"] == {"id": "old", "image": "sha256:aaa"}
    assert "Traceback" in result["exception"]
