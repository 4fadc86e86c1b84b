# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/engine-catalog's metrics: the Prometheus names a release defines, read from its source.

The excerpts below are the released wheels' own code (file and release named on each), cut to the
metric definitions; the stored data of every release is checked against the whole source by
test_engine_catalog.py's regeneration test (vLLM 0.19.0, SGLang 0.5.6.post2).
"""
from __future__ import annotations

import importlib
import os
import sys
import textwrap

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as c

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _lib(name):
    """A module of scripts/engine_catalog_lib (the generator's package, beside scripts/engine-catalog)."""
    if os.path.join(ROOT, "scripts") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
    return importlib.import_module("engine_catalog_lib." + name)


def metrics(src, engine):
    return _lib("metrics").metrics(src, engine)


# vllm-0.33.0 vllm/v1/spec_decode/metrics.py (SpecDecodingProm.__init__, cut): names from a loop over tuples.
VLLM_SPEC_DECODE = '''
import prometheus_client

class SpecDecodingProm:
    _counter_cls = prometheus_client.Counter

    def __init__(self, speculative_config, labelnames, per_engine_labelvalues, is_diffusion=False):
        if is_diffusion:
            counter_specs = [
                ("vllm:diffusion_num_denoising_steps", "Number of denoising steps."),
            ]
        else:
            counter_specs = [
                ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
            ]
        counters = [
            create_metric_per_engine(
                self._counter_cls(name=name, documentation=doc, labelnames=labelnames),
                per_engine_labelvalues,
            )
            for name, doc in counter_specs
        ]
        base_counter = self._counter_cls(
            name="vllm:spec_decode_num_accepted_tokens_per_pos",
            documentation="Accepted tokens per draft position.",
            labelnames=pos_labelnames,
        )
'''
# vllm-0.33.0 vllm/v1/metrics/loggers.py (PrometheusStatLogger, cut): class-attribute constructors,
# a histogram, a name held in a local variable.
VLLM_LOGGERS = '''
from prometheus_client import Counter, Gauge, Histogram

class PrometheusStatLogger:
    _gauge_cls = Gauge
    _counter_cls = Counter
    _histogram_cls = Histogram

    def __init__(self, vllm_config, engine_indexes=None):
        gauge_scheduler_running = self._gauge_cls(
            name="vllm:num_requests_running",
            documentation="Number of requests in model execution batches.",
            multiprocess_mode="mostrecent",
            labelnames=labelnames,
        )
        counter_generation_tokens = self._counter_cls(
            name="vllm:generation_tokens",
            documentation="Number of generation tokens processed.",
            labelnames=labelnames,
        )
        histogram_time_to_first_token = self._histogram_cls(
            name="vllm:time_to_first_token_seconds",
            documentation="Histogram of time to first token in seconds.",
            buckets=[0.001, 0.005],
            labelnames=labelnames,
        )

    def log_metrics_info(self, type, config_obj):
        name, documentation = None, None
        if type == "cache_config":
            name = "vllm:cache_config_info"
            documentation = "Information of the LLMEngine CacheConfig"
        info_gauge = self._gauge_cls(
            name=name,
            documentation=documentation,
            multiprocess_mode="mostrecent",
            labelnames=metrics_info.keys(),
        )
'''
# vllm-0.33.0 vllm/v1/metrics/ray_wrappers.py (RayGaugeWrapper.__init__, cut): passes its caller's name on.
VLLM_RAY = '''
class RayGaugeWrapper(RayPrometheusMetric):
    def __init__(self, name: str, documentation="", labelnames=None, multiprocess_mode=""):
        name = self._get_sanitized_opentelemetry_name(name)
        self.metric = ray_metrics.Gauge(
            name=name,
            description=documentation,
            tag_keys=tag_keys,
        )
'''
# sglang-0.5.9 sglang/srt/metrics/startup_func_log_and_timer.py (cut): a positional name, and a
# logger.info(f"...") that builds no metric.
SGLANG_STARTUP = '''
from prometheus_client import Gauge

STARTUP_LATENCY_SECONDS = Gauge(
    "sglang:startup_latency_breakdown_seconds_max",
    "Startup latency breakdown in seconds by context.",
    labelnames=["context"],
    multiprocess_mode="mostrecent",
)

def set_startup_metric(context: str, value: float, should_log: bool = True):
    if should_log:
        logger.info(f"Setting startup metric: {context} took {value:.3f}s")
'''


def _tree(tmp_path, files):
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return _lib("source").Source(str(tmp_path))


def test_vllm_names_as_a_query_selects_them(tmp_path):
    src = _tree(tmp_path, {"vllm/v1/spec_decode/metrics.py": VLLM_SPEC_DECODE, "vllm/v1/metrics/loggers.py": VLLM_LOGGERS,
                           "vllm/v1/metrics/ray_wrappers.py": VLLM_RAY})
    assert metrics(src, "vllm") == {
        "vllm:cache_config_info": "gauge",
        "vllm:diffusion_num_denoising_steps_total": "counter",
        "vllm:generation_tokens_total": "counter",
        "vllm:num_requests_running": "gauge",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total": "counter",
        "vllm:spec_decode_num_accepted_tokens_total": "counter",
        "vllm:spec_decode_num_draft_tokens_total": "counter",
        "vllm:spec_decode_num_drafts_total": "counter",
        "vllm:time_to_first_token_seconds": "histogram",
    }
    assert "vllm/v1/metrics/loggers.py" in src.read  # listed in the catalog's files


def test_sglang_metrics_directory_moved_in_0_5_10(tmp_path):
    src = _tree(tmp_path, {"sglang/srt/observability/startup_func_log_and_timer.py": SGLANG_STARTUP})
    assert metrics(src, "sglang") == {"sglang:startup_latency_breakdown_seconds_max": "gauge"}


def test_a_name_built_at_run_time_is_an_error_not_a_missing_metric(tmp_path):
    src = _tree(tmp_path, {"sglang/srt/metrics/collector.py": '''
        from prometheus_client import Gauge
        def make(kind):
            return Gauge(name=f"sglang:{kind}_usage", documentation="usage")
    '''})
    with pytest.raises(_lib("metrics").MetricNameError, match="collector.py line 4"):
        metrics(src, "sglang")


@pytest.mark.parametrize("engine, version, name, kind", [
    ("vllm", "0.17.0", "vllm:kv_cache_usage_perc", "gauge"),
    ("vllm", "0.33.0", "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter"),
    ("vllm", "0.33.0", "vllm:inter_token_latency_seconds", "histogram"),
    ("sglang", "0.5.1", "sglang:spec_accept_length", "gauge"),
    ("sglang", "0.5.23", "sglang:prompt_tokens_total", "counter"),
])
def test_the_stored_releases_carry_their_metrics(engine, version, name, kind):
    assert c.release(engine, version).metrics[name] == kind


def test_a_metric_the_engine_dropped_is_absent_from_later_releases():
    # SGLang 0.5.1's sglang:avg_request_queue_latency gauge (srt/metrics/collector.py) is gone by 0.5.23.
    assert "sglang:avg_request_queue_latency" in c.release("sglang", "0.5.1").metrics
    assert "sglang:avg_request_queue_latency" not in c.release("sglang", "0.5.23").metrics
