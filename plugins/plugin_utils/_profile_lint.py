# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Profile lint: what the seeds learned the hard way, checked before anything starts.

``lint_profile`` runs every rule of ``RULES`` on a profile (plus inventory overrides) and
returns findings ``{rule, severity, message, reason, source}``: ``message`` names the problem and
the fix, ``reason`` the failure the rule prevents, ``source`` the seed or engine-facts section.
Each rule is a pure function of one :class:`LintContext`; the facts about which flag, value or
env var exists in which engine version live in ``_engine_catalog``.
"""
from __future__ import annotations

import json
import re

import yaml

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    DIGEST_RE,
    ENGINES,
    KNOWN_BAD_FILE,
    ProfileError,
    apply_overrides,
    flag_key,
    load_profile,
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
    """One ``args`` entry as the engine will read it."""

    __slots__ = ("flag", "value", "canonical", "spec", "negated", "subkey", "alias_first", "from_override")

    def __init__(self, engine, flag, value, from_override):
        self.flag = str(flag).lstrip("-")
        self.value = value
        self.from_override = from_override
        resolved = catalog.resolve_flag(engine, self.flag) if engine in catalog.ENGINES else None
        if resolved is None and engine == "sglang":
            # The hyphenated spelling, so rules still see what was meant; sglang-flag-underscore
            # reports the spelling itself.
            resolved = catalog.resolve_flag(engine, self.flag.replace("_", "-"))
        self.canonical, self.spec, self.negated, self.subkey, self.alias_first = resolved or (None,) * 5

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
        self.overrides = overrides
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
        engine = self.engine if self.engine in catalog.ENGINES else None
        override_args = {flag_key(self.engine, k) for k in (overrides.get("args") or {})}
        self.args = [Arg(engine, flag, value, flag_key(self.engine, flag) in override_args)
                     for flag, value in (self.profile.get("args") or {}).items()]
        self.env_from_override = set((overrides.get("env") or {}).keys())
        self.image_from_override = set((overrides.get("image") or {}).keys())

    @property
    def engine_label(self):
        return "%s %s" % ({"vllm": "vLLM", "sglang": "SGLang"}.get(self.engine, self.engine), self.version)

    @property
    def checkable(self):
        """Whether the engine and its version are known, so version-aware rules can run."""
        return self.engine in catalog.ENGINES and self.version is not None

    def arg(self, canonical):
        """The last whole-flag entry for ``canonical`` (not a dotted sub-key), or None."""
        found = [a for a in self.args if a.canonical == canonical and a.subkey is None]
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
            if self.value(flag) is not None:
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


# ---------------------------------------------------------------------------------------------
# Rules: each a pure function of the context, yielding a message or (severity, message)
# ---------------------------------------------------------------------------------------------
def check_engine_known(ctx):
    if ctx.engine not in ENGINES:
        yield ("profile %s: engine %r is not one of %s; set engine to one of them"
               % (ctx.name, ctx.engine, ", ".join(sorted(ENGINES))))


def check_engine_version(ctx):
    if ctx.version_error:
        yield ("profile %s: image.engine_version is missing or unreadable (%s); set it to the engine "
               "version inside the image (e.g. 0.19.2rc1.dev134 for vLLM, 0.5.13 for SGLang; `pip show "
               "vllm` / `pip show sglang` in the container tells)" % (ctx.name, ctx.version_error))


def check_engine_version_catalogued(ctx):
    if ctx.checkable and not catalog.catalogued(ctx.engine, ctx.version):
        first, last = catalog.CATALOGUED[ctx.engine]
        yield ("%s is outside the versions the engine catalog was built from (%s); flag and env checks "
               "extrapolate. Extend plugins/plugin_utils/_engine_catalog.py from the release's source "
               "before trusting this profile" % (ctx.engine_label, catalog.range_text(first, last)))


def check_digest_malformed(ctx):
    digest = ctx.image.get("digest")
    if digest and not DIGEST_RE.match(str(digest)):
        where = _OVERRIDE_NOTE % "image.digest" if "digest" in ctx.image_from_override else ""
        yield ("image.digest %r%s is not 'sha256:' followed by 64 lowercase hex digits; copy it from the "
               "registry (docker buildx imagetools inspect, or playbooks/pin.yml)" % (digest, where))


def _known_bad_match(entry, repository, digest):
    if entry.get("repository") and repository and entry["repository"] != repository:
        return False
    if entry.get("digest"):
        return digest == entry["digest"]
    if entry.get("digest_prefix"):
        return digest.startswith(entry["digest_prefix"])
    return False


def check_digest_known_bad(ctx):
    digest = str(ctx.image.get("digest") or "")
    if not digest:
        return
    for entry in ctx.known_bad:
        if _known_bad_match(entry, ctx.image.get("repository"), digest):
            yield ("image %s@%s is on the known-bad list: %s (%s; source: %s); pin another digest that "
                   "validated on a canary (playbooks/pin.yml) or use the fallback profile %s"
                   % (ctx.image.get("repository"), digest, entry.get("signature", "no signature recorded"),
                      entry.get("symptom", "no symptom recorded"), entry.get("source", "unknown"),
                      ctx.profile.get("fallback") or "(none)"))


def check_tag_only(ctx):
    if not ctx.image.get("digest"):
        yield ("image %s:%s is pinned by tag only; pin the digest (playbooks/pin.yml) so every host runs "
               "the image that was validated" % (ctx.image.get("repository"), ctx.image.get("tag") or "latest"))


def check_flag_unknown(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical is not None:
            continue
        nearest = catalog.suggest_flag(ctx.engine, entry.flag, ctx.version)
        hint = ("did you mean %s?" % " or ".join(nearest)) if nearest else (
            "remove it; if %s really has it, add it to plugins/plugin_utils/_engine_catalog.py" % ctx.engine_label)
        yield "%s is not a %s flag; %s" % (entry.written, ctx.engine_label, hint)


def check_flag_version(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical is None:
            continue
        spec = entry.spec
        if not catalog.flag_available(spec, ctx.version):
            fix = ("use --%s" % spec["replacement"]) if spec.get("replacement") and \
                catalog.flag_available(catalog.FLAGS[ctx.engine][spec["replacement"]], ctx.version) else \
                "use an image in that range or remove the flag"
            yield ("%s exists in %s %s, not in %s (the image's version); %s"
                   % (entry.written, ctx.engine, catalog.range_text(spec["first"], spec["last"]),
                      ctx.engine_label, fix))
        elif entry.alias_first and not catalog.version_in(ctx.version, entry.alias_first):
            yield ("%s is a short alias only from %s %s, not in %s; spell it --%s"
                   % (entry.written, ctx.engine, entry.alias_first, ctx.engine_label, entry.canonical))


def check_flag_deprecated(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical and catalog.flag_available(entry.spec, ctx.version) and \
                catalog.flag_deprecated(entry.spec, ctx.version):
            yield ("%s is deprecated in %s and removed after %s; use --%s (same values)"
                   % (entry.written, ctx.engine_label, entry.spec["last"], entry.spec["replacement"]))


def check_flag_value(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        spec = entry.spec
        if entry.canonical is None or entry.subkey or entry.state is None or \
                not catalog.flag_available(spec, ctx.version):
            continue
        if spec["boolean"]:
            if entry.value is not True:
                negation = " or `no-%s: true`" % entry.canonical if ctx.engine == "vllm" else ""
                yield ("%s is an on/off flag but has the value %r (rendered as a stray argument); write "
                       "`%s: true`%s" % (entry.written, entry.value, entry.flag, negation))
            continue
        if entry.value is True:
            if not spec["optional_value"]:
                yield "%s needs a value but is set to true (a bare flag); give it its value" % entry.written
            continue
        if not spec["values"] or isinstance(entry.value, (dict, list)):
            continue
        value = catalog.normalise_value(spec, entry.value)
        allowed_now, known_range = catalog.value_known(spec["values"], value, ctx.version)
        if allowed_now:
            continue
        choices = ", ".join(catalog.allowed_values(spec["values"], ctx.version))
        if known_range is not None:
            yield ("%s %s exists in %s %s, not in %s; choose one of: %s"
                   % (entry.written, entry.value, ctx.engine, catalog.range_text(*known_range),
                      ctx.engine_label, choices))
        elif catalog.values_complete(spec, ctx.version):
            yield ("%s %s is not a choice of %s; choose one of: %s"
                   % (entry.written, entry.value, ctx.engine_label, choices))
        else:
            yield ("warning", "%s %s is not among the catalogued choices (%s), and the catalog's list for %s "
                              "may be incomplete; check `--help` of the image" % (entry.written, entry.value,
                                                                                  choices, ctx.engine_label))


def check_sglang_underscore(ctx):
    if ctx.engine != "sglang":
        return
    for entry in ctx.args:
        if "_" in entry.flag:
            yield ("%s: SGLang's argparse does not turn '_' into '-' and exits with 'unrecognized arguments'; "
                   "spell it --%s" % (entry.written, entry.flag.replace("_", "-")))


def check_vllm_speculative_keys(ctx):
    if ctx.engine != "vllm" or not ctx.checkable:
        return
    config, problems = ctx.speculative_config()
    for problem in problems:
        yield problem + "; give speculative_config as a mapping in the profile"
    for key in config:
        if key not in catalog.VLLM_SPECULATIVE_KEYS:
            nearest = catalog.suggest(key, catalog.VLLM_SPECULATIVE_KEYS)
            yield ("warning", "speculative_config key %r is not in the catalog; vLLM rejects unknown keys "
                              "(pydantic ValidationError)%s" % (key, "; did you mean %r?" % nearest[0]
                                                                if nearest else ""))
            continue
        first, last = catalog.VLLM_SPECULATIVE_KEYS[key]
        if not catalog.version_in(ctx.version, first, last):
            yield ("speculative_config key %r needs vLLM %s, the image has %s (SpeculativeConfig rejects it: "
                   "pydantic ValidationError 'Unexpected keyword argument'); use a newer image or drop the key"
                   % (key, catalog.range_text(first, last), ctx.version))


def check_vllm_nvfp4_marlin(ctx):
    if ctx.engine != "vllm" or not (ctx.is_nvfp4 and ctx.is_sm12x):
        return
    backend = ctx.value("moe-backend")
    if backend != "marlin":
        now = ("--moe-backend is not set (auto)" if backend is None else "--moe-backend is %s" % backend)
        yield ("NVFP4 model on %s and %s; set args.moe-backend: marlin (Marlin is the only working NVFP4 "
               "MoE path on sm_12x)" % (ctx.sm_label, now))


def check_vllm_mtp_marlin(ctx):
    if not ctx.is_vllm_mtp or not ctx.checkable or ctx.value("moe-backend") != "marlin":
        return
    nested = ctx.speculative_config()[0].get("moe_backend")
    first_nested = catalog.VLLM_SPECULATIVE_KEYS["moe_backend"][0]
    if not _at_least(ctx, first_nested):
        yield ("MTP with --moe-backend marlin cannot start on %s: without speculative_config.moe_backend the "
               "unquantized MTP MoE rejects marlin (ValueError), and with it %s's SpeculativeConfig fails "
               "(the key needs >= %s). Use an image >= %s (the cu130-nightly of gb10-nvfp4-mtp-latency) "
               "or drop MTP (gb10-nvfp4-fallback)" % (ctx.engine_label, ctx.version, first_nested, first_nested))
    elif nested is None:
        if catalog.version_in(ctx.version, *catalog.VLLM_MARLIN_REACHES_DRAFT):
            yield ("MTP with --moe-backend marlin and no speculative_config.moe_backend: the MTP head's "
                   "unquantized MoE gets marlin and %s stops with \"ValueError: moe_backend='marlin' is not "
                   "supported for unquantized MoE\"; add moe_backend: triton to speculative_config"
                   % ctx.engine_label)
    else:
        value = catalog.normalise_value({"norm": "lower_underscore"}, nested)
        if not catalog.value_known(catalog.VLLM_UNQUANTIZED_MOE_BACKENDS, value, ctx.version)[0]:
            yield ("speculative_config.moe_backend %r is not an unquantized MoE backend of %s (the MTP head "
                   "is unquantized); use triton (choices: %s)"
                   % (nested, ctx.engine_label,
                      ", ".join(catalog.allowed_values(catalog.VLLM_UNQUANTIZED_MOE_BACKENDS, ctx.version))))


def check_vllm_mtp_attention_sm121(ctx):
    if not ctx.is_vllm_mtp or ctx.compute_capability != (12, 1):
        return
    backend = ctx.value("attention-backend")
    if backend != "TRITON_ATTN":
        now = {None: "no --attention-backend is set, so auto-selection may pick FLASHINFER",
               "FLASHINFER": "--attention-backend is FLASHINFER"}.get(backend, "--attention-backend is %s" % backend)
        yield ("MTP on %s and %s; set args.attention-backend: TRITON_ATTN" % (ctx.sm_label, now))


def check_vllm_drafter_attention(ctx):
    if not ctx.is_vllm_mtp or not ctx.checkable or not _at_least(ctx, catalog.VLLM_DRAFTER_OWN_ATTENTION):
        return
    backend = ctx.value("attention-backend")
    if backend and "attention_backend" not in ctx.speculative_config()[0]:
        yield ("%s: the MTP drafter does not inherit --attention-backend %s and auto-selects its own "
               "(FLASHINFER on Blackwell%s); add attention_backend: %s to speculative_config"
               % (ctx.engine_label, backend,
                  ", the crashing combination on sm_121" if ctx.compute_capability == (12, 1) else "", backend))


def check_vllm_prefix_caching_mtp(ctx):
    if not (ctx.is_vllm_mtp and ctx.is_nemotron_h and ctx.checkable):
        return
    entry = ctx.arg("enable-prefix-caching")
    state = entry.state if entry else None
    if state is True:
        yield ("%s turns prefix caching on with MTP on a NemotronH model; remove it%s"
               % (entry.written, " and set no-enable-prefix-caching: true (on by default from vLLM %s)"
                  % catalog.VLLM_HYBRID_PREFIX_CACHING_DEFAULT_ON
                  if _at_least(ctx, catalog.VLLM_HYBRID_PREFIX_CACHING_DEFAULT_ON) else ""))
    elif state is None and _at_least(ctx, catalog.VLLM_HYBRID_PREFIX_CACHING_DEFAULT_ON):
        note = (" (`enable-prefix-caching: false` renders nothing, so it does not turn it off)"
                if entry is not None else "")
        yield ("%s enables prefix caching by default for hybrid models, so this MTP profile on a NemotronH "
               "model runs with it%s; add no-enable-prefix-caching: true to args"
               % (ctx.engine_label, note))


def check_sglang_spec_moe_runner(ctx):
    if not ctx.sglang_speculative_algorithm or not ctx.is_sm12x:
        return
    runner = ctx.value("speculative-moe-runner-backend")
    if runner != "triton":
        yield ("--speculative-algorithm %s on %s with --speculative-moe-runner-backend %s; set "
               "args.speculative-moe-runner-backend: triton"
               % (ctx.sglang_speculative_algorithm, ctx.sm_label, runner or "unset (defaults to the main runner)"))


def check_sglang_spec_radix_cache(ctx):
    if not ctx.sglang_speculative_algorithm or not ctx.is_nemotron_h:
        return
    entry = ctx.arg("disable-radix-cache")
    if not (entry and entry.state):
        yield ("--speculative-algorithm %s on a NemotronH model without --disable-radix-cache; add "
               "disable-radix-cache: true to args" % ctx.sglang_speculative_algorithm)


def check_sglang_mamba_extra_buffer(ctx):
    if ctx.engine != "sglang" or not ctx.is_nemotron_h or not ctx.checkable:
        return
    for canonical in ("mamba-scheduler-strategy", "mamba-radix-cache-strategy"):
        strategy = ctx.value(canonical)
        if strategy not in ("extra_buffer", "extra_buffer_lazy"):
            continue
        written = ctx.arg(canonical).written
        if not _at_least(ctx, "0.5.13"):
            yield ("%s %s on a NemotronH model: %s asserts 'mamba extra_buffer is not supported for "
                   "NemotronHForCausalLM model' at startup; use no_buffer" % (written, strategy, ctx.engine_label))
        elif _at_least(ctx, "0.5.15"):
            linear = ctx.value("linear-attn-backend")
            if linear is None:
                yield ("warning", "%s %s on a NemotronH model: %s allows it only with linear-attn-backend "
                                  "triton (AssertionError otherwise); set linear-attn-backend: triton or use "
                                  "no_buffer" % (written, strategy, ctx.engine_label))
            elif linear != "triton":
                yield ("%s %s on a NemotronH model with --linear-attn-backend %s: %s asserts 'extra_buffer is "
                       "not supported for NemotronHForCausalLM'; set linear-attn-backend: triton or use no_buffer"
                       % (written, strategy, linear, ctx.engine_label))


def check_reasoning_parser(ctx):
    if not ctx.checkable:
        return
    entry = ctx.arg("reasoning-parser")
    if entry is None or entry.state is None or entry.value is True:
        return
    name = str(entry.value)
    table = catalog.REASONING_PARSERS[ctx.engine]
    right = [n for n, (first, last) in table.items() if catalog.version_in(ctx.version, first, last)]
    fix = ("use %s" % right[0]) if right else (
        "no Nemotron-3 reasoning parser exists in %s; use an image with %s" % (
            ctx.engine_label, " or ".join("%s (%s)" % (n, catalog.range_text(*r)) for n, r in table.items())))
    if name in table:
        if name not in right:
            yield ("%s %s exists in %s %s, not in %s; %s"
                   % (entry.written, name, ctx.engine, catalog.range_text(*table[name]), ctx.engine_label, fix))
    elif name in catalog.NEMOTRON3_PARSER_NAMES:
        yield "%s %s is not a %s reasoning parser; %s" % (entry.written, name, ctx.engine_label, fix)


def check_sglang_max_running_requests(ctx):
    if ctx.engine != "sglang" or not ctx.is_burst_profile:
        return
    entry = ctx.arg("max-running-requests")
    if entry is not None and entry.state:
        yield ("%s %s on a burst profile caps the batch and queues the rest; remove it unless the "
               "profile is for latency, not burst" % (entry.written, entry.value))


def _env_where(ctx, name):
    return _OVERRIDE_NOTE % ("env." + name) if name in ctx.env_from_override else ""


def _replacement(ctx, spec, value):
    """The flag that replaces an env var, with the value it should carry (the profile's if set)."""
    flag = spec["replacement"]
    current = ctx.arg(flag)
    if current is not None and current.state and current.value is not True:
        return "--%s %s" % (flag, current.value)
    if flag == "linear-backend":
        return "--linear-backend %s" % str(value).replace("-", "_")
    return "--%s <backend> (e.g. marlin)" % flag if flag == "moe-backend" else "--" + flag


def check_env_removed(ctx):
    if not ctx.checkable:
        return
    for name, value in ctx.env.items():
        status, spec = catalog.env_status(ctx.engine, name, ctx.version)
        if status != "removed":
            continue
        replaced = ctx.arg(spec["replacement"]) is not None if spec["replacement"] else True
        message = "env %s=%s%s does nothing on %s (removed in %s); " % (
            name, value, _env_where(ctx, name), ctx.engine_label, spec["removed"])
        if replaced:
            yield ("warning", message + "remove it; %s already says it" % _replacement(ctx, spec, value))
        else:
            yield message + "set %s instead and remove it" % _replacement(ctx, spec, value)


def check_env_deprecated(ctx):
    if not ctx.checkable:
        return
    for name, value in ctx.env.items():
        status, spec = catalog.env_status(ctx.engine, name, ctx.version)
        if status == "deprecated":
            yield ("env %s%s is deprecated on %s and does nothing from %s; move to %s"
                   % (name, _env_where(ctx, name), ctx.engine_label, spec["removed"],
                      _replacement(ctx, spec, value)))


def check_env_unknown(ctx):
    if not ctx.checkable:
        return
    for name in ctx.env:
        status, spec = catalog.env_status(ctx.engine, name, ctx.version)
        if status == "unknown":
            nearest = catalog.suggest(name, catalog.ENV[ctx.engine])
            yield ("env %s%s is not a known %s variable, so it probably does nothing; %s"
                   % (name, _env_where(ctx, name), ctx.engine_label,
                      ("did you mean %s?" % nearest[0]) if nearest else "check the spelling, or remove it"))
        elif status == "too_new":
            yield ("env %s%s is read only from %s %s; remove it or use a newer image"
                   % (name, _env_where(ctx, name), ctx.engine, spec["first"]))


def check_env_value(ctx):
    if not ctx.checkable:
        return
    for name, value in ctx.env.items():
        status, spec = catalog.env_status(ctx.engine, name, ctx.version)
        if status not in ("active", "deprecated") or not spec["values"]:
            continue
        text = str(value).lower() if not isinstance(value, bool) else ("1" if value else "0")
        if not catalog.value_known(spec["values"], text, ctx.version)[0]:
            yield ("env %s=%s%s is not a value %s accepts; choose one of: %s"
                   % (name, value, _env_where(ctx, name), ctx.engine_label,
                      ", ".join(catalog.allowed_values(spec["values"], ctx.version))))


# ---------------------------------------------------------------------------------------------
# The rule table: id, default severity, check, why (the failure it prevents), where it was learned
# ---------------------------------------------------------------------------------------------
def _r(rule_id, severity, check, reason, source):
    return {"id": rule_id, "severity": severity, "check": check, "reason": reason, "source": source}


RULES = (
    _r("engine-unknown", "error", check_engine_known,
       "The renderer and every check depend on the engine; an unknown engine cannot be launched.",
       "DESIGN.md 'Profiles are data'"),
    _r("engine-version-missing", "error", check_engine_version,
       "Flags and env vars come and go between engine versions; without image.engine_version the lint "
       "cannot tell whether the image has them.",
       "engine-facts.md sections 1.10 and 2.6"),
    _r("engine-version-uncatalogued", "warning", check_engine_version_catalogued,
       "The catalog's ranges were read from released wheels (vLLM 0.17-0.33, SGLang 0.5.1-0.5.23); beyond "
       "them a flag may have appeared or gone without the lint knowing.",
       "engine-facts.md section 0"),
    _r("image-digest-malformed", "error", check_digest_malformed,
       "A digest that is not sha256 plus 64 lowercase hex digits cannot be pulled; the pull fails on every host.",
       "DESIGN.md 'Pins and rollouts'"),
    _r("image-digest-known-bad", "error", check_digest_known_bad,
       "Some cu130-nightly digests crash (CUDA illegal memory access on the first MTP request); a digest "
       "on the known-bad list must not be deployed.",
       "seed 000: IMAGE PIN note in docker-vllm-nemotron-3-super-120b-nvfp4-mtp.sh; data/known_bad_images.yml"),
    _r("image-tag-only", "warning", check_tag_only,
       "A tag moves (cu130-nightly is a rolling tag, 'not a reproducible pin'): two hosts, or one host on two "
       "days, may run different engines.",
       "seed 000: IMAGE PIN note; seed 001: digest pinning as practice"),
    _r("flag-unknown", "error", check_flag_unknown,
       "The engine's argument parser exits at startup on a flag it does not have.",
       "engine-facts.md sections 1.10 and 2.6"),
    _r("flag-version", "error", check_flag_version,
       "Flags come and go between versions (e.g. SGLang removed --mamba-scheduler-strategy in 0.5.20); a flag "
       "the image's version lacks stops the engine at startup.",
       "engine-facts.md sections 1.10, 2.4 and 2.6"),
    _r("flag-deprecated", "warning", check_flag_deprecated,
       "A deprecated alias still works but is removed in a later release; the next image bump would fail.",
       "engine-facts.md section 2.4"),
    _r("flag-value", "error", check_flag_value,
       "argparse rejects a value outside the flag's choices (invalid choice) and the engine exits; an on/off "
       "flag given a value leaves a stray argument.",
       "engine-facts.md sections 1.2, 1.8, 1.10 and 2.6"),
    _r("sglang-flag-underscore", "error", check_sglang_underscore,
       "SGLang uses plain argparse with no underscore-to-hyphen normalisation (vLLM has one): "
       "--moe_runner_backend is 'unrecognized arguments'.",
       "engine-facts.md section 2.6"),
    _r("vllm-speculative-config-key", "error", check_vllm_speculative_keys,
       "vLLM's SpeculativeConfig forbids unknown keys: a key newer than the image (moe_backend < 0.19, "
       "attention_backend < 0.21, kv_cache_dtype < 0.26) is a pydantic ValidationError at startup.",
       "engine-facts.md section 1.10 (runtime facts on 0.17.1)"),
    _r("vllm-nvfp4-sm12x-marlin-moe", "error", check_vllm_nvfp4_marlin,
       "On sm_12x the CUTLASS/FlashInfer grouped-FP4 MoE kernels are gated to sm_100 or regress; since vLLM "
       "0.19 auto-selection picks FLASHINFER_CUTLASS for NVFP4 MoE, so Marlin must be explicit.",
       "seed 000 findings.md section 1 and Gotchas; vLLM #38971"),
    _r("vllm-mtp-marlin-draft-moe-backend", "error", check_vllm_mtp_marlin,
       "The MTP head's MoE is unquantized and rejects marlin: one global --moe-backend cannot serve both "
       "(ValueError at startup) until vLLM 0.33; the per-path speculative_config.moe_backend fixes it but "
       "exists only from vLLM 0.19 (v0.17.1 fails with a pydantic ValidationError).",
       "seed 000 findings.md section 1; engine-facts.md sections 1.2 and 1.10"),
    _r("vllm-mtp-attention-sm121", "error", check_vllm_mtp_attention_sm121,
       "FlashInfer attention with MTP crashes on sm_121 (GB10); only TRITON_ATTN is known to work.",
       "seed 000 findings.md Gotchas; vLLM #37754"),
    _r("vllm-mtp-drafter-attention", "warning", check_vllm_drafter_attention,
       "From vLLM 0.21 the drafter never inherits --attention-backend; it auto-selects (FLASHINFER on "
       "Blackwell) unless speculative_config.attention_backend is set, bringing back the FlashInfer + MTP "
       "combination the main flag was meant to avoid.",
       "engine-facts.md section 1.4"),
    _r("vllm-prefix-caching-mtp-nemotronh", "error", check_vllm_prefix_caching_mtp,
       "Mamba prefix caching with MTP crashes on NemotronH (vLLM #39809), and on Nemotron-3-Super it gave 0 "
       "hits in 9,317 queries; vLLM >= 0.26 turns it on by default for hybrid models, so it must be turned "
       "off explicitly there (and backend_assert expects prefix_caching false).",
       "seed 000 benchmark-results.md section 4 and findings.md section 5; vLLM #39809; engine-facts.md 1.6"),
    _r("sglang-spec-moe-runner-sm120", "error", check_sglang_spec_moe_runner,
       "Without --speculative-moe-runner-backend triton the draft worker's MoE layers take a backend that is "
       "OOM-killed on SM120.",
       "seed 002: SM120 matrix (MTP/EAGLE row) and MTP section; sglang#20470"),
    _r("sglang-spec-radix-cache", "error", check_sglang_spec_radix_cache,
       "EAGLE/MTP on Nemotron-3-Super needs the radix cache off (--disable-radix-cache is required by MTP).",
       "seed 002: MTP / Speculative Decoding (EAGLE) section"),
    _r("sglang-mamba-extra-buffer-nemotronh", "error", check_sglang_mamba_extra_buffer,
       "SGLang asserts 'mamba extra_buffer is not supported for NemotronHForCausalLM' at startup in "
       "0.5.7-0.5.12, and from 0.5.15 unless linear_attn_backend is triton.",
       "seed 002 Gotchas ('extra_buffer mamba scheduler not supported'); engine-facts.md section 2.4"),
    _r("reasoning-parser-name", "error", check_reasoning_parser,
       "Parser names differ per engine and version: vLLM nemotron_v3 (0.17.1+); SGLang nemotron_3 (0.5.10+; "
       "nano_v3 in 0.5.7-0.5.9; super_v3 never). A wrong name fails at server setup.",
       "seed 002 Gotchas (reasoning parser name); engine-facts.md sections 1.8, 1.10 and 2.6"),
    _r("sglang-max-running-requests-burst", "warning", check_sglang_max_running_requests,
       "--max-running-requests 48 dropped burst throughput from 3,215 to 478 tok/s (-86%): 500 concurrent "
       "prompts queue behind the cap and tail requests wait 50+ s before prefill.",
       "seed 002 Gotchas ('--max-running-requests kills burst benchmarks')"),
    _r("env-removed", "error", check_env_removed,
       "VLLM_NVFP4_GEMM_BACKEND, VLLM_USE_FLASHINFER_MOE_FP4 and VLLM_FLASHINFER_MOE_BACKEND are not read from "
       "vLLM 0.24 (only 'Unknown vLLM environment variable'); what they chose silently falls back to auto "
       "unless --linear-backend / --moe-backend say it.",
       "engine-facts.md section 1.10 (env vars)"),
    _r("env-deprecated", "warning", check_env_deprecated,
       "vLLM 0.22-0.23 still read these env vars with a FutureWarning; the next image bump drops them.",
       "engine-facts.md sections 1.8 and 1.10 (env vars)"),
    _r("env-unknown", "warning", check_env_unknown,
       "An engine-prefixed env var the engine does not read does nothing (a typo or a removed knob); vLLM "
       "warns 'Unknown vLLM environment variable' and fails with --fail-on-environ-validation.",
       "engine-facts.md section 1.8"),
    _r("env-value", "error", check_env_value,
       "An env var value outside the engine's choices is rejected or ignored at startup.",
       "engine-facts.md section 1.10 (env vars)"),
)
RULE_IDS = tuple(rule["id"] for rule in RULES)


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------
def load_known_bad(path=KNOWN_BAD_FILE):
    """The known-bad image list of a YAML file shaped like data/known_bad_images.yml."""
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    entries = data.get("known_bad_images") or []
    return validate_known_bad(entries, path)


def validate_known_bad(entries, where="known_bad"):
    """``entries`` checked to be a list of mappings each with ``digest`` or ``digest_prefix``."""
    if not isinstance(entries, list):
        raise ProfileError("%s must be a list of {repository, digest or digest_prefix, signature, ...}" % where)
    for entry in entries:
        if not isinstance(entry, dict) or not (entry.get("digest") or entry.get("digest_prefix")):
            raise ProfileError("%s: entry %r needs a digest or a digest_prefix" % (where, entry))
    return entries


def lint_profile(profile, overrides=None, known_bad=None, rules=None, profile_dirs=None):
    """Findings for ``profile`` (a loaded profile mapping, or a profile name) with ``overrides``.

    ``known_bad`` is the list of known-bad images to check against; None means the collection's
    data/known_bad_images.yml. ``rules`` limits the run to those rule ids. Findings come in rule
    order; each is ``{rule, severity, message, reason, source}``. Raises ProfileError for an
    unknown profile name or malformed overrides (as load_profile and apply_overrides do); a
    name is looked up in ``profile_dirs`` first, then the collection's profiles.
    """
    if isinstance(profile, str):
        profile = load_profile(profile, profile_dirs)
    if not isinstance(profile, dict):
        raise ProfileError("lint_profile needs a profile mapping or a profile name, not %r" % type(profile).__name__)
    if known_bad is None:
        known_bad = load_known_bad()
    ctx = LintContext(profile, overrides, validate_known_bad(known_bad))
    findings = []
    for rule in RULES:
        if rules is not None and rule["id"] not in rules:
            continue
        for item in rule["check"](ctx):
            severity, message = item if isinstance(item, tuple) else (rule["severity"], item)
            findings.append({"rule": rule["id"], "severity": severity, "message": message,
                             "reason": rule["reason"], "source": rule["source"]})
    return findings


def errors(findings):
    """Only the error findings."""
    return [finding for finding in findings if finding["severity"] == "error"]


def format_findings(findings):
    """Findings as lines an operator reads: ``ERROR [rule] message (why: reason; source: source)``."""
    return ["%s [%s] %s (why: %s; source: %s)" % (f["severity"].upper(), f["rule"], f["message"], f["reason"],
                                                  f["source"]) for f in findings]
