# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Values written into systemd unit files, and the watchdog unit's sandbox.

A value put into a unit file as it is can change the unit: a space splits a path into two
words, ``%`` starts a specifier (``%i`` is the instance), ``$`` an environment variable in
``ExecStart=``, a newline a new setting. unit_word() writes one value as one double-quoted word
that systemd reads back as exactly that value, and refuses what no quoting can carry.
"""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


class SystemdUnitError(ValueError):
    """A value cannot be written into a unit file; the message names the variable."""


def unit_word(value, variable, exec_arg=False, suffix=""):
    """``value`` as one double-quoted word of a unit file setting.

    Backslashes and double quotes are escaped, ``%`` doubled (systemd's specifiers), and with
    ``exec_arg`` (an ``ExecStart=`` argument) ``$`` doubled (its variable expansion). ``suffix`` is
    appended inside the quotes unescaped, for a specifier the unit means (``/watchdog-%i.json``).
    Control characters (a newline would start a new setting) are refused, naming ``variable``.
    """
    if not isinstance(value, str) or not value:
        raise SystemdUnitError("%s must be a non-empty string, got %r" % (variable, value))
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise SystemdUnitError("%s holds a control character (a newline, a tab, ...): it cannot be written into a "
                               "systemd unit; use a path without one" % variable)
    text = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if exec_arg:
        text = text.replace("$", "$$")
    return '"%s%s"' % (text, suffix)


def _allowed_address(url, variable):
    """What IPAddressAllow= needs for the host of ``url``: localhost, an address, or any (a name)."""
    host = urlsplit(url).hostname if "://" in url else url
    if host in (None, "", "localhost"):
        return "localhost"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "any"  # a host name: systemd's allow-list takes addresses only
    return "localhost" if address.is_loopback else str(address)


def watchdog_unit(dirs, docker_host, drop_caches_file=None):
    """The values of the watchdog unit's template (templates/etc/systemd/system/inferops-watchdog@.service.j2).

    ``dirs``: script_dir, config_dir, state_dir, textfile_dir ("" or None: no textfile) as the
    role's server_* variables; ``docker_host`` the Docker daemon's address (server_docker_host);
    ``drop_caches_file`` the file written before a restart on unified memory, None when the
    watchdog never drops caches. The sandbox lets it write only its state and textfile
    directories and that file; it keeps CAP_SYS_ADMIN only when it must write /proc/sys.
    """
    for key in ("script_dir", "config_dir", "state_dir"):
        unit_word(dirs.get(key), "server_" + key)
    writable = [unit_word(dirs["state_dir"], "server_state_dir")]
    if dirs.get("textfile_dir"):
        writable.append(unit_word(dirs["textfile_dir"], "server_watchdog_textfile_dir"))
    if drop_caches_file:
        writable.append(unit_word(drop_caches_file, "server_drop_caches_file"))
    allowed = sorted({"localhost", _allowed_address(docker_host, "server_docker_host")})
    return {
        "exec_start": "/usr/bin/python3 %s --config %s" % (
            unit_word(dirs["script_dir"].rstrip("/") + "/inferops_watchdog.py", "server_script_dir", exec_arg=True),
            unit_word(dirs["config_dir"].rstrip("/"), "server_config_dir", exec_arg=True, suffix="/watchdog-%i.json")),
        "read_write_paths": " ".join(writable),
        # Writing /proc/sys/vm/drop_caches needs CAP_SYS_ADMIN, a plain file (the lab's) none.
        "capabilities": "CAP_SYS_ADMIN" if (drop_caches_file or "").startswith("/proc/sys/") else "",
        "ip_address_allow": "any" if "any" in allowed else " ".join(allowed),
    }
