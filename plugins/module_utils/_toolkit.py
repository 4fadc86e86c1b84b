# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What the container_toolkit role still has to do on a host, decided from what was read of it.

``parse_dpkg_query`` reads ``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'``;
``parse_deb822`` one stanza of a ``.sources`` file; ``toolkit_steps(observed, wanted)`` returns
the role's steps that are not done yet, each with its reason. A host where every step is done
(a converge that changes nothing) then skips them without running their modules.
``installed_key_sha256(path)`` is the SHA-256 of the signing key file as the role installs it
(root's, mode 0644): the ``key`` step is left only when the downloaded key is not that key.
"""
from __future__ import annotations

import hashlib
import os
import stat

# The role's steps, in its order (tasks/toolkit.yml, configure.yml, docker.yml).
STEPS = ("prerequisites", "key", "repository", "pin", "install", "hold", "daemon_json", "docker_install", "docker_start")


def parse_dpkg_query(text):
    """``{package: {version, selection, status}}`` of the packages dpkg knows and that are installed."""
    found = {}
    for line in (text or "").splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        name, version, abbrev = fields[0].strip(), fields[1].strip(), fields[2].strip()
        # Status-Abbrev: desired action (u=unknown i=install h=hold r=remove p=purge), then the
        # package status (n=not-installed i=installed c=config-files ...), then the error flag.
        if len(abbrev) >= 2 and abbrev[1] == "i" and version:
            found[name] = {"version": version, "selection": {"h": "hold", "i": "install"}.get(abbrev[0], abbrev[0]),
                           "status": "installed"}
    return found


def parse_deb822(text):
    """The fields of the first stanza of a deb822 ``.sources`` file (continuation lines joined)."""
    fields = {}
    key = None
    for line in (text or "").splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line.startswith("#"):
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
            continue
        key, _sep, value = line.partition(":")
        key = key.strip()
        fields[key] = value.strip()
    return fields


def toolkit_steps(observed, wanted):
    """``{steps: [...], reasons: {step: why}}``: the steps not done yet.

    ``observed``: ``packages`` (parse_dpkg_query), ``repository`` (parse_deb822 of the .sources
    file, or None), ``preferences`` (the pin file's text, or None), ``daemon_json_changes``
    (whether merging the settings would change daemon.json), ``signed_by_exists`` (the
    repository file's Signed-By key file exists), ``docker_active``/``docker_enabled``
    (bools), ``apt_lists`` (how many package lists there are), ``key_sha256`` (the SHA-256 of the
    signing key downloaded on this run, or None: none was) and ``keyring_sha256``
    (installed_key_sha256 of the installed one).
    ``wanted``: ``packages``, ``version``, ``hold`` (bool), ``manage_repository`` (bool),
    ``repository`` (the fields the .sources file must have), ``preferences`` (the pin file's
    text), ``prerequisites`` (packages the role's modules need), ``docker_packages`` (any of
    them is a Docker engine), ``docker_package`` (the one to install, or empty: not managed).
    """
    packages = observed.get("packages") or {}
    reasons = {}
    missing = [p for p in wanted.get("prerequisites") or [] if p not in packages]
    if missing or not observed.get("apt_lists"):
        reasons["prerequisites"] = ("missing " + ", ".join(missing)) if missing else "no apt package lists"
    if wanted.get("manage_repository") and observed.get("key_sha256") is not None:
        if observed.get("keyring_sha256") is None:
            reasons["key"] = "no signing key installed as root's, mode 0644"
        elif observed["keyring_sha256"] != observed["key_sha256"]:
            reasons["key"] = "the repository serves another signing key than the installed one"
    if wanted.get("manage_repository"):
        have = observed.get("repository")
        if have is None:
            reasons["repository"] = "no repository file"
        else:
            differ = sorted(k for k, v in (wanted.get("repository") or {}).items() if have.get(k) != v)
            if differ:
                reasons["repository"] = "differs in " + ", ".join(differ)
            elif not observed.get("signed_by_exists"):
                reasons["repository"] = "its key %s is missing" % have.get("Signed-By")
    if observed.get("preferences") != wanted.get("preferences"):
        reasons["pin"] = "no pin file" if observed.get("preferences") is None else "pin file differs"
    version = str(wanted.get("version"))
    wrong = ["%s %s" % (p, (packages.get(p) or {}).get("version") or "not installed")
             for p in wanted.get("packages") or [] if (packages.get(p) or {}).get("version") != version]
    if wrong:
        reasons["install"] = "want %s, have %s" % (version, ", ".join(wrong))
    selection = "hold" if wanted.get("hold") else "install"
    unheld = [p for p in wanted.get("packages") or [] if (packages.get(p) or {}).get("selection") != selection]
    if unheld:
        reasons["hold"] = "not on %s: %s" % (selection, ", ".join(unheld))
    if observed.get("daemon_json_changes"):
        reasons["daemon_json"] = "daemon.json lacks the nvidia runtime settings"
    if wanted.get("docker_package") and not any(p in packages for p in wanted.get("docker_packages") or []):
        reasons["docker_install"] = "no Docker engine installed"
    if not (observed.get("docker_active") and observed.get("docker_enabled")):
        reasons["docker_start"] = "Docker is %s and %s" % ("running" if observed.get("docker_active") else "not running",
                                                           "enabled" if observed.get("docker_enabled") else "not enabled")
    return {"steps": [s for s in STEPS if s in reasons], "reasons": reasons}


def installed_key_sha256(path):
    """The hex SHA-256 of ``path`` when it is a regular file owned by root:root with mode 0644 (as
    the role's copy task writes the signing key), else None (missing, or the install must run to
    put its owner or mode back)."""
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if os.path.islink(path) or not stat.S_ISREG(info.st_mode):
                return None
            if (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) != (0, 0, 0o644):
                return None
            return hashlib.sha256(handle.read()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
