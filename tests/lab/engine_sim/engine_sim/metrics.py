# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's Prometheus ``/metrics``: the names, help texts, labels and histogram buckets
real vLLM and SGLang print (tests/unit/plugins/plugin_utils/test_catalog_metrics.py checks the
engine catalog against them), from the counters an EngineState (serving.py) keeps."""
from __future__ import annotations

BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
           20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


class Histogram:
    def __init__(self):
        self.counts = [0] * len(BUCKETS)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for index, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[index] += 1


def vllm_metrics(state) -> str:
    """vLLM's /metrics of the simulated engine (``state``: its EngineState)."""
    labels = f'engine="0",model_name="{state.served_model}"'
    out: list[str] = []

    def metric(name, kind, help_text, value, extra=""):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        lab = labels + extra
        if kind == "counter":
            out.append(f"{name}_total{{{lab}}} {float(value)}")
            out.append(f"{name}_created{{{lab}}} {float(state.created)}")
        else:
            out.append(f"{name}{{{lab}}} {float(value)}")

    with state.lock:
        counters = dict(state.counters)
        running, waiting, per_pos = state.running, state.waiting, list(state.per_pos)
    metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running)
    metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting)
    metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", state.kv_usage())
    metric("vllm:prefix_cache_queries", "counter",
           "Prefix cache queries, in terms of number of queried tokens.", counters["prefix_queries"])
    metric("vllm:prefix_cache_hits", "counter",
           "Prefix cache hits, in terms of number of cached tokens.", counters["prefix_hits"])
    metric("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.", 0)
    metric("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", counters["prompt_tokens"])
    metric("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
           counters["generation_tokens"])
    out.append("# HELP vllm:request_success_total Count of successfully processed requests.")
    out.append("# TYPE vllm:request_success_total counter")
    for reason in ("stop", "length", "abort"):
        value = {"stop": counters["success"] - counters["success_length"],
                 "length": counters["success_length"]}.get(reason, 0)
        out.append(f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {float(value)}')
    _histogram(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                    state.ttft, labels)
    _histogram(out, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                    state.itl, labels)
    _histogram(out, "vllm:e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.", state.e2e, labels)
    if state.k:
        metric("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.",
               counters["spec_drafts"])
        metric("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.",
               counters["spec_draft_tokens"])
        metric("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.",
               counters["spec_accepted"])
        out.append("# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.")
        out.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
        for position, count in enumerate(per_pos):
            out.append(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{position}"}} '
                       f"{float(count)}")
    return "\n".join(out) + "\n"


def sglang_metrics(state) -> str:
    """SGLang's /metrics of the simulated engine (``state``: its EngineState)."""
    labels = f'engine_type="unified",model_name="{state.served_model}",pp_rank="0",tp_rank="0"'
    out: list[str] = []

    def metric(name, kind, help_text, value):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.append(f"{name}{{{labels}}} {float(value)}")

    with state.lock:
        counters = dict(state.counters)
        running, waiting = state.running, state.waiting
    queries = counters["prefix_queries"]
    metric("sglang:num_running_reqs", "gauge", "The number of running requests.", running)
    metric("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", waiting)
    metric("sglang:num_used_tokens", "gauge", "The number of used tokens.",
           sum(seq.prefilled + seq.generated for seq in list(state.sim.running)))
    metric("sglang:token_usage", "gauge", "The token usage.", state.kv_usage())
    if state.plan.model.hybrid_mamba:
        metric("sglang:mamba_usage", "gauge", "The mamba usage.", running / max(state.plan.mamba_cache_size, 1))
    metric("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", state.last_throughput)
    metric("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.",
           counters["prefix_hits"] / queries if queries else 0.0)
    metric("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative decoding.",
           state.last_accept_length)
    metric("sglang:spec_accept_rate", "gauge", "The average acceptance rate of speculative decoding.",
           state.last_accept_rate)
    metric("sglang:num_retracted_reqs", "gauge", "The number of retracted requests.", 0)
    metric("sglang:is_cuda_graph", "gauge", "Whether the batch is using CUDA graph.",
           1.0 if state.plan.cuda_graph_bs else 0.0)
    metric("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           counters["prompt_tokens"])
    metric("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
           counters["generation_tokens"])
    metric("sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.", counters["prefix_hits"])
    metric("sglang:num_requests_total", "counter", "Number of requests processed.", counters["success"])
    metric("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", 0)
    _histogram(out, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                    state.ttft, labels)
    _histogram(out, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                    state.itl, labels)
    _histogram(out, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in "
                    "seconds", state.e2e, labels)
    return "\n".join(out) + "\n"


def _histogram(out, name, help_text, histogram: Histogram, labels: str) -> None:
    out.append(f"# HELP {name} {help_text}")
    out.append(f"# TYPE {name} histogram")
    for bound, count in zip(BUCKETS, histogram.counts):
        out.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(count)}')
    out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(histogram.count)}')
    out.append(f"{name}_count{{{labels}}} {float(histogram.count)}")
    out.append(f"{name}_sum{{{labels}}} {histogram.total}")
