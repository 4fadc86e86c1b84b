# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The engines' Prometheus metric names the watchdog reads, as exposed on ``/metrics``.

To be merged into the deployment plan's engine table (``server_deployment.metrics``); the
watchdog receives them from the plan and keeps no table of its own.

Verified in the released wheels (``pip download --no-deps``, then grep):

* vLLM 0.19.0, ``vllm/v1/metrics/loggers.py``: ``Gauge("vllm:num_requests_running")``,
  ``Gauge("vllm:num_requests_waiting")``, ``Counter("vllm:generation_tokens")`` which
  prometheus_client exposes as ``vllm:generation_tokens_total``. The counter is incremented in
  ``PrometheusStatLogger.record`` from every engine step's ``IterationStats``
  (``counter_generation_tokens[engine_idx].inc(iteration_stats.num_generation_tokens)``):
  while a request decodes it advances every step.
* SGLang 0.5.13, ``sglang/srt/observability/metrics_collector.py``:
  ``Gauge("sglang:num_running_reqs")``, ``Gauge("sglang:num_queue_reqs")``,
  ``Counter("sglang:generation_tokens_total")``. The counter is incremented in
  ``TokenizerMetricsCollector.observe_one_finished_request``: only when a request finishes, so
  a long request decodes for a while without moving it.
"""
from __future__ import annotations

# ``tokens_counted``: when the generation-token counter moves, ``step`` (every engine step) or
# ``finish`` (when a request finishes). The watchdog needs more evidence of a freeze for ``finish``.
ENGINE_METRICS = {
    "vllm": {
        "running": "vllm:num_requests_running",
        "waiting": "vllm:num_requests_waiting",
        "generation_tokens": "vllm:generation_tokens_total",
        "tokens_counted": "step",
        "source": "vllm 0.19.0 vllm/v1/metrics/loggers.py",
    },
    "sglang": {
        "running": "sglang:num_running_reqs",
        "waiting": "sglang:num_queue_reqs",
        "generation_tokens": "sglang:generation_tokens_total",
        "tokens_counted": "finish",
        "source": "sglang 0.5.13 sglang/srt/observability/metrics_collector.py",
    },
}


def engine_metrics(engine):
    """The metric names of ``engine`` (a copy); ValueError naming the known engines otherwise."""
    try:
        return dict(ENGINE_METRICS[engine])
    except KeyError:
        raise ValueError("unknown engine %r: the watchdog knows the metrics of %s"
                         % (engine, ", ".join(sorted(ENGINE_METRICS))))
