# SPDX-License-Identifier: GPL-3.0-or-later
"""The one Prometheus text parser (plugins/module_utils/_prometheus.py), used by the controller
(status, benchmark, speculative acceptance) and shipped to the hosts for the watchdog.

The reference is prometheus_client's own parser (the Prometheus project's Python client) over the
lab simulator's recorded vLLM /metrics (tests/unit/fixtures/loadgen/README.md), with the served
model name replaced by one holding ``}``, ``"``, ``\\`` and ``,=`` (escaped as the format says)
and a timestamp after every sample, as Prometheus's /federate prints them."""
from __future__ import annotations

import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.inferops.serving.plugins.module_utils import _prometheus as p
from ansible_collections.inferops.serving.plugins.plugin_utils import _bench, _engines

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures",
                        "loadgen")
MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
ODD_MODEL = 'team} "a",b=c\\d'


def recorded(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return "".join(line for line in handle if not line.startswith("# source:") and not line.startswith("# ENGINE")
                       and not line.startswith("# of aiperf"))


def hostile(text, stamp=1796057824123):
    """The same exposition with the odd model name and a millisecond timestamp after each sample."""
    escaped = ODD_MODEL.replace("\\", "\\\\").replace('"', '\\"')
    lines = []
    for line in text.replace('model_name="%s"' % MODEL, 'model_name="%s"' % escaped).splitlines():
        lines.append(line if line.startswith("#") or not line.strip() else "%s %d" % (line, stamp))
    return "\n".join(lines) + "\n"


def reference_sums(text):
    sums = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums


@pytest.mark.parametrize("fixture", ["vllm-sim-metrics-after-c4.txt", "vllm-sim-metrics-before-c4.txt",
                                     "sglang-sim-metrics-after-c4.txt"])
def test_reads_real_expositions_as_prometheus_client_does(fixture):
    text = recorded(fixture)
    assert p.metric_sums(text) == pytest.approx(reference_sums(text))
    odd = hostile(text)
    assert p.metric_sums(odd) == pytest.approx(reference_sums(odd))


def test_a_timestamp_and_a_brace_in_a_label_value_do_not_hide_a_sample():
    """The controller's regex parser (before: _deployment.metric_sum) found no sample here."""
    text = hostile(recorded("vllm-sim-metrics-after-c4.txt"))
    assert p.metric_sum(text, "vllm:generation_tokens_total") == 36882.0
    assert p.metric_max(text, "vllm:kv_cache_usage_perc") == 0.0
    assert p.metric_by_label(text, "vllm:request_success_total", "model_name") == {ODD_MODEL: 598.0}
    names = _engines.METRICS["vllm"]
    before = hostile(recorded("vllm-sim-metrics-before-c4.txt"))
    assert _bench.level_metrics(before, text, names)["generation_tokens"] == p.metric_sum(text, names[
        "generation_tokens"]) - p.metric_sum(before, names["generation_tokens"])


def test_parse_sample_labels_and_odd_lines():
    assert p.parse_sample('m{a="x} y",b="q\\"r\\\\s\\nt"} 2.5 1700000000000') == (
        "m", {"a": "x} y", "b": 'q"r\\s\nt'}, 2.5)
    assert p.parse_sample("plain 7") == ("plain", {}, 7.0)
    assert p.parse_sample("nan_metric NaN")[2] != p.parse_sample("nan_metric NaN")[2]
    assert p.parse_sample("inf +Inf")[2] == float("inf")
    for line in ("# HELP x y", "", 'broken{a="b"}', 'open{a="b 1', "three 1 2 3", "word abc", '{a="b"} 1'):
        assert p.parse_sample(line) is None, line


def test_metric_sum_ignores_other_metrics_with_the_same_prefix():
    text = "vllm:spec_decode_num_drafts_total 3\nvllm:spec_decode_num_drafts_total_created 1.7e9\n"
    assert p.metric_sum(text, "vllm:spec_decode_num_drafts_total") == 3.0
    assert p.metric_sum(text, "vllm:absent") is None
    assert p.metric_sum(text, None) is None and p.metric_max(text, "") is None


def test_metric_by_label_groups_one_metrics_samples():
    name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    text = ('%s{engine="0",position="0"} 6.0\n%s{engine="1",position="0"} 2.0\n%s{position="1",engine="0"} 3.0\n'
            '%s_created{engine="0",position="0"} 1.7e9\n%s 9.0\nvllm:other{position="0"} 5.0\n') % ((name,) * 5)
    assert p.metric_by_label(text, name, "position") == {"0": 8.0, "1": 3.0}
    assert p.metric_by_label(text, name, "engine") == {"0": 9.0, "1": 2.0}
    assert p.metric_by_label(text, "vllm:absent", "position") == {}


def test_what_family_writes_the_reference_parser_and_ours_read_back():
    # The watchdog's textfile is written with family(); node_exporter reads it as Prometheus does.
    labels = 'container="%s"' % p.label_value(ODD_MODEL + "\nline two")
    text = "\n".join(p.family("inferops_watchdog_up", "gauge", "1 when the engine answered.", [(labels, 1)])
                     + p.family("inferops_watchdog_probe_latency_seconds", "gauge", "Latency.", [(labels, float("nan"))])
                     + p.family("inferops_watchdog_probe_outcome", "gauge", "Outcome.",
                                [(labels + ',outcome="healthy"', 1), (labels + ',outcome="dead"', 0)])) + "\n"
    reference = {family.name: family for family in text_string_to_metric_families(text)}
    assert reference["inferops_watchdog_up"].type == "gauge"
    assert reference["inferops_watchdog_up"].documentation == "1 when the engine answered."
    sample = reference["inferops_watchdog_up"].samples[0]
    assert sample.labels == {"container": ODD_MODEL + "\nline two"} and sample.value == 1
    outcomes = {s.labels["outcome"]: s.value for s in reference["inferops_watchdog_probe_outcome"].samples}
    assert outcomes == {"healthy": 1, "dead": 0}
    ours = list(p.samples(text))
    assert ours[0] == ("inferops_watchdog_up", {"container": ODD_MODEL + "\nline two"}, 1.0)
    assert str(ours[1][2]) == "nan" and len(ours) == 4


def test_sample_values_are_written_as_the_format_says():
    assert [p.sample_value(v) for v in (3, True, 2.5, float("nan"), 1e-07)] == ["3", "1", "2.5", "NaN", "1e-07"]
