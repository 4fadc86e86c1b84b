# SPDX-License-Identifier: GPL-3.0-or-later
"""The apt signing key's fingerprint, read from its OpenPGP packets, against the pinned ones
(issue 25, finding 4). Keys: tests/unit/fixtures/apt_keys (README there: made with GnuPG 2.2.40;
the fingerprints are the ones gpg --show-keys printed)."""
from __future__ import annotations

import base64
import os

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils._apt_key import (
    key_fingerprints,
    normalize,
    signing_key_check,
)

KEYS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures", "apt_keys")
RSA = "17DDAEA3730200EE6D74DAC254F8DF621D8524E5"
ED25519 = "B6791E851FF56D7A219D483374840AED11EA37A6"
URL = "https://nvidia.github.io/libnvidia-container/gpgkey"


def key(name):
    with open(os.path.join(KEYS, name), encoding="ascii") as handle:
        return handle.read()


@pytest.mark.parametrize("name,expected", [("rsa2048.asc", [RSA]), ("ed25519.asc", [ED25519]),
                                           ("both.asc", [RSA, ED25519])])
def test_fingerprints_are_gpgs(name, expected):
    assert key_fingerprints(key(name)) == expected


def test_a_new_format_packet_header_reads_the_same():
    # GnuPG writes old-format headers; RFC 9580 writers use the new format (0xC6 for tag 6).
    text = key("ed25519.asc")
    body = "".join(line for line in text.splitlines()[2:] if line and not line.startswith(("=", "-")))
    data = bytearray(base64.b64decode(body))
    assert data[0] == 0x98  # old format, tag 6, one-octet length
    data[0] = 0xC6
    armored = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n%s\n-----END PGP PUBLIC KEY BLOCK-----\n" % (
        base64.b64encode(bytes(data)).decode())
    assert key_fingerprints(armored) == [ED25519]


def test_the_pinned_key_passes_however_its_fingerprint_is_written():
    spaced = " ".join(ED25519[i:i + 4] for i in range(0, 40, 4)).lower()
    assert normalize("0x" + ED25519.lower()) == ED25519
    check = signing_key_check(key("ed25519.asc"), [spaced], URL)
    assert check == {"ok": True, "fingerprints": [ED25519], "msg": "%s: %s pinned" % (URL, ED25519)}


def test_another_key_is_refused_naming_both_and_the_fix():
    check = signing_key_check(key("both.asc"), [ED25519], URL)
    assert not check["ok"]
    assert check["msg"] == (
        "%s serves a key with the fingerprint %s, which container_toolkit_repository_key_fingerprints does not list "
        "(%s): refused before it is trusted. If the repository rotated its key, check the new fingerprint from its "
        "publisher's documentation and add it to container_toolkit_repository_key_fingerprints." % (URL, RSA, ED25519))


@pytest.mark.parametrize("text,problem", [
    ("<html>502 Bad Gateway</html>", "holds no OpenPGP public key"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot base64 !!\n-----END PGP PUBLIC KEY BLOCK-----\n",
     "is not a readable OpenPGP public key"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n",
     "is not a readable OpenPGP public key"),
])
def test_what_is_not_a_key_is_refused(text, problem):
    check = signing_key_check(text, [ED25519], URL)
    assert not check["ok"] and problem in check["msg"] and check["msg"].endswith("nothing was trusted")


@pytest.mark.parametrize("pinned", [[], ["F796ECB0"], ["not hex at all"]])
def test_the_pin_itself_must_be_full_fingerprints(pinned):
    check = signing_key_check(key("ed25519.asc"), pinned, URL)
    assert not check["ok"] and check["msg"].startswith("container_toolkit_repository_key_fingerprints must list "
                                                       "the full fingerprints")
