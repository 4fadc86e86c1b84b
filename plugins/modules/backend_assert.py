#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Benchmark of the log reader (1 GiB log against grep): python3 benchmarks/backend_assert_bench.py
from __future__ import annotations

DOCUMENTATION = r"""
---
module: backend_assert
short_description: Prove from a vLLM or SGLang engine's own log which backends it selected
version_added: 0.1.0
description:
  - Reads the log of an inference engine container since its latest start (through the Docker
    Engine API), or a saved log file, and reports what the engine selected at start-up in
    RV(observed) - MoE, GEMM and attention backends of the target and the draft model,
    speculative decoding, KV cache, scheduler limits, readiness - each with the log line that
    proves it in RV(evidence).
  - Fails when a key of O(expect) differs from what the log shows, when the log shows no evidence
    for an expected key (unless the key is listed in O(optional)), when a fatal signature
    (configuration error, CUDA fault, out of memory, assertion, dead engine) appears, and for a
    container when the server is not ready within O(wait_timeout) or the container stops first.
  - Understands vLLM 0.17 to 0.33 and SGLang 0.5.1 to 0.5.23 in the exact formats their source
    prints, with the line prefixes of a saved log, stacked or not (C(docker logs -t) timestamps,
    C(docker compose logs) C(name-1  |), journald C(Mon DD hh:mm:ss host ident[pid]:), a log
    collector's C(<date> |), vLLM C((EngineCore pid=N)) process tags, ANSI colour), and excerpts that
    start mid-traceback (an engine process's exception line or a C++ C(what():) line without the
    C(Traceback) line above it).
  - Evidence and fatal signatures come only from the engine's own log records (a vLLM or SGLang
    logger header) and, for a Python traceback or a C++ abort printed without a header, from its
    exception line at its place in the traceback. uvicorn's access log, request logs and logged
    prompts never count, whatever a client puts in them.
  - The whole log is read, whatever its size; lines longer than 64 KiB are cut to that length
    before they are read (a warning says so once), and every line returned is cut to 2000 characters.
  - The module only reads; it never changes anything.
author:
  - inferops.serving contributors (@inferops)
options:
  container:
    description:
      - Name or ID of the engine container. Its log is read since its latest start and followed
        until the server is ready, a fatal signature appears, the container stops, or
        O(wait_timeout) expires, whichever comes first.
      - Mutually exclusive with O(log_path); one of them is required.
    type: str
  log_path:
    description:
      - A saved log file (from C(docker logs), C(docker compose logs), C(journalctl), a log collector's
        export or a support bundle) to read once, to its end. It should hold one engine start (for
        example C(docker logs --since <StartedAt>)).
      - Only a regular file is read; a FIFO, device or directory is refused.
      - Mutually exclusive with O(container).
    type: path
  engine:
    description:
      - Which engine wrote the log. V(auto) detects it from the log.
      - With V(vllm) or V(sglang), a log of the other engine fails the task.
    type: str
    choices: [vllm, sglang, auto]
    default: auto
  expect:
    description:
      - "What the log must prove, with the keys of RV(observed), for example
        C({moe_backend: MARLIN, draft_moe_backend: TRITON, speculative_method: mtp})."
      - Strings compare case-insensitively, numbers numerically, booleans as booleans;
        C(engine_version) matches as a prefix at a version component (V(0.19) matches C(0.19.2rc1)).
      - A value of V(null) means the log must show no value for the key (for example no draft model).
    type: dict
    default: {}
  optional:
    description:
      - Keys of O(expect) that may lack evidence in the log; they are still compared when the log
        shows them.
    type: list
    elements: str
    default: []
  wait_timeout:
    description:
      - Seconds to wait for a container's server to become ready. Cold starts of large models take
        ten minutes and more.
      - Ignored with O(log_path).
    type: int
    default: 1800
  since:
    description:
      - With O(container), read the log from this time to its current end once, instead of
        following the latest start until the server is ready. A timestamp as Docker reports it,
        for example RV(container_state.started_at) of an earlier call.
      - Collects the evidence after a later request failed, when the engine may have died and
        been restarted by the restart policy since (its crash is in an earlier start's log).
      - Ignored with O(log_path).
    type: str
  wait_chunk:
    description:
      - With O(container), wait at most this many seconds, then return RV(ready=false) with the
        start-up RV(phase) and RV(elapsed) instead of failing, so a task can wait in visible steps
        (C(until) / C(retries)). O(wait_timeout) is then the cap counted from the container's
        start (it survives a new call after a killed controller), and a start that goes longer
        than its phase's stall budget without a new log line fails as stuck.
      - V(0) waits for readiness in one call, up to O(wait_timeout), without stall budgets.
      - Ignored with O(log_path) or O(since).
    type: int
    default: 0
  progress:
    description:
      - The RV(progress) of the previous call for the same container start, so the stall clock
        carries over from one bounded wait to the next. The action plugin passes the registered
        result's on each retry; a record of another container start is ignored.
    type: dict
  first_deploy:
    description:
      - Whether this start is a first deploy (weights downloaded and processed), which picks the
        longer default stall budgets. Used with O(wait_chunk).
    type: bool
    default: false
  stall_timeout:
    description:
      - Seconds every start-up phase may go without a new log line; replaces the default budgets.
        Used with O(wait_chunk).
    type: int
  phase_budgets:
    description:
      - Seconds per start-up phase without a new log line, for example C(weight_loading=3600) as a mapping,
        over the defaults (and O(stall_timeout)). Phases are C(process_start), C(engine_init),
        C(weight_loading), C(compile), C(kv_cache), C(cuda_graphs), C(server_start).
        Used with O(wait_chunk).
    type: dict
    default: {}
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
notes:
  - vLLM prints an auto-selected attention backend line once per process, so a draft model using the
    same auto-selected backend as the target leaves no separate line; list
    C(draft_attention_backend) in O(optional) or force the backend with C(--attention-backend).
  - A C(ValueError) or similar after the server became ready is a request error, not a configuration
    error, and is ignored; CUDA faults, out of memory, assertions and a dead engine count at any time.
  - After the server became ready, a traceback on vLLM's API server stream (C((APIServer pid=N))) is a
    request's error whatever its text quotes (vLLM logs a failed request with its traceback, and the text
    can quote the request); only the API server's own C(EngineDeadError) counts there. The engine
    processes' records, and the container's exit or restart, decide a fatal.
seealso:
  - module: community.docker.docker_container
requirements:
  - Access to the Docker daemon socket for O(container).
"""

EXAMPLES = r"""
- name: Prove the GB10 MTP profile runs Marlin for the target MoE and Triton for the MTP head
  inferops.serving.backend_assert:
    container: vllm-nemotron-super
    engine: vllm
    expect:
      moe_backend: MARLIN
      draft_moe_backend: TRITON
      linear_backend: MARLIN
      attention_backend: TRITON_ATTN
      speculative_method: mtp
      num_speculative_tokens: 2
      kv_cache_dtype: fp8
    wait_timeout: 1800

- name: Check an SGLang support-bundle log, EAGLE on, draft attention backend not always logged
  inferops.serving.backend_assert:
    log_path: /var/tmp/bundle/sglang.log
    engine: sglang
    expect:
      moe_backend: TRITON
      draft_moe_backend: TRITON
      speculative_method: eagle
      num_speculative_tokens: 3
      draft_attention_backend: FLASHINFER
    optional:
      - draft_attention_backend

- name: Report what a running engine selected, asserting nothing
  inferops.serving.backend_assert:
    container: "{{ serving_container_name }}"
  register: backend

- name: Show the selected backends
  ansible.builtin.debug:
    var: backend.observed
"""

RETURN = r"""
observed:
  description:
    - What the engine selected, as far as the log shows it. Keys without evidence are absent.
    - Backend names are upper-case canonical enum names (V(MARLIN), V(TRITON_ATTN), V(FLASHINFER_CUTLASS));
      RV(observed.speculative_method) is lower-case or V(none).
  returned: always
  type: dict
  contains:
    engine:
      description: V(vllm) or V(sglang).
      type: str
      returned: when detected
    engine_version:
      description: Engine version (vLLM only; SGLang 0.5.x prints none at start-up).
      type: str
      returned: when shown
    model:
      description: The served model (path or Hugging Face ID).
      type: str
      returned: when shown
    moe_backend:
      description: The target model's MoE kernel backend.
      type: str
      returned: when shown
      sample: MARLIN
    draft_moe_backend:
      description: The draft (MTP/EAGLE) model's MoE kernel backend.
      type: str
      returned: when shown
      sample: TRITON
    linear_backend:
      description: The NVFP4 (vLLM) or FP8 (SGLang) dense GEMM backend.
      type: str
      returned: when shown
      sample: MARLIN
    attention_backend:
      description: The target model's attention backend.
      type: str
      returned: when shown
      sample: TRITON_ATTN
    draft_attention_backend:
      description: The draft model's attention backend.
      type: str
      returned: when shown
    speculative_method:
      description: C(mtp), C(eagle), ... or C(none) when the engine runs without speculation.
      type: str
      returned: when shown
    num_speculative_tokens:
      description: Draft tokens per step (SGLang C(speculative_num_steps)).
      type: int
      returned: when shown
    kv_cache_dtype:
      description: KV cache data type.
      type: str
      returned: when shown
    mamba_ssm_cache_dtype:
      description: Mamba SSM state cache data type.
      type: str
      returned: when shown
    prefix_caching:
      description: Whether prefix caching (SGLang radix cache) is on.
      type: bool
      returned: when shown
    chunked_prefill:
      description: Whether chunked prefill is on.
      type: bool
      returned: when shown
    max_num_seqs:
      description: Maximum concurrent sequences (SGLang C(max_running_requests)).
      type: int
      returned: when shown
    tensor_parallel_size:
      description: Tensor parallel size.
      type: int
      returned: when shown
    kv_cache_tokens:
      description: KV cache capacity in tokens.
      type: int
      returned: when shown
    allreduce_backend:
      description:
        - The FlashInfer allreduce backend vLLM initialized (the proof that
          C(VLLM_FLASHINFER_ALLREDUCE_BACKEND) took effect), for example V(TRTLLM) or V(MNNVL).
      type: str
      returned: when shown
      sample: TRTLLM
    mean_acceptance_length:
      description:
        - Speculative decoding, the last value the log shows - vLLM C(SpecDecoding metrics ... Mean
          acceptance length), SGLang C(accept len) - tokens per verify step including the bonus token.
      type: float
      returned: when shown (logged while requests run)
      sample: 2.41
    acceptance_rate_per_position:
      description: vLLM's last C(Per-position acceptance rate) list, one rate per draft position.
      type: list
      elements: float
      returned: when shown (logged while requests run)
      sample: [0.812, 0.598]
    ready:
      description: Whether the server finished starting.
      type: bool
      returned: always
    warnings:
      description: Unknown or deprecated environment variables and flags, forced fallbacks the engine reported.
      type: list
      elements: str
      returned: always
fatal:
  description: The first fatal signature (a root cause wins over a dead-engine consequence), or V(null).
  returned: always
  type: dict
  contains:
    kind:
      description: >-
        V(config_error), V(cuda_illegal_memory_access), V(cuda_error), V(out_of_memory), V(assertion),
        V(engine_dead), or for a container that stopped without one V(container_exited).
      type: str
    line:
      description: The log line of the signature.
      type: str
    line_number:
      description: Its line number in the log read (1 is the first line).
      type: int
    context:
      description: About 20 log lines around it.
      type: list
      elements: str
mismatches:
  description:
    - Each expected key the log contradicts or shows no evidence for (then C(evidence) is V(null)).
    - A later log line of the same weight that says otherwise is a mismatch too (then C(conflict) is V(true)).
  returned: always
  type: list
  elements: dict
  sample:
    - key: moe_backend
      expected: MARLIN
      observed: FLASHINFER_CUTLASS
      evidence: "(EngineCore pid=176) INFO 05-01 17:58:16 [nvfp4.py:279] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend ..."
evidence:
  description: For each key of RV(observed), the log line that proves it.
  returned: always
  type: dict
ready:
  description: Whether the server finished starting (same as RV(observed.ready)).
  returned: always
  type: bool
log_lines_read:
  description: Number of log lines read.
  returned: always
  type: int
conflicts:
  description:
    - For a backend key whose evidence disagrees with itself, the later values and their lines, as a
      list of C(value) and C(line) per key.
  returned: always
  type: dict
long_lines:
  description: How many lines were longer than 64 KiB and were read cut to that length.
  returned: always
  type: int
phase:
  description:
    - The start-up phase the log shows last, one of C(process_start), C(engine_init), C(weight_loading),
      C(compile), C(kv_cache), C(cuda_graphs), C(server_start), C(ready).
  returned: when O(container) is followed (not with O(since))
  type: str
  sample: weight_loading
phase_line:
  description: The log line that entered RV(phase).
  returned: when O(container) is followed (not with O(since))
  type: str
elapsed:
  description: Seconds since the container's latest start.
  returned: when O(container) is followed (not with O(since))
  type: int
progress:
  description:
    - The stall clock of this container start (C(container_id), C(started_at), C(phase), C(bytes),
      C(activity_at)), for O(progress) of the next call. A next call that finds the same container
      started again since fails (it crashed between the two waits).
  returned: with O(wait_chunk)
  type: dict
container_state:
  description: The container's state when the module answered.
  returned: when O(container) is used
  type: dict
  contains:
    running:
      description: Whether the container is running.
      type: bool
    exit_code:
      description: Its exit code.
      type: int
    oom_killed:
      description: Whether the kernel OOM killer stopped it.
      type: bool
    started_at:
      description: Its latest start.
      type: str
"""

import time
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.serving.plugins.module_utils._docker_api import (
    DOCKER_COMMON_ARGS,
    START_SLACK,
    DockerClient,
    DockerError,
    follow_container,
    parse_docker_time,
)
from ansible_collections.inferops.serving.plugins.module_utils._log_patterns import OBSERVED_KEYS
from ansible_collections.inferops.serving.plugins.module_utils._log_reading import LogFileError, feed_bytes, scan_file
from ansible_collections.inferops.serving.plugins.module_utils._log_records import ENGINES, LINE_CAP, show
from ansible_collections.inferops.serving.plugins.module_utils._log_scanner import LogScanner
from ansible_collections.inferops.serving.plugins.module_utils._log_verdict import compare_expect, describe_failure
from ansible_collections.inferops.serving.plugins.module_utils._startup_phases import StartupPhases
from ansible_collections.inferops.serving.plugins.module_utils import _readiness

# The least a bounded wait reads the log for, even past the cap (an old container's log up to its
# ready line: a bounded log, read at grep speed).
DRAIN_SECONDS = 5


def container_fatal(container, state, reason, scanner):
    """The synthetic fatal for a container that stopped before answering without a log signature."""
    if reason != "exited":
        return None
    oom = bool(state.get("OOMKilled"))
    line = "container %s exited with code %s%s%s" % (
        container, state.get("ExitCode"), " (killed by the kernel OOM killer)" if oom else "",
        " and its restart policy started it again" if state.get("Running") else "")
    if scanner.context:
        line += "; its last log line: %s" % scanner.context[-1]
    return {"kind": "out_of_memory" if oom else "container_exited", "line": show(line),
            "line_number": scanner.lines, "context": list(scanner.context) + [show(line)]}


def failure_messages(result, mismatches, engine, reason=None, wait_timeout=None):
    """The operator-facing sentences for everything that makes the task fail (empty: it passes).

    A fatal leads (kind, line, context), then what the log contradicts, then missing evidence in one line.
    """
    messages = []
    if result["fatal"] is None and reason == "timeout":
        messages.append("the server was not ready after %ss (no %s line yet)" % (
            wait_timeout, "fired-up" if engine == "sglang" else "\"Application startup complete.\""))
    elif result["fatal"] is None and reason == "stream_closed":
        messages.append("the Docker daemon closed the log stream before the server was ready")
    messages.extend(describe_failure(result, mismatches, engine))
    return messages


def container_state(state):
    """The RV(container_state) of a Docker ``State``."""
    return dict(running=bool(state.get("Running")), exit_code=state.get("ExitCode"),
                oom_killed=bool(state.get("OOMKilled")), started_at=state.get("StartedAt"))


class StartupWatch(object):
    """The start-up phase and the log bytes of one followed container start, and when they last moved."""

    def __init__(self, engine, clock=time.time):
        self.phases = StartupPhases(engine)
        self.clock = clock
        self.size = 0
        self.last_data_at = None
        self.called_at = clock()
        self.container_id = None

    def feeder(self, scanner):
        def feed(data):
            feed_bytes(scanner, data)
            self.phases.feed_bytes(data)
            self.size += len(data)
            self.last_data_at = self.clock()
        return feed

    def started(self, state):
        return parse_docker_time(state.get("StartedAt")) or self.called_at

    def chunk_deadline(self, state, chunk, cap):
        """The end of this bounded wait: ``chunk`` s from now, or the cap counted from the container's
        start - but never less than a few seconds from now: a container that started longer ago
        than the cap (a converge that finds an engine serving for weeks) must still have its log
        read up to its ready line. The verdict then judges the cap from the elapsed time."""
        now = self.clock()
        return min(now + chunk, max(self.started(state) + cap, now + min(chunk, DRAIN_SECONDS)))

    def report(self, state):
        phase = self.phases.state()
        return {"phase": phase["phase"], "phase_line": phase["line"],
                "elapsed": int(max(self.clock() - self.started(state), 0))}

    def progress(self, state, previous):
        return _readiness.track(previous, state.get("StartedAt"), self.phases.phase, self.size, self.clock(),
                                self.last_data_at, self.container_id)


ARGUMENT_SPEC = dict(
    container=dict(type="str"),
    log_path=dict(type="path"),
    engine=dict(type="str", choices=list(ENGINES) + ["auto"], default="auto"),
    expect=dict(type="dict", default={}),
    optional=dict(type="list", elements="str", default=[]),
    wait_timeout=dict(type="int", default=1800),
    since=dict(type="str"),
    wait_chunk=dict(type="int", default=0),
    progress=dict(type="dict"),
    first_deploy=dict(type="bool", default=False),
    stall_timeout=dict(type="int"),
    phase_budgets=dict(type="dict", default={}),
    **DOCKER_COMMON_ARGS
)


def checked_expect(module):
    """``(expect, optional)`` of the task, unknown keys refused; ``engine`` added when the option names one."""
    params = module.params
    expect = dict(params["expect"] or {})
    optional = list(params["optional"] or [])
    unknown = sorted(set(expect) - set(OBSERVED_KEYS)) + sorted(set(optional) - set(OBSERVED_KEYS))
    if unknown:
        module.fail_json(msg="unknown key(s) in expect/optional: %s; valid keys: %s" % (
            ", ".join(unknown), ", ".join(OBSERVED_KEYS)))
    if params["engine"] != "auto" and "engine" not in expect:
        # A log of the other engine is a wrong deployment, but only if the log shows its engine.
        expect["engine"] = params["engine"]
        optional.append("engine")
    return expect, optional


def read_log_file(module):
    """Mode log_path: the scan result of a saved log file, read once to its end."""
    try:
        return scan_file(module.params["log_path"], module.params["engine"])
    except LogFileError as exc:
        module.fail_json(msg="cannot read log_path: %s" % exc)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read log_path %s: %s" % (module.params["log_path"], exc),
                         exception=traceback.format_exc())


def read_container(module, client, scanner, feed, deadline, since=None):
    """``(state, reason)`` of following the container's log into ``feed`` (follow_container)."""
    try:
        return follow_container(client, module.params["container"], scanner, feed, deadline=deadline,
                                since=since, line_cap=LINE_CAP)
    except DockerError as exc:
        hint = " (is the container created?)" if exc.status == 404 else ""
        module.fail_json(msg="%s%s" % (exc, hint), exception=traceback.format_exc())


def container_result(module, scanner, state, reason, output):
    """The scan result of a container's log, a stopped container's synthetic fatal added."""
    result = scanner.result()
    if result["fatal"] is None:
        result["fatal"] = container_fatal(module.params["container"], state, reason, scanner)
    output["container_state"] = container_state(state)
    return result


def read_since(module, client):
    """Mode since: ``(result, output, reason)`` of the container's log from a time to its current end."""
    params = module.params
    started = parse_docker_time(params["since"])
    if started is None:
        module.fail_json(msg="since must be a timestamp as Docker reports it "
                             "(2026-11-29T15:37:01.5Z), not %r" % params["since"])
    scanner = LogScanner(params["engine"])
    state, reason = read_container(module, client, scanner, lambda data: feed_bytes(scanner, data),
                                   time.time() + params["wait_timeout"], since="%.6f" % (started - START_SLACK))
    if reason in ("ready", "stream_closed"):
        reason = "read"  # the whole log was read; readiness is reported, not awaited
    output = dict(changed=False)
    return container_result(module, scanner, state, reason, output), output, reason


def follow_start(module, client):
    """Mode container: ``(result, output, reason, stalled)`` of following its latest start until ready.

    With wait_chunk, a bounded wait: a start still moving returns here not ready (exit_json), a
    start stuck in its phase or at its cap comes back with the ``stalled`` sentences.
    """
    params = module.params
    output = dict(changed=False)
    scanner = LogScanner(params["engine"])
    watch = StartupWatch(params["engine"])
    chunked = params["wait_chunk"] > 0
    deadline = time.time() + params["wait_timeout"]
    if chunked:
        try:
            budgets = _readiness.budgets(params["first_deploy"], params["stall_timeout"], params["phase_budgets"])
        except _readiness.BudgetError as exc:
            module.fail_json(msg=str(exc))
        try:
            info = client.inspect(params["container"])
        except DockerError as exc:
            hint = " (is the container created?)" if exc.status == 404 else ""
            module.fail_json(msg="%s%s" % (exc, hint), exception=traceback.format_exc())
        watch.container_id = info.get("Id")
        before = info.get("State") or {}
        if _readiness.restarted(params["progress"], watch.container_id, before.get("StartedAt")):
            # Stopped and started again by its restart policy between two waits: the crash
            # is in the previous start's log (the rescue reads the whole log for it).
            output.update(watch.report(before), container_state=container_state(before))
            text = ("container %s stopped and was started again by its restart policy since the previous "
                    "wait (then started at %s, now at %s, exit code %s): the engine crashed during its "
                    "start; its log since the earlier start has the cause" % (
                        params["container"], params["progress"].get("started_at"), before.get("StartedAt"),
                        before.get("ExitCode")))
            module.fail_json(msg=text, ready=False, fatal={"kind": "container_exited", "line": text,
                                                           "line_number": None, "context": []}, **output)
        deadline = watch.chunk_deadline(before, params["wait_chunk"], params["wait_timeout"])
    state, reason = read_container(module, client, scanner, watch.feeder(scanner), deadline)
    output.update(watch.report(state))
    stalled = []
    if chunked:
        output["progress"] = watch.progress(state, params["progress"])
        if reason == "timeout" and scanner.fatal is None and not scanner.ready:
            verdict, text = _readiness.verdict(False, watch.phases.phase, output["elapsed"],
                                               time.time() - output["progress"]["activity_at"], budgets,
                                               params["wait_timeout"])
            if verdict == _readiness.WAITING:
                # Not ready yet and moving: a small result for the next bounded wait (until / retries).
                if output.get("phase_line"):
                    output["phase_line"] = output["phase_line"][:300]
                module.exit_json(msg=text, ready=False, **output)
            stalled = [text + "; the last log lines: " + " | ".join(
                line[:300] for line in list(scanner.context)[-5:] if line.strip())]
    return container_result(module, scanner, state, reason, output), output, reason, stalled


def run_module():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("container", "log_path")],
        required_one_of=[("container", "log_path")],
        supports_check_mode=True,
    )
    params = module.params
    expect, optional = checked_expect(module)
    reason, stalled = None, []
    if params["log_path"]:
        result, output = read_log_file(module), dict(changed=False)
    elif params["since"]:
        result, output, reason = read_since(module, DockerClient(params["docker_host"]))
    else:
        result, output, reason, stalled = follow_start(module, DockerClient(params["docker_host"]))

    mismatches = compare_expect(expect, result, optional)
    output.update(result)
    output["mismatches"] = mismatches
    engine = result["observed"].get("engine") or (params["engine"] if params["engine"] != "auto" else None)
    if stalled:  # a bounded wait found the start stuck in a phase, or at its cap
        messages = stalled + failure_messages(result, mismatches, engine)
    else:
        messages = failure_messages(result, mismatches, engine, reason, params["wait_timeout"])
        if messages and reason == "timeout" and result["fatal"] is None and output.get("phase"):
            messages[0] += ", in start-up phase %s" % output["phase"]
    if messages:
        module.fail_json(msg="; ".join(messages), **output)
    output["msg"] = "the log proves %d expected key(s)%s" % (
        len(expect), "" if result["ready"] else "; the server is not ready")
    module.exit_json(**output)


def main():
    run_module()


if __name__ == "__main__":
    main()
