# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Which flags, flag values, env vars, speculative_config keys and metrics exist in which engine release.

The command-line facts are *data generated from each release's source*, not written by hand:
``engine_catalog/<engine>-<release>.json.gz``, written by ``scripts/engine-catalog`` (which
reads the released wheel's Python files with ``ast``; see its docstring for what it reads and
how it was validated against the real parsers). Stored: vLLM 0.17.0-0.33.0 and SGLang
0.5.1-0.5.23 (see :func:`releases`). An engine version the data has exactly (``0.19.0``) is
*covered completely*: a flag, value, speculative key or env var it lacks is an error. Any
other version (a nightly ``0.19.2rc1.dev134``, a post release) is judged against the nearest
stored release at or below it, and what that release lacks is only a warning.

What the data cannot say is written here by hand, each fact with its source (a field report, or the
engine file and line per release): which flag replaced a removed one, the env vars' values and
deprecation windows, vLLM's Nemotron reasoning parser name (SGLang's are argparse choices, in
the data), the unquantized MoE backends of the
MTP draft, and the version thresholds the lint rules use.

Version ranges are ``(first, last)``, both inclusive and both optional:

* ``first`` compares with full PEP 440 ordering, so a dev or rc build of the first release is
  still *before* it (``0.19.0rc1.dev5 < 0.19.0``): a nightly cut before the release may lack it.
* ``last`` compares on the release numbers only, so every build of that release (``0.5.19rc1``,
  ``0.5.19.post1``) still has it, and the next release (``0.5.20rc1`` included) does not.
"""
from __future__ import annotations

import difflib
import functools
import gzip
import json
import os
import re

ENGINES = ("vllm", "sglang")
CATALOG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine_catalog")
SOURCE = {"vllm": "vLLM's source per release (scripts/engine-catalog: vllm/engine/arg_utils.py, the "
                  "frontend's cli_args.py, vllm/config/*.py, vllm/envs.py)",
          "sglang": "SGLang's source per release (scripts/engine-catalog: sglang/srt/server_args.py, "
                    "sglang/srt/arg_groups/, sglang/srt/environ.py and the package's env reads)"}
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang"}


class CatalogError(ValueError):
    """A version string that cannot be ordered."""


_VERSION_RE = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))|-(?P<post_implicit>\d+))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


@functools.total_ordering
class EngineVersion:
    """An engine version ordered like PEP 440: ``0.19.2rc1.dev134 < 0.19.2rc1 < 0.19.2 < 0.19.2.post1``.

    The local part (``+gfe9c3d6c5``) is kept in ``text`` but does not take part in ordering.
    """

    __slots__ = ("text", "release", "pre", "post", "dev")

    def __init__(self, text):
        match = _VERSION_RE.match(str(text))
        if not match:
            raise CatalogError("cannot read %r as an engine version (expected e.g. 0.19.2rc1.dev134, 0.5.13, "
                               "0.5.6.post2)" % (text,))
        self.text = str(text).strip()
        self.release = tuple(int(part) for part in match.group("release").split("."))
        pre_l = match.group("pre_l")
        self.pre = (_PRE_RANK[pre_l.lower()], int(match.group("pre_n") or 0)) if pre_l else None
        post = match.group("post") if match.group("post") is not None else match.group("post_implicit")
        self.post = int(post or 0) if post is not None else None
        self.dev = int(match.group("dev") or 0) if match.group("dev") is not None else None

    def _key(self):
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
        elif self.pre is None:
            pre = (3, 0)  # a final release sorts after its pre-releases
        else:
            pre = self.pre
        post = -1 if self.post is None else self.post
        dev = (1, 0) if self.dev is None else (0, self.dev)
        return (tuple(release), pre, post, dev)

    def __eq__(self, other):
        if not isinstance(other, EngineVersion):
            other = parse_version(other)
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, EngineVersion):
            other = parse_version(other)
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "EngineVersion(%r)" % self.text

    def __str__(self):
        return self.text

    def release_at_most(self, last):
        """True when this version's release numbers are <= ``last``'s (any build of ``last`` counts)."""
        last = parse_version(last)
        width = len(last.release)
        mine = (self.release + (0,) * width)[:width]
        return mine <= last.release


def parse_version(text):
    """``text`` as an :class:`EngineVersion`; raises :class:`CatalogError` if it is not a version."""
    if isinstance(text, EngineVersion):
        return text
    if text is None or str(text).strip() == "":
        raise CatalogError("no engine version given")
    return EngineVersion(text)


def version_in(version, first=None, last=None):
    """Whether ``version`` lies in the inclusive range ``first`` .. ``last`` (see the module doc)."""
    version = parse_version(version)
    if first is not None and version < parse_version(first):
        return False
    if last is not None and not version.release_at_most(last):
        return False
    return True


def range_text(first=None, last=None):
    """A range as people write it: ``0.5.7-0.5.19``, ``>= 0.19.0``, ``<= 0.5.19``, ``all versions``."""
    if first and last:
        return "%s-%s" % (first, last)
    if first:
        return ">= %s" % first
    if last:
        return "<= %s" % last
    return "all catalogued versions"


def range_of(versions):
    """``first-last`` of the stored releases in ``versions`` (sorted), or None when empty."""
    versions = sorted(versions, key=parse_version)
    if not versions:
        return None
    return versions[0] if len(versions) == 1 else "%s-%s" % (versions[0], versions[-1])


# ---------------------------------------------------------------------------------------------
# The stored releases
# ---------------------------------------------------------------------------------------------
_FILE_RE = re.compile(r"^(?P<engine>vllm|sglang)-(?P<release>.+)\.json\.gz$")


@functools.lru_cache(maxsize=None)
def releases(engine):
    """The releases of ``engine`` the data covers, oldest first (version texts)."""
    found = []
    for filename in os.listdir(CATALOG_DIR):
        match = _FILE_RE.match(filename)
        if match and match.group("engine") == engine:
            found.append(match.group("release"))
    return tuple(sorted(found, key=parse_version))


class Release:
    """One stored release: its flags (by every option string), choices, speculative keys, env vars, metrics."""

    def __init__(self, data):
        self.engine = data["engine"]
        self.version = data["version"]
        self.flags = {name.lstrip("-"): entry for name, entry in data["flags"].items()}
        self.strings = {}  # "--x" / "-x" -> (canonical, form): form is flag, alias or negation
        for name, entry in data["flags"].items():
            canonical = name.lstrip("-")
            self.strings[name] = (canonical, "flag")
            for alias in entry["aliases"]:
                self.strings[alias] = (canonical, "alias")
            for negation in entry["negations"]:
                self.strings[negation] = (canonical, "negation")
        self.speculative_keys = frozenset(data["speculative_keys"])
        self.env = frozenset(data["env"])
        # {name as a query selects it: kind}: what the release exports on /metrics
        self.metrics = dict(data.get("metrics") or {})

    @property
    def label(self):
        return "%s %s" % (ENGINE_LABELS[self.engine], self.version)


@functools.lru_cache(maxsize=None)
def release(engine, version):
    """The :class:`Release` stored as ``engine``-``version`` (exactly as the file is named)."""
    path = os.path.join(CATALOG_DIR, "%s-%s.json.gz" % (engine, version))
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return Release(json.load(handle))


def all_releases(engine):
    """Every stored :class:`Release` of ``engine``, oldest first."""
    return [release(engine, version) for version in releases(engine)]


def nearest_release(engine, version):
    """``(Release, exact)``: the stored release for ``version``.

    ``exact`` when the data has that very release (``0.19`` is ``0.19.0``); otherwise the newest
    stored release at or below ``version`` (the oldest stored one below the range), not exact.
    A version between two stored releases (a nightly) is *bracketed*: see :func:`next_release`.
    """
    version = parse_version(version)
    stored = releases(engine)
    for text in stored:
        if parse_version(text) == version:
            return release(engine, text), True
    below = [text for text in stored if parse_version(text) <= version]
    return release(engine, below[-1] if below else stored[0]), False


def next_release(engine, version):
    """The oldest stored release above ``version``, or None (``version`` at or above the newest)."""
    version = parse_version(version)
    above = [text for text in releases(engine) if parse_version(text) > version]
    return release(engine, above[0]) if above else None


def covered_range(engine):
    """``(first, last)`` stored release of ``engine``."""
    stored = releases(engine)
    return stored[0], stored[-1]


def catalogued(engine, version):
    """Whether ``version`` lies within the stored releases (outside: the facts extrapolate)."""
    first, last = covered_range(engine)
    return version_in(version, first, last)


# ---------------------------------------------------------------------------------------------
# Flags as a profile writes them
# ---------------------------------------------------------------------------------------------
def flag_name(engine, flag):
    """The name a flag is spelt with on the command line, without dashes; vLLM folds ``_`` to ``-``.

    vLLM's FlexibleArgumentParser folds only the part before the first ``.``
    (``speculative_config.num_speculative_tokens`` -> ``speculative-config.num_speculative_tokens``);
    SGLang's plain argparse folds nothing.
    """
    name = str(flag).lstrip("-")
    if engine == "vllm":
        head, dot, tail = name.partition(".")
        return head.replace("_", "-") + dot + tail
    return name


def resolve(rel, flag):
    """How ``rel``'s parser reads the profile key ``flag`` (rendered ``--<flag>``).

    Returns ``{canonical, form, entry, subkey, abbreviates}`` or a dict with ``form`` one of
    ``unknown``, ``ambiguous`` (an abbreviation of several options: argparse refuses it) or
    ``short_only`` (the release has ``-<flag>``, a short option a profile cannot write). ``form``
    of a known flag: ``flag``, ``alias``, ``negation`` or ``abbreviation`` (argparse accepts a
    unique prefix of a long option; both engines leave ``allow_abbrev`` on).
    """
    name = flag_name(rel.engine, flag)
    head, _dot, subkey = name.partition(".") if rel.engine == "vllm" else (name, "", "")
    option = "--" + head
    found = rel.strings.get(option)
    result = {"canonical": None, "form": "unknown", "entry": None, "subkey": subkey or None, "abbreviates": None}
    if found is not None:
        canonical, form = found
        if subkey and not rel.flags[canonical].get("json"):
            return result  # --flag.key only for JSON (config) options
        result.update(canonical=canonical, form=form, entry=rel.flags[canonical])
        return result
    if subkey:
        return result
    prefixed = sorted(s for s in rel.strings if s.startswith(option))
    targets = sorted({rel.strings[s][0] for s in prefixed})
    if len(prefixed) == 1:
        canonical, form = rel.strings[prefixed[0]]
        result.update(canonical=canonical, form="abbreviation", entry=rel.flags[canonical], abbreviates=prefixed[0])
        if form == "negation":
            result["negated_abbreviation"] = True
        return result
    if len(prefixed) > 1:
        result.update(form="ambiguous", abbreviates=prefixed, targets=targets)
        return result
    if "-" + head in rel.strings:
        result.update(form="short_only", canonical=rel.strings["-" + head][0])
    return result


def is_negation(resolved):
    return resolved["form"] == "negation" or bool(resolved.get("negated_abbreviation"))


def option_releases(engine, option):
    """The stored releases whose parser has the option string ``option`` (``--x``)."""
    return [rel.version for rel in all_releases(engine) if option in rel.strings]


def suggest(word, candidates, count=3, cutoff=0.6):
    """The nearest of ``candidates`` to ``word`` (difflib), best first."""
    return difflib.get_close_matches(str(word), list(candidates), n=count, cutoff=cutoff)


def suggest_flag(rel, flag):
    """The nearest options of ``rel`` to a flag it lacks, as ``--name`` strings, best first.

    A hand-written replacement (:data:`REPLACEMENTS`) that exists in ``rel`` comes first.
    """
    name = flag_name(rel.engine, flag).partition(".")[0] if rel.engine == "vllm" else str(flag).lstrip("-")
    if rel.engine == "sglang":
        name = name.replace("_", "-")
    names = [s for s in rel.strings if s.startswith("--")]
    found = []
    replacement = REPLACEMENTS.get((rel.engine, name))
    if replacement and "--" + replacement[0] in rel.strings:
        found.append("--" + replacement[0])
    found += [match for match in suggest("--" + name, names) if match not in found]
    return found[:3]


def normalise_value(entry, value):
    """A flag value as the engine compares it (vLLM lower-cases --moe-backend, upper-cases attention)."""
    text = str(value)
    for step in (entry or {}).get("normalise") or ():
        if step == "lower":
            text = text.lower()
        elif step == "upper":
            text = text.upper()
        elif step == "dash_to_underscore":
            text = text.replace("-", "_")
    return text


def choices(entry):
    """The values a flag accepts (``"None"`` left out), or None when it takes any value."""
    if not entry or entry.get("choices") is None:
        return None
    return [choice for choice in entry["choices"] if choice != "None"]


def value_releases(engine, canonical, value):
    """The stored releases where ``--canonical`` accepts ``value`` (normalised as that release does)."""
    found = []
    for rel in all_releases(engine):
        entry = rel.flags.get(canonical)
        allowed = choices(entry)
        if entry is not None and (allowed is None or normalise_value(entry, value) in allowed):
            found.append(rel.version)
    return found


def env_releases(engine, name):
    """The stored releases that read the env var ``name``."""
    return [rel.version for rel in all_releases(engine) if name in rel.env]


def speculative_key_releases(key):
    """The stored vLLM releases whose SpeculativeConfig has ``key``."""
    return [rel.version for rel in all_releases("vllm") if key in rel.speculative_keys]


# ---------------------------------------------------------------------------------------------
# Hand-written facts the source data cannot give, each with its source
# ---------------------------------------------------------------------------------------------
# A flag removed or renamed -> (the flag to use instead, source).
REPLACEMENTS = {
    ("sglang", "mamba-scheduler-strategy"): (
        "mamba-radix-cache-strategy",
        "sglang 0.5.14-0.5.19 server_args.py: --mamba-scheduler-strategy is a DeprecatedAliasStoreAction of "
        "--mamba-radix-cache-strategy; gone in 0.5.20 (0.5.20 server_args.py)"),
    ("sglang", "cuda-graph-max-bs"): (
        "cuda-graph-max-bs-decode",
        "sglang 0.5.14-0.5.19 server_args.py: --cuda-graph-max-bs deprecated; 0.5.20 "
        "arg_groups/fields/exec_.py has cuda_graph_max_bs_decode/_prefill"),
}

# Reasoning parsers of the Nemotron-3 family where the data has no choices: vLLM's
# --reasoning-parser takes any string at parse time and the serve command looks it up in a
# registry filled at run time. SGLang's --reasoning-parser has argparse choices (the keys of
# ReasoningParser.DetectorMap), which the catalog holds: nano_v3 0.5.7-0.5.9, nemotron_3 from 0.5.10.
REASONING_PARSERS = {
    # 0.17.0's registry lacks it: KeyError 'invalid reasoning parser' (vllm/reasoning/ of 0.17.0 and 0.17.1).
    "vllm": {"nemotron_v3": ("0.17.1", None)},
}
NEMOTRON3_PARSER_NAMES = ("nemotron_v3", "nemotron_3", "nano_v3", "super_v3")


def same_meaning(canonical, value, allowed):
    """``"name (what it is)"``: the choice in ``allowed`` meant by ``value`` under another release's
    name (the Nemotron-3 reasoning parser: nano_v3 -> nemotron_3 in SGLang 0.5.10), or None."""
    if canonical == "reasoning-parser" and value in NEMOTRON3_PARSER_NAMES:
        found = [name for name in NEMOTRON3_PARSER_NAMES if name in allowed]
        return ("%s (this release's Nemotron-3 reasoning parser)" % found[0]) if found else None
    return None


def _vals(names, first=None, last=None):
    return {name: (first, last) for name in names.split()}


# What the unquantized (BF16) MoE oracle accepts: the MTP draft of the NVFP4 checkpoint is
# unquantized, so speculative_config.moe_backend must be one of these (vllm/model_executor/layers/fused_moe/oracle/unquantized.py per release).
VLLM_UNQUANTIZED_MOE_BACKENDS = {}
VLLM_UNQUANTIZED_MOE_BACKENDS.update(_vals("triton flashinfer_trtllm flashinfer_cutlass aiter", "0.17.0"))
VLLM_UNQUANTIZED_MOE_BACKENDS.update(_vals("batched_triton", "0.28.0"))

# vLLM releases where --moe-backend marlin also reaches the unquantized MTP draft MoE and fails
# unless speculative_config.moe_backend is set; 0.33 exempts marlin (vllm#56964; vllm/model_executor/layers/fused_moe/oracle/).
VLLM_MARLIN_REACHES_DRAFT = (None, "0.32")
# Prefix caching on by default for hybrid (Mamba) models: vllm/engine/arg_utils.py (0.28.0 line 2650)
# `default_prefix_caching = model_config.is_prefix_caching_supported`, and hybrid models support it
# from 0.26 (vllm/config/model.py is_prefix_caching_supported); 0.26.0-0.27.0 keep it opt-in
# (0.27.0 arg_utils.py line 2604: `... and not model_config.is_hybrid`).
VLLM_HYBRID_PREFIX_CACHING_DEFAULT_ON = "0.28.0"
VLLM_HYBRID_PREFIX_CACHING_SOURCE = ("vllm/engine/arg_utils.py 0.28.0 line 2650 (default_prefix_caching = "
                                     "is_prefix_caching_supported); 0.26.0-0.27.0 add 'and not is_hybrid' "
                                     "(0.27.0 line 2604)")
# The drafter stops inheriting --attention-backend from this release (its own attention config, vLLM 0.21.0).
VLLM_DRAFTER_OWN_ATTENTION = "0.21.0"

# SGLang resets --max-running-requests to 48 for speculative decoding when it is not given:
# release -> "file:line" of `max_running_requests = 48` ("Max running requests is reset to 48 for
# speculative decoding. You can override this by explicitly setting --max-running-requests.").
SGLANG_SPEC_MAX_RUNNING_REQUESTS = 48
SGLANG_SPEC_RESET_SOURCE = {
    "0.5.6.post2": "sglang/srt/server_args.py:1740 (EAGLE/EAGLE3/STANDALONE)",
    "0.5.13": "sglang/srt/arg_groups/speculative_hook.py:283 (_handle_eagle_family)",
    "0.5.23": "sglang/srt/arg_groups/speculative_hook.py:1090 (declare_resolution max_running_requests=48)",
}

# ---------------------------------------------------------------------------------------------
# Environment variables: which release reads which name is data; values and deprecations are not
# ---------------------------------------------------------------------------------------------
ENV_PREFIXES = {"vllm": ("VLLM_",), "sglang": ("SGLANG_", "SGL_")}


def _env(deprecated=None, replacement=None, values=None, source=None, hint=None):
    return {"deprecated": deprecated, "replacement": replacement, "values": values, "source": source,
            "hint": hint}


ENV_FACTS = {
    "vllm": {
        "VLLM_NVFP4_GEMM_BACKEND": _env(
            deprecated="0.22.0", replacement="linear-backend",
            values=dict(_vals("flashinfer-cudnn flashinfer-trtllm flashinfer-cutlass cutlass marlin"),
                        emulation=("0.20.0", None), **{"flashinfer-b12x": ("0.22.0", None)}),
            source="vllm/envs.py 0.17.0-0.23.0 (choices; the FutureWarning in 0.22-0.23)"),
        "VLLM_USE_FLASHINFER_MOE_FP4": _env(deprecated="0.22.0", replacement="moe-backend", values=_vals("0 1"),
                                            source="vllm/envs.py per release"),
        "VLLM_FLASHINFER_MOE_BACKEND": _env(deprecated="0.22.0", replacement="moe-backend",
                                            values=_vals("throughput latency masked_gemm"),
                                            source="vllm/envs.py per release"),
        "VLLM_FLASHINFER_ALLREDUCE_BACKEND": _env(values=_vals("auto trtllm mnnvl"),
                                                  source="vllm/envs.py per release"),
    },
    "sglang": {
        # The g7e field report's Repro sets it; no SGLang release 0.5.1-0.5.23 reads it.
        "SGLANG_DISABLE_DEEP_GEMM": _env(
            hint="the knob SGLang reads is SGLANG_ENABLE_JIT_DEEPGEMM=0 (sglang/srt/environ.py); what keeps "
                 "DeepGEMM off on SM120 is --fp8-gemm-backend triton and --moe-runner-backend triton",
            source="the g7e field report's Repro; read by no SGLang release 0.5.1-0.5.23 (scripts/engine-catalog)"),
    },
}


def env_status(engine, name, version):
    """``(status, facts, releases)`` of an env var for ``version``.

    status: ``active`` (the release reads it), ``deprecated`` (read, with a warning),
    ``removed`` (an older stored release read it, this one does not), ``too_new`` (only newer
    releases read it), ``unknown`` (engine prefix, no stored release reads it) or ``foreign``
    (not an engine variable; not judged). ``releases``: the stored releases that read it.
    """
    facts = ENV_FACTS[engine].get(name)
    if not any(name.startswith(prefix) for prefix in ENV_PREFIXES[engine]):
        return "foreign", facts, []
    rel, _exact = nearest_release(engine, version)
    readers = env_releases(engine, name)
    if name in rel.env:
        if facts and facts["deprecated"] and version_in(version, facts["deprecated"]):
            return "deprecated", facts, readers
        return "active", facts, readers
    if not readers:
        return "unknown", facts, readers
    if parse_version(readers[-1]) < parse_version(rel.version):
        return "removed", facts, readers
    return "too_new", facts, readers


def allowed_values(values, version):
    """The values of a ``{value: (first, last)}`` table present in ``version``, sorted."""
    return sorted(value for value, (first, last) in values.items() if version_in(version, first, last))


def value_known(values, value, version):
    """``(present_now, range)``: whether ``value`` is allowed in ``version``; range None if never known."""
    if value in values:
        first, last = values[value]
        return version_in(version, first, last), (first, last)
    return False, None
