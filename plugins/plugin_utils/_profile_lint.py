# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Profile lint: what the field reports (the measured GB10 and g7e runs) learned the hard way,
checked before anything starts.

``lint_profile`` runs every rule of ``RULES`` on a profile (plus inventory overrides) and
returns findings ``{rule, severity, message, reason, source}``: ``message`` names the problem and
the fix, ``reason`` the failure the rule prevents, ``source`` the field report or the engine's source file.
Each rule is a pure function of one :class:`LintContext`; the facts about which flag, value,
speculative key or env var exists in which engine release live in ``_engine_catalog`` (data
generated from each release's source), the kernel-per-hardware facts in ``_kernel_support``
(shared with the lab simulator). A version the data has exactly is covered completely: what it
lacks is an error; for any other version (a nightly) the nearest stored release below it is used
and what that release lacks is a warning.
"""
from __future__ import annotations

import yaml

from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import quoted, scrub
from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _kernel_support as kernels
from ansible_collections.inferops.serving.plugins.plugin_utils import _weights as weights
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    DIGEST_RE,
    ENGINES,
    KNOWN_BAD_FILE,
    ProfileError,
    load_profile,
)

from ansible_collections.inferops.serving.plugins.plugin_utils._rollback import is_rollback_entry
from ansible_collections.inferops.serving.plugins.plugin_utils._lint_context import (
    _OVERRIDE_NOTE,
    LintContext,
    _at_least,
)


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
    if not ctx.checkable:
        return
    first, last = catalog.covered_range(ctx.engine)
    if not catalog.catalogued(ctx.engine, ctx.version):
        yield ("%s is outside the releases the engine catalog was generated from (%s %s-%s); it is judged "
               "against %s. Generate the release's data (scripts/engine-catalog) before trusting this profile"
               % (ctx.engine_label, ctx.engine, first, last, ctx.release.label))


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
        # A rollback's record names a hardware group's hosts, not the profile: preflight's host
        # checks read it (plugins/plugin_utils/_rollback.py).
        if is_rollback_entry(entry):
            continue
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


def _range_note(engine, versions):
    return "%s %s" % (engine, catalog.range_of(versions)) if versions else None


def check_flag_unknown(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical is not None:
            continue
        form = entry.resolved["form"]
        if form == "ambiguous":
            option = "--" + catalog.flag_name(ctx.engine, entry.meant)
            present = catalog.option_releases(ctx.engine, option)
            replacement = catalog.REPLACEMENTS.get((ctx.engine, option[2:]))
            history = (" (%s exists in %s%s)" % (option, _range_note(ctx.engine, present),
                                                 "; use --%s" % replacement[0] if replacement else "")) \
                if present else ""
            matches = ", ".join(entry.resolved["abbreviates"])
            if entry.respelt:  # argparse matches prefixes as written: the '_' spelling matches nothing
                yield ("%s is not an option of %s: its argparse does not turn '_' into '-' and exits with "
                       "'unrecognized arguments', and %s would be an ambiguous abbreviation (it matches %s)%s; "
                       "write the full flag" % (entry.written, ctx.engine_label, option, matches, history))
                continue
            yield ("%s is an ambiguous abbreviation for %s's parser (it matches %s) and the engine exits with "
                   "'ambiguous option'%s; write the full flag" % (entry.written, ctx.engine_label, matches, history))
            continue
        if form == "short_only":
            yield ("%s is not an option of %s: -%s is a short option, and a profile renders every key as "
                   "--<key>; write %s" % (entry.written, ctx.engine_label, entry.flag,
                                          "--" + entry.resolved["canonical"]))
            continue
        option = "--" + catalog.flag_name(ctx.engine, entry.flag).partition(".")[0]
        if entry.subkey and option in ctx.release.strings:
            yield ("%s: %s of %s is not a JSON config option, so it takes no dotted sub-key (the engine exits "
                   "parsing its value); write %s: <value>" % (entry.written, option, ctx.engine_label, option[2:]))
            continue
        if catalog.option_releases(ctx.engine, option):
            continue  # a flag of other releases: flag-version says which
        nearest = catalog.suggest_flag(ctx.release, entry.flag)
        hint = ("did you mean %s?" % nearest[0]) if nearest else "remove it"
        yield ctx.lacks("%s is not a %s flag; %s" % (entry.written, ctx.engine_label, hint))


def check_flag_version(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical is not None or entry.resolved["form"] != "unknown":
            continue
        option = "--" + catalog.flag_name(ctx.engine, entry.flag).partition(".")[0]
        present = catalog.option_releases(ctx.engine, option)
        if not present or option in ctx.release.strings:  # a sub-key of this release's flag: flag-unknown
            continue
        name = option[2:]
        replacement = catalog.REPLACEMENTS.get((ctx.engine, name))
        nearest = catalog.suggest_flag(ctx.release, entry.flag)
        if replacement and "--" + replacement[0] in ctx.release.strings:
            fix = "use --%s (%s)" % (replacement[0], replacement[1])
        elif nearest:
            fix = "use an image in that range, or the nearest flag of %s: %s" % (ctx.engine_label, " or ".join(nearest))
        else:
            fix = "use an image in that range or remove the flag"
        yield ctx.lacks("%s exists in %s, not in %s; %s" % (entry.written, _range_note(ctx.engine, present),
                                                            ctx.engine_label, fix),
                        upper_has=ctx.upper_flag(option) is not None)


def check_flag_abbreviation(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.form == "abbreviation":
            yield ("%s is accepted by %s's argparse only as an abbreviation of %s (a later release may add a "
                   "flag that makes it ambiguous); write %s"
                   % (entry.written, ctx.engine_label, entry.resolved["abbreviates"], entry.resolved["abbreviates"]))


def check_flag_deprecated(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        if entry.canonical and entry.spec.get("deprecated"):
            replacement = catalog.REPLACEMENTS.get((ctx.engine, entry.canonical))
            later = [v for v in catalog.releases(ctx.engine)
                     if catalog.parse_version(v) > catalog.parse_version(ctx.release.version)
                     and "--" + entry.canonical not in catalog.release(ctx.engine, v).strings]
            gone = (", gone in %s %s" % (ctx.engine, later[0])) if later else ""
            fix = ("use --%s (%s)" % replacement) if replacement else "see the image's --help for its replacement"
            yield ("%s is deprecated in %s (its parser registers it with a Deprecated* action%s); %s"
                   % (entry.written, ctx.engine_label, gone, fix))


def check_flag_value(ctx):
    if not ctx.checkable:
        return
    for entry in ctx.args:
        spec = entry.spec
        if entry.canonical is None or entry.subkey or entry.value is None or entry.value is False:
            continue
        if spec["value"] == "none":
            if entry.value is not True:
                negation = (" or `%s: true`" % spec["negations"][0].lstrip("-")) if spec["negations"] else ""
                upper = ctx.upper_flag(entry.canonical)
                yield ctx.lacks("%s takes no value in %s (an on/off flag) but has the value %s, which the engine "
                                "reads as a stray argument; write `%s: true`%s"
                                % (entry.written, ctx.engine_label, quoted(entry.value), entry.flag, negation),
                                upper_has=bool(upper and upper["value"] != "none"))
            continue
        if entry.value is True:
            if spec["value"] != "optional":
                upper = ctx.upper_flag(entry.canonical)
                yield ctx.lacks("%s needs a value in %s but is set to true (a bare flag); give it its value"
                                % (entry.written, ctx.engine_label),
                                upper_has=bool(upper and upper["value"] in ("none", "optional")))
            continue
        allowed = catalog.choices(spec)
        if allowed is None or isinstance(entry.value, (dict, list)):
            continue
        value = catalog.normalise_value(spec, entry.value)
        if value in allowed:
            continue
        present = catalog.value_releases(ctx.engine, entry.canonical, entry.value)
        shown = scrub(entry.value)
        where = ("%s %s exists in %s, not in %s" % (entry.written, shown, _range_note(ctx.engine, present),
                                                    ctx.engine_label)) if present else \
            ("%s %s is not a choice of %s" % (entry.written, shown, ctx.engine_label))
        same = catalog.same_meaning(entry.canonical, value, allowed)
        upper = ctx.upper_flag(entry.canonical)
        upper_choices = catalog.choices(upper) if upper else []
        yield ctx.lacks("%s; %schoose one of: %s" % (where, ("use %s, or " % same) if same else "", ", ".join(allowed)),
                        upper_has=bool(upper) and (upper_choices is None
                                                   or catalog.normalise_value(upper, entry.value) in upper_choices))


def check_sglang_underscore(ctx):
    if ctx.engine != "sglang":
        return
    for entry in ctx.args:
        # (an underscore spelling whose hyphenated one is no flag of the release either: flag-unknown)
        if "_" in entry.flag and (entry.canonical is not None or not ctx.checkable):
            yield ("%s: SGLang's argparse does not turn '_' into '-' and exits with 'unrecognized arguments'; "
                   "spell it --%s" % (entry.written, entry.flag.replace("_", "-")))


def check_vllm_speculative_keys(ctx):
    if ctx.engine != "vllm" or not ctx.checkable:
        return
    config, problems = ctx.speculative_config()
    for problem in problems:
        yield problem + "; give speculative_config as a mapping in the profile"
    for key in config:
        if key in ctx.release.speculative_keys:
            continue
        present = catalog.speculative_key_releases(key)
        if present:
            where = "exists in %s, not in %s" % (_range_note("vllm", present), ctx.engine_label)
        else:
            nearest = catalog.suggest(key, ctx.release.speculative_keys)
            where = "is in no vLLM release %s-%s%s" % (catalog.covered_range("vllm") + (
                ("; did you mean %r?" % nearest[0]) if nearest else "",))
        yield ctx.lacks("speculative_config key %r %s: SpeculativeConfig forbids unknown keys (pydantic "
                        "ValidationError at startup); drop the key or use an image that has it" % (key, where),
                        upper_has=ctx.upper is not None and key in ctx.upper.speculative_keys)


def check_vllm_nvfp4_moe_sm12x(ctx):
    if ctx.engine != "vllm" or not (ctx.is_nvfp4 and ctx.is_sm12x) or not ctx.checkable:
        return
    at_least = catalog.version_in
    backend = ctx.value("moe-backend")
    supported = kernels.nvfp4_moe_sm12x_backends(ctx.version, at_least)
    if not supported:  # older than every kernel that runs NVFP4 MoE on sm_12x
        first = min(kernels.NVFP4_MOE_SM12X.items(), key=lambda item: catalog.parse_version(item[1][0]))
        yield ("NVFP4 model on %s with --moe-backend %s: %s has no NVFP4 MoE kernel for sm_12x (the first is %s, "
               "from vLLM %s: %s); use an image of vLLM %s or later with args.moe-backend: marlin (what the "
               "GB10 field report measured)"
               % (ctx.sm_label, backend or "unset (auto)", ctx.engine_label, first[0], first[1][0], first[1][1],
                  first[1][0]))
        return
    if backend in (None, "auto"):
        auto = "FLASHINFER_CUTLASS" if "FLASHINFER_CUTLASS" in supported else "MARLIN"
        if auto != kernels.NVFP4_MOE_SEED_PREFERRED[0]:
            yield ("warning", "NVFP4 model on %s with --moe-backend %s: %s auto-selects %s for the NVFP4 MoE (it "
                              "runs on sm_12x from vLLM %s: %s), not the MARLIN the GB10 field report measured "
                              "(%s); set "
                              "args.moe-backend: marlin to keep the measured path"
                   % (ctx.sm_label, backend or "unset (auto)", ctx.engine_label, auto,
                      kernels.NVFP4_MOE_SM12X[auto][0], kernels.NVFP4_MOE_SM12X[auto][1],
                      kernels.NVFP4_MOE_SEED_PREFERRED[1]))
        return
    mapped = kernels.NVFP4_MOE_CLI.get(backend)
    supported_now = mapped is not None and kernels.nvfp4_moe_supported(
        mapped[0], ctx.compute_capability[0], ctx.version, at_least)
    if not supported_now:
        since = kernels.NVFP4_MOE_SM12X.get(mapped[0]) if mapped else None
        why = ("runs NVFP4 MoE on sm_12x only from vLLM %s (%s)" % since) if since else \
            "has no NVFP4 MoE kernel for sm_12x"
        yield ("NVFP4 model on %s with --moe-backend %s: %s %s; use one of: %s (args.moe-backend: marlin is "
               "what the GB10 field report measured)"
               % (ctx.sm_label, backend, mapped[0] if mapped else backend, why,
                  ", ".join(name.lower() for name in supported)))


def check_vllm_mtp_marlin(ctx):
    if not ctx.is_vllm_mtp or not ctx.checkable or ctx.value("moe-backend") != "marlin":
        return
    nested = ctx.speculative_config()[0].get("moe_backend")
    first_nested = catalog.speculative_key_releases("moe_backend")[0]
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
        value = catalog.normalise_value({"normalise": ["lower", "dash_to_underscore"]}, nested)
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
        now = ("no --attention-backend is set, so auto-selection may pick FLASHINFER" if backend is None
               else "--attention-backend is %s" % backend)
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
    if catalog.choices(entry.spec) is not None or ctx.engine not in catalog.REASONING_PARSERS:
        return  # the release's argparse choices are in the catalog: flag-value judges the name
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
    if ctx.engine != "sglang" or not ctx.is_burst_profile or ctx.sglang_speculative_algorithm:
        return  # with speculative decoding the cap is always set: sglang-spec-max-running-requests
    entry = ctx.arg("max-running-requests")
    if entry is not None and entry.state:
        yield ("%s %s on a burst profile caps the batch and queues the rest; remove it unless the "
               "profile is for latency, not burst" % (entry.written, scrub(entry.value)))


def _spec_reset_source(ctx):
    """The file:line of SGLang's reset to 48 for the catalog release (or the nearest one known)."""
    known = sorted(catalog.SGLANG_SPEC_RESET_SOURCE, key=catalog.parse_version)
    at_or_below = [v for v in known if catalog.parse_version(v) <= ctx.version] or known[:1]
    return "sglang %s %s" % (at_or_below[-1], catalog.SGLANG_SPEC_RESET_SOURCE[at_or_below[-1]])


def check_sglang_spec_max_running_requests(ctx):
    if not ctx.sglang_speculative_algorithm or not ctx.checkable:
        return
    entry = ctx.arg("max-running-requests")
    if entry is None or entry.state is None:
        yield ("--speculative-algorithm %s without --max-running-requests: %s resets it to %d (\"Max running "
               "requests is reset to 48 for speculative decoding\", %s), the cap that cut the g7e field report's burst "
               "throughput by 86%%; state the cap: set args.max-running-requests (48 is what the g7e field "
               "report's EAGLE run "
               "measured, a larger one needs memory headroom)"
               % (ctx.sglang_speculative_algorithm, ctx.engine_label, catalog.SGLANG_SPEC_MAX_RUNNING_REQUESTS,
                  _spec_reset_source(ctx)))


def check_sglang_sm120_required(ctx):
    if ctx.engine != "sglang" or not ctx.is_sm12x or not ctx.is_fp8_model or not ctx.checkable:
        return
    for flag, needed in kernels.SGLANG_SM120_REQUIRED.items():
        component = "fp8_gemm" if flag == "fp8-gemm-backend" else "moe_runner"
        if "--" + flag not in ctx.release.strings:
            yield ("%s has no --%s, so the FP8 %s cannot be forced to %s on %s; use an image that has it (%s)"
                   % (ctx.engine_label, flag, component.replace("_", " "), needed, ctx.sm_label,
                      _range_note(ctx.engine, catalog.option_releases(ctx.engine, "--" + flag))))
            continue
        value = ctx.value(flag)
        known = kernels.SGLANG_SM120_FP8[component].get(value)
        if value in (None, "auto"):
            yield ("FP8 model on %s with --%s %s: auto resolves to DeepGEMM/CUTLASS, which fail there (%s); set "
                   "args.%s: %s (the g7e field report: 'Required flags: --fp8-gemm-backend triton "
                   "--moe-runner-backend triton')"
                   % (ctx.sm_label, flag, value or "unset (auto)",
                      kernels.SGLANG_SM120_FP8[component]["deep_gemm"][1], flag, needed))
        elif known is not None and not known[0]:
            yield ("FP8 model on %s with --%s %s: %s; set args.%s: %s"
                   % (ctx.sm_label, flag, value, known[1], flag, needed))
        elif known is None:
            yield ("warning", "FP8 model on %s with --%s %s: the g7e field report proved only %s there; set args.%s: %s"
                   % (ctx.sm_label, flag, value, needed, flag, needed))
    attention = ctx.value("attention-backend")
    known = kernels.SGLANG_SM120_FP8["attention"].get(attention)
    if known is not None and not known[0]:
        yield ("--attention-backend %s on %s: %s; use flashinfer (or triton)" % (attention, ctx.sm_label, known[1]))


def check_sglang_deepep_pcie(ctx):
    if ctx.engine != "sglang":
        return
    platform = ctx.hardware.get("platform")
    interconnect = kernels.PLATFORM_INTERCONNECT.get(str(platform))
    backend = ctx.value("moe-a2a-backend")
    if backend in ("deepep", "deepep_v2") and interconnect and interconnect[0] == "pcie":
        yield ("%s %s on %s: %s; remove it (the default 'none' all-to-all works with EP)"
               % (ctx.arg("moe-a2a-backend").written, backend, platform, interconnect[1]))


def check_sglang_hicache_mamba(ctx):
    if ctx.engine != "sglang" or not ctx.is_nemotron_h:
        return
    entry = ctx.arg("enable-hierarchical-cache")
    if entry is not None and entry.state:
        yield ("%s on a hybrid Mamba model (NemotronH): HiMambaRadixCache fails (the g7e field report: bug 1 fixed in "
               "sglang#20504, bug 2 '_insert_helper() arg mismatch' still open on sglang#20495); remove it"
               % entry.written)


def check_sglang_eagle_mem_fraction(ctx):
    if not ctx.sglang_speculative_algorithm or not ctx.is_sm12x:
        return
    try:
        fraction = float(ctx.value("mem-fraction-static"))
    except (TypeError, ValueError):
        return
    if fraction > 0.80:
        yield ("--mem-fraction-static %s with --speculative-algorithm %s on %s: the g7e field report's MTP run "
               "OOMed at 0.85 "
               "under a 500-prompt burst and ran at 0.80; set args.mem-fraction-static: \"0.80\""
               % (ctx.value("mem-fraction-static"), ctx.sglang_speculative_algorithm, ctx.sm_label))


def _env_where(ctx, name):
    return _OVERRIDE_NOTE % ("env." + name) if name in ctx.env_from_override else ""


def _replacement(ctx, facts, value):
    """The flag that replaces an env var, with the value it should carry (the profile's if set)."""
    flag = facts["replacement"]
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
        status, facts, readers = catalog.env_status(ctx.engine, name, ctx.version)
        if status != "removed":
            continue
        message = "env %s=%s%s does nothing on %s (last read by %s %s); " % (
            name, value, _env_where(ctx, name), ctx.engine_label, ctx.engine, readers[-1])
        if facts and facts["replacement"]:
            # (`flag: false` or a bare `flag: true` sets no backend: the env var's choice is lost)
            if ctx.value(facts["replacement"]) is not None:
                yield ("warning", message + "remove it; %s already says it" % _replacement(ctx, facts, value))
            else:
                yield ctx.lacks(message + "set %s instead and remove it" % _replacement(ctx, facts, value),
                                upper_has=ctx.upper is not None and name in ctx.upper.env)
        else:
            yield ("warning", message + "remove it")


def check_env_deprecated(ctx):
    if not ctx.checkable:
        return
    for name, value in ctx.env.items():
        status, facts, readers = catalog.env_status(ctx.engine, name, ctx.version)
        if status == "deprecated":
            later = [v for v in catalog.releases(ctx.engine)
                     if catalog.parse_version(v) > catalog.parse_version(readers[-1])]
            yield ("env %s%s is deprecated on %s and does nothing from %s; move to %s"
                   % (name, _env_where(ctx, name), ctx.engine_label, later[0] if later else "a later release",
                      _replacement(ctx, facts, value)))


def check_env_unknown(ctx):
    if not ctx.checkable:
        return
    for name in ctx.env:
        status, facts, readers = catalog.env_status(ctx.engine, name, ctx.version)
        if status == "unknown":
            first, last = catalog.covered_range(ctx.engine)
            if facts and facts.get("hint"):
                hint = facts["hint"]
            else:
                nearest = catalog.suggest(name, ctx.release.env)
                hint = ("did you mean %s?" % nearest[0]) if nearest else "check the spelling, or remove it"
            yield ("env %s%s is read by no %s release %s-%s, so it does nothing; %s"
                   % (name, _env_where(ctx, name), catalog.ENGINE_LABELS[ctx.engine], first, last, hint))
        elif status == "too_new":
            yield ("env %s%s is read only from %s %s, not by %s; remove it or use a newer image"
                   % (name, _env_where(ctx, name), ctx.engine, readers[0], ctx.engine_label))


def check_env_value(ctx):
    if not ctx.checkable:
        return
    for name, value in ctx.env.items():
        status, facts, _readers = catalog.env_status(ctx.engine, name, ctx.version)
        if status not in ("active", "deprecated") or not facts or not facts["values"]:
            continue
        text = str(value).lower() if not isinstance(value, bool) else ("1" if value else "0")
        if not catalog.value_known(facts["values"], text, ctx.version)[0]:
            yield ("env %s=%s%s is not a value %s accepts; choose one of: %s"
                   % (name, value, _env_where(ctx, name), ctx.engine_label,
                      ", ".join(catalog.allowed_values(facts["values"], ctx.version))))


# ---------------------------------------------------------------------------------------------
# The rule table: id, default severity, check, why (the failure it prevents), where it was learned
# ---------------------------------------------------------------------------------------------
def _r(rule_id, severity, check, reason, source):
    return {"id": rule_id, "severity": severity, "check": check, "reason": reason, "source": source}


_CATALOG = ("engine catalog generated from each release's source (scripts/engine-catalog -> "
            "plugins/plugin_utils/engine_catalog/<engine>-<release>.json.gz)")

RULES = (
    _r("engine-unknown", "error", check_engine_known,
       "The renderer and every check depend on the engine; an unknown engine cannot be launched.",
       "the profile format (docs/write-your-own-profile.md): the engine names the launcher, how flags are "
       "spelt and which rules apply"),
    _r("engine-version-missing", "error", check_engine_version,
       "Flags and env vars come and go between engine versions; without image.engine_version the lint "
       "cannot tell whether the image has them.",
       _CATALOG),
    _r("engine-version-uncatalogued", "warning", check_engine_version_catalogued,
       "The catalog holds the parsers of vLLM 0.17.0-0.33.0 and SGLang 0.5.1-0.5.23; beyond them a flag may "
       "have appeared or gone without the lint knowing.",
       _CATALOG),
    _r("image-digest-malformed", "error", check_digest_malformed,
       "A digest that is not sha256 plus 64 lowercase hex digits cannot be pulled; the pull fails on every host.",
       "the OCI image digest format (sha256:<64 lowercase hex>); the pin workflow (playbooks/pin.yml, "
       "docs/operations.md 'Upgrades')"),
    _r("image-digest-known-bad", "error", check_digest_known_bad,
       "Some cu130-nightly digests crash (CUDA illegal memory access on the first MTP request); a digest "
       "on the known-bad list must not be deployed.",
       "the GB10 field report: IMAGE PIN note in docker-vllm-nemotron-3-super-120b-nvfp4-mtp.sh; "
       "data/known_bad_images.yml"),
    _r("image-tag-only", "warning", check_tag_only,
       "A tag moves (cu130-nightly is a rolling tag, 'not a reproducible pin'): two hosts, or one host on two "
       "days, may run different engines.",
       "the GB10 field reports: the IMAGE PIN note, and digest pinning as practice"),
    _r("model-revision-malformed", "error", weights.check_revision_malformed,
       "A revision the Hub cannot resolve to one commit (an abbreviated or uppercase id, an invalid ref name) "
       "fails the download on every host.",
       "issue 24; huggingface_hub REGEX_COMMIT_HASH (40 lowercase hex)"),
    _r("model-revision-branch", "warning", weights.check_revision_branch,
       "A branch or tag moves: a re-upload upstream changes the weights of a fleet silently.",
       "issue 24; sparkrun model_revision"),
    _r("model-revision-missing", "warning", weights.check_revision_missing,
       "Without a revision the engine loads the repository's head at its first start: two hosts deployed a week "
       "apart can serve different weights under the same proven profile.",
       "issue 24"),
    _r("model-revision-in-args", "error", weights.check_revision_in_args,
       "The revision flags are rendered from the profile's revision (one home); a flag in args could "
       "contradict the revision the cache was staged and verified at.",
       "issue 24"),
    _r("flag-unknown", "error", check_flag_unknown,
       "The engine's argument parser exits at startup on a flag it does not have ('unrecognized arguments'), "
       "on an ambiguous abbreviation, and on --x where only the short option -x exists.",
       _CATALOG),
    _r("flag-version", "error", check_flag_version,
       "Flags come and go between releases (e.g. SGLang removed --mamba-scheduler-strategy and "
       "--cuda-graph-max-bs in 0.5.20, vLLM --swap-space in 0.18); a flag the image's release lacks stops the "
       "engine at startup.",
       _CATALOG),
    _r("flag-abbreviation", "warning", check_flag_abbreviation,
       "Both engines' argparse accept a unique prefix of a long option; a release that adds a flag with the "
       "same prefix turns it into 'ambiguous option'.",
       _CATALOG + "; Python argparse allow_abbrev"),
    _r("flag-deprecated", "warning", check_flag_deprecated,
       "A deprecated flag still works but is removed in a later release; the next image bump would fail.",
       _CATALOG),
    _r("flag-value", "error", check_flag_value,
       "argparse rejects a value outside the flag's choices (invalid choice) and the engine exits (vLLM "
       "validates --attention-backend and, from 0.33, --kv-cache-dtype right after parsing); a flag that takes "
       "no value given one leaves a stray argument.",
       _CATALOG),
    _r("sglang-flag-underscore", "error", check_sglang_underscore,
       "SGLang uses plain argparse with no underscore-to-hyphen normalisation (vLLM has one): "
       "--moe_runner_backend is 'unrecognized arguments'.",
       "sglang/srt/server_args.py (argparse.ArgumentParser), every stored release"),
    _r("vllm-speculative-config-key", "error", check_vllm_speculative_keys,
       "vLLM's SpeculativeConfig forbids unknown keys: a key the image's release lacks (moe_backend < 0.19, "
       "attention_backend < 0.21, disable_by_batch_size in no release 0.17-0.33, speculative_token_tree gone "
       "in 0.21) is a pydantic ValidationError at startup.",
       _CATALOG + " (vllm/config/speculative.py SpeculativeConfig fields)"),
    _r("vllm-nvfp4-sm12x-moe-backend", "error", check_vllm_nvfp4_moe_sm12x,
       "Not every NVFP4 MoE kernel runs on sm_12x, and which do depends on the release (FLASHINFER_CUTLASS "
       "from 0.19.0, FLASHINFER_B12X from 0.22.0, B12X from 0.29.0; Marlin always); auto-selection then picks "
       "FLASHINFER_CUTLASS, which the GB10 field report saw regress, so Marlin stays explicit in the shipped profiles.",
       "plugins/plugin_utils/_kernel_support.py NVFP4_MOE_SM12X (vLLM source per release, shared with the lab "
       "simulator); the GB10 field report, findings.md section 1 and Gotchas; vLLM #38971"),
    _r("vllm-mtp-marlin-draft-moe-backend", "error", check_vllm_mtp_marlin,
       "The MTP head's MoE is unquantized and rejects marlin: one global --moe-backend cannot serve both "
       "(ValueError at startup) until vLLM 0.33; the per-path speculative_config.moe_backend fixes it but "
       "exists only from vLLM 0.19 (v0.17.1 fails with a pydantic ValidationError).",
       "the GB10 field report, findings.md section 1; vllm/model_executor/layers/fused_moe/oracle/ and "
       "vllm/config/speculative.py per release"),
    _r("vllm-mtp-attention-sm121", "error", check_vllm_mtp_attention_sm121,
       "FlashInfer attention with MTP crashes on sm_121 (GB10); only TRITON_ATTN is known to work.",
       "the GB10 field report, findings.md Gotchas; vLLM #37754"),
    _r("vllm-mtp-drafter-attention", "warning", check_vllm_drafter_attention,
       "From vLLM 0.21 the drafter never inherits --attention-backend; it auto-selects (FLASHINFER on "
       "Blackwell) unless speculative_config.attention_backend is set, bringing back the FlashInfer + MTP "
       "combination the main flag was meant to avoid.",
       "vllm/platforms/cuda.py get_attn_backend_cls and the drafter's attention config, vLLM 0.21+"),
    _r("vllm-prefix-caching-mtp-nemotronh", "error", check_vllm_prefix_caching_mtp,
       "Mamba prefix caching with MTP crashes on NemotronH (vLLM #39809), and on Nemotron-3-Super it gave 0 "
       "hits in 9,317 queries; vLLM >= 0.28 turns it on by default for hybrid models (0.26-0.27 keep it opt-in), "
       "so it must be turned off explicitly there (and backend_assert expects prefix_caching false).",
       "the GB10 field report, benchmark-results.md section 4 and findings.md section 5; vLLM #39809; "
       + "vllm/engine/arg_utils.py 0.28.0 line 2650, 0.27.0 line 2604"),
    _r("sglang-spec-moe-runner-sm120", "error", check_sglang_spec_moe_runner,
       "Without --speculative-moe-runner-backend triton the draft worker's MoE layers take a backend that is "
       "OOM-killed on SM120.",
       "the g7e field report: SM120 matrix (MTP/EAGLE row) and MTP section; sglang#20470"),
    _r("sglang-spec-radix-cache", "error", check_sglang_spec_radix_cache,
       "EAGLE/MTP on Nemotron-3-Super needs the radix cache off (--disable-radix-cache is required by MTP).",
       "the g7e field report: MTP / Speculative Decoding (EAGLE) section"),
    _r("sglang-spec-max-running-requests", "error", check_sglang_spec_max_running_requests,
       "With speculative decoding and no --max-running-requests SGLang silently caps running requests at 48, "
       "the cap that took the g7e field report's 500-prompt burst from 3,215 to 478 tok/s (-86%); the profile must "
       "state "
       "its cap so the cost is visible and chosen.",
       "the g7e field report, Gotchas ('--max-running-requests kills burst benchmarks'); "
       "sglang/srt/server_args.py:1740 "
       "(0.5.6.post2), sglang/srt/arg_groups/speculative_hook.py:283 (0.5.13), :1090 (0.5.23)"),
    _r("sglang-sm120-required-flags", "error", check_sglang_sm120_required,
       "On SM120 an FP8 checkpoint needs --fp8-gemm-backend triton and --moe-runner-backend triton: DeepGEMM "
       "asserts (kernel_runtime.hpp:45), CUTLASS FP8 is gated to SM90/SM100, and trtllm_mha attention is "
       "SM100-only; all three fail only on the host.",
       "the g7e field report, SM120 backend matrix and 'Required flags'; plugins/plugin_utils/_kernel_support.py"),
    _r("sglang-deepep-pcie", "error", check_sglang_deepep_pcie,
       "DeepEP all-to-all needs NVLink/P2P; the g7e's 8 GPUs sit on PCIe and DeepEP fails there.",
       "the g7e field report, SM120 matrix ('DeepEP FAIL: PCIe P2P topology (universal g7e blocker)')"),
    _r("sglang-hicache-mamba", "error", check_sglang_hicache_mamba,
       "HiCache on a hybrid Mamba model (HiMambaRadixCache) fails: one bug fixed, '_insert_helper() arg count "
       "mismatch' still open.",
       "the g7e field report, 'HiCache on Mamba-2 - two bugs' (sglang#20495, #20504)"),
    _r("sglang-eagle-mem-fraction", "warning", check_sglang_eagle_mem_fraction,
       "EAGLE/MTP at --mem-fraction-static 0.85 OOMed under a 500-prompt burst on SM120; the g7e field report ran "
       "it at "
       "0.80.",
       "the g7e field report, MTP section ('MTP at 0.85 OOMs under 500-prompt burst')"),
    _r("sglang-mamba-extra-buffer-nemotronh", "error", check_sglang_mamba_extra_buffer,
       "SGLang asserts 'mamba extra_buffer is not supported for NemotronHForCausalLM' at startup in "
       "0.5.7-0.5.12, and from 0.5.15 unless linear_attn_backend is triton.",
       "the g7e field report, Gotchas ('extra_buffer mamba scheduler not supported'); "
       "sglang/srt/server_args.py per release"),
    _r("reasoning-parser-name", "error", check_reasoning_parser,
       "vLLM's reasoning parser is looked up in a registry at server setup, not by argparse: the Nemotron-3 "
       "parser is nemotron_v3 from 0.17.1, and a wrong name fails at server setup (SGLang's names are "
       "argparse choices, judged by flag-value: nemotron_3 from 0.5.10, nano_v3 in 0.5.7-0.5.9).",
       "the g7e field report, Gotchas (reasoning parser name); vLLM's reasoning parser registry "
       "(vllm/reasoning/) and SGLang's --reasoning-parser choices per release"),
    _r("sglang-max-running-requests-burst", "warning", check_sglang_max_running_requests,
       "--max-running-requests 48 dropped burst throughput from 3,215 to 478 tok/s (-86%): 500 concurrent "
       "prompts queue behind the cap and tail requests wait 50+ s before prefill.",
       "the g7e field report, Gotchas ('--max-running-requests kills burst benchmarks')"),
    _r("env-removed", "error", check_env_removed,
       "An env var the image's release no longer reads does nothing (vLLM only warns 'Unknown vLLM environment "
       "variable'); for VLLM_NVFP4_GEMM_BACKEND, VLLM_USE_FLASHINFER_MOE_FP4 and VLLM_FLASHINFER_MOE_BACKEND "
       "(gone in 0.24) what they chose silently falls back to auto unless --linear-backend / --moe-backend say it.",
       _CATALOG + " (vllm/envs.py per release)"),
    _r("env-deprecated", "warning", check_env_deprecated,
       "vLLM 0.22-0.23 still read these env vars with a FutureWarning; the next image bump drops them.",
       "vllm/envs.py of vLLM 0.22-0.23 (the FutureWarning '... is deprecated and will be removed')"),
    _r("env-unknown", "warning", check_env_unknown,
       "An engine-prefixed env var no release reads does nothing (a typo or a knob that never existed, like "
       "the g7e field report's SGLANG_DISABLE_DEEP_GEMM); vLLM warns 'Unknown vLLM environment variable' and fails "
       "with "
       "--fail-on-environ-validation.",
       _CATALOG + " (vllm/envs.py; sglang/srt/environ.py and the package's env reads)"),
    _r("env-value", "error", check_env_value,
       "An env var value outside the engine's choices is rejected or ignored at startup.",
       "vllm/envs.py per release (each variable's choices)"),
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
    """Findings as lines an operator reads: ``ERROR [rule] message (why: reason; source: source)``.

    The one spelling of a finding: the preflight role and playbooks/show_launch.yml print these
    lines (through the profile_lint filter's report option), never their own.
    """
    return ["%s [%s] %s (why: %s; source: %s)" % (f["severity"].upper(), f["rule"], f["message"], f["reason"],
                                                  f["source"]) for f in findings]


def lint_report(findings, fail_on_warnings=False):
    """``{"failures", "notes"}``: the lines of the findings that refuse the profile (errors, and the
    warnings too when ``fail_on_warnings``) and of the rest, each as :func:`format_findings` spells it."""
    failing = [f for f in findings if f["severity"] == "error" or fail_on_warnings]
    return {"failures": format_findings(failing), "notes": format_findings([f for f in findings if f not in failing])}
