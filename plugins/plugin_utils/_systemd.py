# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Values written into systemd unit files, and the watchdog unit's sandbox.

systemd reads a unit line by line: a newline in a value starts a new setting (``ExecStartPre=``
injected by a variable), ``%`` starts a specifier (``%i``, ``%h``), and on an ``Exec*=`` command
line a word ends at whitespace, ``$`` expands an environment variable and a backslash starts a
C escape (systemd.service(5) "Command lines", systemd.unit(5) "Specifiers"). systemd_escape()
is the one writer of such values: bare where it can (the serving unit's ``server_docker_host``),
or always as one double-quoted word (the watchdog unit's paths); it refuses what no quoting can
carry, naming the variable.
"""
from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# Control characters: no unit line can carry one (a newline would end the setting).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
# What a command-line word can hold bare; anything else is double-quoted.
_BARE_WORD_RE = re.compile(r"[A-Za-z0-9_@%+=:,./$-]+")
KINDS = ("exec", "text")
QUOTES = ("auto", "always")


class SystemdValueError(ValueError):
    """A value that no unit file line can carry; the message names the variable."""


def systemd_escape(value, var="value", kind="exec", quote="auto", suffix=""):
    """``value`` as it must be written into a unit file, so that systemd reads back exactly ``value``.

    ``kind="exec"``: one word of an ``ExecStart=``-style command line (``%`` -> ``%%``, ``$`` ->
    ``$$``). ``kind="text"``: a setting's value where ``$`` is literal: ``%`` -> ``%%`` only.
    ``quote="auto"``: an exec word is double-quoted (``\\`` and ``"`` escaped) only when it holds
    anything but plain characters, a text value never. ``quote="always"``: one double-quoted
    word either way (a path in ``ReadWritePaths=`` is a text word: quoted, ``$`` kept).
    ``suffix`` is appended as written, inside the quotes: a specifier the unit means
    (``/watchdog-%i.json``), never a value from a variable.
    A control character (newline, CR, tab, NUL...) or an empty word is refused, naming ``var``.
    """
    for name, got, choices in (("kind", kind, KINDS), ("quote", quote, QUOTES)):
        if got not in choices:
            raise SystemdValueError("systemd_escape: %s %r is not one of %s" % (name, got, ", ".join(choices)))
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SystemdValueError("%s: got a %s; expected a single-line string for a systemd unit"
                                % (var, type(value).__name__))
    text = str(value)
    bad = _CONTROL_RE.search(text)
    if bad:
        raise SystemdValueError("%s: the value contains the control character %r at position %d, which would "
                                "end its line in the systemd unit (and start another setting); remove it"
                                % (var, bad.group(0), bad.start()))
    text = text.replace("%", "%%")
    if kind == "text" and quote == "auto":
        return text + suffix
    if not text:
        raise SystemdValueError("%s: got an empty string; expected a word for the systemd unit" % var)
    if kind == "exec":
        text = text.replace("$", "$$")
    if quote == "auto" and _BARE_WORD_RE.fullmatch(text + suffix):
        return text + suffix
    return '"%s%s"' % (text.replace("\\", "\\\\").replace('"', '\\"'), suffix)


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


# The directories ProtectHome=yes hides (systemd.exec(5)).
HOME_DIRS = ("/home", "/root", "/run/user")


def _under_home(path):
    text = "/" + str(path).strip("/")
    return any(text == home or text.startswith(home + "/") for home in HOME_DIRS)


def watchdog_unit(dirs, docker_host, drop_caches_file=None):
    """The values of the watchdog unit's template (templates/etc/systemd/system/inferops-watchdog@.service.j2).

    ``dirs``: script_dir, config_dir, state_dir, textfile_dir ("" or None: no textfile) as the
    role's server_* variables; ``docker_host`` the Docker daemon's address (server_docker_host);
    ``drop_caches_file`` the file written before a restart on unified memory, None when the
    watchdog never drops caches. The sandbox lets it write only its state and textfile
    directories and that file; it keeps CAP_SYS_ADMIN only when it must write /proc/sys, and hides
    the home directories (ProtectHome=yes) unless one of those paths is in one (read-only then).
    """
    def word(value, var, kind="text", suffix=""):  # every path is one double-quoted word, whatever it holds
        return systemd_escape(value, var, kind, quote="always", suffix=suffix)

    for key in ("script_dir", "config_dir", "state_dir"):
        word(dirs.get(key), "server_" + key)
    paths = [dirs["state_dir"]] + ([dirs["textfile_dir"]] if dirs.get("textfile_dir") else [])
    writable = [word(dirs["state_dir"], "server_state_dir")]
    if dirs.get("textfile_dir"):
        writable.append(word(dirs["textfile_dir"], "watchdog_textfile_dir"))
    if drop_caches_file:
        paths.append(drop_caches_file)
        # "-": a plain file (the lab's) may not exist yet when the unit starts; systemd then
        # leaves it read-only instead of failing the unit (/proc/sys/vm/drop_caches always exists).
        writable.append('"-' + word(drop_caches_file, "server_drop_caches_file")[1:])
    allowed = sorted({"localhost", _allowed_address(docker_host, "server_docker_host")})
    return {
        "exec_start": "/usr/bin/python3 %s --config %s" % (
            word(str(dirs["script_dir"]).rstrip("/") + "/inferops_watchdog.py", "server_script_dir", "exec"),
            word(str(dirs["config_dir"]).rstrip("/"), "server_config_dir", "exec", suffix="/watchdog-%i.json")),
        "read_write_paths": " ".join(writable),
        # Writing /proc/sys/vm/drop_caches needs CAP_SYS_ADMIN, a plain file (the lab's) none.
        "capabilities": "CAP_SYS_ADMIN" if (drop_caches_file or "").startswith("/proc/sys/") else "",
        "ip_address_allow": "any" if "any" in allowed else " ".join(allowed),
        # ProtectHome=yes makes these directories inaccessible, and systemd then drops every
        # ReadWritePaths= entry beneath them (namespace.c, drop_inaccessible): a writable path
        # there would be silently unwritable. read-only keeps the rest of them out of reach.
        "protect_home": "read-only" if any(_under_home(path) for path in paths) else "yes",
    }


SERVING_UNIT_FILE = "/etc/systemd/system/inferops-serving@.service"
WATCHDOG_UNIT_FILE = "/etc/systemd/system/inferops-watchdog@.service"
