# SPDX-License-Identifier: GPL-3.0-or-later
"""The dependency-free Docker Engine API reader: time parsing, since, demultiplexing, chunked decoding."""
from __future__ import annotations

import struct

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _docker_api as dl


@pytest.mark.parametrize("text, epoch", [
    ("1970-01-02T00:00:00Z", 86400.0),
    ("1970-01-02T00:00:00.5Z", 86400.5),
    ("1970-01-02T01:00:00.123456789+01:00", 86400.123456789),
    ("0001-01-01T00:00:00Z", None),
    ("", None),
    (None, None),
])
def test_parse_docker_time(text, epoch):
    got = dl.parse_docker_time(text)
    assert got == pytest.approx(epoch) if epoch is not None else got is None


@pytest.mark.parametrize("state, since", [
    ({"StartedAt": "1970-01-02T00:00:10Z", "FinishedAt": "0001-01-01T00:00:00Z"}, "86409.000000"),
    # a restart: never before the previous run ended
    ({"StartedAt": "1970-01-02T00:00:10Z", "FinishedAt": "1970-01-02T00:00:09.800000Z"}, "86409.800001"),
    # a stopped container: FinishedAt after StartedAt belongs to this run
    ({"StartedAt": "1970-01-02T00:00:10Z", "FinishedAt": "1970-01-02T00:05:00Z"}, "86409.000000"),
    ({}, "0"),
])
def test_logs_since(state, since):
    assert dl.logs_since(state) == since


def frame(stream, payload):
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def test_demux_frames_split_anywhere():
    data = frame(1, b"out line\n") + frame(2, b"err line\n") + frame(1, b"")
    for cut in range(len(data) + 1):
        demux = dl.DemuxBuffer()
        assert demux.feed(data[:cut]) + demux.feed(data[cut:]) == b"out line\nerr line\n"


def test_dechunk_split_anywhere():
    data = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n"
    assert dl._dechunk(data) == b"hello, world"
    for cut in range(len(data) + 1):
        dechunker = dl._Dechunker()
        assert dechunker.feed(data[:cut]) + dechunker.feed(data[cut:]) == b"hello, world"


@pytest.mark.parametrize("host", ["ssh://user@host", "npipe:////./pipe/docker_engine"])
def test_unsupported_docker_host(host):
    with pytest.raises(dl.DockerError):
        dl.DockerClient(host)


class _Inspecting(object):
    """A client whose inspect answers as DockerClient.inspect does: the dict, or a DockerError."""

    def __init__(self, error=None):
        self.error = error

    def inspect(self, container):
        if self.error:
            raise self.error
        return {"Name": "/" + container}


def test_find_container_is_none_only_for_a_missing_container():
    assert dl.find_container(_Inspecting(), "srv") == {"Name": "/srv"}
    assert dl.find_container(_Inspecting(dl.DockerError("container srv: No such container", 404)), "srv") is None
    with pytest.raises(dl.DockerError, match="Docker answered 500"):
        dl.find_container(_Inspecting(dl.DockerError("container srv: Docker answered 500: boom", 500)), "srv")
