# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""A keyed digest of the secrets a serving container reads at its start, computed on the host.

Docker reads ``--env-file`` (and the secret files mounted into the container) when the container is
created: a restart keeps the old values. So a changed secret must replace the container, and the
converge must know whether the running container was created with today's secrets without ever
seeing them again. The container carries ``HMAC-SHA256(host key, canonical secret material)`` as a
label (``_container_action.SECRETS_LABEL``); the converge computes the same digest of the secrets
it is about to write and compares.

The key is host-local: 32 random bytes (64 hex characters), generated once in the server role's
state directory, mode 0600, owned by the user the module runs as (root under become). It never
leaves the host: no return value carries it. Without it the digest of a low-entropy secret could
be tested against guesses, which a plain hash allows. Anything wrong with the key (unreadable, a
symlink, not 0600, someone else's, not 64 hex characters) is a ``DigestKeyError``: the caller
refuses to decide rather than call the secrets unchanged.

Standard library only; it runs on the host.
"""
from __future__ import annotations

import binascii
import errno
import hashlib
import hmac
import json
import os
import stat
import tempfile

KEY_BYTES = 32
# Bound into every digest: a digest of this scheme is never a digest of anything else.
DOMAIN = b"inferops.serving secrets hmac-sha256 v1\n"


class DigestKeyError(Exception):
    """The host's key cannot be read or written (the message names the file and the fix)."""


def canonical(secrets):
    """The bytes digested: ``{path: content}`` as sorted ``[[path, content], ...]`` JSON."""
    if not isinstance(secrets, dict):
        raise TypeError("secrets: expected {path: content}, got %s" % type(secrets).__name__)
    pairs = sorted([str(path), "" if content is None else str(content)] for path, content in secrets.items())
    return json.dumps(pairs, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def secrets_digest(key, secrets):
    """``HMAC-SHA256(key, DOMAIN + canonical(secrets))`` in hex; None when there is no secret."""
    if not secrets:
        return None
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        raise DigestKeyError("the secrets' digest key must be %d bytes" % KEY_BYTES)
    return hmac.new(key, DOMAIN + canonical(secrets), hashlib.sha256).hexdigest()


def _fix(path):
    return ("remove %s: the next converge generates a new key and recreates each container once (through "
            "the drain), for no container's secrets digest matches a new key" % path)


def read_key(path):
    """The key's bytes, or None when ``path`` does not exist; ``DigestKeyError`` for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT and not os.path.islink(path):
            return None
        raise DigestKeyError("cannot read the secrets' digest key %s (%s); %s" % (path, exc.strerror or exc, _fix(path)))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DigestKeyError("the secrets' digest key %s is not a regular file; %s" % (path, _fix(path)))
        if stat.S_IMODE(info.st_mode) != 0o600:
            raise DigestKeyError("the secrets' digest key %s is mode %04o, not 0600: others may have read it; %s"
                                 % (path, stat.S_IMODE(info.st_mode), _fix(path)))
        if info.st_uid != os.geteuid():
            raise DigestKeyError("the secrets' digest key %s is owned by uid %d, not %d (the user this runs as); %s"
                                 % (path, info.st_uid, os.geteuid(), _fix(path)))
        with os.fdopen(fd, "rb") as handle:
            fd = None
            text = handle.read(4 * KEY_BYTES).strip()
    finally:
        if fd is not None:
            os.close(fd)
    try:
        key = binascii.unhexlify(text)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise DigestKeyError("the secrets' digest key %s is not %d hex characters; %s" % (path, 2 * KEY_BYTES, _fix(path)))
    return key


def create_key(path):
    """Write a new key at ``path`` (0600), never over an existing one: ``(key, created)``; a key
    another process wrote meanwhile is read instead. A missing parent directory is created 0755."""
    directory = os.path.dirname(path) or "."
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory)
            os.chmod(directory, 0o755)
        fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    except OSError as exc:
        raise DigestKeyError("cannot write the secrets' digest key %s (%s); make %s writable by the user this "
                             "runs as (root under become)" % (path, exc.strerror or exc, directory))
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(binascii.hexlify(os.urandom(KEY_BYTES)) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            # A link never replaces an existing file: two runs at once keep one key.
            os.link(tmp, path)
            created = True
        except FileExistsError:
            created = False
    except OSError as exc:
        raise DigestKeyError("cannot write the secrets' digest key %s (%s)" % (path, exc.strerror or exc))
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    key = read_key(path)
    if key is None:
        raise DigestKeyError("the secrets' digest key %s vanished as it was written" % path)
    return key, created


def host_digest(path, secrets, check_mode=False):
    """``(digest, key_state)`` of ``secrets`` with the host key at ``path``: ``key_state`` is
    ``existing``, ``created`` or, in check mode without a key, ``missing`` (the digest is then made
    with a throw-away key: it matches no container, as none can carry a digest of a key that does
    not exist yet). No secret: ``(None, "unused")``, and no key is created."""
    if not secrets:
        return None, "unused"
    key = read_key(path)
    state = "existing"
    if key is None:
        if check_mode:
            return secrets_digest(os.urandom(KEY_BYTES), secrets), "missing"
        key, created = create_key(path)
        state = "created" if created else "existing"
    return secrets_digest(key, secrets), state
