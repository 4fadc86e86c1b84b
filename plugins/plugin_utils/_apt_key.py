# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Whether a downloaded apt signing key is the one pinned, decided before it is trusted.

An apt repository's key is fetched over the network; trusting whatever armored key the URL
serves lets anyone who controls the answer (the server, a proxy, DNS) sign packages the host
installs as root. The container_toolkit role pins the key's fingerprint instead: every primary
key in the download must have a pinned fingerprint, or nothing is installed.

The fingerprint is computed here from the OpenPGP packets (RFC 4880 section 12.2 for version 4
keys: SHA-1 of 0x99, the two-octet length and the public-key packet's body; RFC 9580 for
version 6: SHA-256 of 0x9B, a four-octet length and the body; version 5 as the LibrePGP draft
has it, with 0x9A), so neither the controller nor the host needs gpg. It is the fingerprint
``gpg --show-keys --with-colons`` prints on its ``fpr`` line.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re

BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
END = "-----END PGP PUBLIC KEY BLOCK-----"
PUBLIC_KEY = 6  # packet tag of a primary public key (14 is a subkey, which the primary certifies)


class SigningKeyError(ValueError):
    """A key file that cannot be read as an armored OpenPGP public key."""


def _dearmor(text):
    """The binary packets of every armored public key block in ``text``."""
    blocks = []
    lines = iter(str(text or "").splitlines())
    for line in lines:
        if line.strip() != BEGIN:
            continue
        # Armor headers (Version:, Comment:) end at the first blank line.
        for header in lines:
            if not header.strip():
                break
        data = []
        for body in lines:
            body = body.strip()
            if body == END or (body.startswith("=") and len(body) == 5):
                break
            data.append(body)
        try:
            blocks.append(base64.b64decode("".join(data), validate=True))
        except (binascii.Error, ValueError) as exc:
            raise SigningKeyError("the armored key block is not base64") from exc
    return blocks


def _packets(data):
    """(tag, body) of each OpenPGP packet in ``data`` (old and new packet formats)."""
    pos = 0
    while pos < len(data):
        ctb = data[pos]
        pos += 1
        if not ctb & 0x80:
            raise SigningKeyError("byte %d is not an OpenPGP packet header" % (pos - 1))
        if ctb & 0x40:  # new format
            tag = ctb & 0x3F
            first = data[pos] if pos < len(data) else 0
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(data[pos + 1:pos + 5], "big"), pos + 5
            else:
                raise SigningKeyError("a partial-length packet, which a key file does not have")
        else:  # old format
            tag, kind = (ctb >> 2) & 0x0F, ctb & 0x03
            if kind == 3:
                length = len(data) - pos
            else:
                size = (1, 2, 4)[kind]
                length, pos = int.from_bytes(data[pos:pos + size], "big"), pos + size
        if pos + length > len(data):
            raise SigningKeyError("a packet runs past the end of the key")
        yield tag, data[pos:pos + length]
        pos += length


def _fingerprint(body):
    version = body[0] if body else 0
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version in (5, 6):
        prefix = b"\x9a" if version == 5 else b"\x9b"
        return hashlib.sha256(prefix + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise SigningKeyError("a version %d public key, which apt does not accept" % version)


def key_fingerprints(armored):
    """The fingerprints (upper-case hex) of the primary public keys in an armored key file."""
    found = []
    for block in _dearmor(armored):
        found.extend(_fingerprint(body) for tag, body in _packets(block) if tag == PUBLIC_KEY)
    return found


def normalize(fingerprint):
    """A fingerprint as written anywhere (spaces, 0x, lower case) -> upper-case hex."""
    text = re.sub(r"\s+", "", str(fingerprint or "")).upper()
    return text[2:] if text.startswith("0X") else text


def signing_key_check(armored, pinned, url, variable="container_toolkit_repository_key_fingerprints"):
    """``{"ok", "fingerprints", "msg"}``: ``ok`` when the file holds public keys and every primary
    key's fingerprint is in ``pinned``; ``msg`` says what is wrong and how to fix it."""
    wanted = [normalize(item) for item in (pinned or [])]
    bad = [item for item in wanted if not re.match(r"^([0-9A-F]{40}|[0-9A-F]{64})$", item)]
    if not wanted or bad:
        return {"ok": False, "fingerprints": [],
                "msg": "%s must list the full fingerprints (40 or 64 hex digits) of the keys the repository is "
                       "signed with; %s" % (variable, "it is empty" if not wanted else "not one: %s" % ", ".join(bad))}
    try:
        found = key_fingerprints(armored)
    except SigningKeyError as exc:
        return {"ok": False, "fingerprints": [], "msg": "%s is not a readable OpenPGP public key (%s); nothing was "
                                                        "trusted" % (url, exc)}
    if not found:
        return {"ok": False, "fingerprints": [], "msg": "%s holds no OpenPGP public key; nothing was trusted" % url}
    unknown = [item for item in found if item not in wanted]
    if unknown:
        return {"ok": False, "fingerprints": found,
                "msg": "%s serves a key with the fingerprint %s, which %s does not list (%s): refused before it "
                       "is trusted. If the repository rotated its key, check the new fingerprint from its "
                       "publisher's documentation and add it to %s."
                       % (url, ", ".join(unknown), variable, ", ".join(wanted), variable)}
    return {"ok": True, "fingerprints": found, "msg": "%s: %s pinned" % (url, ", ".join(found))}
