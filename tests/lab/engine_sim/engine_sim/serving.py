# SPDX-License-Identifier: GPL-3.0-or-later
"""HTTP side of the simulator: OpenAI-compatible endpoints, health, Prometheus metrics.

Runtime faults (``ENGINE_SIM_FAULT``, strike once ``ENGINE_SIM_FAULT_AFTER_REQUESTS`` requests, default
20, were admitted since the process started, so they strike again after every restart):

* ``wedge_after_requests``: the engine stops generating without a word (vLLM issue 50934's second
  incident, eugr/spark-vllm-docker 260): ``/health`` keeps answering 200, requests in flight and
  new ones hang, ``/metrics`` shows them running while the generated-token counter stays frozen.
* ``crash_after_requests``: the engine core dies on the next request with the engine's real crash
  record (vLLM: 50934's CUDA misaligned address; SGLang: a scheduler exception, process tree killed).
* ``slow_decode``: every decode step is ``ENGINE_SIM_SLOW_FACTOR`` (default 5) times slower.

Deterministic answers: an arithmetic question ("What is 2+2?") is answered with the result,
anything else with a fixed-vocabulary sentence derived from the prompt.  Speculative decoding
is simulated per request with per-position acceptance that decays like the seeds measured
(vLLM MTP at temperature 1.0: ~0.67 / 0.36 / 0.16), so the acceptance counters move.
"""
from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
import uuid
import zlib
from http import HTTPStatus
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import sglang_log, vllm_log

# Unconditional per-position acceptance (position k accepted => 0..k-1 accepted too).
MTP_ACCEPTANCE_SAMPLED = [0.67, 0.36, 0.16, 0.07, 0.03, 0.01, 0.0, 0.0]
MTP_ACCEPTANCE_GREEDY = [0.90, 0.72, 0.48, 0.30, 0.18, 0.1, 0.05, 0.02]
EAGLE_ACCEPTANCE = [0.90, 0.75, 0.55, 0.35, 0.2, 0.1, 0.05, 0.02]
WORDS = ("the", "model", "serves", "tokens", "quickly", "on", "a", "single", "GPU", "with", "speculative",
         "decoding", "and", "batching", "so", "latency", "stays", "low", "while", "throughput", "grows")
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
ARITHMETIC_RE = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)")
BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
           20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


RUNTIME_FAULTS = ("wedge_after_requests", "crash_after_requests", "slow_decode")


@dataclass(frozen=True)
class RuntimeFault:
    name: str
    after_requests: int
    slow_factor: float = 5.0


def runtime_fault(env) -> RuntimeFault | None:
    """The runtime fault the environment asks for (see the module docstring), or None."""
    name = (env.get("ENGINE_SIM_FAULT") or "").strip()
    if name not in RUNTIME_FAULTS:
        return None
    return RuntimeFault(name, int(env.get("ENGINE_SIM_FAULT_AFTER_REQUESTS") or 20),
                        float(env.get("ENGINE_SIM_SLOW_FACTOR") or 5))


def count_tokens(text: str) -> int:
    return len(TOKEN_RE.findall(text))


def answer(prompt: str, max_tokens: int | None) -> tuple[str, int, str]:
    """(text, completion tokens, finish_reason) for a prompt, deterministically."""
    match = ARITHMETIC_RE.search(prompt)
    if match:
        left, op, right = float(match.group(1)), match.group(2), float(match.group(3))
        result = {"+": left + right, "-": left - right, "*": left * right, "x": left * right,
                  "×": left * right, "/": left / right if right else math.nan}[op]
        text = str(int(result)) if float(result).is_integer() else f"{result:g}"
        return text, 1, "stop"
    rng = random.Random(zlib.crc32(prompt.encode()))
    length = 40 + rng.randrange(24)
    limit = max_tokens if max_tokens is not None else length
    count = min(length, max(limit, 0))
    words = [rng.choice(WORDS) for dummy in range(count)]
    text = (" ".join(words).capitalize() + ".") if words else ""
    return text, count, "length" if count < length else "stop"


def conditional(unconditional: list[float], k: int) -> list[float]:
    probs, previous = [], 1.0
    for rate in unconditional[:k]:
        probs.append(rate / previous if previous > 0 else 0.0)
        previous = rate
    return probs


def simulate_speculation(tokens: int, k: int, unconditional: list[float], seed: int) -> tuple[int, list[int]]:
    """(number of drafts, accepted count per position) to produce ``tokens`` tokens."""
    rng = random.Random(seed)
    probs = conditional(unconditional, k)
    drafts, per_pos, produced = 0, [0] * k, 0
    while produced < tokens:
        drafts += 1
        accepted = 0
        for prob in probs:
            if rng.random() >= prob:
                break
            per_pos[accepted] += 1
            accepted += 1
        produced += accepted + 1
    return drafts, per_pos


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


class EngineState:
    """Everything the HTTP handlers and the stats logger share."""

    def __init__(self, engine: str, plan, args, printer, display_pid: int = 1):
        self.engine, self.plan, self.args, self.printer = engine, plan, args, printer
        self.ready = threading.Event()
        self.dead = False
        self.stop = threading.Event()
        self.exit_code = 0
        self.lock = threading.Lock()
        self.created = int(time.time())
        self.start_time = time.time()
        self.running = self.waiting = 0
        self.requests = 0
        self.counters = {"prompt_tokens": 0, "generation_tokens": 0, "prefix_queries": 0, "prefix_hits": 0,
                         "spec_drafts": 0, "spec_draft_tokens": 0, "spec_accepted": 0, "success": 0}
        self.k = self._num_spec_tokens()
        self.per_pos = [0] * self.k
        self.window = {"prompt": 0, "generation": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0,
                       "per_pos": [0] * self.k, "queries": 0, "hits": 0, "requests": 0}
        self.ttft, self.e2e, self.itl = Histogram(), Histogram(), Histogram()
        self.seen_blocks: set[int] = set()
        self.slots = threading.Semaphore(self.max_running())
        self.token_latency = float(os.environ.get("ENGINE_SIM_TOKEN_LATENCY", "0.002"))
        self.crash_handler = None  # set by the runner for the bad nightly
        self.fault = runtime_fault(os.environ)
        self.runtime_crash = None  # set by the runner: prints the crash record, ends the engine
        self.wedged = threading.Event()
        self.slowed = False
        self.last_accept_length = 0.0
        self.last_accept_rate = 0.0
        self.last_throughput = 0.0

    # ------------------------------------------------------------------ engine facts
    def _num_spec_tokens(self) -> int:
        if self.engine == "vllm":
            return self.plan.num_spec_tokens
        args = self.plan.server_args
        return args["speculative_num_draft_tokens"] - 1 if args.get("speculative_algorithm") else 0

    def max_running(self) -> int:
        if self.engine == "vllm":
            return self.plan.max_num_seqs
        return sglang_log.max_running(self.plan)

    @property
    def served_model(self) -> str:
        return self.plan.served_model_name

    @property
    def max_model_len(self) -> int:
        return self.plan.max_model_len if self.engine == "vllm" else sglang_log.context_len(self.plan)

    def prefix_cache_enabled(self) -> bool:
        if self.engine == "vllm":
            return self.plan.prefix_caching
        return not self.plan.server_args["disable_radix_cache"]

    def kv_usage(self, active_tokens: int) -> float:
        if self.engine == "vllm" and self.plan.model.hybrid_mamba:
            # Hybrid models hold a mamba state block per sequence (seed 000: ~2.15 %/seq with MTP).
            per_seq = 0.0215 if self.plan.speculative else 0.0057
            return min(1.0, self.running * per_seq + active_tokens / max(self.plan.kv_cache_tokens, 1))
        return min(1.0, active_tokens / max(self.plan.kv_cache_tokens, 1))

    # ------------------------------------------------------------------ generation
    def default_temperature(self) -> float:
        if self.engine == "vllm":
            return float((self.args.override_generation_config or {}).get("temperature", 1.0))
        return 1.0

    def generate(self, prompt: str, max_tokens: int | None, temperature: float | None, chat: bool = True) -> dict:
        """Run one request through the simulated engine; returns token accounting and text."""
        temperature = self.default_temperature() if temperature is None else float(temperature)
        prompt_tokens = count_tokens(prompt)
        text, completion_tokens, finish = answer(prompt, max_tokens)
        reasoning = None
        if chat and self._reasoning_enabled():
            reasoning = "The user asks a question; answer it directly."
            if max_tokens is None or completion_tokens + count_tokens(reasoning) <= max_tokens:
                completion_tokens += count_tokens(reasoning)
            else:
                reasoning = None
        with self.lock:
            self.waiting += 1
        started = time.time()
        self.slots.acquire()
        try:
            with self.lock:
                self.waiting -= 1
                self.running += 1
                index = self.requests
                self.requests += 1
                queued = self.waiting
            if self.crash_handler and self.k:
                self.crash_handler()
                raise EngineDead()
            self._runtime_fault(index)
            hits = self._prefix_lookup(prompt)
            if self.engine == "sglang":
                sglang_log.prefill_line(self.printer, self.plan, prompt_tokens - hits, hits, self.running - 1, queued)
            first_token = time.time()
            drafts, per_pos = 0, [0] * self.k
            if self.k:
                table = EAGLE_ACCEPTANCE if self.engine == "sglang" else (
                    MTP_ACCEPTANCE_GREEDY if temperature < 0.5 else MTP_ACCEPTANCE_SAMPLED)
                drafts, per_pos = simulate_speculation(completion_tokens, self.k, table,
                                                       zlib.crc32(f"{index}|{prompt}".encode()))
            steps = drafts or completion_tokens
            self._decode(self.token_latency * (self.fault.slow_factor if self.slowed else 1.0) * steps)
            finished = time.time()
            with self.lock:
                self.counters["prompt_tokens"] += prompt_tokens
                self.counters["generation_tokens"] += completion_tokens
                self.counters["success"] += 1
                self.counters["spec_drafts"] += drafts
                self.counters["spec_draft_tokens"] += drafts * self.k
                self.counters["spec_accepted"] += sum(per_pos)
                for position, count in enumerate(per_pos):
                    self.per_pos[position] += count
                    self.window["per_pos"][position] += count
                window = self.window
                window["prompt"] += prompt_tokens
                window["generation"] += completion_tokens
                window["drafts"] += drafts
                window["draft_tokens"] += drafts * self.k
                window["accepted"] += sum(per_pos)
                window["requests"] += 1
                self.ttft.observe(first_token - started)
                self.e2e.observe(finished - started)
                if completion_tokens > 1:
                    self.itl.observe((finished - first_token) / (completion_tokens - 1))
                elapsed = max(finished - first_token, 1e-3)
                self.last_throughput = completion_tokens / elapsed
                if drafts:
                    self.last_accept_length = 1 + sum(per_pos) / drafts
                    self.last_accept_rate = self.last_accept_length / (self.k + 1)
            if self.engine == "sglang" and completion_tokens > 1:
                sglang_log.decode_line(self.printer, self.plan, self.running, prompt_tokens + completion_tokens,
                                       self.last_accept_length if self.k else None, self.last_accept_rate,
                                       self.last_throughput, self.waiting)
        finally:
            with self.lock:
                self.running -= 1
            self.slots.release()
        return {"text": text, "reasoning": reasoning, "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens, "finish_reason": finish, "cached_tokens": hits}

    def _runtime_fault(self, index: int) -> None:
        """Strike the configured runtime fault once ``index`` requests were admitted before this one."""
        fault = self.fault
        if fault is None or index < fault.after_requests:
            return
        if fault.name == "slow_decode":
            self.slowed = True
        elif fault.name == "crash_after_requests" and self.runtime_crash:
            self.runtime_crash()
            raise EngineDead()
        elif fault.name == "wedge_after_requests":
            self.wedged.set()
            self._decode(0)

    def _decode(self, seconds: float) -> None:
        """Decode for ``seconds``; once wedged, never finish (until the engine is stopped)."""
        if self.wedged.wait(seconds):
            self.stop.wait()
            raise EngineStopped()

    def _reasoning_enabled(self) -> bool:
        if self.engine == "vllm":
            return bool(self.args.reasoning_parser)
        return bool(self.plan.server_args.get("reasoning_parser"))

    def _prefix_lookup(self, prompt: str) -> int:
        """Prefix-cache accounting in 16-token blocks; hybrid Mamba on vLLM never hits (seed 000)."""
        if not self.prefix_cache_enabled():
            return 0
        tokens = TOKEN_RE.findall(prompt)
        blocks = [zlib.crc32(" ".join(tokens[: end]).encode()) for end in range(16, len(tokens) + 1, 16)]
        hits = 0
        hybrid_vllm = self.engine == "vllm" and self.plan.model.hybrid_mamba
        with self.lock:
            for block in blocks:
                if block in self.seen_blocks and not hybrid_vllm:
                    hits += 16
                else:
                    break
            self.seen_blocks.update(blocks)
            self.counters["prefix_queries"] += len(tokens)
            self.counters["prefix_hits"] += hits
            self.window["queries"] += len(tokens)
            self.window["hits"] += hits
        return hits

    # ------------------------------------------------------------------ stats logging
    def log_stats(self, interval: float) -> None:
        """vLLM's periodic Engine 000 / SpecDecoding lines (only when not idle)."""
        with self.lock:
            window = self.window
            self.window = {"prompt": 0, "generation": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0,
                           "per_pos": [0] * self.k, "queries": 0, "hits": 0, "requests": 0}
            running, waiting = self.running, self.waiting
        if not window["requests"] and not running and not waiting:
            return
        hit_rate = window["hits"] / window["queries"] if window["queries"] else None
        spec = None
        if window["drafts"]:
            spec = {"drafts": window["drafts"], "draft_tokens": window["draft_tokens"],
                    "accepted": window["accepted"], "per_pos": window["per_pos"],
                    "accepted_tps": window["accepted"] / interval, "drafted_tps": window["draft_tokens"] / interval}
        vllm_log.stats_lines(self.printer, self.plan, window["prompt"] / interval, window["generation"] / interval,
                             running, waiting, self.kv_usage(0), hit_rate, spec)

    # ------------------------------------------------------------------ metrics
    def metrics_text(self) -> str:
        return self._vllm_metrics() if self.engine == "vllm" else self._sglang_metrics()

    def _vllm_metrics(self) -> str:
        labels = f'engine="0",model_name="{self.served_model}"'
        out: list[str] = []

        def metric(name, kind, help_text, value, extra=""):
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            lab = labels + extra
            if kind == "counter":
                out.append(f"{name}_total{{{lab}}} {float(value)}")
                out.append(f"{name}_created{{{lab}}} {float(self.created)}")
            else:
                out.append(f"{name}{{{lab}}} {float(value)}")

        with self.lock:
            counters = dict(self.counters)
            running, waiting, per_pos = self.running, self.waiting, list(self.per_pos)
        metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running)
        metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting)
        metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", self.kv_usage(0))
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
            value = counters["success"] if reason == "stop" else 0
            out.append(f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {float(value)}')
        self._histogram(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                        self.ttft, labels)
        self._histogram(out, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                        self.itl, labels)
        self._histogram(out, "vllm:e2e_request_latency_seconds",
                        "Histogram of e2e request latency in seconds.", self.e2e, labels)
        if self.k:
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

    def _sglang_metrics(self) -> str:
        labels = f'engine_type="unified",model_name="{self.served_model}",pp_rank="0",tp_rank="0"'
        out: list[str] = []

        def metric(name, kind, help_text, value):
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.append(f"{name}{{{labels}}} {float(value)}")

        with self.lock:
            counters = dict(self.counters)
            running, waiting = self.running, self.waiting
        queries = counters["prefix_queries"]
        metric("sglang:num_running_reqs", "gauge", "The number of running requests.", running)
        metric("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", waiting)
        metric("sglang:num_used_tokens", "gauge", "The number of used tokens.", 0)
        metric("sglang:token_usage", "gauge", "The token usage.", self.kv_usage(0))
        if self.plan.model.hybrid_mamba:
            metric("sglang:mamba_usage", "gauge", "The mamba usage.", running / max(self.plan.mamba_cache_size, 1))
        metric("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", self.last_throughput)
        metric("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.",
               counters["prefix_hits"] / queries if queries else 0.0)
        metric("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative decoding.",
               self.last_accept_length)
        metric("sglang:spec_accept_rate", "gauge", "The average acceptance rate of speculative decoding.",
               self.last_accept_rate)
        metric("sglang:num_retracted_reqs", "gauge", "The number of retracted requests.", 0)
        metric("sglang:is_cuda_graph", "gauge", "Whether the batch is using CUDA graph.",
               1.0 if self.plan.cuda_graph_bs else 0.0)
        metric("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
               counters["prompt_tokens"])
        metric("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
               counters["generation_tokens"])
        metric("sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.", counters["prefix_hits"])
        metric("sglang:num_requests_total", "counter", "Number of requests processed.", counters["success"])
        metric("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", 0)
        self._histogram(out, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                        self.ttft, labels)
        self._histogram(out, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                        self.itl, labels)
        self._histogram(out, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in "
                        "seconds", self.e2e, labels)
        return "\n".join(out) + "\n"

    @staticmethod
    def _histogram(out, name, help_text, histogram: Histogram, labels: str) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} histogram")
        for bound, count in zip(BUCKETS, histogram.counts):
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(count)}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(histogram.count)}')
        out.append(f"{name}_count{{{labels}}} {float(histogram.count)}")
        out.append(f"{name}_sum{{{labels}}} {histogram.total}")


class EngineDead(Exception):
    """The engine core died while serving a request."""


class EngineStopped(Exception):
    """The engine was stopped while a (wedged) request waited: its client is long gone."""


def _messages_to_prompt(messages) -> str:
    parts = []
    for message in messages or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    state: EngineState  # set on the subclass by make_server

    # ------------------------------------------------------------------ plumbing
    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler API
        return

    def log_request(self, code="-", size="-"):
        try:
            status = HTTPStatus(int(code))
            phrase = f"{status.value} {status.phrase}"
        except ValueError:
            phrase = str(code)
        host, port = self.client_address[:2]
        self.state.printer.uvicorn(f'{host}:{port} - "{self.command} {self.path} HTTP/1.1" {phrase}')

    def _send(self, status: int, body, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if not isinstance(body, str)
                                                     else body.encode())
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, message: str, err_type: str, param: str | None = None) -> None:
        if self.state.engine == "vllm":
            self._send(status, {"error": {"message": message, "type": err_type, "param": param, "code": status}})
        else:
            self._send(status, {"object": "error", "message": message, "type": err_type, "param": param,
                                "code": status})

    def _body(self) -> dict:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        return json.loads(raw or b"{}")

    # ------------------------------------------------------------------ routes
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        state = self.state
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate", "/ping"):
            if state.dead or not state.ready.is_set():
                self._send(503, b"", "application/json")
            else:
                self._send(200, b"", "application/json")
            return
        if path == "/metrics":
            if state.engine == "sglang" and not state.plan.server_args["enable_metrics"]:
                self._send(404, {"detail": "Not Found"})
                return
            self._send(200, state.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            return
        if not state.ready.is_set() and state.engine == "sglang":
            self._send(503, b"")
            return
        if path == "/v1/models":
            owner = "vllm" if state.engine == "vllm" else "sglang"
            card = {"id": state.served_model, "object": "model", "created": state.created, "owned_by": owner,
                    "root": state.args.model if state.engine == "vllm" else state.served_model,
                    "parent": None, "max_model_len": state.max_model_len}
            self._send(200, {"object": "list", "data": [card]})
            return
        if state.engine == "vllm" and path == "/version":
            from .versions import full_version
            self._send(200, {"version": full_version("vllm", state.plan.version)})
            return
        if state.engine == "sglang":
            from .versions import at_least
            info_paths = ["/get_server_info"] + (["/server_info"] if at_least(state.plan.version, "0.5.6") else [])
            model_paths = ["/get_model_info"] + (["/model_info"] if at_least(state.plan.version, "0.5.6") else [])
            if path in info_paths:
                info = dict(state.plan.server_args)
                info.update({"version": state.plan.version, "max_total_num_tokens": state.plan.kv_cache_tokens,
                             "internal_states": [{"avg_spec_accept_length": state.last_accept_length or None,
                                                  "last_gen_throughput": state.last_throughput}]})
                self._send(200, info)
                return
            if path in model_paths:
                self._send(200, {"model_path": state.plan.server_args["model_path"],
                                 "tokenizer_path": state.plan.server_args["tokenizer_path"],
                                 "is_generation": True})
                return
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        state = self.state
        path = self.path.split("?", 1)[0]
        routes = {"/v1/chat/completions": "chat", "/v1/completions": "completion"}
        if state.engine == "sglang":
            routes["/generate"] = "generate"
        if path not in routes:
            self._send(404, {"detail": "Not Found"})
            return
        if state.dead:
            self._error(500, "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                        "InternalServerError")
            return
        if not state.ready.is_set():
            self._send(503, b"")
            return
        if not self._authorised():
            self._send(401, {"error": "Unauthorized"})
            return
        try:
            body = self._body()
        except ValueError:
            self._error(400, "Invalid JSON body", "BadRequestError")
            return
        kind = routes[path]
        model = body.get("model")
        if kind != "generate" and model is not None and model != state.served_model:
            if state.engine == "vllm":
                self._error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
            else:
                self._error(404, f"The model '{model}' does not exist", "NotFoundError", "model")
            return
        if kind == "chat":
            prompt = _messages_to_prompt(body.get("messages"))
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        elif kind == "completion":
            prompt = body.get("prompt") or ""
            prompt = " ".join(prompt) if isinstance(prompt, list) else str(prompt)
            max_tokens = body.get("max_tokens", 16)
        else:
            prompt = str(body.get("text", ""))
            max_tokens = (body.get("sampling_params") or {}).get("max_new_tokens", 128)
        temperature = body.get("temperature", (body.get("sampling_params") or {}).get("temperature"))
        try:
            result = state.generate(prompt, max_tokens, temperature, chat=kind == "chat")
        except EngineStopped:
            self.close_connection = True
            return
        except EngineDead:
            self._error(500, "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                        "InternalServerError")
            return
        self._respond(kind, body, result)

    def _authorised(self) -> bool:
        # vLLM: `args.api_key or envs.VLLM_API_KEY` (vllm/entrypoints/openai/api_server.py).
        keys = ((self.state.args.api_key or os.environ.get("VLLM_API_KEY")) if self.state.engine == "vllm"
                else self.state.plan.server_args["api_key"])
        if not keys:
            return True
        keys = keys if isinstance(keys, list) else [keys]
        return self.headers.get("authorization", "") in {f"Bearer {key}" for key in keys}

    def _respond(self, kind: str, body: dict, result: dict) -> None:
        state = self.state
        usage = {"prompt_tokens": result["prompt_tokens"], "total_tokens":
                 result["prompt_tokens"] + result["completion_tokens"],
                 "completion_tokens": result["completion_tokens"], "prompt_tokens_details": None}
        created = int(time.time())
        if kind == "generate":
            self._send(200, {"text": result["text"], "meta_info": {
                "id": uuid.uuid4().hex, "finish_reason": {"type": result["finish_reason"]},
                "prompt_tokens": result["prompt_tokens"], "completion_tokens": result["completion_tokens"],
                "cached_tokens": result["cached_tokens"]}})
            return
        if kind == "chat":
            message = {"role": "assistant", "content": result["text"], "tool_calls": []}
            if result["reasoning"]:
                message["reasoning_content"] = result["reasoning"]
                if state.engine == "vllm":
                    message["reasoning"] = result["reasoning"]
            choice = {"index": 0, "message": message, "logprobs": None,
                      "finish_reason": result["finish_reason"], "stop_reason": None}
            obj, prefix = "chat.completion", "chatcmpl-"
        else:
            choice = {"index": 0, "text": result["text"], "logprobs": None,
                      "finish_reason": result["finish_reason"], "stop_reason": None}
            obj, prefix = "text_completion", "cmpl-"
        response_id = prefix + uuid.uuid4().hex
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(kind, response_id, created, result, usage, include_usage)
            return
        self._send(200, {"id": response_id, "object": obj, "created": created, "model": state.served_model,
                         "choices": [choice], "usage": usage, "prompt_logprobs": None})

    def _stream(self, kind: str, response_id: str, created: int, result: dict, usage: dict,
                include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
        pieces = re.findall(r"\S+\s*", result["text"]) or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if kind == "chat":
                delta = {"content": piece} if index else {"role": "assistant", "content": piece}
                choice = {"index": 0, "delta": delta, "logprobs": None,
                          "finish_reason": result["finish_reason"] if last else None}
            else:
                choice = {"index": 0, "text": piece, "logprobs": None,
                          "finish_reason": result["finish_reason"] if last else None}
            chunk = {"id": response_id, "object": obj, "created": created, "model": self.state.served_model,
                     "choices": [choice]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if include_usage:
            chunk = {"id": response_id, "object": obj, "created": created, "model": self.state.served_model,
                     "choices": [], "usage": usage}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def make_server(state: EngineState, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": state})
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
