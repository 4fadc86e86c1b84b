# SPDX-License-Identifier: GPL-3.0-or-later
"""A test double of the Docker Engine API (the daemon behind /var/run/docker.sock) for the playbook
tests, served on a unix socket: the container lifecycle of tests/unit/plugins/modules/docker_double.py
(inspect, start, stop, rename, remove), plus what the roles' other clients call
(https://docs.docker.com/reference/api/engine/), a container named by its name, ID or ID prefix:

* ``GET /containers/json?all=1`` (the list, each container's ``Id``, ``Names``, ``Image``, ``Labels``, ``State``);
* ``GET /_ping`` (``OK``) and ``GET /version`` (``ApiVersion``), which community.docker's modules
  and the docker CLI call first, and the ``/v1.NN`` prefix they put on every path;
* ``GET /containers/{name}/logs?stdout=1&stderr=1[&follow=1][&since=][&tail=N]``: the container's
  log as the daemon sends it for a container without a TTY (multiplexed frames: a byte for the
  stream, three zero bytes, the big-endian length, the line); with ``follow=1`` the stream stays
  open, as for a running container, until the client hangs up or the double is closed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import socketserver
import struct
import threading
import time
from urllib.parse import parse_qs, urlsplit

_SPEC = importlib.util.spec_from_file_location("docker_double", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "modules", "docker_double.py"))
docker_double = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(docker_double)

API_VERSION = "1.47"  # Docker Engine 27


class DockerEngine(docker_double.FakeDocker):
    """``containers`` as docker_double.FakeDocker's ({name: inspect}); ``logs``: {name: [lines]}."""

    def __init__(self, containers, logs=None):
        super().__init__(containers)
        self.logs = logs or {}
        self.closed = threading.Event()
        fake = self
        lifecycle = self.handler

        class Handler(lifecycle):
            def _text(self, status, text, kind="text/plain"):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream_logs(self, name, query):
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.docker.multiplexed-stream")
                self.end_headers()
                lines = fake.logs.get(name, [])
                if "tail" in query and query["tail"][0] != "all":
                    lines = lines[-int(query["tail"][0]):] if int(query["tail"][0]) else []
                payload = b"".join(struct.pack(">BxxxI", 1, len(data)) + data
                                   for data in ((line + "\n").encode() for line in lines))
                try:
                    self.wfile.write(payload)
                    self.wfile.flush()
                    while query.get("follow") == ["1"] and not fake.closed.wait(0.05):
                        self.connection.settimeout(0.01)
                        try:
                            if self.connection.recv(1, 0x40) == b"":  # MSG_DONTWAIT: the client hung up
                                return
                        except (BlockingIOError, OSError):
                            pass
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _route(self, method):
                url = urlsplit(self.path)
                path = re.sub(r"^/v1\.\d+(?=/)", "", url.path)
                if path == "/_ping":
                    return self._text(200, "OK")
                if path == "/version":
                    return self._text(200, json.dumps({"ApiVersion": API_VERSION, "MinAPIVersion": "1.24",
                                                       "Version": "27.5.1", "Os": "linux", "Arch": "amd64"}),
                                      "application/json")
                parts = path.strip("/").split("/")
                if method == "GET" and parts == ["containers", "json"]:
                    return self._answer(200, fake.listing())
                if len(parts) < 2 or parts[0] != "containers":
                    return self._answer(404, {"message": "page not found"})
                parts[1] = fake.name_of(parts[1])
                path = "/" + "/".join(parts)
                if method == "GET" and len(parts) == 3 and parts[2] == "logs":
                    fake.calls.append((method, parts[1], "logs", {}))
                    if parts[1] not in fake.containers:
                        return self._answer(404, {"message": "No such container: %s" % parts[1]})
                    return self._stream_logs(parts[1], parse_qs(url.query))
                self.path = path + ("?" + url.query if url.query else "")
                return super()._route(method)

            def do_HEAD(self):
                self._route("HEAD")

        self.handler = Handler

    def listing(self):
        """``GET /containers/json?all=1``: every container, summarised as the Engine API lists them."""
        return [{"Id": spec.get("Id"), "Names": ["/" + name], "Image": (spec.get("Config") or {}).get("Image"),
                 "ImageID": spec.get("Image"), "Labels": (spec.get("Config") or {}).get("Labels") or {},
                 "State": (spec.get("State") or {}).get("Status"), "Status": ""}
                for name, spec in self.containers.items()]

    def name_of(self, ref):
        """A container's name from its name, its ID or an ID prefix of 12 or more (as Docker resolves them)."""
        if ref in self.containers:
            return ref
        found = [name for name, spec in self.containers.items()
                 if len(ref) >= 12 and str(spec.get("Id", "")).startswith(ref)]
        return found[0] if len(found) == 1 else ref

    def close(self):
        self.closed.set()


class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """An HTTP server on a unix socket, as the Docker daemon listens."""

    daemon_threads = True


def serve(fake, socket_path):
    """Serve ``fake`` on ``socket_path``; returns the ``unix://`` docker_host and a stop function."""
    server = UnixHTTPServer(str(socket_path), fake.handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop():
        fake.close()
        server.shutdown()
        server.server_close()
    return "unix://%s" % socket_path, stop


def container(image, labels=None, running=True, started_at=None):
    """An inspect as the Engine API returns it (the fields the roles read)."""
    started_at = started_at or time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime(time.time() - 5))
    return {"Id": "c0ffee" * 10 + "c0ff", "Image": "sha256:" + "1" * 64,
            "Config": {"Image": image, "Labels": dict(labels or {}), "Tty": False, "Env": []},
            "HostConfig": {"RestartPolicy": {"Name": "on-failure", "MaximumRetryCount": 3}},
            "State": {"Status": "running" if running else "exited", "Running": running, "Restarting": False,
                      "ExitCode": 0, "OOMKilled": False, "StartedAt": started_at,
                      "FinishedAt": "0001-01-01T00:00:00Z"}}
