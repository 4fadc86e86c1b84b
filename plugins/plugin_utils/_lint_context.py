# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What the profile lint's rules look at: one :class:`Arg` per flag as the engine parses it, and the
:class:`LintContext` of a profile (engine, release, flags, env, overrides, hardware). The rules are in
``_profile_lint``."""
from __future__ import annotations

import json
import re

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    apply_overrides,
    flag_key,
)

SEVERITIES = ("error", "warning")
SPECULATIVE_ALGORITHMS_WITH_DRAFT_MODEL = ("EAGLE", "EAGLE3", "NEXTN", "MTP")
NVFP4_QUANTIZATIONS = ("modelopt_fp4", "modelopt_mixed", "nvfp4")
_NEMOTRON_H_RE = re.compile(r"nemotron[-_ ]?(?:3|h\b|h[-_])", re.IGNORECASE)
_OVERRIDE_NOTE = " (set by the inventory override %s)"


# ---------------------------------------------------------------------------------------------
# What the rules look at
# ---------------------------------------------------------------------------------------------
class Arg:
    """One ``args`` entry as the engine's parser (of the catalog release) will read it."""

    __slots__ = ("flag", "value", "resolved", "canonical", "spec", "negated", "subkey", "form", "from_override",
                 "respelt")

    def __init__(self, rel, flag, value, from_override):
        self.flag = str(flag).lstrip("-")
        self.value = value
        self.from_override = from_override
        resolved = catalog.resolve(rel, self.flag) if rel is not None else None
        self.respelt = rel is not None and rel.engine == "sglang" and resolved["canonical"] is None and "_" in self.flag
        if self.respelt:
            # The hyphenated spelling, so rules still see what was meant; sglang-flag-underscore
            # reports the spelling itself when the hyphenated one is a flag, flag-unknown otherwise.
            resolved = catalog.resolve(rel, self.meant)
        self.resolved = resolved or {"canonical": None, "form": "unknown", "entry": None, "subkey": None}
        known = self.resolved["form"] in ("flag", "alias", "negation", "abbreviation")
        self.canonical = self.resolved["canonical"] if known else None
        self.spec = self.resolved["entry"] if known else None
        self.negated = catalog.is_negation(self.resolved) if known else False
        self.subkey = self.resolved["subkey"]
        self.form = self.resolved["form"]

    @property
    def meant(self):
        """The flag as it was resolved: an SGLang ``_`` spelling that is no flag, with ``-`` (respelt)."""
        return self.flag.replace("_", "-") if self.respelt else self.flag

    @property
    def written(self):
        """The flag as the profile writes it, with where it came from when that was an override."""
        text = "--" + self.flag
        if self.from_override:
            text += _OVERRIDE_NOTE % ("args." + self.flag)
        return text

    @property
    def state(self):
        """True/False when the flag is explicitly on/off on the command line, None when absent.

        ``flag: false`` renders nothing (see _profile.render_args), so it is *absent*, not off.
        """
        if self.value is None or self.value is False:
            return None
        return not self.negated


class LintContext:
    """A profile with its overrides applied, and the facts every rule needs, computed once."""

    def __init__(self, profile, overrides=None, known_bad=None):
        overrides = overrides or {}
        self.profile = apply_overrides(profile, overrides) if overrides else profile
        self.name = self.profile.get("name", "(unnamed)")
        self.engine = self.profile.get("engine")
        self.image = self.profile.get("image") or {}
        self.hardware = self.profile.get("hardware") or {}
        self.model = str(self.profile.get("model") or "")
        self.env = {str(k): v for k, v in (self.profile.get("env") or {}).items() if v is not None}
        self.known_bad = list(known_bad or [])
        self.version, self.version_error = None, None
        try:
            self.version = catalog.parse_version(self.image.get("engine_version"))
        except catalog.CatalogError as exc:
            self.version_error = str(exc)
        # The catalog release the engine version is judged against, and whether it is that very release.
        self.release, self.exact, self.upper = None, False, None
        if self.engine in catalog.ENGINES and self.version is not None:
            self.release, self.exact = catalog.nearest_release(self.engine, self.version)
            if not self.exact and catalog.parse_version(self.release.version) < self.version:
                # A version between two stored releases (a nightly): the release above brackets it.
                self.upper = catalog.next_release(self.engine, self.version)
        override_args = {flag_key(self.engine, k) for k in (overrides.get("args") or {})}
        self.args = [Arg(self.release, flag, value, flag_key(self.engine, flag) in override_args)
                     for flag, value in (self.profile.get("args") or {}).items()]
        self.env_from_override = set((overrides.get("env") or {}).keys())
        self.image_from_override = set((overrides.get("image") or {}).keys())

    @property
    def engine_label(self):
        return "%s %s" % ({"vllm": "vLLM", "sglang": "SGLang"}.get(self.engine, self.engine), self.version)

    @property
    def checkable(self):
        """Whether the engine and its version are known, so version-aware rules can run."""
        return self.release is not None

    def lacks(self, message, upper_has=False):
        """A finding about something the catalog release lacks.

        An error when the data has the image's version exactly, or when the version lies between
        two stored releases that both lack it (``upper_has`` false: a nightly of 0.19.2 lacks what
        0.19.1 and 0.20.0 lack); otherwise a warning that names the release it was judged against.
        """
        if self.exact:
            return message
        if self.upper is not None and not upper_has:
            return "%s (nor has %s: the image's %s lies between the two)" % (message, self.upper.label, self.version)
        return ("warning", "%s (judged against %s, the nearest release the catalog has at or below %s; "
                           "check `--help` of the image)" % (message, self.release.label, self.version))

    def upper_flag(self, canonical_or_option):
        """The entry of a flag in the bracketing release above, or None."""
        if self.upper is None:
            return None
        found = self.upper.strings.get(canonical_or_option if canonical_or_option.startswith("-")
                                       else "--" + canonical_or_option)
        return self.upper.flags[found[0]] if found else None

    def arg(self, canonical):
        """The last whole-flag entry for ``canonical`` (not a dotted sub-key), or None."""
        # By any long spelling: releases differ in which one is first (SGLang 0.5.13 --tensor-parallel-size,
        # 0.5.23 --tp-size).
        found = [a for a in self.args if a.subkey is None and a.canonical is not None
                 and (a.canonical == canonical or "--" + canonical in a.spec["aliases"])]
        return found[-1] if found else None

    def value(self, canonical, default=None):
        """The normalised value of a valued flag, or ``default``."""
        entry = self.arg(canonical)
        if entry is None or entry.state is None or entry.value is True:
            return default
        return catalog.normalise_value(entry.spec, entry.value)

    @property
    def compute_capability(self):
        text = str(self.hardware.get("compute_capability") or "")
        match = re.match(r"^\s*(\d+)\.(\d+)", text)
        return (int(match.group(1)), int(match.group(2))) if match else None

    @property
    def sm_label(self):
        capability = self.compute_capability
        return "sm_%d%d (compute capability %d.%d)" % (capability * 2) if capability else "unknown"

    @property
    def is_sm12x(self):
        capability = self.compute_capability
        return bool(capability) and capability[0] == 12

    @property
    def is_nemotron_h(self):
        return bool(_NEMOTRON_H_RE.search(self.model))

    @property
    def is_fp8_model(self):
        return bool(re.search(r"(?<![a-z0-9])fp8(?![a-z0-9])", self.model.lower()))

    @property
    def is_nvfp4(self):
        return "nvfp4" in self.model.lower() or (self.value("quantization") or "").lower() in NVFP4_QUANTIZATIONS

    def speculative_config(self):
        """vLLM's speculative config as the engine merges it: JSON, dotted keys, ``--spec-*``."""
        config, problems = {}, []
        for entry in self.args:
            if entry.canonical == "speculative-config" and entry.state:
                if entry.subkey:
                    config[entry.subkey] = entry.value
                    continue
                value = entry.value
                if isinstance(value, str):
                    try:
                        value = json.loads(value)
                    except ValueError as exc:
                        problems.append("%s is not valid JSON (%s)" % (entry.written, exc))
                        continue
                if isinstance(value, dict):
                    config.update(value)
                else:
                    problems.append("%s must be a mapping (JSON object), not %r" % (entry.written, value))
        for flag, key in (("spec-method", "method"), ("spec-model", "model"),
                          ("spec-tokens", "num_speculative_tokens")):
            if self.arg(flag) is not None and self.value(flag) is not None:
                config.setdefault(key, self.arg(flag).value)
        return config, problems

    @property
    def is_vllm_mtp(self):
        if self.engine != "vllm":
            return False
        method = str(self.speculative_config()[0].get("method") or "").lower()
        return method == "mtp" or method.endswith("_mtp")

    @property
    def sglang_speculative_algorithm(self):
        if self.engine != "sglang":
            return None
        algorithm = str(self.value("speculative-algorithm") or "").upper()
        return algorithm if algorithm in SPECULATIVE_ALGORITHMS_WITH_DRAFT_MODEL else None

    @property
    def is_burst_profile(self):
        measured = self.profile.get("measured") or {}
        text = " ".join([str(self.profile.get("description") or "")] + [str(k) for k in measured])
        return "burst" in text.lower()


def _at_least(ctx, first):
    return catalog.version_in(ctx.version, first)
