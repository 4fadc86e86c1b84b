# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_plan
author: inferops.serving contributors (@inferops)
short_description: What the benchmark role and the pin role's benchmark decide
version_added: 0.1.0
description:
  - Computes, once per step, what C(playbooks/benchmark.yml), C(playbooks/tune.yml) and the pin
    role's benchmark decide; the roles' tasks only act on the answer.
  - V(sweep) - the sweep of one host - its endpoint URL, results directory, levels, timeout, the
    load generator's and the plot's command lines.
  - V(report) - a sweep's O(results) (its C(results.json)) as its summary (mean +- sample std over
    R2..Rn, run 1 a warm-up when there are 3 or more) and the Markdown table beside the
    profile's measured figures.
  - V(level) - one level's figures as plain numbers (O(concurrency)), what V(gate) and V(decision) take.
  - V(gate) - a candidate image's verdict against the lock's O(baseline) figures - C(state)
    C(refused) when its output tok/s fell below the baseline's by more than O(threshold), or its
    speculative acceptance collapsed; else C(accepted) (also without a comparable baseline, whose
    figures become the baseline).
  - V(tune) - before anything is deployed - the latency objective (O(objective) with O(bounds)
    laid over; refused when empty), the candidates (O(max_num_seqs) times O(k)) and the results
    directory.
  - V(decision) - the configuration with the most throughput meeting the objective, the advised k,
    and the inventory overlay when one met it (O(entries), each candidate's V(level)).
options:
  _terms:
    description: What to decide - one of V(sweep), V(report), V(level), V(gate), V(tune), V(decision).
    type: list
    elements: str
    required: true
  deployment:
    description: The host's deployment plan (C(server_deployment)).
    type: dict
    default: {}
  host:
    description: The host's inventory name.
    type: str
    default: ""
  python:
    description: For V(sweep), the load generator's python (scripts/loadgen-env).
    type: str
    default: ""
  scripts:
    description: For V(sweep), the collection's scripts directory.
    type: str
    default: ""
  options:
    description:
      - For V(sweep), C(url), C(address), C(results_dir), C(root), C(stamp), C(prefix), C(levels), C(runs),
        C(duration), C(requests), C(workload), C(seed), C(api_key) (whether the key goes on standard
        input), C(profile_dirs). For V(tune), C(results_dir), C(root), C(stamp), C(prefix).
    type: dict
    default: {}
  results:
    description: For V(report) and V(level), the sweep's C(results.json) (C({plan, endpoint, runs})).
    type: raw
  summary:
    description: For V(level), the sweep's summary (V(report)'s C(summary)).
    type: dict
    default: {}
  concurrency:
    description: For V(level) and V(gate), the level to read.
    type: raw
  baseline:
    description: For V(gate), the lock entry's C(evidence.bench) figures, or none.
    type: dict
  threshold:
    description: For V(gate), the share of throughput a candidate may lose (C(pin_perf_threshold)).
    type: raw
    default: 0.10
  objective:
    description: For V(tune), C(benchmark_tune_objective); for V(decision), V(tune)'s C(objective).
    type: dict
    default: {}
  bounds:
    description: For V(tune), the single bounds (C(benchmark_tune_ttft_p99_s) ...), laid over O(objective).
    type: dict
    default: {}
  max_num_seqs:
    description: For V(tune), the max-num-seqs values to sweep (C(benchmark_tune_max_num_seqs)).
    type: raw
  k:
    description: For V(tune), the draft token counts to sweep (C(benchmark_tune_k)).
    type: raw
  overrides:
    description: For V(tune) and V(decision), the inventory's own C(server_profile_overrides).
    type: dict
    default: {}
  entries:
    description: For V(decision), each deployed candidate's C({config, level}).
    type: list
    elements: dict
    default: []
  failed:
    description: For V(decision), the candidates that did not deploy, C({config, error}).
    type: list
    elements: dict
    default: []
  sweeps:
    description: For V(decision), where the sweeps are (named in the overlay's evidence).
    type: str
    default: ""
notes:
  - Runs on the controller. Pure decisions (plugins/plugin_utils/_bench_plays.py); nothing is read
    or written.
"""

EXAMPLES = r"""
- name: Summarise and tabulate a sweep
  ansible.builtin.set_fact:
    report: >-
      {{ lookup('inferops.serving.bench_plan', 'report', deployment=server_deployment,
                results=lookup('ansible.builtin.file', out ~ '/results.json') | from_json) }}

- name: Gate a candidate image on its figures at concurrency 8
  ansible.builtin.set_fact:
    verdict: >-
      {{ lookup('inferops.serving.bench_plan', 'gate', summary=report.summary, concurrency=8,
                baseline=lock_entry.evidence.bench | default(none), threshold=0.10) }}
"""

RETURN = r"""
_raw:
  description:
    - V(sweep) - C(url), C(out), C(levels), C(timeout), C(argv), C(plot_argv).
    - V(report) - C(summary), C(table).
    - V(level) - C(concurrency), C(runs), C(output_tok_s), C(ttft_p50_s) ... (the means).
    - V(gate) - C(state), C(accepted), C(message), C(signature), C(figures), C(baseline) (and with a
      comparison C(reasons), C(change), C(baseline_tok_s), C(candidate_tok_s)).
    - V(tune) - C(objective), C(candidates) (C(config), C(concurrency), C(overrides), C(label), C(slug)), C(dir).
    - V(decision) - C(decision) (C(met), C(message), C(choice), C(k_advice), C(overlay)) and
      C(overlay) (the overlay's variables, or none).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils import _bench_plays
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import scrub

STEPS = ("sweep", "report", "level", "gate", "tune", "decision")


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or terms[0] not in STEPS:
            raise AnsibleLookupError("bench_plan: name one of %s, got %s" % (", ".join(STEPS), list(terms)))
        try:
            return [getattr(self, "_" + terms[0])(self._option)]
        except _bench_plays.BenchError as exc:
            raise AnsibleLookupError(scrub("bench_plan %s: %s" % (terms[0], exc))) from exc

    def _option(self, name):
        return plain(self.get_option(name))

    @staticmethod
    def _sweep(option):
        return _bench_plays.sweep(option("deployment"), option("host"), option("python"), option("scripts"),
                                  option("options"))

    @staticmethod
    def _report(option):
        return _bench_plays.report(option("results"), option("deployment"))

    @staticmethod
    def _level(option):
        return _bench_plays.level(option("summary"), option("concurrency"), option("results"))

    @staticmethod
    def _gate(option):
        return _bench_plays.gate(_bench_plays.level(option("summary"), option("concurrency"), option("results")),
                                 option("baseline"), option("threshold"))

    @staticmethod
    def _tune(option):
        return _bench_plays.tune_plan(option("deployment"), option("host"), option("objective"), option("bounds"),
                                      option("max_num_seqs"), option("k"), option("overrides"), option("options"))

    @staticmethod
    def _decision(option):
        return _bench_plays.decision(option("entries"), option("objective"), option("deployment"), option("host"),
                                     option("overrides"), option("failed"), option("sweeps"))
