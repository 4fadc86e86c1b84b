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
* ``slow_nightly``: from the first request, decode is ``ENGINE_SIM_SLOWDOWN`` (default 0.30) slower
  (a nightly 30 % slower: ``tests/lab/nightly.sh build VERSION slow_nightly``).
* ``wrong_answer``: the engine serves wrong output, fast and with status 200 (a broken kernel or a
  wrong dtype: every metric looks healthy): each number of an answer is one more than the right
  one, so "What is 2+2?" is answered "5". The correctness gate (the server role's smoke test) is
  what must catch it.

Timing: an engine thread runs the performance model's steps (``perf.py``) in wall-clock time,
``ENGINE_SIM_TIME_SCALE`` times faster (default 1); a streamed request gets each step's tokens
when the step ends. ``ENGINE_SIM_TOKEN_LATENCY`` replaces the model by a fixed step time.

Deterministic answers: an arithmetic question ("What is 2+2?") is answered with the result,
anything else with a fixed-vocabulary sentence derived from the prompt.  Speculative decoding
is simulated per step with per-position acceptance that decays like the field reports measured
(vLLM MTP at temperature 1.0: ~0.67 / 0.36 / 0.16), so the acceptance counters move.
"""
from __future__ import annotations

import json
import math
import os
import queue
import random
import re
import threading
import time
import uuid
import zlib
from http import HTTPStatus
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import metrics, perf, sglang_log, vllm_log
from .metrics import Histogram

WORDS = ("the", "model", "serves", "tokens", "quickly", "on", "a", "single", "GPU", "with", "speculative",
         "decoding", "and", "batching", "so", "latency", "stays", "low", "while", "throughput", "grows")
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
ARITHMETIC_RE = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)")
REASONING = "The user asks a question; answer it directly."
# SGLang logs a "Decode batch" line every --decode-log-interval (default 40) decode steps.
DECODE_LOG_INTERVAL = 40


RUNTIME_FAULTS = ("wedge_after_requests", "crash_after_requests", "slow_decode", "slow_nightly", "wrong_answer")
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")


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
    if name == "slow_nightly":
        slowdown = float(env.get("ENGINE_SIM_SLOWDOWN") or perf.SLOW_NIGHTLY_SLOWDOWN)
        return RuntimeFault(name, 0, 1.0 / (1.0 - min(max(slowdown, 0.0), 0.95)))
    return RuntimeFault(name, int(env.get("ENGINE_SIM_FAULT_AFTER_REQUESTS") or 20),
                        float(env.get("ENGINE_SIM_SLOW_FACTOR") or 5))


def time_scale(env) -> float:
    """ENGINE_SIM_TIME_SCALE: how many times faster than the model the engine runs (default 1)."""
    try:
        return max(float(env.get("ENGINE_SIM_TIME_SCALE") or 1.0), 1e-3)
    except ValueError:
        return 1.0


def count_tokens(text: str) -> int:
    return len(TOKEN_RE.findall(text))


def answer(prompt: str, max_tokens: int | None, ignore_eos: bool = False, min_tokens: int = 0) -> tuple[str, int, str]:
    """(text, completion tokens, finish_reason) for a prompt, deterministically. ``ignore_eos``
    (and ``min_tokens``) go on past the answer's end to ``max_tokens``, as the engines do for
    benchmarks (guidellm and bench_serving send fixed output lengths)."""
    match = ARITHMETIC_RE.search(prompt)
    rng = random.Random(zlib.crc32(prompt.encode()))
    if match:
        left, op, right = float(match.group(1)), match.group(2), float(match.group(3))
        result = {"+": left + right, "-": left - right, "*": left * right, "x": left * right,
                  "×": left * right, "/": left / right if right else math.nan}[op]
        text = str(int(result)) if float(result).is_integer() else f"{result:g}"
        if not ignore_eos and int(min_tokens or 0) <= 1:
            return text, 1, "stop"
        words, length = [text], 1
    else:
        length = 40 + rng.randrange(24)
        words = []
    limit = max_tokens if max_tokens is not None else length
    target = limit if ignore_eos else max(length, min(int(min_tokens or 0), limit))
    count = min(target, max(limit, 0))
    words += [rng.choice(WORDS) for dummy in range(count - len(words))]
    words = words[:count]
    if match:
        text = " ".join(words)
    else:
        text = (" ".join(words).capitalize() + ".") if words else ""
    return text, count, "length" if count < length or (ignore_eos and count >= limit) else "stop"


def wrong_answer(text: str) -> str:
    """The ``wrong_answer`` fault's text: every number of ``text`` one more than it is ("4" -> "5")."""
    def off_by_one(match):
        value = float(match.group(0)) + 1
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return NUMBER_RE.sub(off_by_one, text)


def pieces(reasoning: str | None, text: str, count: int) -> list[tuple[str, str]]:
    """The streamed deltas of an answer, one per token: ("reasoning", piece) then ("content", piece)."""
    out = [("reasoning", piece) for piece in re.findall(r"\s*(?:\w+|[^\w\s])", reasoning or "")]
    words = re.findall(r"\S+\s*", text)
    out += [("content", piece) for piece in words]
    while len(out) < count:
        out.append(("content", ""))
    return out[:count] if count else out


class Request:
    """One request in the engine: its tokens arrive over wall-clock time through ``deliveries``."""

    def __init__(self, prompt_tokens: int, completion_tokens: int, finish_reason: str = "stop",
                 streaming: bool = False):
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens
        self.finish_reason = finish_reason
        self.streaming = streaming  # wake the handler per step only when it streams
        self.deliveries: queue.Queue = queue.Queue()
        self.arrival = time.time()
        self.first_token: float | None = None
        self.last_token: float | None = None
        self.decode_lines = 0


class EngineState:
    """Everything the HTTP handlers, the engine loop and the stats logger share."""

    def __init__(self, engine: str, plan, args, printer, display_pid: int = 1):
        self.engine, self.plan, self.args, self.printer = engine, plan, args, printer
        self.ready = threading.Event()
        self.dead = False
        self.stop = threading.Event()
        self.exit_code = 0
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.created = int(time.time())
        self.start_time = time.time()
        self.requests = 0
        self.counters = {"prompt_tokens": 0, "generation_tokens": 0, "prefix_queries": 0, "prefix_hits": 0,
                         "spec_drafts": 0, "spec_draft_tokens": 0, "spec_accepted": 0, "success": 0,
                         "success_length": 0}
        self.k = self._num_spec_tokens()
        self.per_pos = [0] * self.k
        self.window = self._new_window()
        self.ttft, self.e2e, self.itl = Histogram(), Histogram(), Histogram()
        self.seen_blocks: set[int] = set()
        self.crash_handler = None  # set by the runner for the bad nightly
        self.fault = runtime_fault(os.environ)
        self.runtime_crash = None  # set by the runner: prints the crash record, ends the engine
        self.wedged = threading.Event()
        # Graceful shutdown (vLLM --shutdown-timeout > 0, runner.Lifecycle): requests refused
        # with 503 while the ones in flight (counted until their last byte is sent) finish.
        self.draining = threading.Event()
        self.in_flight = 0
        self.drain_reject = None  # set by the runner: logs the engine's "Rejecting request" line
        self.time_scale = time_scale(os.environ)
        self.sim = self._make_engine()
        self.last_accept_length = 0.0
        self.last_accept_rate = 0.0
        self.last_throughput = 0.0
        self.decode_steps = 0
        self.decode_lines = 0
        self.decode_log = {"time": time.time(), "tokens": 0, "drafts": 0, "accepted": 0}
        self.loop = threading.Thread(target=self._engine_loop, name="engine", daemon=True)
        self.loop.start()

    def _new_window(self) -> dict:
        return {"prompt": 0, "generation": 0, "drafts": 0, "draft_tokens": 0, "accepted": 0,
                "per_pos": [0] * self.k, "queries": 0, "hits": 0, "requests": 0}

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

    def _make_engine(self) -> perf.Engine:
        """The performance model for this engine on this GPU (engine_sim/perf.py); with
        ENGINE_SIM_TOKEN_LATENCY set, a fixed step time instead (the simulator before the model)."""
        name = perf.profile_for(self.engine)
        if self.engine == "vllm":
            budget = self.plan.max_num_batched_tokens
            kv_tokens = None if self.plan.model.hybrid_mamba else self.plan.kv_cache_tokens
            params = perf.params(name)
        else:
            budget = self.plan.server_args.get("chunked_prefill_size") or 8192
            kv_tokens = self.plan.kv_cache_tokens
            params = perf.params(name, chunked_prefill_size=budget)
        latency = os.environ.get("ENGINE_SIM_TOKEN_LATENCY")
        if latency:
            params = perf.legacy(float(latency), params)
        slowdown = self.fault.slow_factor if self.fault and self.fault.name == "slow_nightly" else 1.0
        return perf.Engine(params, self.max_running(), self.k, budget, kv_tokens or None, slowdown)

    @property
    def running(self) -> int:
        return len(self.sim.running)

    @property
    def waiting(self) -> int:
        return len(self.sim.waiting)

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

    def kv_usage(self) -> float:
        return self.sim.kv_usage()

    # ------------------------------------------------------------------ generation
    def default_temperature(self) -> float:
        if self.engine == "vllm":
            return float((self.args.override_generation_config or {}).get("temperature", 1.0))
        return 1.0

    def generate(self, prompt: str, max_tokens: int | None, temperature: float | None, chat: bool = True,
                 ignore_eos: bool = False, min_tokens: int = 0, on_tokens=None) -> dict:
        """Run one request through the simulated engine; ``on_tokens(pieces)`` is called with
        each step's tokens as they are generated (streaming). Returns the token accounting."""
        temperature = self.default_temperature() if temperature is None else float(temperature)
        prompt_tokens = count_tokens(prompt)
        reasoning = REASONING if chat and self._reasoning_enabled() else None
        spent = count_tokens(reasoning) if reasoning else 0
        if ignore_eos and reasoning and max_tokens is not None and max_tokens > spent:
            text, completion_tokens, finish = answer(prompt, max_tokens - spent, True, min_tokens)
            completion_tokens += spent
        else:
            text, completion_tokens, finish = answer(prompt, max_tokens, ignore_eos, min_tokens)
            if reasoning and (max_tokens is None or completion_tokens + spent <= max_tokens):
                completion_tokens += spent
            else:
                reasoning = None
        with self.lock:
            index = self.requests
            self.requests += 1
        if self.crash_handler and self.k:
            self.crash_handler()
            raise EngineDead()
        self._runtime_fault(index)
        if self.fault and self.fault.name == "wrong_answer" and index >= self.fault.after_requests:
            text = wrong_answer(text)
        deltas = pieces(reasoning, text, completion_tokens)
        hits = self._prefix_lookup(prompt)
        request = Request(prompt_tokens, completion_tokens, finish, streaming=on_tokens is not None)
        probs = perf.conditional(perf.acceptance(self.sim.p, temperature, self.k)) if self.k else []
        seq = perf.Sequence(max(prompt_tokens - hits, 1), completion_tokens, probs,
                            zlib.crc32(f"{index}|{prompt}".encode()), tag=request)
        with self.work:
            request.decode_lines = self.decode_lines
            self.sim.submit(seq)
            if self.wedged.is_set():
                self.sim.admit()  # a wedged engine still takes requests in (and never serves them)
            self.work.notify()
        sent = 0
        while True:
            try:
                kind, count = request.deliveries.get(timeout=0.2)
            except queue.Empty:
                if self.stop.is_set():
                    raise EngineStopped()
                if self.dead:
                    raise EngineDead()
                continue
            if kind == "dead":
                raise EngineDead()
            if count and on_tokens:
                on_tokens(deltas[sent:sent + count])
            sent += count
            if kind == "done":
                break
        return {"text": text, "reasoning": reasoning, "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens, "finish_reason": finish, "cached_tokens": hits}

    def _runtime_fault(self, index: int) -> None:
        """Strike the configured runtime fault once ``index`` requests were admitted before this one."""
        fault = self.fault
        if fault is None or index < fault.after_requests or fault.name == "slow_nightly":
            return
        if fault.name == "slow_decode":
            with self.lock:
                self.sim.slowdown = fault.slow_factor
        elif fault.name == "crash_after_requests" and self.runtime_crash:
            self.runtime_crash()
            raise EngineDead()
        elif fault.name == "wedge_after_requests":
            self.wedged.set()

    # ------------------------------------------------------------------ the engine loop
    def _engine_loop(self) -> None:
        """Step the performance model in wall-clock time (ENGINE_SIM_TIME_SCALE compresses it)."""
        deadline = None  # when the step in progress ends (monotonic): Python's own overhead
        while not self.stop.is_set():  # does not add up over steps
            with self.work:
                if self.dead:
                    self._fail_all()
                    return
                result = None if self.wedged.is_set() else self.sim.step()
                if result is None:
                    deadline = None
                    self.work.wait(0.2)
                    continue
            if result.kind != "decode" and self.engine == "sglang":
                self._prefill_lines(result)
            now = time.monotonic()
            if deadline is None or deadline < now - 0.05:  # idle, or too far behind to catch up
                deadline = now
            deadline += result.duration / self.time_scale
            if self.stop.wait(max(deadline - time.monotonic(), 0.0)):
                return
            if self.wedged.is_set():
                # Hung mid-step: nothing more comes out (the tokens of this step neither).
                self.stop.wait()
                return
            with self.lock:
                if self.dead:
                    self._fail_all()
                    return
                self._account(result)

    def _fail_all(self) -> None:
        for seq in list(self.sim.running) + list(self.sim.waiting):
            seq.tag.deliveries.put(("dead", 0))
        self.sim.running.clear()
        self.sim.waiting.clear()

    def _account(self, result) -> None:
        """Counters, histograms and deliveries for one finished step (under the lock)."""
        now = time.time()
        window, counters = self.window, self.counters
        window["prompt"] += result.prefill_tokens
        counters["prompt_tokens"] += result.prefill_tokens
        generated = sum(result.tokens.values())
        if self.engine == "vllm":
            counters["generation_tokens"] += generated
        window["generation"] += generated
        counters["spec_drafts"] += result.drafts
        counters["spec_draft_tokens"] += result.draft_tokens
        counters["spec_accepted"] += sum(result.accepted_per_pos)
        window["drafts"] += result.drafts
        window["draft_tokens"] += result.draft_tokens
        window["accepted"] += sum(result.accepted_per_pos)
        for position, count in enumerate(result.accepted_per_pos):
            self.per_pos[position] += count
            window["per_pos"][position] += count
        log = self.decode_log
        log["tokens"] += generated
        log["drafts"] += result.drafts
        log["accepted"] += sum(result.accepted_per_pos)
        if result.kind != "prefill":
            self.decode_steps += 1
        finished = set(result.finished)
        for seq, count in result.tokens.items():
            request = seq.tag
            if request.first_token is None:
                request.first_token = now
                self.ttft.observe(now - request.arrival)
            else:
                self.itl.observe(now - request.last_token)
            request.last_token = now
            if request.streaming and seq not in finished:
                request.deliveries.put(("tokens", count))
        decode_line = self.engine == "sglang" and result.kind != "prefill" and \
            self.decode_steps % DECODE_LOG_INTERVAL == 0
        for seq in result.finished:
            request = seq.tag
            counters["success"] += 1
            if request.finish_reason == "length":
                counters["success_length"] += 1
            window["requests"] += 1
            if self.engine == "sglang":
                counters["generation_tokens"] += request.completion_tokens
            self.e2e.observe(now - request.arrival)
            # At least one line per request, so a short request leaves its evidence in the log.
            decode_line = decode_line or (self.engine == "sglang" and request.completion_tokens > 1
                                          and request.decode_lines == self.decode_lines)
        if decode_line:
            self._decode_line(now, result)
        for seq in result.finished:
            request = seq.tag
            count = result.tokens.get(seq, 0) if request.streaming else request.completion_tokens
            request.deliveries.put(("done", count))

    def _decode_line(self, now: float, result) -> None:
        log = self.decode_log
        elapsed = max(now - log["time"], 1e-6)
        self.last_throughput = log["tokens"] / elapsed
        if log["drafts"]:
            self.last_accept_length = 1 + log["accepted"] / log["drafts"]
            self.last_accept_rate = self.last_accept_length / (self.k + 1)
        self.decode_lines += 1
        tokens = sum(seq.prefilled + seq.generated for seq in self.sim.running)
        sglang_log.decode_line(self.printer, self.plan, max(result.running, 1), tokens,
                               self.last_accept_length if self.k else None, self.last_accept_rate,
                               self.last_throughput, result.waiting)
        self.decode_log = {"time": now, "tokens": 0, "drafts": 0, "accepted": 0}

    def _prefill_lines(self, result) -> None:
        new = [seq for seq in result.tokens if seq.generated == 1] or list(result.tokens)
        sglang_log.prefill_line(self.printer, self.plan, result.prefill_tokens, 0, result.running, result.waiting,
                                new_seqs=max(len(new), 1))

    def _reasoning_enabled(self) -> bool:
        if self.engine == "vllm":
            return bool(self.args.reasoning_parser)
        return bool(self.plan.server_args.get("reasoning_parser"))

    def _prefix_lookup(self, prompt: str) -> int:
        """Prefix-cache accounting in 16-token blocks; hybrid Mamba on vLLM never hits (the GB10 field report)."""
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
                             running, waiting, self.kv_usage(), hit_rate, spec)

    # ------------------------------------------------------------------ metrics
    def metrics_text(self) -> str:
        return metrics.vllm_metrics(self) if self.engine == "vllm" else metrics.sglang_metrics(self)


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
            if state.dead or not state.ready.is_set() or state.draining.is_set():
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
        if state.draining.is_set():
            # vLLM 0.19.1 rejects a request added during shutdown (vllm/v1/engine/core.py
            # _reject_add_in_shutdown); the simulator answers it 503, as a load balancer expects
            # of a draining backend, so the gateway retries it on another host.
            if state.drain_reject:
                state.drain_reject(uuid.uuid4().hex)
            self.close_connection = True  # its body is left unread
            self._error(503, "Server shutting down", "ServiceUnavailableError")
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
        sampling = body.get("sampling_params") or {}
        temperature = body.get("temperature", sampling.get("temperature"))
        ignore_eos = bool(body.get("ignore_eos", sampling.get("ignore_eos", False)))
        min_tokens = int(body.get("min_tokens", sampling.get("min_new_tokens", 0)) or 0)
        with state.lock:
            state.in_flight += 1
        try:
            self._generate(kind, body, prompt, max_tokens, temperature, ignore_eos, min_tokens)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _generate(self, kind, body, prompt, max_tokens, temperature, ignore_eos, min_tokens) -> None:
        state = self.state
        stream = _Stream(self, kind, body) if body.get("stream") and kind != "generate" else None
        try:
            result = state.generate(prompt, max_tokens, temperature, chat=kind == "chat", ignore_eos=ignore_eos,
                                    min_tokens=min_tokens, on_tokens=stream.tokens if stream else None)
        except EngineStopped:
            self.close_connection = True
            return
        except EngineDead:
            if stream and stream.started:
                stream.error("EngineCore encountered an issue. See stack trace (above) for the root cause.")
                return
            self._error(500, "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                        "InternalServerError")
            return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        if stream:
            stream.finish(result)
            return
        self._respond(kind, result)

    def _authorised(self) -> bool:
        # vLLM: `args.api_key or envs.VLLM_API_KEY` (vllm/entrypoints/openai/api_server.py).
        keys = ((self.state.args.api_key or os.environ.get("VLLM_API_KEY")) if self.state.engine == "vllm"
                else self.state.plan.server_args["api_key"])
        if not keys:
            return True
        keys = keys if isinstance(keys, list) else [keys]
        return self.headers.get("authorization", "") in {f"Bearer {key}" for key in keys}

    def _respond(self, kind: str, result: dict) -> None:
        state = self.state
        usage = _usage(result)
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
        self._send(200, {"id": prefix + uuid.uuid4().hex, "object": obj, "created": created,
                         "model": state.served_model, "choices": [choice], "usage": usage, "prompt_logprobs": None})


def _usage(result: dict) -> dict:
    return {"prompt_tokens": result["prompt_tokens"], "total_tokens":
            result["prompt_tokens"] + result["completion_tokens"],
            "completion_tokens": result["completion_tokens"], "prompt_tokens_details": None}


class _Stream:
    """Server-sent events of one streamed request: a chunk per engine step, as the step's tokens
    come out of the engine (wall-clock time), then the finish chunk, the usage and [DONE].

    Sent as both engines' uvicorn sends a FastAPI StreamingResponse over HTTP/1.1 (h11): no
    content-length, ``transfer-encoding: chunked``, each event one chunk, the body ended by the
    zero-length chunk. A stream cut by a stop or a crash therefore ends without that chunk, and a
    client (httpx in LiteLLM: "incomplete chunked read") can tell it from a finished one - with a
    close-delimited body it could not, and a proxy would pass the cut stream on as complete."""

    def __init__(self, handler: Handler, kind: str, body: dict):
        self.handler, self.kind = handler, kind
        self.include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
        self.id = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.started = False
        self.first = True

    def _start(self) -> None:
        if self.started:
            return
        handler = self.handler
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream; charset=utf-8")
        handler.send_header("transfer-encoding", "chunked")
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.close_connection = True
        self.started = True

    def _send(self, data: bytes) -> None:
        """One chunk of the chunked body (the empty one ends it)."""
        self.handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.handler.wfile.flush()

    def _write(self, choices: list, usage: dict | None = None) -> None:
        chunk = {"id": self.id, "object": self.obj, "created": self.created,
                 "model": self.handler.state.served_model, "choices": choices}
        if usage is not None:
            chunk["usage"] = usage
        self._send(f"data: {json.dumps(chunk)}\n\n".encode())

    def _choice(self, field: str, text: str, finish: str | None = None) -> dict:
        if self.kind != "chat":
            return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        if field == "reasoning":
            delta = {"reasoning_content": text}
            if self.handler.state.engine == "vllm":
                delta["reasoning"] = text
        else:
            delta = {"content": text} if finish is None or text else {}
        if self.first:
            delta = dict(delta, role="assistant")
            self.first = False
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}

    def tokens(self, deltas: list) -> None:
        """One engine step's tokens: one chunk per kind (reasoning, content) in this step."""
        self._start()
        groups: list = []
        for field, text in deltas:
            if groups and groups[-1][0] == field:
                groups[-1][1] += text
            else:
                groups.append([field, text])
        for field, text in groups:
            self._write([self._choice(field, text)])

    def finish(self, result: dict) -> None:
        self._start()
        self._write([self._choice("content", "", result["finish_reason"])])
        if self.include_usage:
            self._write([], _usage(result))
        self._send(b"data: [DONE]\n\n")
        self._send(b"")

    def error(self, message: str) -> None:
        error = {"error": {"message": message, "type": "InternalServerError", "param": None, "code": 500}}
        self._send(f"data: {json.dumps(error)}\n\n".encode())
        self._send(b"data: [DONE]\n\n")
        self._send(b"")


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True
    # uvicorn's listen backlog (--backlog, default 2048); socketserver's 5 resets a burst's
    # connections (the g7e field report sends 500 prompts at once).
    request_queue_size = 2048


def make_server(state: EngineState, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": state})
    return _Server((host, port), handler)
