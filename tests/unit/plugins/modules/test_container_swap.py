# SPDX-License-Identifier: GPL-3.0-or-later
"""container_swap: the plan (pure), and the swap against a fake Docker Engine API on a unix socket."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from ansible_collections.inferops.serving.plugins.modules import container_swap

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


# --- a fake Docker Engine API: containers that start, stop, are removed and renamed -----------------
class FakeDocker(object):
    """Containers by name ({name: {"Id", "Image", "State": {"Running"}, "Config": {...}}}); the
    lifecycle endpoints answer as the Docker Engine API does (204, 304, 404, 409, 500 + message)."""

    def __init__(self, containers, refuse_start=()):
        self.containers = containers
        self.refuse_start = set(refuse_start)  # names whose start Docker refuses (500)
        self.calls = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body=None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if data:
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method):
                url = urlsplit(self.path)
                parts = [unquote(part) for part in url.path.strip("/").split("/")]
                query = parse_qs(url.query)
                name = parts[1]
                action = parts[2] if len(parts) > 2 else None
                fake.calls.append((method, name, action, {k: v[0] for k, v in query.items()}))
                container = fake.containers.get(name)
                if container is None:
                    return self._answer(404, {"message": "No such container: %s" % name})
                state = container["State"]
                if method == "GET" and action == "json":
                    return self._answer(200, dict(container, Name="/" + name))
                if method == "POST" and action == "start":
                    if state["Running"]:
                        return self._answer(304)
                    if name in fake.refuse_start:
                        return self._answer(500, {"message": "could not select device driver \"nvidia\" "
                                                             "with capabilities: [[gpu]]"})
                    state["Running"] = True
                    return self._answer(204)
                if method == "POST" and action == "stop":
                    if not state["Running"]:
                        return self._answer(304)
                    state["Running"] = False
                    return self._answer(204)
                if method == "POST" and action == "rename":
                    new = query["name"][0]
                    if new in fake.containers:
                        return self._answer(409, {"message": "Conflict. The container name \"/%s\" is already "
                                                             "in use" % new})
                    fake.containers[new] = fake.containers.pop(name)
                    return self._answer(204)
                if method == "DELETE" and action is None:
                    if state["Running"] and query.get("force") != ["1"]:
                        return self._answer(409, {"message": "cannot remove a running container"})
                    del fake.containers[name]
                    return self._answer(204)
                return self._answer(404, {"message": "page not found"})

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_DELETE(self):
                self._route("DELETE")

        self.handler = Handler

    def changes(self):
        """The calls that change something, in order: (method, name, action)."""
        return [(method, name, action) for method, name, action, _query in self.calls if method != "GET"]


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


def test_unreachable_daemon(run_module, tmp_path):
    failed, result = run_module(container_swap, {"name": "srv", "staged": "srv-next",
                                                 "docker_host": "unix://%s/missing.sock" % tmp_path})
    assert failed and "cannot reach the Docker daemon" in result["msg"]
