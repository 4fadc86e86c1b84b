# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What a secret looks like, and the one function a message quotes a value through.

A refusal names the variable and the problem; where it must quote a value (a wrong choice, a
wrong type), ``quoted`` shows it with every secret-shaped part masked by ``scrub``, whatever name
the value was put under (issue 25, finding 5). Standard library only and nothing from the
collection, so modules, module_utils and plugin_utils can all use it.

Each shape also matches a prefix of its secret (8 characters or more after the prefix), since a
message may cut a value short; the part kept (``sk-``, ``ghp_``, a URL's user) says what it was.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "<redacted>"

# Where a token may start: not right after a letter or digit (inside a word such as "task-"),
# except after a repr escape (a "\n" before it leaves a backslash and a letter there).
_LEAD = r"(?:(?<![A-Za-z0-9])|(?<=\\[abfnrtv0])|(?<=\\x[0-9a-f]{2}))"
# Prefix-kept shapes: (prefix pattern, body). The body's characters are the token's alphabet.
_PREFIXED = (
    # Hugging Face user access token (hf_ + 34): a capital or a digit in it, so that a word such as
    # hf_overrides or hf_config_path is not one; no lead check (a flag name may glue it on).
    (r"hf_(?=[a-z]*[A-Z0-9])", r"[A-Za-z0-9]{8,}"),
    # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-) API keys.
    (_LEAD + r"sk-(?:proj-|ant-|svcacct-|admin-)?", r"[A-Za-z0-9_-]{8,}"),
    # GitHub tokens: personal (ghp_), OAuth (gho_), app (ghs_, ghu_), refresh (ghr_), fine-grained.
    (_LEAD + r"(?:gh[opsur]_|github_pat_)", r"[A-Za-z0-9_]{8,}"),
    # GitLab personal access token.
    (_LEAD + r"glpat-", r"[A-Za-z0-9_-]{8,}"),
    # Slack bot, user, app, refresh and legacy tokens.
    (_LEAD + r"xox[abprs]-", r"[A-Za-z0-9-]{8,}"),
    # AWS access key ids: long-term (AKIA) and temporary (ASIA), then 16 capitals/digits.
    (_LEAD + r"(?:AKIA|ASIA)", r"[A-Z0-9]{8,}"),
    # An HTTP Authorization value.
    (_LEAD + r"(?i:bearer)\s+", r"[A-Za-z0-9._~+/=-]{8,}"),
)
_PREFIXED_RE = re.compile("|".join("(%s)%s" % shape for shape in _PREFIXED))
# A JSON Web Token: base64url header and payload, both JSON objects ("eyJ" is '{"').
_JWT_RE = re.compile(_LEAD + r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?")
# URL credentials: scheme://user:password@ (the password masked, the user kept).
_URL_PASSWORD_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]*):[^\s@'\"]+@")
# A Hugging Face token as the secret checks detect it in a value (whole: hf_ and 30+ letters/digits).
HF_TOKEN_VALUE_RE = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")


def scrub(text):
    """``text`` with every secret-shaped part masked: Hugging Face ``hf_...``, OpenAI/Anthropic
    ``sk-...``, GitHub ``ghp_``/``gho_``/``ghs_``/``github_pat_...``, GitLab ``glpat-...``, Slack
    ``xox?-...``, AWS ``AKIA``/``ASIA`` key ids, ``Bearer <token>``, JWTs and the password of a
    ``scheme://user:password@`` URL. The prefix stays, so a message still says what it was."""
    text = str(text)
    text = _URL_PASSWORD_RE.sub(lambda m: "%s:%s@" % (m.group(1), MASK), text)
    text = _PREFIXED_RE.sub(lambda m: next(g for g in m.groups() if g is not None) + MASK, text)
    return _JWT_RE.sub("eyJ" + MASK, text)


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
