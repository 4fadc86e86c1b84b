# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""One HTTP request that ends by a deadline and reads a bounded answer.

``http.client``'s timeout is per socket operation: a server sending a byte every few seconds
holds a request for ever, and ``read()`` holds an answer of any size in memory. Here every send
and receive of the request ends by one deadline (``time.monotonic()``, so a wall-clock jump does
not move it) and at most ``max_bytes`` of the body are read.

The server role installs this file beside the watchdog on every serving host as
``inferops_bounded_http.py`` (the ``host_library`` lookup): standard library only, no
collection imports.
"""
from __future__ import annotations

import http.client
import socket
import time
from urllib.parse import urlsplit


class AnswerTooLarge(http.client.HTTPException):
    """The answer is larger than the request allowed; it was not read further."""


class DeadlineSocket(socket.socket):
    """A TCP socket whose every send and receive ends by one deadline (time.monotonic())."""

    deadline = 0.0

    def _remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no complete answer within the deadline")
        self.settimeout(left)

    def recv_into(self, buffer, nbytes=0, flags=0):
        self._remaining()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags=0):
        self._remaining()
        return super().sendall(data, flags)


class DeadlineConnection(http.client.HTTPConnection):
    """http.client over a DeadlineSocket."""

    def __init__(self, host, port, deadline):
        http.client.HTTPConnection.__init__(self, host, port, timeout=max(deadline - time.monotonic(), 0.001))
        self.deadline = deadline

    def connect(self):
        last = OSError("no address for %s" % self.host)
        for family, kind, proto, dummy, address in socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM):
            sock = DeadlineSocket(family, kind, proto)
            sock.deadline = self.deadline
            try:
                sock._remaining()
                sock.connect(address)
            except OSError as exc:
                sock.close()
                last = exc
                continue
            self.sock = sock
            return
        raise last


def bounded_request(method, url, body=None, headers=None, timeout=10.0, max_bytes=8 << 20):
    """``(status, body bytes)`` of one ``http://`` request that ends within ``timeout`` s in all
    and reads at most ``max_bytes`` of the answer; raises socket.timeout at the deadline,
    AnswerTooLarge past the size, OSError / http.client.HTTPException otherwise."""
    parts = urlsplit(url)
    conn = DeadlineConnection(parts.hostname, parts.port or 80, time.monotonic() + timeout)
    try:
        conn.request(method, parts.path + ("?" + parts.query if parts.query else ""), body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise AnswerTooLarge("%s answered more than %d bytes; not read further" % (url, max_bytes))
        return response.status, data
    finally:
        conn.close()
