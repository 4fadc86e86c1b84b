# SPDX-License-Identifier: GPL-3.0-or-later
"""A test double of the Docker Engine API (the daemon behind /var/run/docker.sock), served on a unix
socket by the ``docker`` fixture (conftest.py): the container endpoints our modules call, answering
as the Engine API does (https://docs.docker.com/reference/api/engine/): ``GET
/containers/{name}/json`` (the inspect, 404 ``{"message": "No such container: <name>"}``),
``POST .../start`` (204, 304 when it runs), ``.../stop`` (204, 304), ``.../rename?name=`` (204, 409
when the name is taken), ``DELETE /containers/{name}?force=1`` (204, 409 for a running container
without force)."""
from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit


# --- a fake Docker Engine API: containers that start, stop, are removed and renamed -----------------
class FakeDocker(object):
    """Containers by name ({name: {"Id", "Image", "State": {"Running"}, "Config": {...}}}); the
    lifecycle endpoints answer as the Docker Engine API does (204, 304, 404, 409, 500 + message)."""

    def __init__(self, containers, refuse_start=(), remove_takes=0.0):
        self.containers = containers
        self.refuse_start = set(refuse_start)  # names whose start Docker refuses (500)
        self.remove_takes = remove_takes  # seconds a remove takes (vfs deleting the files on a busy disk)
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
                    time.sleep(fake.remove_takes)
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
