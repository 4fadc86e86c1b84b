# SPDX-License-Identifier: GPL-3.0-or-later
"""Values written into the watchdog's systemd unit (plugins/plugin_utils/_systemd.py) and its
sandbox: the real template rendered, read back by the installed systemd (systemd-analyze verify,
and security --offline, systemd 250 or later; skipped where systemd-analyze is missing)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import jinja2
import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import SystemdValueError, watchdog_unit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TEMPLATE = os.path.join(ROOT, "roles", "watchdog", "templates", "etc", "systemd", "system", "inferops-watchdog@.service.j2")
ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
DIRS = {"script_dir": "/usr/local/lib/inferops-serving", "config_dir": "/etc/inferops-serving",
        "state_dir": "/var/lib/inferops-serving", "textfile_dir": "/var/lib/node_exporter"}


def render(dirs, config):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: "# " + text
    with open(TEMPLATE, encoding="utf-8") as handle:
        template = env.from_string(handle.read())
    drop = config["drop_caches_file"] if config["drop_caches_before_start"] else None
    watchdog = {"state_dir": dirs["state_dir"], "unit": watchdog_unit(dirs, config["docker_host"], drop)}
    return template.render(ansible_managed="Ansible managed", server_deployment={"watchdog": watchdog})


GB10 = {"docker_host": "unix:///var/run/docker.sock", "drop_caches_before_start": True,
        "drop_caches_file": "/proc/sys/vm/drop_caches"}


def test_the_sandbox_writes_only_what_the_watchdog_writes():
    unit = watchdog_unit(DIRS, "unix:///var/run/docker.sock", "/proc/sys/vm/drop_caches")
    assert unit["read_write_paths"] == ('"/var/lib/inferops-serving" "/var/lib/node_exporter" '
                                        '"-/proc/sys/vm/drop_caches"')
    assert unit["capabilities"] == "CAP_SYS_ADMIN" and unit["ip_address_allow"] == "localhost"
    assert unit["protect_home"] == "yes"
    plain = watchdog_unit(dict(DIRS, textfile_dir=""), "tcp://10.0.0.5:2375", None)
    assert plain["read_write_paths"] == '"/var/lib/inferops-serving"' and plain["capabilities"] == ""
    assert plain["ip_address_allow"] == "10.0.0.5 localhost"
    assert watchdog_unit(DIRS, "tcp://docker.example:2375")["ip_address_allow"] == "any"


@pytest.mark.parametrize("key, value", [("drop_caches_file", "/root/drop_caches"), ("state_dir", "/home/ops/state"),
                                        ("textfile_dir", "/run/user/0/textfile"),
                                        ("drop_caches_file", "/home/ops/drop_caches")])
def test_a_writable_path_in_a_home_directory_stays_writable(key, value):
    """ProtectHome=yes makes /home, /root and /run/user inaccessible, and systemd drops every
    ReadWritePaths= entry beneath an inaccessible one (src/core/namespace.c, drop_inaccessible), so
    such a path (the lab's plain drop_caches file, /root/drop_caches) would be unwritable to the
    watchdog without a word. With one the home directories are read-only instead, which a
    ReadWritePaths= entry beneath them overrides."""
    dirs = dict(DIRS, **{key: value}) if key != "drop_caches_file" else DIRS
    unit = watchdog_unit(dirs, "unix:///var/run/docker.sock", value if key == "drop_caches_file" else None)
    assert unit["protect_home"] == "read-only"
    assert ('"%s%s"' % ("-" if key == "drop_caches_file" else "", value)) in unit["read_write_paths"].split(" ")
    for elsewhere in ("/homework/state", "/rooted", "/run/users"):
        assert watchdog_unit(dict(DIRS, state_dir=elsewhere), "unix:///var/run/docker.sock")["protect_home"] == "yes"


@pytest.mark.parametrize("key, variable", [("script_dir", "server_script_dir"), ("state_dir", "server_state_dir"),
                                           ("textfile_dir", "watchdog_textfile_dir")])
def test_a_path_no_quoting_carries_is_refused_naming_its_variable(key, variable):
    with pytest.raises(SystemdValueError, match="^%s: the value contains the control character" % variable):
        watchdog_unit(dict(DIRS, **{key: "/opt/a\nExecStartPre=/bin/rm -rf /"}), "unix:///var/run/docker.sock")
    if key != "textfile_dir":
        with pytest.raises(SystemdValueError, match="^%s: got a NoneType" % variable):
            watchdog_unit(dict(DIRS, **{key: None}), "unix:///var/run/docker.sock")


LAB = dict(GB10, drop_caches_file="/root/drop_caches")


@needs_systemd
@pytest.mark.parametrize("dirs, config", [
    (DIRS, GB10), (dict(DIRS, script_dir="/opt/my scripts%", state_dir="/srv/state dir"), GB10), (DIRS, LAB),
], ids=["gb10", "space and percent", "lab drop file in /root"])
def test_the_rendered_unit_is_sandboxed_to_at_most_3(tmp_path, dirs, config):
    text = render(dirs, config)
    unit = tmp_path / "inferops-watchdog@.service"
    unit.write_text(text, encoding="utf-8")
    verified = subprocess.run([ANALYZE, "verify", str(unit)], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert "Unknown key" not in verified.stderr and "Failed to parse" not in verified.stderr, verified.stderr
    ran = subprocess.run([ANALYZE, "security", "--offline=yes", str(unit)], capture_output=True, text=True,
                         check=False, cwd=tmp_path)
    if "--offline" in ran.stderr and "unrecognized" in ran.stderr:
        pytest.skip("this systemd-analyze has no --offline (systemd < 250)")
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", ran.stdout)
    assert level, ran.stdout + ran.stderr
    assert float(level.group(1)) <= 3.0, ran.stdout
    assert 'ReadWritePaths="%s"' % dirs["state_dir"] in text
    assert '"-%s"' % config["drop_caches_file"] in text
    assert "ProtectHome=%s\n" % ("read-only" if config is LAB else "yes") in text
    assert "ExecStart=/usr/bin/python3 \"%s/inferops_watchdog.py\"" % dirs["script_dir"].replace("%", "%%") in text
