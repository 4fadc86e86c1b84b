# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Input validators: each returns the value in its clean form or raises with a one-line message.

Every message names the variable, says what it got and what it expects, so a wrong inventory
value fails before anything on a host changes (issue 10). A value is quoted only through
``describe`` (secret shapes masked, cut short), and not at all where the problem is said
without it (a control character: which one, where). The validators are pure; pass ``error=`` to
raise the caller's own exception class (e.g. ``_profile.ProfileError``).
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import quoted

# Docker's container name grammar (daemon/names: restrictedNameChars), without the optional "/".
CONTAINER_NAME_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")
# A profile (or extends) name is a plain file name under a profiles directory, never a path.
PROFILE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Characters that end a line or a shell word where a single-line value is expected.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_CONTROL_NAMES = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "a NUL character",
                  "\u2028": "a line separator (U+2028)", "\u2029": "a paragraph separator (U+2029)",
                  "\u0085": "a next-line character (U+0085)"}
# The longest value the launch script passes as one docker run argument. Linux refuses a single
# argument over MAX_ARG_STRLEN (128 KiB) with "argument list too long"; half of it leaves room for
# a flag or NAME= in the same word, and any real flag value or label is far shorter.
MAX_VALUE_BYTES = 64 * 1024
# The most the launch passes in all: docker run's words (the engine's argv and env among them).
# Linux refuses an exec whose arguments and environment together pass ARG_MAX (a quarter of the
# stack limit, 2 MiB by default) with the same "argument list too long"; a quarter of it leaves
# room for the caller's own environment, and any real launch is a few KiB.
MAX_TOTAL_BYTES = 512 * 1024


class ValidationError(ValueError):
    """An input has the wrong type or value; the message names it and says what it expects."""


def describe(value, limit=60):
    """What a value is, for a message: its kind and a short repr (``a string '/data:/data'``), every
    secret shape in it masked (``_secret_shapes.quoted``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "the boolean %s" % value
    if isinstance(value, str):
        kind = "the string"
    elif isinstance(value, int):
        kind = "the integer"
    elif isinstance(value, float):
        kind = "the number"
    elif isinstance(value, Mapping):
        kind = "a mapping"
    elif isinstance(value, (list, tuple)):
        kind = "a list"
    else:
        kind = "a %s" % type(value).__name__
    return "%s %s" % (kind, quoted(str(value) if isinstance(value, str) else _plainish(value), limit))


def _plainish(value):
    if isinstance(value, Mapping):
        return {str(k): _plainish(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plainish(v) for v in value]
    return value


def _fail(error, var, value, expects):
    raise error("%s: got %s; expected %s" % (var, describe(value), expects))


def control_character(char):
    """A control character as a message names it: ``a newline``, ``a tab``, ``the control character U+001B``."""
    return _CONTROL_NAMES.get(char, "the control character U+%04X" % ord(char))


def single_line(value, var, error=ValidationError, max_bytes=None):
    """``value`` as a string without control characters (no newline, CR, tab, NUL, ...), and of at
    most ``max_bytes`` bytes in UTF-8 when given. The message gives the size, or which control
    character and where, never the value: a secret put under this name by mistake stays unshown."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        _fail(error, var, value, "a single-line string")
    text = str(value)
    size = len(text.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise error("%s: got a value of %d bytes; expected at most %d bytes (a longer one breaks the launch "
                    "script's docker run with 'argument list too long'): shorten it, or put it in a file and "
                    "mount it (server_extra_volumes)" % (var, size, max_bytes))
    bad = _CONTROL_RE.search(text)
    if bad:
        raise error("%s: the value contains %s at character %d of %d; expected a single-line value without "
                    "control characters (remove it; value not shown)"
                    % (var, control_character(bad.group(0)), bad.start() + 1, len(text)))
    return text


def size(value):
    """The bytes ``value`` takes as one exec argument: its UTF-8 and the terminating NUL."""
    return len(str(value).encode("utf-8", "surrogatepass")) + 1


def total_size(fields, var, error=ValidationError, max_bytes=MAX_TOTAL_BYTES):
    """The total ``size`` of ``fields`` (``(name, value)`` pairs), refused over ``max_bytes`` naming
    the total, the limit and the three largest fields by size (never a value)."""
    sizes = {}
    for name, value in fields:
        sizes[name] = sizes.get(name, 0) + size(value)
    total = sum(sizes.values())
    if total > max_bytes:
        largest = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:3]
        raise error("%s: the values total %d bytes; expected at most %d bytes in all (Linux refuses an exec "
                    "whose arguments and environment pass ARG_MAX, 2 MiB by default, with 'argument list too "
                    "long'); the largest: %s: shorten them, or put them in files and mount them "
                    "(server_extra_volumes)"
                    % (var, total, max_bytes, ", ".join("%s (%d bytes)" % item for item in largest)))
    return total


def container_name(value, var="server_container_name", error=ValidationError):
    """A Docker container name: ``[a-zA-Z0-9][a-zA-Z0-9_.-]+`` (no ``/``, so no path escape)."""
    if not isinstance(value, str) or not CONTAINER_NAME_RE.fullmatch(value):
        _fail(error, var, value, "a Docker container name: a letter or digit, then at least one of "
                                 "letters, digits, '_', '.' or '-' (e.g. inferops-serving)")
    if ".." in value:
        _fail(error, var, value, "a container name without '..' (it also names files and directories)")
    return str(value)


def port(value, var="server_port", error=ValidationError):
    """A TCP port 1-65535, from an integer or a string of digits; booleans are refused."""
    if isinstance(value, bool):
        _fail(error, var, value, "a port number from 1 to 65535")
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    elif isinstance(value, int):
        number = int(value)
    else:
        _fail(error, var, value, "a port number from 1 to 65535")
    if not 1 <= number <= 65535:
        _fail(error, var, value, "a port number from 1 to 65535")
    return number


def whole_number(value, var, low=0, high=None, error=ValidationError):
    """A whole number from ``low`` to ``high``, from an integer or a string of digits; booleans are refused."""
    expects = "a whole number from %d%s" % (low, " to %d" % high if high is not None else " up")
    if isinstance(value, bool):
        _fail(error, var, value, expects)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    elif isinstance(value, int):
        number = int(value)
    else:
        _fail(error, var, value, expects)
    if number < low or (high is not None and number > high):
        _fail(error, var, value, expects)
    return number


def absolute_path(value, var, error=ValidationError, volume=False):
    """An absolute, single-line path, normalised (``/a/./b/`` -> ``/a/b``).

    ``volume=True`` also refuses ``:`` and ``,``, which would change a ``host:container`` mount.
    """
    if not isinstance(value, str):
        _fail(error, var, value, "an absolute path (a string starting with /)")
    text = single_line(value, var, error)
    if not text.startswith("/"):
        _fail(error, var, value, "an absolute path (a string starting with /)")
    if volume and (":" in text or "," in text):
        _fail(error, var, value, "a path without ':' or ',' (it is the host side of a volume)")
    return posixpath.normpath(text) if text != "/" else "/"


def path_inside(value, directory, var, error=ValidationError):
    """``value`` (relative to ``directory``, or absolute) as a normalised path inside ``directory``.

    ``..`` that leaves the directory, and the directory itself, are refused.
    """
    base = absolute_path(directory, "%s (its directory)" % var, error)
    if not isinstance(value, str) or not value:
        _fail(error, var, value, "a path inside %s" % base)
    text = single_line(value, var, error)
    joined = posixpath.normpath(posixpath.join(base, text))
    if joined == base or posixpath.commonpath([base, joined]) != base:
        _fail(error, var, value, "a path inside %s (no '..' out of it, no other absolute path)" % base)
    return joined


def str_list(value, var, error=ValidationError, example=None):
    """A list of strings; null is an empty list; a plain string is refused, not split into characters."""
    if value is None:
        return []
    if isinstance(value, str):
        raise error("%s: got %s; expected a list of strings, e.g. [%s] (a plain string would be read "
                    "one character per item)" % (var, describe(value), quoted(example or value)))
    if not isinstance(value, (list, tuple)):
        _fail(error, var, value, "a list of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise error("%s[%d]: got %s; expected a string" % (var, index, describe(item)))
    return [str(item) for item in value]


def mapping(value, var, error=ValidationError, keys="strings"):
    """A mapping (a plain dict copy); null is an empty mapping; keys must be strings."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(error, var, value, "a mapping of %s to values (e.g. {NAME: value})" % keys)
    for key in value:
        if not isinstance(key, str):
            raise error("%s: key %s is not a string; expected a mapping with %s as keys"
                        % (var, describe(key), keys))
    return dict(value)


def profile_name(value, var="profile", error=ValidationError):
    """A profile name as a plain name (``gb10-nvfp4-mtp-latency``): no ``/``, no ``..``, not a path."""
    if not isinstance(value, str) or not PROFILE_NAME_RE.fullmatch(value) or ".." in value:
        _fail(error, var, value, "a plain profile name (letters, digits, '_', '.', '-'; no '/', no '..', "
                                 "not a path), the file name of profiles/<name>.yml without .yml")
    return str(value)
