# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The hash-locked requirements the roles install on the hosts (``pip install --require-hashes -r``).

scripts/lock-host-packages writes one file per role (:data:`LOCKS`) with pip-compile
--generate-hashes from the role defaults' pins: its ``# input:`` lines are those pins, then every
package of the resolution with the sha256 of each file PyPI has of it (amd64 and arm64 alike).
``lock_plan()`` is what a role reads before it installs (the ``host_lock`` lookup): the file's
path on the controller, and the problems - a pin of the role's variables the file does not pin,
named with the fix - refused before anything on the host changes.
"""
from __future__ import annotations

import os
import re

# role -> (the lock file under roles/<role>/files/, the variable(s) whose pins are its inputs)
LOCKS = {
    "gateway": ("gateway-requirements.txt", "gateway_litellm_version, gateway_prisma_version"),
    "model_cache": ("model-cache-requirements.txt", "model_cache_requirements"),
}
_REQUIREMENT_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


class LockError(ValueError):
    """A lock file or a pin the roles cannot install from; the message names it."""


def normalize(name):
    """PEP 503's normalized project name."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def lock_path(role):
    """The role's lock file in this collection."""
    if role not in LOCKS:
        raise LockError("host_lock: got %r; expected one of %s" % (role, ", ".join(sorted(LOCKS))))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "roles", role, "files", LOCKS[role][0])


def parse(text):
    """``{inputs: [pin lines], pins: {normalized name: version}, unhashed: [names], options: [lines]}``
    of a lock file's text: the ``# input:`` lines, each requirement's version, the requirements
    without a ``--hash``, and any other pip option line (an index or find-links: none belongs)."""
    inputs, pins, unhashed, options = [], {}, [], []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# input:"):
            inputs.append(line[len("# input:"):].strip())
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("--hash=sha256:"):
            if current is not None:
                current[1] = True
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        match = _REQUIREMENT_RE.match(line)
        if not match:
            raise LockError("not a pinned requirement: %r" % line)
        if current is not None and not current[1]:
            unhashed.append(current[0])
        current = [normalize(match.group(1)), "--hash=sha256:" in line]
        pins[current[0]] = match.group(3)
    if current is not None and not current[1]:
        unhashed.append(current[0])
    return {"inputs": inputs, "pins": pins, "unhashed": unhashed, "options": options}


def lock_plan(role, pins, text=None):
    """``{file, problems}``: the role's lock file and what keeps the role from installing from it.

    ``pins``: the role variables' requirements (``name==version``, extras allowed). A problem
    names the variable, the pin and what the file pins, with the fix (scripts/lock-host-packages).
    ``text``: the file's text (read from ``file`` when None).
    """
    path = lock_path(role)
    if text is None:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            return {"file": path, "problems": ["%s: cannot read the lock file (%s); run scripts/lock-host-packages"
                                               % (path, exc.strerror)]}
    variables = LOCKS[role][1]
    try:
        parsed = parse(text)
    except LockError as exc:
        return {"file": path, "problems": ["%s: %s; run scripts/lock-host-packages" % (path, exc)]}
    problems = []
    for pin in pins or ():
        match = _REQUIREMENT_RE.match(str(pin).strip())
        if not match or str(pin).strip() != match.group(0):
            problems.append("%s: %r is not a name==version pin; write one, e.g. huggingface_hub==1.33.0" % (variables, pin))
            continue
        locked = parsed["pins"].get(normalize(match.group(1)))
        if locked != match.group(3):
            problems.append("%s: %s is not what the collection's hash-locked %s pins (%s); the hosts install only "
                            "from it (pip --require-hashes): keep the role's default, or change the default and run "
                            "scripts/lock-host-packages" % (variables, pin.strip(), os.path.basename(path),
                                                            "%s==%s" % (match.group(1), locked) if locked else "nothing of it"))
    if parsed["unhashed"] or parsed["options"]:
        problems.append("%s: %s; run scripts/lock-host-packages" % (path, "; ".join(
            (["without a hash: " + ", ".join(parsed["unhashed"])] if parsed["unhashed"] else [])
            + (["an option no host may use: " + ", ".join(parsed["options"])] if parsed["options"] else []))))
    return {"file": path, "problems": problems}
