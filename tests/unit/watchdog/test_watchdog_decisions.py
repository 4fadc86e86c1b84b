# SPDX-License-Identifier: GPL-3.0-or-later
"""The watchdog's pure parts: configuration, metrics parsing, classify, decide_action, the
memory rule, the state record and the textfile (parsed back with prometheus_client)."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
from ansible.errors import AnsibleLookupError
from prometheus_client.parser import text_string_to_metric_families
from watchdog_program import PROGRAM, ROOT, base_config, load_program

from ansible_collections.inferops.serving.plugins.lookup import host_library

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def wd():
    return load_program()


@pytest.fixture
def config():
    """``config(**changes)``: the configuration the server role writes for the lab's GB10 host."""
    return base_config


# ----------------------------------------------------------------------------------- config
def test_load_config_applies_defaults(wd, config):
    loaded = wd.load_config(config(slow_floor=None))
    assert loaded["probe_max_tokens"] == 4 and loaded["slow_window"] == 30
    assert loaded["slow_floor"] is None and loaded["crash_loop_restarts"] == 2


@pytest.mark.parametrize("changes, message", [
    ({"interval": 0}, "interval must be > 0, got 0"),
    ({"restart_budget": -1}, "restart_budget must be >= 0, got -1"),
    ({"probe_deadline": 30}, "probe_deadline (30) must be shorter than interval (30)"),
    ({"memory_fraction": 1.5}, "memory_fraction must be at most 1"),
    ({"memory_reads": "Cached"}, "memory_reads must be one of MemAvailable, MemFree"),
    ({"drop_caches_before_start": "yes"}, "drop_caches_before_start must be true or false"),
    ({"interval": "30"}, "interval must be a number, got '30'"),
    ({"urls": {"chat": "http://x/v1/chat/completions", "health": "http://x/health"}}, "urls.metrics must be"),
    ({"metrics": {"running": "vllm:num_requests_running"}}, "metrics.generation_tokens must name"),
    ({"served_model_name": ""}, "served_model_name is required"),
    ({"slow_floor": 0}, "slow_floor must be > 0"),
])
def test_load_config_refuses(wd, config, changes, message):
    with pytest.raises(wd.ConfigError) as caught:
        wd.load_config(config(**changes))
    assert message in str(caught.value)


# --------------------------------------------------------------------------------- classify
def container(running=True, started=NOW - 3600, restart_count=0, **extra):
    found = {"exists": True, "id": "c0ffee", "running": running, "restarting": False, "status":
             "running" if running else "exited", "exit_code": 0 if running else 1, "oom_killed": False,
             "started_at": started, "restart_count": restart_count}
    found.update(extra)
    return found


def sample(t=NOW, probe=None, health=200, points=None, **container_changes):
    return {"t": t, "container": container(**container_changes),
            "health": {"status": health} if isinstance(health, int) else {"error": health},
            "probe": probe if probe is not None else {"ok": True, "latency_s": 0.4, "tokens": 4},
            "points": points if points is not None else []}


def point(t, running, tokens):
    return {"t": t, "running": running, "tokens": tokens}


HUNG = {"timed_out": True, "latency_s": 20.0}


@pytest.mark.parametrize("observed, outcome, reason", [
    (sample(), "healthy", "completion of 4 token(s) in 0.40 s"),
    (sample(running=False), "dead", "container inferops-serving is not running: exited, exit code 1"),
    (sample(health="ConnectionRefusedError: [Errno 111] Connection refused"), "dead",
     "/health: ConnectionRefusedError: [Errno 111] Connection refused"),
    (sample(health="ConnectionRefusedError: [Errno 111] Connection refused", started=NOW - 60), "starting",
     "started 60 s ago"),
    (sample(health=503), "dead", "/health answered 503"),
    (sample(probe={"status": 500, "error": "EngineCore encountered an issue.", "latency_s": 0.1}), "dead",
     "/health answers 200 but the completion failed: HTTP 500 EngineCore encountered an issue."),
    (sample(probe={"status": 404, "error": "The model `x` does not exist.", "latency_s": 0.1}), "probe_error",
     "the completion was refused: HTTP 404"),
    # A saturated engine queues the probe past its deadline but generates meanwhile: never restarted.
    (sample(probe=HUNG, points=[point(NOW - 21, 32, 5000), point(NOW, 32, 5600)]), "busy",
     "while the engine generated 600 tokens"),
    # vLLM 50934 / eugr 260: health 200, requests running, the token counter frozen, the probe hangs.
    (sample(probe=HUNG, points=[point(NOW - 21, 3, 5000), point(NOW, 3, 5000)]), "wedged",
     "/health answers 200 but the completion hung past its 20 s deadline while 3 request(s) ran the "
     "generated-token counter stayed at 5000"),
    # No counter to tell a saturated engine from a wedged one: suspect first, wedged if it lasts.
    (sample(probe=HUNG), "suspect", "and /metrics gave no generated-token counter (1 of 2 probes)"),
    (sample(health="TimeoutError: timed out"), "dead", "/health: TimeoutError: timed out"),
])
def test_classify_one_probe(wd, config, observed, outcome, reason):
    verdict = wd.classify([], observed, wd.load_config(config()))
    assert verdict["outcome"] == outcome, verdict
    assert reason in verdict["reason"]


def test_classify_needs_two_frozen_probes_when_tokens_count_at_finish(wd, config):
    """SGLang counts generated tokens when a request finishes (metrics_collector.py): one frozen
    window with a long request running is no proof of a wedge, two in a row are."""
    cfg = wd.load_config(config(engine="sglang", metrics={
        "running": "sglang:num_running_reqs", "generation_tokens": "sglang:generation_tokens_total",
        "tokens_counted": "finish"}))
    first = wd.classify([], sample(probe=HUNG, points=[point(NOW - 21, 1, 90), point(NOW, 1, 90)]), cfg)
    assert first["outcome"] == "suspect" and "(1 of 2 probes)" in first["reason"]
    records = [{"t": NOW, "outcome": "suspect", "points": [], "container": container()}]
    second = wd.classify(records, sample(t=NOW + 30, probe=HUNG,
                                         points=[point(NOW + 9, 1, 90), point(NOW + 30, 1, 90)]), cfg)
    assert second["outcome"] == "wedged"


def test_classify_health_that_hangs_needs_two_probes(wd, config):
    cfg = wd.load_config(config())
    hung = sample()
    hung["health"] = {"error": "TimeoutError: timed out", "timed_out": True}
    first = wd.classify([], hung, cfg)
    assert first["outcome"] == "suspect" and first["reason"] == "/health did not answer within 10.0 s (1 of 2 probes)"
    records = [{"t": NOW - 30, "outcome": "suspect", "points": [], "container": container()}]
    assert wd.classify(records, dict(hung, t=NOW), cfg)["outcome"] == "wedged"
    # Right after a start the engine may not answer yet.
    hung["container"]["started_at"] = NOW - 5
    assert wd.classify([], hung, cfg)["outcome"] == "starting"


def test_classify_crash_loop_from_dockers_restart_count(wd, config):
    cfg = wd.load_config(config())
    records = [{"t": NOW - 90, "outcome": "healthy", "container": container(restart_count=0), "points": []},
               {"t": NOW - 60, "outcome": "dead", "container": container(False, restart_count=1), "points": []},
               {"t": NOW - 30, "outcome": "starting", "container": container(restart_count=2), "points": []}]
    verdict = wd.classify(records, sample(running=False, restart_count=3), cfg)
    assert verdict["outcome"] == "crash_looping"
    assert verdict["reason"].startswith("Docker restarted the container 3 times within 600 s; now exited")
    # Restarts older than the window do not count; an explicit start reset Docker's count to 0.
    old = [dict(r, t=r["t"] - 3600) for r in records]
    assert wd.classify(old, sample(running=False, restart_count=3), cfg)["outcome"] == "dead"
    assert wd.docker_restarts(records, sample(restart_count=1), 600) == 3


def test_classify_slow_only_under_load(wd, config):
    cfg = wd.load_config(config(slow_floor=7.0))
    # 24 tokens/s single stream dropped five-fold: 4.8 tokens/s with a request running throughout.
    records = [{"t": NOW - 30, "outcome": "healthy", "container": container(),
                "points": [point(NOW - 30.5, 1, 10000), point(NOW - 30, 1, 10002)]}]
    slow = wd.classify(records, sample(points=[point(NOW - 0.5, 1, 10146), point(NOW, 1, 10148)]), cfg)
    assert slow["outcome"] == "slow" and "generated 4.9 tokens/s over 30 s under load, floor 7.0" in slow["reason"]
    # Idle at one sample: no decode rate, no verdict on speed.
    idle = wd.classify(records, sample(points=[point(NOW - 0.5, 0, 10146), point(NOW, 1, 10148)]), cfg)
    assert idle["outcome"] == "healthy" and idle["facts"]["decode_tps"] is None
    # Under a burst the aggregate rate is far above a single stream's floor.
    busy = wd.classify(records, sample(points=[point(NOW - 0.5, 64, 13000), point(NOW, 64, 13100)]), cfg)
    assert busy["outcome"] == "healthy" and busy["facts"]["decode_tps"] > 100
    # No floor configured: never slow.
    assert wd.classify(records, sample(points=[point(NOW, 1, 10003)]),
                       wd.load_config(config(slow_floor=None)))["outcome"] == "healthy"


# ---------------------------------------------------------------------------- decide_action
def verdict(outcome, running=True, restarting=False):
    return {"outcome": outcome, "reason": "because", "facts": {},
            "container": {"running": running, "restarting": restarting}}


def restarts(*ages):
    return [{"t": NOW - age, "kind": "restart", "result": "started"} for age in ages]


@pytest.mark.parametrize("outcome", ["healthy", "busy", "starting", "suspect", "probe_error"])
def test_decide_quiet_outcomes_do_nothing(wd, config, outcome):
    state = {"actions": restarts(10, 20, 30)}
    assert wd.decide_action(state, verdict(outcome), wd.load_config(config()), NOW)["action"] == "none"


@pytest.mark.parametrize("outcome", ["dead", "wedged", "crash_looping", "slow"])
def test_decide_faults_restart_within_the_budget(wd, config, outcome):
    decision = wd.decide_action({"actions": restarts(100, 4000)}, verdict(outcome), wd.load_config(config()), NOW)
    assert decision["action"] == "restart" and decision["budget_left_after"] == 1
    assert decision["stop_first"] is True and decision["wait_for_memory"] is True
    assert decision["reason"] == outcome + ": because"
    # Only an engine that still finishes its requests gets the graceful stop; a wedged or dead
    # one finishes nothing, and waiting for it only delays the restart.
    assert decision["stop_timeout"] == (30 if outcome == "slow" else 5)


def test_decide_gives_up_when_the_budget_is_spent_then_holds(wd, config):
    cfg = wd.load_config(config(restart_budget=3))
    state = {"actions": restarts(100, 200, 3500)}
    decision = wd.decide_action(state, verdict("wedged"), cfg, NOW)
    assert decision["action"] == "give_up"
    assert decision["reason"] == "wedged, and the restart budget (3 per hour) is spent: because"
    state["gave_up"] = {"t": NOW, "reason": decision["reason"]}
    # Even once the hour has passed, a watchdog that gave up does not act again by itself.
    later = wd.decide_action(state, verdict("dead", running=False), cfg, NOW + 7200)
    assert later["action"] == "hold" and "gave up at 2027-01-15T08:00:00Z" in later["reason"]


def test_decide_budget_zero_never_restarts(wd, config):
    decision = wd.decide_action({"actions": []}, verdict("dead"), wd.load_config(config(restart_budget=0)), NOW)
    assert decision["action"] == "give_up"


def test_decide_lets_dockers_restart_policy_work(wd, config):
    decision = wd.decide_action({"actions": []}, verdict("dead", running=False, restarting=True),
                                wd.load_config(config()), NOW)
    assert decision["action"] == "wait"


def test_decide_starts_a_stopped_container_without_stopping_it(wd, config):
    decision = wd.decide_action({"actions": []}, verdict("dead", running=False),
                                wd.load_config(config(unified_memory=False)), NOW)
    assert decision["stop_first"] is False and decision["wait_for_memory"] is False


# ----------------------------------------------------------------------------------- memory
# /proc/meminfo of a DGX Spark (the lab's simulated GB10: tests/lab/README.md, set-hardware gb10).
GB10_MEMINFO = ("MemTotal:       127526272 kB\nMemFree:        {free} kB\nMemAvailable:   {avail} kB\n"
                "Buffers:          112624 kB\nCached:          1524748 kB\n")
LIBRARIES = ("unified_memory", "docker_api", "prometheus", "bounded_http", "host_files")


def planned_watchdog():
    """The watchdog part of a real plan with the roles' default settings."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    settings = {"interval": 30, "probe_deadline": 20, "probe_max_tokens": 4, "probe_prompt": "What is 2+2?",
                "restart_budget": 3, "startup_grace": 600, "crash_loop_restarts": 2, "crash_loop_window": 600,
                "meminfo_path": "/proc/meminfo", "drop_caches_before_start": False,
                "drop_caches_file": "/proc/sys/vm/drop_caches", "memory_wait_timeout": 300, "slow_floor": None,
                "slow_fraction": 0.3, "slow_window": None, "docker_host": "unix:///var/run/docker.sock",
                "log_lines": 50}
    return plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8000}, watchdog=settings)["watchdog"]


def test_the_role_installs_the_collection_s_libraries_beside_the_watchdog(tmp_path):
    # One home: the plan's watchdog files carry each module_utils file itself (as the host_library
    # lookup returns it), the watchdog role writes it beside the program as inferops_<name>.py, and
    # the program imports them from there when systemd runs it (python3 <dir>/inferops_watchdog.py):
    # a bad configuration is refused by the real program with exit status 2, which needs the
    # imports to have worked.
    installed = {entry["path"]: entry.get("content") for entry in planned_watchdog()["files"]}
    for name in LIBRARIES:
        with open(os.path.join(ROOT, "plugins", "module_utils", "_%s.py" % name), encoding="utf-8") as handle:
            source = handle.read()
        assert host_library.library_source(name) == source
        assert installed["/usr/local/lib/inferops-serving/inferops_%s.py" % name] == source
        (tmp_path / ("inferops_%s.py" % name)).write_text(host_library.library_source(name), encoding="utf-8")
    with pytest.raises(AnsibleLookupError, match="unknown library 'gpu'; known: bounded_http, docker_api, host_files, prometheus, unified_memory"):
        host_library.library_source("gpu")
    shutil.copy(PROGRAM, tmp_path / "inferops_watchdog.py")
    (tmp_path / "watchdog.json").write_text(json.dumps(base_config(interval=0)), encoding="utf-8")
    ran = subprocess.run([sys.executable, "-E", "-s", str(tmp_path / "inferops_watchdog.py"), "--config",
                          str(tmp_path / "watchdog.json")], capture_output=True, text=True, check=False, timeout=60)
    assert ran.returncode == 2, ran.stderr
    assert "interval must be > 0, got 0" in ran.stderr
    (tmp_path / "inferops_prometheus.py").unlink()
    ran = subprocess.run([sys.executable, "-E", "-s", str(tmp_path / "inferops_watchdog.py"), "--config",
                          str(tmp_path / "watchdog.json")], capture_output=True, text=True, check=False, timeout=60)
    assert ran.returncode == 1 and "No module named 'inferops_prometheus'" in ran.stderr


# The role's pre-start rule: needed = int(fraction x MemTotal) KiB, judged by the field the engine reads.
@pytest.mark.parametrize("free, available, reads, action", [
    (118820100, 123000000, "MemAvailable", "start"),
    (114773644, 114773644, "MemFree", "start"),
    (40000000, 114773644, "MemAvailable", "start"),
    (40000000, 114773644, "MemFree", "refuse"),
    (10485760, 114773643, "MemAvailable", "wait"),
])
def test_memory_verdict(wd, free, available, reads, action):
    verdict = wd.unified_memory_verdict(wd.meminfo_fields(GB10_MEMINFO.format(free=free, avail=available)), 0.9, reads)
    assert verdict["needed_kib"] == 114773644 and verdict["action"] == action


def test_memory_verdict_without_memavailable(wd):
    with pytest.raises(wd.UnifiedMemoryError, match="MemAvailable"):
        wd.unified_memory_verdict(wd.meminfo_fields("MemTotal: 10 kB\nMemFree: 5 kB\n"), 0.9)


# ------------------------------------------------------------------------- record, textfile
def test_record_counts_and_marks(wd, config):
    cfg = wd.load_config(config())
    state = wd.new_state(cfg)
    wedged = {"outcome": "wedged", "reason": "hung", "facts": {}, "container": {"running": True}}
    action = {"t": NOW, "kind": "restart", "result": "started", "reason": "wedged: hung", "evidence": {}}
    state = wd.record(state, sample(probe=HUNG), wedged, {"action": "restart"}, action, NOW)
    assert state["counters"] == {"probes": 1, "wedges": 1, "restarts": 1}
    assert state["status"] == "unhealthy" and state["outcome"] == "wedged" and state["since"] == NOW
    give_up = {"t": NOW + 30, "kind": "give_up", "reason": "spent", "evidence": {"log_tail": ["x"]}}
    state = wd.record(state, sample(t=NOW + 30, probe=HUNG), wedged, {"action": "give_up"}, give_up, NOW + 30)
    assert state["status"] == "gave_up" and state["gave_up"]["evidence"] == {"log_tail": ["x"]}
    healthy = {"outcome": "healthy", "reason": "ok", "facts": {}, "container": {"running": True}}
    # Healthy again on the container the watchdog gave up on (started before): still marked.
    state = wd.record(state, sample(t=NOW + 60), healthy, {"action": "hold"}, None, NOW + 60)
    assert state["status"] == "gave_up" and state["last_success"] == NOW + 60
    # Docker's own restart policy brought it back (RestartCount 1): still marked.
    state = wd.record(state, sample(t=NOW + 75, started=NOW + 70, restart_count=1), healthy, {"action": "hold"},
                      None, NOW + 75)
    assert state["status"] == "gave_up"
    # An operator started it (an explicit start resets RestartCount) and it serves: cleared.
    state = wd.record(state, sample(t=NOW + 90, started=NOW + 80), healthy, {"action": "none"}, None, NOW + 90)
    assert state["status"] == "healthy" and state["gave_up"] is None
    assert len(state["records"]) == 5 and len(state["actions"]) == 2


def test_record_clears_the_mark_for_a_new_container(wd, config):
    cfg = wd.load_config(config())
    dead = {"outcome": "dead", "reason": "exited", "facts": {}, "container": {"running": False}}
    give_up = {"t": NOW, "kind": "give_up", "reason": "spent", "evidence": {}}
    state = wd.record(wd.new_state(cfg), sample(running=False), dead, {"action": "give_up"}, give_up, NOW)
    assert state["gave_up"]["container_id"] == "c0ffee"
    healthy = {"outcome": "healthy", "reason": "ok", "facts": {}, "container": {"running": True}}
    converged = sample(t=NOW + 30, started=NOW + 20, restart_count=2, id="beef00")
    assert wd.record(state, converged, healthy, {"action": "none"}, None, NOW + 30)["gave_up"] is None


def families(text):
    found = {}
    for family in text_string_to_metric_families(text):
        for metric in family.samples:
            found[(metric.name, tuple(sorted(metric.labels.items())))] = metric.value
        found[family.name] = family.type
    return found


def test_textfile_parses_with_prometheus_client(wd, config):
    cfg = wd.load_config(config())
    state = wd.new_state(cfg)
    wedged = {"outcome": "wedged", "reason": "hung", "facts": {}, "container": {"running": True}}
    action = {"t": NOW, "kind": "restart", "result": "started", "reason": "wedged: hung", "evidence": {}}
    state = wd.record(state, sample(probe=HUNG), wedged, {"action": "restart"}, action, NOW)
    healthy = {"outcome": "healthy", "reason": "ok", "facts": {}, "container": {"running": True}}
    state = wd.record(state, sample(t=NOW + 30, probe={"ok": True, "latency_s": 0.25, "tokens": 1}), healthy,
                      {"action": "none"}, None, NOW + 30)
    text = wd.render_textfile(state, cfg, NOW + 31)
    found = families(text)
    c = (("container", "inferops-serving"),)
    assert found[("inferops_watchdog_up", c)] == 1.0
    assert found[("inferops_watchdog_probe_latency_seconds", c)] == 0.25
    assert found[("inferops_watchdog_wedges_total", c)] == 1.0 and found["inferops_watchdog_wedges"] == "counter"
    assert found[("inferops_watchdog_restarts_total", c)] == 1.0
    assert found[("inferops_watchdog_probes_total", c)] == 2.0
    assert found[("inferops_watchdog_restart_budget_remaining", c)] == 2.0
    assert found[("inferops_watchdog_gave_up", c)] == 0.0
    assert found[("inferops_watchdog_last_success_timestamp_seconds", c)] == NOW + 30
    outcomes = {dict(labels)["outcome"]: value for (name, labels), value in
                ((k, v) for k, v in found.items() if isinstance(k, tuple)) if name == "inferops_watchdog_probe_outcome"}
    assert outcomes == {o: (1.0 if o == "healthy" else 0.0) for o in wd.OUTCOMES}


def test_textfile_before_any_probe_parses(wd, config):
    cfg = wd.load_config(config(container='odd"name'))
    found = families(wd.render_textfile(wd.new_state(cfg), cfg, NOW))
    value = found[("inferops_watchdog_probe_latency_seconds", (("container", 'odd"name'),))]
    assert math.isnan(value)
    assert found[("inferops_watchdog_up", (("container", 'odd"name'),))] == 0.0
