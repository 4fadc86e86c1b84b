# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What a secret looks like, and the one function a message quotes a value through.

A refusal names the variable and the problem; where it must quote a value (a wrong choice, a
wrong type), ``quoted`` shows it with every secret-shaped part masked by ``scrub``, whatever name
the value was put under (issue 25, finding 5). ``secret_kind`` says which shape a value holds, so
a secret put in the wrong place is refused before anything quotes or writes it. Standard library
only and nothing from the collection, so modules, module_utils and plugin_utils can all use it.

``scrub`` masks a prefix of a secret too (8 characters or more after the prefix), since a message
may cut a value short; the part kept (``sk-``, ``ghp_``, a URL's user) says what it was.
``secret_kind`` wants the whole token at its real length, not glued to a letter or digit on
either side, so an ordinary value with a secret's prefix (``sk-model``) is not one.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "<redacted>"

# Where a token may start: not right after a letter or digit (inside a word such as "task-"),
# except after a repr escape (a "\n" before it leaves a backslash and a letter there).
_LEAD = r"(?:(?<![A-Za-z0-9])|(?<=\\[abfnrtv0])|(?<=\\x[0-9a-f]{2}))"
# Where a whole token ends: not before a letter, digit or underscore.
_END = r"(?![A-Za-z0-9_])"
HF_TOKEN_KIND = "a Hugging Face token (hf_...)"
# Prefix-kept shapes: (kind, prefix, alphabet of the rest, its length in a whole token (least,
# most or None), whether the prefix needs the lead check, whether the rest must look generated).
# A prefix an ordinary word can start with (sk-) needs a generated-looking rest: a run of 16 or
# more letters and digits mixing both, as every issued key has and a model name does not.
_PREFIXED = (
    # Hugging Face user access token (hf_ + 34): a capital or a digit in it, so that a word such as
    # hf_overrides or hf_config_path is not one; scrub checks no lead (a flag name may glue it on).
    (HF_TOKEN_KIND, r"hf_(?=[a-z]*[A-Z0-9])", "A-Za-z0-9", (30, None), False, False),
    # OpenAI (sk- + 48, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-api03- + 95) API keys.
    ("an OpenAI or Anthropic API key (sk-...)", r"sk-(?:proj-|ant-|svcacct-|admin-)?", "A-Za-z0-9_-", (20, None),
     True, True),
    # GitHub tokens: personal (ghp_), OAuth (gho_), app (ghs_, ghu_), refresh (ghr_): + 36;
    # fine-grained (github_pat_ + 82).
    ("a GitHub token (ghp_..., github_pat_...)", r"(?:gh[opsur]_|github_pat_)", "A-Za-z0-9_", (30, None), True,
     False),
    # GitLab personal access token (glpat- + 20, longer in newer releases).
    ("a GitLab access token (glpat-...)", r"glpat-", "A-Za-z0-9_-", (20, None), True, False),
    # Slack bot, user, app, refresh and legacy tokens.
    ("a Slack token (xox?-...)", r"xox[abprs]-", "A-Za-z0-9-", (20, None), True, False),
    # Stripe secret and restricted keys, live and test (sk_live_, rk_test_, ... + 24 or more).
    ("a Stripe API key (sk_live_..., rk_live_...)", r"[sr]k_(?:live|test)_", "A-Za-z0-9", (24, None), True,
     False),
    # AWS access key ids: long-term (AKIA) and temporary (ASIA), then exactly 16 capitals/digits.
    ("an AWS access key id (AKIA..., ASIA...)", r"(?:AKIA|ASIA)", "A-Z0-9", (16, 16), True, False),
    # An HTTP Authorization value.
    ("a bearer token (Bearer ...)", r"(?i:bearer)\s+", "A-Za-z0-9._~+/=-", (16, None), True, False),
)
_PREFIXED_RE = re.compile("|".join("(%s%s)[%s]{8,}" % (_LEAD if lead else "", prefix, alphabet)
                                   for _kind, prefix, alphabet, _length, lead, _generated in _PREFIXED))
_WHOLE_PREFIXED = tuple(
    (kind, re.compile(r"%s(?:%s)([%s]{%d,%s})%s" % (_LEAD, prefix, alphabet, least, "" if most is None else most, _END)),
     generated)
    for kind, prefix, alphabet, (least, most), _lead, generated in _PREFIXED)
# A generated key's run: 16 or more letters and digits, with at least one of each.
_GENERATED_RUN_RE = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[A-Za-z0-9]{16,}")
# A JSON Web Token: base64url header and payload, both JSON objects ("eyJ" is '{"').
_JWT_RE = re.compile(_LEAD + r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?")
_WHOLE_JWT_RE = re.compile(_LEAD + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _END)
JWT_KIND = "a JSON Web Token (eyJ...)"
# URL credentials: scheme://user:password@ (the password masked, the user kept).
_URL_PASSWORD_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]*):[^\s@'\"]+@")
# As a whole: the userinfo ends at the first @ before any /, ? or # (RFC 3986), so a URL whose path
# holds a colon and an @ (http://host:8000/a@b) has no password.
_WHOLE_URL_PASSWORD_RE = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#:@'\"]*:[^\s/?#@'\"]+@")
# (No "://" in the kind: a message naming it goes through scrub too.)
URL_PASSWORD_KIND = "a password in a URL (its user:password@ part)"


def scrub(text):
    """``text`` with every secret-shaped part masked: Hugging Face ``hf_...``, OpenAI/Anthropic
    ``sk-...``, GitHub ``ghp_``/``gho_``/``ghs_``/``github_pat_...``, GitLab ``glpat-...``, Slack
    ``xox?-...``, Stripe ``sk_live_``/``rk_live_...``, AWS ``AKIA``/``ASIA`` key ids, ``Bearer <token>``, JWTs and the password of a
    ``scheme://user:password@`` URL. The prefix stays, so a message still says what it was."""
    text = str(text)
    text = _URL_PASSWORD_RE.sub(lambda m: "%s:%s@" % (m.group(1), MASK), text)
    text = _PREFIXED_RE.sub(lambda m: next(g for g in m.groups() if g is not None) + MASK, text)
    return _JWT_RE.sub("eyJ" + MASK, text)


def secret_kind(text):
    """Which secret ``text`` holds somewhere, as a message names it (``"a GitHub token
    (ghp_..., github_pat_...)"``), or None: a whole token of one of ``scrub``'s shapes at its real
    length, or a URL with a password. Everything it finds, ``scrub`` masks."""
    text = str(text)
    for kind, pattern, generated in _WHOLE_PREFIXED:
        for match in pattern.finditer(text):
            if not generated or _GENERATED_RUN_RE.search(match.group(1)):
                return kind
    if _WHOLE_JWT_RE.search(text):
        return JWT_KIND
    if _WHOLE_URL_PASSWORD_RE.search(text):
        return URL_PASSWORD_KIND
    return None


def quoted(value, limit=60):
    """``value`` as a message quotes it: ``repr`` of the scrubbed value (of each string in a list or
    mapping), cut to ``limit`` characters after the scrub, so no cut leaves a secret unmasked."""
    text = repr(_scrubbed(value))
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return text


def _scrubbed(value):
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {_scrubbed(str(k)): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v) for v in value]
    return value
