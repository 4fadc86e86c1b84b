# SPDX-License-Identifier: GPL-3.0-or-later
"""Values written into systemd units stay one value (issue 25, finding 7): ``server_docker_host``
with a newline added an ``ExecStartPre=`` line to the serving unit."""
from __future__ import annotations

import os
import shlex

import jinja2
import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _systemd as sd
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SERVING_UNIT = os.path.join(ROOT, "roles", "server", "templates", "etc", "systemd", "system",
                            "inferops-serving@.service.j2")
INJECTED = "unix:///var/run/docker.sock\nExecStartPre=/bin/touch /tmp/pwned"


def systemd_word(escaped):
    """How systemd reads one escaped command-line word back: specifiers and ``$$`` first, then its
    quoting (double quotes with ``\\`` escapes read as a POSIX shell reads them; this test keeps to
    words whose only backslash escapes are ``\\\\`` and ``\\"``)."""
    words = shlex.split(escaped.replace("%%", "%").replace("$$", "$"), posix=True)
    assert len(words) == 1, escaped
    return words[0]


@pytest.mark.parametrize("value, escaped", [
    ("unix:///var/run/docker.sock", "unix:///var/run/docker.sock"),
    ("tcp://10.0.0.5:2376", "tcp://10.0.0.5:2376"),
    ("/opt/my scripts/watchdog.py", '"/opt/my scripts/watchdog.py"'),
    ("/opt/100%/w.py", "/opt/100%%/w.py"),
    ("/opt/$HOME/w.py", "/opt/$$HOME/w.py"),
    ('a"b\\c d', '"a\\"b\\\\c d"'),
    ("ssh://me@host;x", '"ssh://me@host;x"'),
    ("-", "-"),
])
def test_exec_words_read_back_as_themselves(value, escaped):
    assert sd.systemd_escape(value) == escaped
    assert systemd_word(escaped) == value


def test_text_values_only_double_the_percent():
    assert sd.systemd_escape("inferops %i watchdog $X", kind="text") == "inferops %%i watchdog $X"


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\tb", "a\x00b", "a\u2028b", "a\x7fb"])
def test_control_characters_are_refused_naming_the_variable(value):
    with pytest.raises(sd.SystemdValueError, match=r"^server_docker_host: the value contains the control character"):
        sd.systemd_escape(value, "server_docker_host")


@pytest.mark.parametrize("value, match", [
    ("", "got an empty string"), (None, "got a NoneType"), (True, "got a bool"), (["a"], "got a list")])
def test_other_bad_values(value, match):
    with pytest.raises(sd.SystemdValueError, match=match):
        sd.systemd_escape(value, "v")
    with pytest.raises(sd.SystemdValueError, match="kind 'shell'"):
        sd.systemd_escape("x", kind="shell")


def _render_serving_unit(docker_host):
    from ansible_collections.inferops.serving.plugins.filter.systemd_escape import FilterModule
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters.update({"inferops.serving." + k: v for k, v in FilterModule().filters().items()})
    env.filters["comment"] = lambda text: "#\n# %s\n#" % text
    with open(SERVING_UNIT, encoding="utf-8") as handle:
        return env.from_string(handle.read()).render(ansible_managed="managed", server_docker_host=docker_host)


def test_the_serving_unit_gets_no_line_from_server_docker_host():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="^server_docker_host: the value contains the control character"):
        _render_serving_unit(INJECTED)
    unit = _render_serving_unit("unix:///run/my docker/docker.sock")
    exec_start = [line for line in unit.splitlines() if line.startswith("ExecStart")]
    assert exec_start == ['ExecStart=/usr/bin/env docker --host "unix:///run/my docker/docker.sock" start %i']


def test_the_plan_refuses_server_docker_host_with_a_newline_before_anything_changes():
    with pytest.raises(ProfileError, match=r"^server_docker_host: got the string .*control character '\\n'"):
        plan("gb10-nvfp4-mtp-latency", {"docker_host": INJECTED})
    assert plan("gb10-nvfp4-mtp-latency", {"docker_host": "tcp://127.0.0.1:2375"})["options"]["docker_host"] \
        == "tcp://127.0.0.1:2375"
