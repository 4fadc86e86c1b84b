# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The model's weights as a pinned artifact: which revision, and how the engine is told.

A profile's ``revision`` is the 40-hex commit of ``model`` on the Hugging Face Hub;
``draft_revision`` the commit of a separate draft model (vLLM ``speculative_config.model``,
SGLang ``--speculative-draft-model-path``). This module is the one home for:

* the revision grammar (``revision_problem``: a full commit, a moving branch/tag name, or
  malformed), used by the lint;
* the engine flags that carry a revision (``revision_args``): every component the engine loads
  from the Hub must name the commit, because a staged cache holds ``snapshots/<commit>`` and no
  ``refs/main`` (``hf download --revision <commit>`` writes no ref), and with
  ``HF_HUB_OFFLINE=1`` an unpinned component resolves ``main`` and fails. Which flags exist is
  read from the engine catalog of the image's release;
* what the deployment plan records (``weights``).
"""
from __future__ import annotations

import json
import re

from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import quoted
from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils._engines import arg_value, find_arg, flag_key

COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# A git ref name as the Hub accepts it for a branch or tag (git check-ref-format, simplified):
# no space, control character, ~ ^ : ? * [ \, no "..", no "@{", not ending in "/" or ".lock".
_REF_BAD_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|/$|\.lock$|^/|//")
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")
OFFLINE_ENV = "HF_HUB_OFFLINE"


def revision_problem(revision):
    """``None`` for a full 40-hex commit; ``("warning", why)`` for a branch or tag name (it moves);
    ``("error", why)`` for anything the Hub cannot resolve to one commit."""
    if isinstance(revision, bool) or not isinstance(revision, str):
        return ("error", "got %s (a %s); expected the 40-hex commit id as a string (quote it in YAML)"
                % (quoted(revision, limit=None), type(revision).__name__))
    if COMMIT_RE.match(revision):
        return None
    if not revision:
        return ("error", "is empty; expected the 40-hex commit id")
    if _HEX_RE.match(revision) and len(revision) == 40:
        return ("error", "%r has uppercase hex digits; the Hub's commit ids are lowercase" % revision)
    if _HEX_RE.match(revision) and 7 <= len(revision) < 40:
        return ("error", "%r looks like an abbreviated commit; the Hub resolves only the full 40-hex id" % revision)
    if _REF_BAD_RE.search(revision):
        return ("error", "%s is neither a commit id nor a valid branch or tag name" % quoted(revision, limit=None))
    return ("warning", "%s is a branch or tag name: it moves when the repository gets a new commit, so two hosts "
                       "deployed a week apart may load different weights" % quoted(revision, limit=None))


def _release(profile):
    """The catalog release the profile's image is judged against, or None when unknown."""
    engine = profile.get("engine")
    version = (profile.get("image") or {}).get("engine_version")
    if engine not in catalog.ENGINES or not version:
        return None
    try:
        return catalog.nearest_release(engine, version)[0]
    except catalog.CatalogError:
        return None


def _has(release, flag):
    """Whether the release has ``--flag`` (unknown release: only ``--revision``, which every one has)."""
    if release is None:
        return flag == "revision"
    return "--" + flag in release.strings


def draft_model(profile):
    """``(draft model id, separate)``: the model the speculative drafter loads, and whether it is
    another repository than ``model`` (None when the profile does not speculate from a model)."""
    engine, args, model = profile.get("engine"), profile.get("args") or {}, profile.get("model")
    if engine == "vllm":
        from ansible_collections.inferops.serving.plugins.plugin_utils._engines import speculative_config
        try:
            config = speculative_config(args)
        except (ValueError, TypeError, AttributeError):
            return None, False  # the lint reports a speculative config it cannot read
        if not config or config.get("method") in ("ngram", "[ngram]", "ngram_gpu", "suffix"):
            return None, False
        draft = config.get("model")
        if draft in (None, model):
            return (model, False) if config.get("method") else (None, False)
        return draft, True
    if engine == "sglang":
        algorithm = arg_value(engine, args, ("speculative-algorithm",))
        if algorithm in (None, True) or str(algorithm).upper() == "NGRAM":
            return None, False
        draft = arg_value(engine, args, ("speculative-draft-model-path",))
        if draft in (None, True, model):
            return model, False
        return str(draft), True
    return None, False


def weights(profile):
    """What the plan records about the weights: ``{model, revision, pinned, draft}``."""
    draft, separate = draft_model(profile)
    revision = profile.get("revision")
    return {
        "model": profile.get("model"),
        "revision": revision,
        "pinned": isinstance(revision, str) and bool(COMMIT_RE.match(revision)),
        "draft": ({"model": draft, "revision": profile.get("draft_revision") if separate else revision,
                   "separate": separate} if draft else None),
    }


def revision_args(profile):
    """The profile's ``args`` with the revision flags the engine needs, in front of its own flags.

    Nothing is added without ``revision``, so an unpinned profile renders the same argv as before.
    A flag the profile sets itself is left as it is (the lint reports a contradiction).
    vLLM: ``--revision``, ``--tokenizer-revision`` (unless ``--tokenizer`` names another repo),
    ``--code-revision`` (the code of ``trust-remote-code``), and ``speculative_config.revision``
    for the drafter (vllm/config/speculative.py builds the draft ModelConfig with
    ``revision=self.revision``, None meaning ``main``, also for MTP, whose draft model is the
    target). SGLang: ``--revision`` and, when it speculates, ``--speculative-draft-model-revision``
    (sglang/srt/server_args.py sets a None draft revision to ``main``).
    """
    args = dict(profile.get("args") or {})
    revision = profile.get("revision")
    if not revision:
        return args
    engine = profile.get("engine")
    release = _release(profile)
    added = {}

    def add(flag, value):
        if value and _has(release, flag) and find_arg(engine, args, (flag,)) is None:
            added[flag] = value

    add("revision", revision)
    draft, separate = draft_model(profile)
    draft_revision = profile.get("draft_revision") if separate else revision
    if engine == "vllm":
        if find_arg(engine, args, ("tokenizer",)) is None:
            add("tokenizer-revision", revision)
        add("code-revision", revision)
        if draft and draft_revision:
            args = _vllm_speculative_revision(args, draft_revision, release)
    elif engine == "sglang" and draft:
        add("speculative-draft-model-revision", draft_revision)
    added.update(args)
    return added


def _vllm_speculative_revision(args, revision, release):
    """``args`` with ``revision`` in vLLM's speculative config (the JSON value or a dotted key)."""
    if release is not None and "revision" not in release.speculative_keys:
        return args
    result = {}
    placed = any(flag_key("vllm", flag) == "speculative-config.revision" for flag in args)
    for flag, value in args.items():
        if not placed and flag_key("vllm", flag) == "speculative-config" and value not in (None, False):
            try:
                config = json.loads(value) if isinstance(value, str) else dict(value)
            except (ValueError, TypeError):
                config = None  # the lint reports it (vllm-speculative-config-key)
            if isinstance(config, dict):
                config.setdefault("revision", revision)
                value, placed = config, True
        result[flag] = value
    return result


def offline(profile, option=None):
    """Whether the container runs with ``HF_HUB_OFFLINE=1``: the option when set, else when the
    profile pins its model to a commit (staged and verified before the start)."""
    if option is not None:
        return bool(option)
    return weights(profile)["pinned"]


def apply_model_lock(profile, lock, error=ValueError):
    """The profile with its model's revision from the lock's ``models`` entry, if any.

    ``lock``: ``{models: {"<model id>": {"revision": <40-hex>, "manifest_sha256": <hex>}}}``; the
    revision replaces the profile's (the lock is what a canary validated). A malformed entry is
    refused naming the lock key.
    """
    entry = ((lock or {}).get("models") or {}).get(profile.get("model"))
    if not entry:
        return profile
    if not isinstance(entry, dict) or not isinstance(entry.get("revision"), str) \
            or not COMMIT_RE.match(entry["revision"]):
        raise error("lock entry models[%r] needs a revision: the 40-hex commit id (got %s)"
                    % (profile.get("model"), quoted(entry if not isinstance(entry, dict) else entry.get("revision"),
                                                    limit=None)))
    pinned = dict(profile, revision=entry["revision"])
    return pinned


# ---------------------------------------------------------------------------------------------
# Lint rules (registered in _profile_lint.RULES): each a function of the lint context
# ---------------------------------------------------------------------------------------------
def _revision_fields(profile):
    """``(field, revision, model)`` for the model and, when it is another repository, the draft."""
    fields = [("revision", profile.get("revision"), profile.get("model"))]
    draft, separate = draft_model(profile)
    if separate:
        fields.append(("draft_revision", profile.get("draft_revision"), draft))
    return fields


def check_revision_malformed(ctx):
    for field, revision, model in _revision_fields(ctx.profile):
        problem = revision_problem(revision) if revision is not None else None
        if problem and problem[0] == "error":
            yield ("%s of %s %s; copy the full commit id from the Hub (`hf api` or the model page's "
                   "History) and pin it" % (field, model, problem[1]))


def check_revision_branch(ctx):
    for field, revision, model in _revision_fields(ctx.profile):
        problem = revision_problem(revision) if revision is not None else None
        if problem and problem[0] == "warning":
            yield ("%s of %s: %s; pin the 40-hex commit it points to" % (field, model, problem[1]))


def check_revision_missing(ctx):
    for field, revision, model in _revision_fields(ctx.profile):
        if revision is None and model:
            yield ("%s of %s is not set: the engine downloads whatever the repository's head is at its first "
                   "start; set %s to the 40-hex commit validated for this profile" % (field, model, field))


def check_revision_in_args(ctx):
    flags = ("revision", "tokenizer-revision", "code-revision", "speculative-draft-model-revision")
    for entry in ctx.args:
        if flag_key(ctx.engine, entry.flag) in flags and entry.value not in (None, False):
            yield ("%s: the revision flags are rendered from the profile's revision/draft_revision; remove "
                   "args.%s and set revision (or draft_revision) instead" % (entry.written, entry.flag))
