# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: signing_key_check
author: inferops.serving contributors (@inferops)
short_description: Whether a downloaded armored apt signing key is the one whose fingerprint is pinned
version_added: 0.1.0
description:
  - Computes the fingerprint of every primary public key in an ASCII-armored OpenPGP key file
    (as C(gpg --show-keys) prints it; no gpg needed) and checks each is in O(pinned).
  - Used by the container_toolkit role before it installs the NVIDIA repository's key, so a key
    with another fingerprint (another server, a proxy, a rotated key not yet reviewed) is refused
    before apt trusts it.
options:
  _input:
    description: The armored key file's text.
    type: str
    required: true
  pinned:
    description: The fingerprints trusted (40 or 64 hex digits; spaces and case do not matter).
    type: list
    elements: str
    required: true
  url:
    description: Where the key was downloaded from, for the message.
    type: str
    required: true
  variable:
    description: The variable that holds O(pinned), named in the message.
    type: str
    default: container_toolkit_repository_key_fingerprints
"""

EXAMPLES = r"""
- name: Refuse a signing key that is not the pinned one
  ansible.builtin.assert:
    that: key_check.ok
    fail_msg: "{{ key_check.msg }}"
  vars:
    key_check: >-
      {{ download.content | inferops.serving.signing_key_check(['C95B321B61E88C1809C4F759DDCAE044F796ECB0'],
         'https://nvidia.github.io/libnvidia-container/gpgkey') }}
"""

RETURN = r"""
_value:
  description: C(ok) (every primary key pinned), C(fingerprints) (those found), C(msg) (what is wrong and how to fix it).
  type: dict
"""


def _signing_key_check(armored, pinned, url, variable="container_toolkit_repository_key_fingerprints"):
    from ansible_collections.inferops.serving.plugins.plugin_utils._apt_key import signing_key_check
    return signing_key_check(armored, list(pinned or []), str(url), variable=str(variable))


class FilterModule:
    def filters(self):
        return {"signing_key_check": _signing_key_check}
