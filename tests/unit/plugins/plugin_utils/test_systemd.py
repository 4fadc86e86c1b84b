# SPDX-License-Identifier: GPL-3.0-or-later
"""Values written into systemd units stay one value (issue 25, finding 7): ``server_docker_host``
with a newline added an ``ExecStartPre=`` line to the serving unit. One writer, systemd_escape(),
for both units: bare where it can (the serving unit), always quoted (the watchdog unit's paths);
read back by the installed systemd where systemd-analyze is present."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import jinja2
import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _systemd as sd
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SERVING_UNIT = os.path.join(ROOT, "roles", "server", "templates", "etc", "systemd", "system",
                            "inferops-serving@.service.j2")
INJECTED = "unix:///var/run/docker.sock\nExecStartPre=/bin/touch /tmp/pwned"
ANALYZE = shutil.which("systemd-analyze")


def systemd_word(escaped, kind):
    """How systemd reads one escaped word back: specifiers (and ``$$`` on a command line) first,
    then its quoting (double quotes with ``\\`` escapes read as a POSIX shell reads them; this test
    keeps to words whose only backslash escapes are ``\\\\`` and ``\\"``)."""
    unescaped = escaped.replace("%%", "%")
    words = shlex.split(unescaped.replace("$$", "$") if kind == "exec" else unescaped, posix=True)
    assert len(words) == 1, escaped
    return words[0]


@pytest.mark.parametrize("value, kind, quote, escaped", [
    ("unix:///var/run/docker.sock", "exec", "auto", "unix:///var/run/docker.sock"),
    ("tcp://10.0.0.5:2376", "exec", "auto", "tcp://10.0.0.5:2376"),
    ("/opt/my scripts/watchdog.py", "exec", "auto", '"/opt/my scripts/watchdog.py"'),
    ("/opt/100%/w.py", "exec", "auto", "/opt/100%%/w.py"),
    ("/opt/$HOME/w.py", "exec", "auto", "/opt/$$HOME/w.py"),
    ('a"b\\c d', "exec", "auto", '"a\\"b\\\\c d"'),
    ("ssh://me@host;x", "exec", "auto", '"ssh://me@host;x"'),
    ("-", "exec", "auto", "-"),
    # quote="always": the watchdog unit's paths (text: a ReadWritePaths= entry, $ kept).
    ("/usr/local/lib/inferops-serving", "text", "always", '"/usr/local/lib/inferops-serving"'),
    ("/opt/my scripts", "text", "always", '"/opt/my scripts"'),
    ("/opt/100%i", "text", "always", '"/opt/100%%i"'),
    ("/opt/$HOME", "exec", "always", '"/opt/$$HOME"'),
    ("/opt/$HOME", "text", "always", '"/opt/$HOME"'),
    ('/opt/a"b\\c', "text", "always", '"/opt/a\\"b\\\\c"'),
])
def test_words_read_back_as_themselves(value, kind, quote, escaped):
    assert sd.systemd_escape(value, kind=kind, quote=quote) == escaped
    assert systemd_word(escaped, kind) == value


def test_a_suffix_is_a_specifier_written_as_is_inside_the_quotes():
    assert sd.systemd_escape("/etc/my conf%", "server_config_dir", "exec", "always", suffix="/watchdog-%i.json") \
        == '"/etc/my conf%%/watchdog-%i.json"'
    assert sd.systemd_escape("/etc/conf", kind="exec", suffix="/watchdog-%i.json") == "/etc/conf/watchdog-%i.json"


def test_text_values_only_double_the_percent():
    assert sd.systemd_escape("inferops %i watchdog $X", kind="text") == "inferops %%i watchdog $X"


@pytest.mark.parametrize("quote", sd.QUOTES)
@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\tb", "a\x00b", "a\u2028b", "a\x7fb",
                                   "/opt/a\nExecStartPre=/bin/rm -rf /"])
def test_control_characters_are_refused_naming_the_variable(value, quote):
    with pytest.raises(sd.SystemdValueError, match=r"^server_docker_host: the value contains the control character"):
        sd.systemd_escape(value, "server_docker_host", quote=quote)


@pytest.mark.parametrize("kind, quote", [("exec", "auto"), ("exec", "always"), ("text", "always")])
@pytest.mark.parametrize("value, match", [
    ("", "got an empty string"), (None, "got a NoneType"), (True, "got a bool"), (["a"], "got a list")])
def test_other_bad_values(value, match, kind, quote):
    with pytest.raises(sd.SystemdValueError, match="^v: " + match):
        sd.systemd_escape(value, "v", kind, quote)


def test_unknown_kind_or_quote():
    with pytest.raises(sd.SystemdValueError, match="kind 'shell' is not one of exec, text"):
        sd.systemd_escape("x", kind="shell")
    with pytest.raises(sd.SystemdValueError, match="quote 'never' is not one of auto, always"):
        sd.systemd_escape("x", quote="never")


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_reads_a_quoted_path_with_a_space_and_a_percent_back_as_itself(tmp_path):
    # The unit systemd reads: its ExecStart= is the escaped word of an executable at that path,
    # which verify finds only if systemd read the word back exactly. (The executable is the one
    # word without $ expansion; in the watchdog unit the program's path is an argument of python3.)
    odd = tmp_path / 'my scripts 100%i'
    assert " " in str(odd)
    odd.mkdir()
    program = odd / "inferops_watchdog.py"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    unit = tmp_path / "probe@.service"
    unit.write_text("[Service]\nExecStart=%s --config x\nReadWritePaths=%s\n"
                    % (sd.systemd_escape(str(program), "server_script_dir", "text", "always"),
                       sd.systemd_escape(str(odd), "server_state_dir", "text", "always")), encoding="utf-8")
    ran = subprocess.run([ANALYZE, "verify", str(unit)], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert ran.returncode == 0 and "not executable" not in ran.stderr, ran.stderr


def _render_serving_unit(docker_host):
    """The serving unit as the server role writes it: the template, with the plan's escaped value."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: "#\n# %s\n#" % text
    deployment = plan("gb10-nvfp4-mtp-latency", {"docker_host": docker_host})
    with open(SERVING_UNIT, encoding="utf-8") as handle:
        return env.from_string(handle.read()).render(ansible_managed="managed", server_deployment=deployment)


def test_the_serving_unit_gets_no_line_from_server_docker_host():
    with pytest.raises(ProfileError, match="^server_docker_host: the value contains a newline"):
        _render_serving_unit(INJECTED)
    unit = _render_serving_unit("unix:///run/my docker/docker.sock")
    exec_start = [line for line in unit.splitlines() if line.startswith("ExecStart")]
    assert exec_start == ['ExecStart=/usr/bin/env docker --host "unix:///run/my docker/docker.sock" start %i']
    assert plan("gb10-nvfp4-mtp-latency", {})["serving_unit"]["docker_host"] == "unix:///var/run/docker.sock"


def test_the_plan_refuses_server_docker_host_with_a_newline_before_anything_changes():
    with pytest.raises(ProfileError, match=r"^server_docker_host: the value contains a newline at character 28 of 62;"):
        plan("gb10-nvfp4-mtp-latency", {"docker_host": INJECTED})
    assert plan("gb10-nvfp4-mtp-latency", {"docker_host": "tcp://127.0.0.1:2375"})["options"]["docker_host"] \
        == "tcp://127.0.0.1:2375"
