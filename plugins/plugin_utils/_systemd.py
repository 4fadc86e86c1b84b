# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Values written into systemd unit files, escaped so that each stays one value.

systemd reads a unit line by line: a newline in a value starts a new setting (``ExecStartPre=``
injected by a variable), ``%`` starts a specifier (``%i``, ``%h``), and on an ``Exec*=`` command
line a word ends at whitespace, ``$`` expands an environment variable and a backslash starts a
C escape (systemd.service(5) "Command lines", systemd.unit(5) "Specifiers").
"""
from __future__ import annotations

import re

# Control characters: no unit line can carry one (a newline would end the setting).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
# What a command-line word can hold bare; anything else is double-quoted.
_BARE_WORD_RE = re.compile(r"[A-Za-z0-9_@%+=:,./$-]+")
KINDS = ("exec", "text")


class SystemdValueError(ValueError):
    """A value that no unit file line can carry."""


def systemd_escape(value, var="value", kind="exec"):
    """``value`` as it must be written into a unit file, so that systemd reads back exactly ``value``.

    ``kind="exec"``: one word of an ``ExecStart=``-style command line (``%`` -> ``%%``, ``$`` ->
    ``$$``, double-quoted with ``\\`` and ``"`` escaped when it holds anything but plain characters).
    ``kind="text"``: a plain setting value (``Description=``): ``%`` -> ``%%`` only.
    A control character (newline, CR, tab, NUL...) or an empty exec word is refused, naming ``var``.
    """
    if kind not in KINDS:
        raise SystemdValueError("systemd_escape: kind %r is not one of %s" % (kind, ", ".join(KINDS)))
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
    if kind == "text":
        return text
    if not text:
        raise SystemdValueError("%s: got an empty string; expected a word for the unit's command line" % var)
    text = text.replace("$", "$$")
    if _BARE_WORD_RE.fullmatch(text):
        return text
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
