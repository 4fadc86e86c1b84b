# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Benchmark decisions: summarise runs, tabulate them beside a profile's ``measured`` figures,
advise the number of draft tokens, choose a configuration for a latency objective, write it as
an inventory overlay, and gate a new image on its throughput and speculative acceptance.

Pure functions over plain dicts (what a load generator's JSON and ``/metrics`` give); the
playbooks run the load and write files, these decide. Every rule is written in its function's
docstring with the field report it follows.
"""
from __future__ import annotations

import math

from ansible_collections.inferops.serving.plugins.module_utils._prometheus import metric_by_label, metric_max, metric_sum

# Figures of one concurrency level, as a load generator reports them (the GB10 field report: guidellm 0.6.0;
# the g7e field report: bench_serving). Optional ones are summarised when every used run has them.
LEVEL_FIGURES = ("output_tok_s", "ttft_p50_s", "ttft_p99_s", "itl_p50_ms", "itl_p99_ms", "requests_per_s")
# accept_length: SGLang's speculative acceptance, the gauge sglang:spec_accept_length (SGLang 0.5.4
# srt/metrics/collector.py; set by srt/managers/scheduler_metrics_mixin.py every decode log interval
# to (accepted draft tokens + verify steps) / verify steps: tokens per step, the bonus token included).
# SGLang exports no per-position counter; vLLM's per-position rates are acceptance_per_pos.
OPTIONAL_FIGURES = ("kv_cache_usage", "accept_length")
# Upper bounds a latency objective may set (choose()); "min_<figure>" sets a lower bound.
OBJECTIVE_FIGURES = LEVEL_FIGURES + OPTIONAL_FIGURES
# Seed 000 s.1: a draft token costs 9.3 ms on a 65.3 ms base step (k=2 24.2 vs k=3 23.5 tok/s
# single stream at acceptance 0.67/0.36/0.16), i.e. 14 % of a step.
DRAFT_COST = 0.1424
# Measured tok/s within this share of the best count as a tie: the smaller k wins (the GB10 field report:
# "k=2 is as fast as k=3 and cheaper").
K_TIE = 0.02
# A speculative image whose accepted draft tokens per step fell below this share of the
# baseline's has collapsed acceptance (the GB10 write-up: MTP "silently off", 9.5 tok/s).
ACCEPTANCE_COLLAPSE = 0.5


class BenchError(ValueError):
    """Benchmark input that cannot be decided on; the message names the field and the fix."""


def _number(value, where):
    if isinstance(value, dict) and "mean" in value:
        value = value["mean"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise BenchError("%s: got %r; expected a number" % (where, value))
    return float(value)


def _per_position(text, name):
    return {int(position): value for position, value in metric_by_label(text, name, "position").items()
            if position.isdigit()}


def level_metrics(before, after, names):
    """What one level's ``/metrics`` say, from the text before and after it (``names``: the
    deployment plan's ``metrics``, _engines.METRICS of its engine).

    vLLM: ``acceptance_per_pos`` = the per-position accepted-token counter's delta over the
    drafts counter's delta (the unconditional acceptance of each draft position; the GB10 field report read
    0.67 / 0.36 / 0.16 this way); SGLang: ``accept_length``, the gauge after the level. Both:
    ``kv_cache_usage`` (the usage gauge after the level, 0-1) and ``generation_tokens`` (delta).
    A figure the engine does not export is None.
    """
    figures = {"acceptance_per_pos": None, "accept_length": None, "kv_cache_usage": None,
               "generation_tokens": None}
    generated = metric_sum(after, names.get("generation_tokens"))
    if generated is not None:
        figures["generation_tokens"] = generated - (metric_sum(before, names.get("generation_tokens")) or 0.0)
    figures["kv_cache_usage"] = metric_max(after, names.get("kv_cache_usage"))
    if names.get("spec_drafts") and names.get("spec_accepted_per_pos"):
        drafts = (metric_sum(after, names["spec_drafts"]) or 0.0) - (metric_sum(before, names["spec_drafts"]) or 0.0)
        if drafts > 0:
            start = _per_position(before, names["spec_accepted_per_pos"])
            end = _per_position(after, names["spec_accepted_per_pos"])
            figures["acceptance_per_pos"] = [(end[position] - start.get(position, 0.0)) / drafts
                                             for position in sorted(end)]
    if names.get("spec_accept_length"):
        figures["accept_length"] = metric_max(after, names["spec_accept_length"])
    return figures


def _mean_std(values):
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"mean": mean, "std": 0.0}
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return {"mean": mean, "std": math.sqrt(variance)}


def summarise(runs):
    """Mean +- sample standard deviation per concurrency level over the runs that count.

    Rule (the g7e field report's methodology, "3 runs minimum, report R2-R3 mean +- std (R1 is cold-start)";
    the GB10 write-up: the first requests after a start pay the CUDA-graph tax): with 3 or more runs,
    the run with the lowest ``run`` number is a warm-up and is dropped; with fewer, every run
    counts and ``warmup_dropped`` is False (report that the figures include a cold run). The
    standard deviation is the sample one (n - 1): the g7e field report's R2 3,232 and R3 3,198 give
    3,215 +- 24. ``kv_cache_usage``, ``accept_length`` (SGLang's mean tokens per speculative step,
    ``sglang:spec_accept_length``) and ``acceptance_per_pos`` (vLLM's, per draft position) are
    summarised when every run that has the level reports them.

    ``runs``: ``[{"run": 1, "levels": [{"concurrency": 4, "output_tok_s": 47.7, "ttft_p50_s": ...,
    "ttft_p99_s": ..., "itl_p50_ms": ..., "itl_p99_ms": ..., "requests_per_s": ...,
    "kv_cache_usage": 0.076, "acceptance_per_pos": [0.67, 0.36]}, ...]}, ...]`` (SGLang:
    ``"accept_length": 3.2`` instead of ``acceptance_per_pos``).
    """
    if not isinstance(runs, list) or not runs:
        raise BenchError("runs: got %r; expected a non-empty list of {run, levels}" % (runs,))
    for index, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("levels"), list) or "run" not in run:
            raise BenchError("runs[%d]: expected {run: <number>, levels: [...]}, got %r" % (index, run))
    ordered = sorted(runs, key=lambda run: run["run"])
    used = ordered[1:] if len(ordered) >= 3 else ordered
    by_level = {}
    for run in used:
        for level in run["levels"]:
            if not isinstance(level, dict) or "concurrency" not in level:
                raise BenchError("run %s: a level without concurrency: %r" % (run["run"], level))
            by_level.setdefault(level["concurrency"], []).append((run["run"], level))
    levels = []
    for concurrency in sorted(by_level):
        entries = by_level[concurrency]
        summary = {"concurrency": concurrency, "runs": [run for run, dummy in entries]}
        for figure in LEVEL_FIGURES:
            summary[figure] = _mean_std([_number(level.get(figure), "run %s, concurrency %s, %s"
                                                 % (run, concurrency, figure)) for run, level in entries])
        for figure in OPTIONAL_FIGURES:
            if all(level.get(figure) is not None for dummy, level in entries):
                summary[figure] = _mean_std([_number(level[figure], "run %s, concurrency %s, %s"
                                                     % (run, concurrency, figure)) for run, level in entries])
        positions = [level.get("acceptance_per_pos") for dummy, level in entries]
        if all(isinstance(pos, list) and pos for pos in positions):
            width = min(len(pos) for pos in positions)
            per_pos = [_mean_std([_number(pos[i], "concurrency %s, acceptance_per_pos[%d]" % (concurrency, i))
                                  for pos in positions]) for i in range(width)]
            summary["acceptance_per_pos"] = {"mean": [entry["mean"] for entry in per_pos],
                                             "std": [entry["std"] for entry in per_pos]}
        levels.append(summary)
    return {"runs_used": [run["run"] for run in used], "warmup_dropped": len(ordered) >= 3,
            "warmup_run": ordered[0]["run"] if len(ordered) >= 3 else None, "levels": levels}


# Where each figure of a profile's ``measured`` section was taken: at concurrency 1, at the saturation
# point (client concurrency equal to the profile's max-num-seqs: the GB10 field report's sweep), or at the burst's
# size (the g7e field report: 500 prompts at once). Earlier keys win where two give the same figure at one level.
MEASURED_AT = (("single_stream_tok_s", "output_tok_s", "single"),
               ("aggregate_tok_s", "output_tok_s", "saturation"),
               ("saturated_tok_s", "output_tok_s", "saturation"),
               ("sustained_tok_s", "output_tok_s", "saturation"),
               ("ttft_at_saturation_s", "ttft_s", "saturation"),
               ("kv_cache_usage_at_saturation", "kv_cache_usage", "saturation"),
               ("burst_output_tok_s", "output_tok_s", "burst"))


def measured_number(value):
    """A ``measured`` figure as a number: ``24.2`` -> 24.2, ``"15-17"`` -> 16.0 (a range's middle);
    None for prose or a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    parts = str(value).replace("\u2013", "-").split("-")
    try:
        numbers = [float(part) for part in parts if part.strip()]
    except ValueError:
        return None
    return sum(numbers) / len(numbers) if numbers and len(parts) <= 2 else None


def measured_figures(measured, max_num_seqs=None, burst_requests=None):
    """A profile's ``measured`` figures with the concurrency each was taken at (MEASURED_AT):
    ``[(key, figure, concurrency, value)]``, in MEASURED_AT's order. A figure whose concurrency is
    unknown here (no max-num-seqs, or no burst in this sweep) or whose value is not a number is left out;
    so is a second figure for one level (the GB10 field report's profile has both ``saturated_tok_s`` 131.3 and
    ``sustained_tok_s`` 136 at 32: the first in MEASURED_AT's order stands)."""
    measured = measured or {}
    at = {"single": 1, "saturation": max_num_seqs, "burst": burst_requests}
    out, seen = [], set()
    for key, figure, where in MEASURED_AT:
        value = measured_number(measured[key]) if key in measured else None
        if value is not None and at[where] and (figure, int(at[where])) not in seen:
            seen.add((figure, int(at[where])))
            out.append((key, figure, int(at[where]), value))
    return out


def burst_size(summary_):
    """The burst's size when the sweep was a burst (its plan's workload), else None: the only sweep a
    profile's burst figure is compared with."""
    plan = (summary_ or {}).get("plan") or {}
    if plan.get("workload") != "burst":
        return None
    return max((level.get("concurrency") or 0 for level in summary_.get("levels", [])), default=0) or None


def measured_levels(measured, max_num_seqs=None, burst_requests=None):
    """A profile's ``measured`` section as per-level figures: ``{concurrency: {figure: value}}``.

    The figures of MEASURED_AT at their concurrency (measured_figures); a ``levels`` mapping in the
    section is taken as it is, the named figures laid over it. Figures given as ranges ("15-17") are
    taken at their middle.
    """
    measured = measured or {}
    levels = {}
    for concurrency, figures in (measured.get("levels") or {}).items():
        levels[int(concurrency)] = dict(figures)
    for _key, figure, concurrency, value in measured_figures(measured, max_num_seqs, burst_requests):
        levels.setdefault(concurrency, {})[figure] = value
    return {concurrency: figures for concurrency, figures in levels.items() if figures}


def _pm(figure, digits):
    if figure is None:
        return "-"
    if figure["std"]:
        return "%.*f ± %.*f" % (digits, figure["mean"], digits, figure["std"])
    return "%.*f" % (digits, figure["mean"])


def _acceptance_text(level):
    """A level's speculative acceptance for the table: vLLM's per-position rates ("0.67 / 0.36"),
    SGLang's accept length ("3.20 tokens/step"), or "-"."""
    positions = level.get("acceptance_per_pos")
    if positions:
        return " / ".join("%.2f" % rate for rate in positions["mean"])
    if level.get("accept_length"):
        return "%s tokens/step" % _pm(level["accept_length"], 2)
    return "-"


def markdown_table(summary, measured=None):
    """One row per level: mean +- std of each figure (the speculative acceptance when the engine
    reports it), and beside it the profile's measured
    output tok/s and TTFT at that level with the relative difference (``measured``: the output
    of measured_levels(), ``{concurrency: {"output_tok_s", "ttft_s"}}``)."""
    measured = measured or {}
    header = ["concurrency", "output tok/s", "TTFT p50 s", "TTFT p99 s", "ITL p50 ms", "ITL p99 ms",
              "req/s", "KV cache"]
    speculative = any(level.get("acceptance_per_pos") or level.get("accept_length") for level in summary["levels"])
    if speculative:
        header.append("spec acceptance")
    if measured:
        header += ["measured tok/s", "vs measured", "measured TTFT s"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for level in summary["levels"]:
        kv = level.get("kv_cache_usage")
        row = [str(level["concurrency"]), _pm(level["output_tok_s"], 1), _pm(level["ttft_p50_s"], 2),
               _pm(level["ttft_p99_s"], 2), _pm(level["itl_p50_ms"], 0), _pm(level["itl_p99_ms"], 0),
               _pm(level["requests_per_s"], 2), ("%.1f %%" % (100 * kv["mean"])) if kv else "-"]
        if speculative:
            row.append(_acceptance_text(level))
        if measured:
            reference = measured.get(level["concurrency"], {})
            tok_s = reference.get("output_tok_s")
            row.append("%.1f" % tok_s if tok_s is not None else "-")
            row.append("%+.1f %%" % (100 * (level["output_tok_s"]["mean"] / tok_s - 1)) if tok_s else "-")
            row.append("%.1f" % reference["ttft_s"] if reference.get("ttft_s") is not None else "-")
        lines.append("| " + " | ".join(row) + " |")
    note = ("runs %s (run %s dropped as warm-up)" % (", ".join(str(run) for run in summary["runs_used"]),
                                                     summary["warmup_run"]) if summary.get("warmup_dropped")
            else "runs %s (no warm-up run dropped: fewer than 3 runs)"
            % ", ".join(str(run) for run in summary["runs_used"]))
    return "\n".join(lines) + "\n\nMean ± sample std over " + note + ".\n"


def advise_k(acceptance_per_pos, tok_s_by_k=None, draft_cost=DRAFT_COST):
    """The number of draft tokens per step (k) to run.

    Measured throughput wins: with ``tok_s_by_k`` (``{k: output tok/s}`` at the workload's
    concurrency), the k with the highest tok/s, the smaller k when within 2 % of the best (a
    draft costs compute and KV). Seed 001: k=1 14.5-14.9 vs k=2 10.5 tok/s at 8 concurrent, so
    k=1, whatever the acceptance says.

    Without it, from the per-position acceptance (unconditional: position i accepted in this
    share of steps; vLLM ``spec_decode_num_accepted_tokens_per_pos_total / num_drafts``): a step
    with k drafts yields ``E_k = 1 + a_0 + ... + a_{k-1}`` tokens and costs ``1 + k * c`` base
    steps (c: a draft token's cost, the GB10 field report's 14 %). Position k is kept while it pays for its
    forward: ``a_k / E_k > c / (1 + k * c)``, i.e. tokens per unit time grow. Seed 000 at
    temperature 1.0, 0.67 / 0.36 / 0.16: position 1 (0.36 / 1.67 = 0.22 > 0.125) is kept,
    position 2 (0.16 / 2.03 = 0.079 < 0.111) is not: k = 2, as the seed chose.
    """
    if tok_s_by_k:
        try:
            measured = {int(k): _number(v, "tok_s_by_k[%s]" % k) for k, v in tok_s_by_k.items()}
        except (TypeError, ValueError) as exc:
            raise BenchError("tok_s_by_k: %s; expected {k: output tok/s}" % exc)
        best = max(measured.values())
        k = min(k for k, tok_s in measured.items() if tok_s >= best * (1 - K_TIE))
        return {"k": k, "rule": "measured", "tok_s_by_k": measured,
                "reason": "k=%d: %.1f tok/s measured, the best (or within %d %% of it with fewer drafts) of %s"
                          % (k, measured[k], round(100 * K_TIE),
                             ", ".join("k=%d %.1f" % item for item in sorted(measured.items())))}
    if not isinstance(acceptance_per_pos, list) or not acceptance_per_pos:
        raise BenchError("acceptance_per_pos: got %r; expected the per-position acceptance rates "
                         "(vllm:spec_decode_num_accepted_tokens_per_pos_total / num_drafts), or give tok_s_by_k"
                         % (acceptance_per_pos,))
    rates = [_number(rate, "acceptance_per_pos[%d]" % index) for index, rate in enumerate(acceptance_per_pos)]
    k, expected, steps = 0, 1.0, []
    for position, rate in enumerate(rates):
        gain, cost = rate / expected, draft_cost / (1 + position * draft_cost)
        keep = gain > cost
        steps.append({"position": position, "acceptance": rate, "gain": gain, "cost": cost, "kept": keep})
        if not keep:
            break
        k, expected = position + 1, expected + rate
    return {"k": k, "rule": "acceptance", "expected_tokens_per_step": expected, "positions": steps,
            "reason": "k=%d: draft position %d is kept while its acceptance over the tokens per step "
                      "exceeds a draft's cost (%.0f %% of a step); acceptance %s"
                      % (k, k, 100 * draft_cost, " / ".join("%.2f" % rate for rate in rates))}


def acceptance_from_accept_lengths(lengths_by_k):
    """Per-position acceptance from SGLang's accept lengths measured at k = 1, 2, ..., K.

    SGLang exports no per-position counter, only ``sglang:spec_accept_length``: tokens per verify
    step, ``L_k = 1 + a_0 + ... + a_{k-1}`` with ``a_i`` the unconditional acceptance of draft
    position i. With chain drafting (``--speculative-eagle-topk 1``, draft tokens = steps + 1, as
    overlay() writes) a position's draft does not depend on how many follow it, so the lengths of
    a k sweep give each position: ``a_0 = L_1 - 1``, ``a_i = L_{i+1} - L_i`` (clamped to 0-1: two
    sweeps' noise). Seed 002's EAGLE, 3.2 tokens per step at k=3, is the sum of three such rates.

    ``lengths_by_k``: ``{k: accept length}``; the k values must run 1..K without a gap (a rate
    needs its neighbour). Returns the rates, or None when they cannot be derived.
    """
    try:
        lengths = {int(k): _number(value, "accept length at k=%s" % k) for k, value in (lengths_by_k or {}).items()}
    except (TypeError, ValueError) as exc:
        raise BenchError("lengths_by_k: %s; expected {k: accept length}" % exc)
    if not lengths or sorted(lengths) != list(range(1, max(lengths) + 1)):
        return None
    rates, previous = [], 1.0
    for k in range(1, max(lengths) + 1):
        rates.append(min(max(lengths[k] - previous, 0.0), 1.0))
        previous = lengths[k]
    return rates


def _bounds(objective):
    if not isinstance(objective, dict) or not objective:
        raise BenchError("objective: got %r; expected limits such as {ttft_p99_s: 4.0, itl_p99_ms: 150}"
                         % (objective,))
    bounds = []
    for key, limit in objective.items():
        figure, lower = (key[4:], True) if key.startswith("min_") else (key, False)
        if figure not in OBJECTIVE_FIGURES:
            raise BenchError("objective.%s: unknown figure; expected one of %s (min_<figure> for a lower bound)"
                             % (key, ", ".join(OBJECTIVE_FIGURES)))
        bounds.append((key, figure, lower, _number(limit, "objective.%s" % key)))
    return bounds


def choose(sweep, objective):
    """The configuration with the highest output tok/s among those meeting the objective.

    ``sweep``: ``[{"config": {"max_num_seqs": 16, "k": 2, "max_num_batched_tokens": 8192},
    "output_tok_s": 99.6, "ttft_p99_s": 7.7, ...}]`` (figures at the configuration's own
    saturation point, client concurrency = max-num-seqs as the GB10 field report swept; numbers or
    summarise()'s ``{mean, std}``). ``objective``: upper bounds on figures (``ttft_p99_s``,
    ``itl_p99_ms``, ...), ``min_<figure>`` for lower bounds. Rule (the GB10 field report: "pick max_num_seqs
    to your latency SLO, not the max"): drop every configuration that breaks a bound, take the
    highest output tok/s; on a tie the smaller max_num_seqs (less KV, less queueing), then the
    smaller k. Seed 000's sweep with TTFT <= 8 s: 4 (1.2 s), 8 (6.6 s) and 16 (7.7 s) meet it,
    32 (9.1 s) does not; 16 has the most tok/s (99.6): 16.

    Returns ``{"choice": config or None, "met": bool, "evidence": {...}, "message": str}``.
    """
    bounds = _bounds(objective)
    if not isinstance(sweep, list) or not sweep:
        raise BenchError("sweep: got %r; expected a list of {config, output_tok_s, ...}" % (sweep,))
    met, rejected = [], []
    for index, entry in enumerate(sweep):
        if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
            raise BenchError("sweep[%d]: expected {config: {max_num_seqs: ...}, output_tok_s: ...}, got %r"
                             % (index, entry))
        figures = {"output_tok_s": _number(entry.get("output_tok_s"), "sweep[%d].output_tok_s" % index)}
        broken = []
        for dummy, figure, lower, limit in bounds:
            value = _number(entry.get(figure), "sweep[%d].%s" % (index, figure))
            figures[figure] = value
            if (value < limit) if lower else (value > limit):
                broken.append("%s %g %s %g" % (figure, value, "<" if lower else ">", limit))
        record = {"config": dict(entry["config"]), "figures": figures}
        if broken:
            record["broken"] = broken
            rejected.append(record)
        else:
            met.append(record)
    evidence = {"objective": dict(objective), "rule": "highest output tok/s meeting every bound",
                "met": met, "rejected": rejected}
    if not met:
        closest = min(rejected, key=lambda record: len(record["broken"]))
        return {"choice": None, "met": False, "evidence": evidence,
                "message": "no configuration meets %s; the closest, %s, breaks %s: relax the objective or "
                           "sweep smaller max_num_seqs" % (_objective_text(objective), _config_text(closest["config"]),
                                                           "; ".join(closest["broken"]))}
    best = sorted(met, key=lambda record: (-record["figures"]["output_tok_s"],
                                           record["config"].get("max_num_seqs", 0),
                                           record["config"].get("k", 0)))[0]
    evidence["chosen"] = best
    return {"choice": dict(best["config"]), "met": True, "evidence": evidence,
            "message": "%s: %.1f tok/s, the most of the %d configurations meeting %s"
                       % (_config_text(best["config"]), best["figures"]["output_tok_s"], len(met),
                          _objective_text(objective))}


def _config_text(config):
    return ", ".join("%s=%s" % item for item in sorted(config.items()))


def _objective_text(objective):
    return ", ".join("%s %s %g" % (key[4:], ">=", value) if key.startswith("min_") else "%s <= %g" % (key, value)
                     for key, value in sorted(objective.items()))


# Flags a chosen configuration sets, per engine (plugins/plugin_utils/_engines.py EXPECT_FLAGS:
# vLLM max-num-seqs / SGLang max-running-requests; the draft tokens: vLLM's speculative config
# key, SGLang's steps and draft tokens, steps + 1 with --speculative-eagle-topk 1).
def _args(engine, config):
    args = {}
    if engine == "vllm":
        if config.get("max_num_seqs") is not None:
            args["max-num-seqs"] = int(config["max_num_seqs"])
        if config.get("max_num_batched_tokens") is not None:
            args["max-num-batched-tokens"] = int(config["max_num_batched_tokens"])
        if config.get("k") is not None:
            args["speculative_config.num_speculative_tokens"] = int(config["k"])
    elif engine == "sglang":
        if config.get("max_num_seqs") is not None:
            args["max-running-requests"] = int(config["max_num_seqs"])
        if config.get("max_num_batched_tokens") is not None:
            args["chunked-prefill-size"] = int(config["max_num_batched_tokens"])
        if config.get("k") is not None:
            args["speculative-num-steps"] = int(config["k"])
            args["speculative-num-draft-tokens"] = int(config["k"]) + 1
    else:
        raise BenchError("engine: got %r; expected vllm or sglang" % (engine,))
    return args


def overlay(choice, evidence, engine="vllm"):
    """The inventory overlay for a chosen configuration: ``server_profile_overrides: {args}``
    (the shape README "Pick a profile per host group" documents and _profile.apply_overrides
    takes) and, beside it, ``server_profile_overrides_evidence``: the objective, the chosen
    figures and what was rejected (a sibling variable: overrides accept only the overlay keys,
    so the evidence cannot live inside them). A shipped profile is never edited.
    """
    if not isinstance(choice, dict) or not choice:
        raise BenchError("choice: got %r; nothing to write (choose() met no configuration)" % (choice,))
    args = _args(engine, choice)
    if not args:
        raise BenchError("choice: %r sets none of max_num_seqs, max_num_batched_tokens, k" % (choice,))
    return {"server_profile_overrides": {"args": args},
            "server_profile_overrides_evidence": dict(evidence or {})}


def _accepted_per_step(figures):
    """Mean accepted draft tokens per step: the sum of the per-position acceptance (vLLM), or the
    accept length less the bonus token (SGLang ``spec_accept_length``); None without either."""
    positions = figures.get("acceptance_per_pos")
    if isinstance(positions, dict):
        positions = positions.get("mean")
    if isinstance(positions, list) and positions:
        return sum(_number(rate, "acceptance_per_pos") for rate in positions)
    if figures.get("accept_length") is not None:
        return _number(figures["accept_length"], "accept_length") - 1.0
    return None


def gate(baseline, candidate, threshold=0.10):
    """Accept or refuse a candidate image against the lock's recorded baseline.

    Refused when (1) its output tok/s at the reference concurrency is below the baseline's by
    more than ``threshold`` (default 10 %: issue 12's "a nightly 30 % slower is refused"), or
    (2) speculative acceptance collapsed: the baseline accepted drafts, and the candidate's
    accepted draft tokens per step (sum of the per-position acceptance, or SGLang's accept length
    less one) fell below half the baseline's, or it reports none (the GB10 write-up: MTP configured and
    "on" while silently off at 9.5 tok/s). Both figures are in the verdict and its message.

    ``baseline`` / ``candidate``: ``{"concurrency": 32, "output_tok_s": 131.3,
    "acceptance_per_pos": [0.67, 0.36]}`` (or ``accept_length``); figures may be summarise()'s
    ``{mean, std}``.
    """
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 <= threshold < 1:
        raise BenchError("threshold: got %r; expected a fraction from 0 to 1, e.g. 0.10" % (threshold,))
    for name, figures in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(figures, dict):
            raise BenchError("%s: got %r; expected {concurrency, output_tok_s, ...}" % (name, figures))
    if baseline.get("concurrency") != candidate.get("concurrency"):
        raise BenchError("candidate measured at concurrency %r, baseline at %r: measure both at the profile's "
                         "reference concurrency" % (candidate.get("concurrency"), baseline.get("concurrency")))
    base_tok = _number(baseline.get("output_tok_s"), "baseline.output_tok_s")
    cand_tok = _number(candidate.get("output_tok_s"), "candidate.output_tok_s")
    if base_tok <= 0:
        raise BenchError("baseline.output_tok_s: got %g; a baseline must have produced tokens" % base_tok)
    change = cand_tok / base_tok - 1
    base_acc, cand_acc = _accepted_per_step(baseline), _accepted_per_step(candidate)
    reasons = []
    figures = "output %.1f tok/s at concurrency %s vs the baseline's %.1f tok/s (%+.1f %%, threshold -%g %%)" % (
        cand_tok, candidate.get("concurrency"), base_tok, 100 * change, 100 * threshold)
    if change < -threshold:
        reasons.append("throughput")
    collapsed = bool(base_acc) and (cand_acc is None or cand_acc < ACCEPTANCE_COLLAPSE * base_acc)
    if base_acc:
        figures += "; accepted draft tokens per step %s vs the baseline's %.2f" % (
            "none reported" if cand_acc is None else "%.2f" % cand_acc, base_acc)
    if collapsed:
        reasons.append("speculative acceptance")
    accepted = not reasons
    message = ("accepted: " + figures) if accepted else (
        "refused (%s): %s" % (" and ".join(reasons), figures))
    return {"accepted": accepted, "reasons": reasons, "concurrency": candidate.get("concurrency"),
            "baseline_tok_s": base_tok, "candidate_tok_s": cand_tok, "change": change, "threshold": threshold,
            "baseline_accepted_per_step": base_acc, "candidate_accepted_per_step": cand_acc, "message": message}
