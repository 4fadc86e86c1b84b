# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The few Docker Engine API calls the collection makes: a container's state, its log since its
latest start (backend_assert), start/stop/remove/rename (container_swap), and on the hosts the
watchdog's inspect, log tail and start/stop/restart: the server role installs this file beside
the watchdog as ``inferops_docker_api.py`` (the ``host_library`` lookup), so it imports nothing
from the collection.

Dependency-free on purpose (the target needs only python3): endpoints of the Docker Engine API
over its unix socket (or plain ``tcp://``), HTTP/1.0 so the daemon streams a body until it
closes instead of chunking it.

* ``GET /containers/{id}/json``: ``State.StartedAt/FinishedAt/Running/ExitCode/OOMKilled``, ``Config.Tty``.
* ``GET /containers/{id}/logs?stdout=1&stderr=1&follow=1&since=<StartedAt>``: for a container
  without a TTY the body is multiplexed, frames of an 8-byte header (stream type, 3 zero bytes,
  big-endian uint32 length) and the payload; with a TTY it is the raw byte stream.
* ``GET /containers/{id}/logs?stdout=1&stderr=1&timestamps=1&tail=N``: the last N lines (the watchdog's evidence).
* ``POST /containers/{id}/start``, ``POST /containers/{id}/stop[?t=N]``, ``POST /containers/{id}/restart[?t=N]``,
  ``DELETE /containers/{id}?force=1``, ``POST /containers/{id}/rename?name=N``: 204 when done,
  304 when start/stop found the container already started/stopped, 404 unknown, 409 conflict.
"""
from __future__ import annotations

import calendar
import json
import re
import socket
import struct
import time

from urllib.parse import quote, urlsplit

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
DEFAULT_DOCKER_TIMEOUT = 60
# The argument specs of the Docker options, declared once (documented by the private doc
# fragment inferops.serving._docker and its TIMEOUT part).
DOCKER_COMMON_ARGS = dict(docker_host=dict(type="str", default=DEFAULT_DOCKER_HOST))
DOCKER_TIMEOUT_ARGS = dict(docker_timeout=dict(type="int", default=DEFAULT_DOCKER_TIMEOUT))
# Log lines may be stamped slightly before Docker records StartedAt; a previous run has ended
# by then, so look this far back, but never before the previous run's FinishedAt.
START_SLACK = 1.0


class DockerError(Exception):
    """The Docker daemon could not be reached or answered an error."""

    def __init__(self, msg, status=None):
        super(DockerError, self).__init__(msg)
        self.status = status


def parse_docker_time(text):
    """RFC 3339 with nanoseconds (``2026-11-29T15:37:01.123456789Z``) -> float epoch seconds, or None."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text or "")
    if not m:
        return None
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if year <= 1:  # "0001-01-01T00:00:00Z": never
        return None
    epoch = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if m.group(7):
        epoch += float("0." + m.group(7))
    zone = m.group(8)
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        epoch -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return epoch


def logs_since(state):
    """The ``since`` value (``seconds.nanos`` string) for the latest start in a container ``State``."""
    started = parse_docker_time(state.get("StartedAt"))
    if started is None:
        return "0"
    since = started - START_SLACK
    finished = parse_docker_time(state.get("FinishedAt"))
    if finished is not None and finished < started:
        since = max(since, finished + 1e-6)
    return "%.6f" % since


class DemuxBuffer(object):
    """Incremental decoder of the multiplexed stdout/stderr stream into raw bytes."""

    def __init__(self):
        self.pending = b""

    def feed(self, data):
        """Append received bytes; return the payload bytes of all complete frames."""
        buf = self.pending + data
        out = []
        pos = 0
        while len(buf) - pos >= 8:
            size = struct.unpack(">I", buf[pos + 4:pos + 8])[0]
            if len(buf) - pos - 8 < size:
                break
            out.append(buf[pos + 8:pos + 8 + size])
            pos += 8 + size
        self.pending = buf[pos:]
        return b"".join(out)


def find_container(client, container):
    """``client.inspect(container)``, or None when Docker knows no such container (404); any other
    DockerError is raised. The one reading of "missing" for the modules and the watchdog."""
    try:
        return client.inspect(container)
    except DockerError as exc:
        if exc.status == 404:
            return None
        raise


class DockerClient(object):
    """Just enough of the Docker Engine API for a container's state, log and lifecycle."""

    def __init__(self, docker_host=DEFAULT_DOCKER_HOST, timeout=30.0):
        parts = urlsplit(docker_host)
        if parts.scheme == "unix":
            self.family, self.address = socket.AF_UNIX, parts.path
        elif parts.scheme in ("tcp", "http"):
            self.family, self.address = socket.AF_INET, (parts.hostname, parts.port or 2375)
        else:
            raise DockerError("docker_host %s: only unix:// and tcp:// (without TLS) are supported" % docker_host)
        self.docker_host = docker_host
        self.timeout = timeout

    def _open(self, path, timeout, method="GET"):
        sock = socket.socket(self.family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        request = "%s %s HTTP/1.0\r\nHost: docker\r\nUser-Agent: inferops.serving\r\n" % (method, path)
        if method != "GET":
            request += "Content-Length: 0\r\n"
        try:
            sock.connect(self.address)
            sock.sendall((request + "\r\n").encode("ascii"))
            head = b""
            while b"\r\n\r\n" not in head:
                data = sock.recv(65536)
                if not data:
                    raise DockerError("the Docker daemon at %s closed the connection" % self.docker_host)
                head += data
        except socket.timeout:
            sock.close()
            raise DockerError("the Docker daemon at %s did not answer within %ss" % (self.docker_host, timeout))
        except (OSError, socket.error) as exc:
            sock.close()
            raise DockerError("cannot reach the Docker daemon at %s: %s" % (self.docker_host, exc))
        header, body = head.split(b"\r\n\r\n", 1)
        lines = header.decode("iso-8859-1").split("\r\n")
        try:
            status = int(lines[0].split()[1])
        except (IndexError, ValueError):
            sock.close()
            raise DockerError("unexpected answer from the Docker daemon: %r" % lines[0])
        headers = {}
        for item in lines[1:]:
            if ":" in item:
                name, value = item.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        return sock, status, headers, body

    def _read_all(self, sock, body, headers):
        length = headers.get("content-length")
        chunks = [body]
        received = len(body)
        try:
            while length is None or received < int(length):
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
                received += len(data)
        finally:
            sock.close()
        data = b"".join(chunks)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            data = _dechunk(data)
        return data

    def call(self, method, path, what, timeout=None, ok=(200, 201, 204, 304)):
        """``method path`` without a body: ``(status, body bytes)``; DockerError naming ``what`` otherwise."""
        sock, status, headers, body = self._open(path, timeout or self.timeout, method)
        data = self._read_all(sock, body, headers)
        if status not in ok:
            raise DockerError("%s: Docker answered %s: %s" % (what, status, _api_message(data)), status)
        return status, data

    def inspect(self, container):
        """``GET /containers/{container}/json`` as a dict; DockerError(status=404) if unknown."""
        _status, data = self.call("GET", "/containers/%s/json" % quote(container, safe=""), "container " + container,
                                  ok=(200,))
        return json.loads(data.decode("utf-8"))

    def start(self, container):
        """Start ``container`` (Docker answers 304 when it runs already)."""
        self.call("POST", "/containers/%s/start" % quote(container, safe=""), "start " + container)

    def stop(self, container, timeout):
        """SIGTERM ``container``, SIGKILL after ``timeout`` s (304 when it was not running)."""
        self.call("POST", "/containers/%s/stop?t=%d" % (quote(container, safe=""), timeout),
                  "stop " + container, timeout=self.timeout + timeout)

    def restart(self, container, timeout):
        """Stop ``container`` (SIGKILL after ``timeout`` s) and start it again."""
        self.call("POST", "/containers/%s/restart?t=%d" % (quote(container, safe=""), timeout),
                  "restart " + container, timeout=self.timeout + timeout)

    def log_tail(self, container, lines, tty=False, timestamps=True):
        """The last ``lines`` lines of ``container``'s log (stdout and stderr, timestamped unless not ``timestamps``)."""
        _status, data = self.call("GET", "/containers/%s/logs?stdout=1&stderr=1&timestamps=%d&tail=%d" % (
            quote(container, safe=""), 1 if timestamps else 0, lines), "logs of " + container, ok=(200,))
        if not tty:
            data = DemuxBuffer().feed(data)
        return data.decode("utf-8", "replace").splitlines()[-lines:]

    def remove(self, container):
        """Remove ``container`` (forced: stopped first if it still runs), keeping its volumes."""
        self.call("DELETE", "/containers/%s?force=1" % quote(container, safe=""), "remove " + container)

    def rename(self, container, name):
        """Rename ``container`` to ``name``."""
        self.call("POST", "/containers/%s/rename?name=%s" % (quote(container, safe=""), quote(name, safe="")),
                  "rename %s to %s" % (container, name))

    def stream_logs(self, container, since, tty, poll=1.0, follow=True):
        """Yield log bytes (demultiplexed) as they arrive, ``b""`` every ``poll`` s of silence.

        Ends when the daemon closes the stream: the container stopped, or (``follow=False``)
        the log so far was sent.
        """
        path = "/containers/%s/logs?stdout=1&stderr=1&follow=%d&since=%s" % (
            quote(container, safe=""), 1 if follow else 0, since)
        sock, status, headers, body = self._open(path, self.timeout)
        if status != 200:
            data = self._read_all(sock, body, headers)
            raise DockerError("logs of %s: Docker answered %s: %s" % (container, status, _api_message(data)), status)
        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        dechunk = _Dechunker() if chunked else None
        raw = tty or "raw-stream" in headers.get("content-type", "")
        demux = None if raw else DemuxBuffer()
        sock.settimeout(poll)
        try:
            data = body
            while True:
                if data:
                    if dechunk is not None:
                        data = dechunk.feed(data)
                    if demux is not None:
                        data = demux.feed(data)
                    yield data
                try:
                    data = sock.recv(1 << 20)
                except socket.timeout:
                    yield b""
                    data = b""
                    continue
                if not data:
                    return
        finally:
            sock.close()


def _api_message(data):
    try:
        return json.loads(data.decode("utf-8")).get("message", "")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return data[:200].decode("utf-8", "replace")


class _Dechunker(object):
    """Incremental HTTP/1.1 chunked transfer decoding (in case a proxy in front of the daemon chunks)."""

    def __init__(self):
        self.buf = b""
        self.left = 0  # payload bytes left in the current chunk
        self.skip = 0  # bytes of the CRLF after a chunk still to drop
        self.finished = False

    def feed(self, data):
        self.buf += data
        out = []
        while not self.finished:
            if self.left:
                take = self.buf[:self.left]
                self.buf = self.buf[len(take):]
                self.left -= len(take)
                out.append(take)
                if self.left:
                    break
                self.skip = 2
            if self.skip:
                dropped = min(self.skip, len(self.buf))
                self.buf = self.buf[dropped:]
                self.skip -= dropped
                if self.skip:
                    break
            end = self.buf.find(b"\r\n")
            if end < 0:
                break
            size = int(self.buf[:end].split(b";")[0].strip() or b"0", 16)
            self.buf = self.buf[end + 2:]
            if size == 0:
                self.finished = True
                self.buf = b""
            self.left = size
        return b"".join(out)


def _dechunk(data):
    return _Dechunker().feed(data)


def follow_container(client, container, scanner, feed, deadline, grace=5.0, clock=time.time, since=None,
                     line_cap=64 * 1024):
    """Stream ``container``'s log since its latest start into ``feed`` until an answer is known.

    ``feed(bytes)`` receives newline-terminated log bytes; ``scanner`` tells when to stop
    (``ready``, ``done``). Returns ``(state, reason)`` with ``reason`` one of ``ready``,
    ``fatal``, ``exited``, ``timeout``, ``stream_closed``; ``state`` is the container's last
    inspected ``State``.

    With ``since`` (a Docker API ``since`` value, e.g. of an earlier start) the log from then to
    its current end is read once, not followed: later starts and a crash after readiness included.

    A line longer than ``line_cap`` bytes is fed as its first ``line_cap + 1`` bytes (the reader
    then reports it cut) and the rest of it is dropped: memory stays bounded whatever the log holds.
    """
    info = client.inspect(container)
    state = info.get("State") or {}
    started = state.get("StartedAt")
    tty = bool((info.get("Config") or {}).get("Tty"))
    rest = b""
    dropping = False  # inside the rest of a line longer than line_cap
    fatal_deadline = None
    reason = None
    follow = since is None
    stream = client.stream_logs(info.get("Id") or container, logs_since(state) if follow else since, tty,
                                follow=follow)
    try:
        for data in stream:
            if data and dropping:
                nl = data.find(b"\n")
                data = data[nl + 1:] if nl >= 0 else b""
                dropping = nl < 0
            if data:
                data = rest + data
                cut = data.rfind(b"\n") + 1
                rest = data[cut:]
                if cut:
                    feed(data[:cut])
                if len(rest) > line_cap:
                    feed(rest[:line_cap + 1] + b"\n")
                    rest = b""
                    dropping = True
            if scanner.done:
                reason = "fatal"
                break
            now = clock()
            if scanner.fatal is not None:
                if fatal_deadline is None:
                    # Give the engine a moment to print the root cause and the rest of the traceback.
                    fatal_deadline = min(deadline, now + grace)
                if now >= fatal_deadline:
                    reason = "fatal"
                    break
            elif scanner.ready and follow:
                reason = "ready"
                break
            if now >= deadline:
                reason = "timeout"
                break
    finally:
        stream.close()
    if rest:
        feed(rest + b"\n")
    if reason != "ready":
        try:
            state = client.inspect(container).get("State") or {}
        except DockerError:
            pass
    if reason is None:
        # The daemon closed the stream: normally because the container stopped (and its restart
        # policy may have started it again already: a new StartedAt).
        restarted = state.get("StartedAt") != started
        if scanner.fatal is not None:
            reason = "fatal"
        elif not state.get("Running") or (follow and restarted):
            reason = "exited"
        else:
            reason = "ready" if scanner.ready else "stream_closed"
    return state, reason
