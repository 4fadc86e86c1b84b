# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a module's main() with arguments and catch what it returns (exit_json / fail_json); serve a
fake Docker Engine API on a unix socket."""
from __future__ import annotations

import contextlib
import json
import socketserver
import threading

import pytest

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19 (scripts/check-ansible-versions): its AnsibleModule reads basic._ANSIBLE_ARGS
    @contextlib.contextmanager
    def patch_module_args(args=None):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode("utf-8")
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


class ModuleExit(Exception):
    """main() called exit_json or fail_json; ``result`` holds what it returned."""

    def __init__(self, result, failed):
        super().__init__(result)
        self.result = result
        self.failed = failed


def _exit_json(self, **kwargs):
    raise ModuleExit(dict(kwargs, changed=kwargs.get("changed", False)), failed=False)


def _fail_json(self, msg, **kwargs):
    raise ModuleExit(dict(kwargs, msg=msg, failed=True), failed=True)


@pytest.fixture
def run_module(monkeypatch):
    """``run_module(module, args, check_mode=False, diff=False) -> (failed, result)``."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)

    def run(module, args, check_mode=False, diff=False):
        args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
        with patch_module_args(args), pytest.raises(ModuleExit) as caught:
            module.main()
        return caught.value.failed, caught.value.result

    return run


class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """An HTTP server on a unix socket, as the Docker daemon listens."""

    daemon_threads = True


@pytest.fixture
def docker(tmp_path):
    """``docker(fake) -> (fake, "unix://<socket>")``: serves ``fake.handler`` (an HTTP request
    handler class standing for the Docker daemon) on a unix socket until the test ends, then
    calls ``fake.close()`` if it has one."""
    started = []
    sock = str(tmp_path / "docker.sock")

    def start(fake):
        server = UnixHTTPServer(sock, fake.handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append((fake, server))
        return fake, "unix://" + sock

    yield start
    for fake, server in started:
        getattr(fake, "close", lambda: None)()
        server.shutdown()
        server.server_close()
