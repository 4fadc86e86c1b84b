# SPDX-License-Identifier: GPL-3.0-or-later
"""container_log against a stand-in for the Docker daemon on a unix socket: the last lines of a
container's log, stdout and stderr interleaved as ``docker logs --tail`` prints them, saved 0600."""
from __future__ import annotations

import json
import os
import struct
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from ansible_collections.inferops.serving.plugins.modules import container_log

LOG = [(1, "INFO starting vLLM"), (2, "Traceback (most recent call last):"),
       (2, "torch.OutOfMemoryError: CUDA out of memory."), (1, "INFO engine died")]


class FakeLogs(object):
    """Containers {name: (tty, [(stream, line)])}; answers the inspect and the logs endpoint."""

    def __init__(self, containers):
        self.containers = containers
        self.calls = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                parts = [unquote(part) for part in url.path.strip("/").split("/")]
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                fake.calls.append((parts[1], parts[2], query))
                if parts[1] not in fake.containers:
                    body = json.dumps({"message": "No such container: %s" % parts[1]}).encode()
                    self.send_response(404)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                tty, log = fake.containers[parts[1]]
                if parts[2] == "json":
                    body = json.dumps({"Id": "abc", "Config": {"Tty": tty}, "State": {"Running": False}}).encode()
                else:
                    tail = log[-int(query["tail"]):]
                    if tty:
                        body = "".join(line + "\r\n" for _stream, line in tail).encode()
                    else:  # multiplexed: an 8-byte header (stream, 0, 0, 0, big-endian length) per frame
                        body = b"".join(struct.pack(">BxxxL", stream, len(line) + 1) + (line + "\n").encode()
                                        for stream, line in tail)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.handler = Handler


def args(host, dest, **more):
    return dict({"container": "srv", "dest": str(dest), "docker_host": host, "lines": 3}, **more)


def test_the_last_lines_of_both_streams_are_saved_private(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({"srv": (False, LOG)}))
    dest = tmp_path / "failed.log"
    failed, result = run_module(container_log, args(host, dest))
    assert not failed and result["changed"] and result["saved"] and result["lines"] == 3, result
    assert dest.read_text() == "".join(line + "\n" for _stream, line in LOG[-3:])
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"
    assert sorted(os.listdir(tmp_path)) == ["docker.sock", "failed.log"]  # no temporary file left
    # As docker logs --tail prints them: no timestamps.
    assert fake.calls[-1] == ("srv", "logs", {"stdout": "1", "stderr": "1", "timestamps": "0", "tail": "3"})


def test_the_file_is_private_under_the_usual_umask(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({"srv": (False, LOG)}))
    dest = tmp_path / "failed.log"
    dest.write_text("an older log\n")
    dest.chmod(0o644)
    old = os.umask(0o022)
    try:
        failed, result = run_module(container_log, args(host, dest))
    finally:
        os.umask(old)
    assert not failed and result["changed"]
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600" and "an older log" not in dest.read_text()


def test_a_second_run_changes_nothing(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({"srv": (False, LOG)}))
    dest = tmp_path / "failed.log"
    run_module(container_log, args(host, dest))
    failed, result = run_module(container_log, args(host, dest))
    assert not failed and not result["changed"] and result["saved"], result


def test_a_tty_container_s_raw_log(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({"srv": (True, LOG)}))
    dest = tmp_path / "failed.log"
    failed, result = run_module(container_log, args(host, dest, lines=10))
    assert not failed and result["lines"] == 4
    assert dest.read_text().splitlines() == [line for _stream, line in LOG]


def test_check_mode_reads_and_writes_nothing(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({"srv": (False, LOG)}))
    dest = tmp_path / "failed.log"
    failed, result = run_module(container_log, args(host, dest), check_mode=True)
    assert not failed and result["changed"] and not result["saved"] and result["lines"] == 3
    assert not dest.exists()


def test_a_missing_container_fails_and_writes_nothing(run_module, docker, tmp_path):
    fake, host = docker(FakeLogs({}))
    dest = tmp_path / "failed.log"
    failed, result = run_module(container_log, args(host, dest))
    assert failed and "No such container: srv" in result["msg"] and "(is the container created?)" in result["msg"]
    assert not dest.exists()


def test_an_unreachable_daemon_fails_naming_it(run_module, tmp_path):
    host = "unix://%s" % (tmp_path / "none.sock")
    failed, result = run_module(container_log, args(host, tmp_path / "failed.log"))
    assert failed and "cannot reach the Docker daemon at %s" % host in result["msg"]


def test_bad_values_are_refused_naming_the_option(run_module, tmp_path):
    failed, result = run_module(container_log, args("unix:///x", tmp_path / "f.log", lines=0))
    assert failed and result["msg"] == "lines must be 1 or more, not 0"
    failed, result = run_module(container_log, args("unix:///x", tmp_path / "f.log", docker_timeout=0))
    assert failed and result["msg"] == "docker_timeout must be 1 or more seconds, not 0"
    failed, result = run_module(container_log, args("unix:///x", tmp_path))
    assert failed and result["msg"] == "dest %s is a directory; name the file to write" % tmp_path
