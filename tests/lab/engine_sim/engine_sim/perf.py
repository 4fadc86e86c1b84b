# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulator's performance model: how long an engine step takes, how many tokens it yields,
how many sequences fit, and how a prompt is prefilled. Pure: no clock, no threads, no sockets.

The serving side (``serving.py``) runs :class:`Engine` steps in wall-clock time and streams the
tokens as they come; :func:`closed_loop` and :func:`burst` run the same steps in virtual time, so
the unit tests check the calibration without a socket.

Model (one decode step of ``n`` decoding sequences, ``k`` draft tokens each)::

    step(n, k) = step_s * (1 + batch_coeff * (n - 1) ** batch_exp) * (1 + k * draft_cost) * slowdown

Each decoding sequence yields ``1 + accepted`` tokens per step; draft position ``i`` is accepted
with the unconditional probability ``acceptance[i]`` (positions are accepted in order, so a later
position implies the earlier ones), hence the expected tokens per step ``1 + sum(acceptance[:k])``.
Acceptance depends on temperature: linear between the greedy table (temperature 0) and the
sampled table (temperature >= 1.0).

Prefill (``prefill`` policy):

* ``shared`` (vLLM, chunked prefill with decode first): a prefilling sequence advances by
  ``step / (prefill_s_per_token * running)`` prompt tokens per decode step (the step's time is
  shared by the running sequences; the token budget ``max_num_batched_tokens`` caps a step's
  total), so time to first token grows with the batch (the GB10 field report: 1.2 s at 4 running, 9.1 s at
  32). With nothing decoding, a step prefills up to the budget at ``prefill_s_per_token``.
* ``first`` (SGLang): waiting prompts are prefilled first, ``chunked_prefill_size`` tokens per
  prefill step (decoding pauses), then decode steps run.

KV cache: a sequence is admitted while ``max_num_seqs`` allows and its whole context (prompt +
requested output) fits: ``kv_per_seq + (prompt + output) * kv_per_token`` (the ``_spec`` values
with speculative decoding) summed over the running sequences <= 1.0 (``1 / kv_tokens`` per token
when the engine states its pool in tokens). With the GB10 field report's chat shape that binds at 46
sequences, so 32 is the ceiling in practice (48 would need ~103 %).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

# ------------------------------------------------------------------------------------------
# THE TABLE: every parameter of the model, with the seed figure it comes from.
# ------------------------------------------------------------------------------------------
PROFILES = {
    # DGX Spark / GB10, vLLM 0.19.2rc1 cu130-nightly, Nemotron-3-Super-120B-A12B-NVFP4, MTP head.
    "gb10-vllm": {
        # the GB10 field report s.1: no MTP ~15-17 tok/s single stream; MTP k=2 24.2 and k=3 23.5 tok/s at
        # acceptance 0.67/0.36/0.16 (expected 2.03 / 2.19 tokens per step) => a step of 83.9 ms
        # (k=2) and 93.2 ms (k=3): 9.3 ms per draft token on a 65.3 ms base step (15.3 tok/s).
        "step_s": 0.0653,
        "draft_cost": 0.1424,  # 9.3 / 65.3 ms, the GB10 field report s.1 (k=2 vs k=3)
        # the GB10 field report s.2: saturated 47.7 (4) / 73.5 (8) / 99.6 (16) / 131.3 (32) tok/s at max-num-seqs =
        # client concurrency, chat 512/256; fitted with the prefill below (see tests/unit/lab/test_engine_sim_perf.py).
        "batch_coeff": 0.445,
        "batch_exp": 0.65,
        # the GB10 field report s.2: TTFT 1.2 s at 4 running, 9.1 s at 32 (chat prompt ~512 tokens): the
        # prompt's share of the step time grows with the batch; the GB10 field report s.4: ~690 ms TTFT for a
        # ~900-token prompt on an idle engine (0.55 ms x 900 = 0.5 s + the first step).
        "prefill": "shared",
        "prefill_s_per_token": 0.00055,
        "prefill_step_s": 0.0,
        # the GB10 field report s.3: KV per sequence at chat length (512 + 256 tokens) 2.15 % with MTP (its
        # draft/lookahead slots), 0.57 % without; both taken as per-token costs, so 32 chat
        # sequences hold 69 % (seed: 68.9 %), 48 would need 103 %, and ~6k-token contexts bind
        # at ~6 sequences (the GB10 field report: "coder 4k+ binds much sooner, ~5-6 concurrent").
        "kv_per_seq_spec": 0.0,
        "kv_per_seq": 0.0,
        "kv_per_token_spec": 0.0215 / 768,
        "kv_per_token": 0.0057 / 768,
        # the GB10 field report s.1 / findings s.2: per-position acceptance at temperature 1.0 / top_p 0.95.
        "acceptance_sampled": (0.67, 0.36, 0.16, 0.07, 0.03, 0.01, 0.0, 0.0),
        # the GB10 write-up: first position 87-98 %, second 63-91 % conditional at low temperature.
        "acceptance_greedy": (0.90, 0.72, 0.48, 0.30, 0.18, 0.10, 0.05, 0.02),
    },
    # AWS g7e.48xlarge, 8x RTX PRO 6000 (SM120), SGLang 0.5.x, Nemotron-3-Super-120B-A12B-FP8, TP8/EP8.
    "g7e-sglang": {
        # the g7e field report online: median ITL 20 ms at 4 rps (~8 running); burst 500 x 200/200 (~101 output
        # tokens per request, all 500 admitted: "a 48-request cap creates ~10 batches"): 3,215 tok/s,
        # 31.9 req/s, mean TTFT 2.9 s, median ITL 61 ms (R2-R3). Fitted by the burst test.
        "step_s": 0.0168,
        "draft_cost": 0.25,  # the g7e field report: EAGLE 3 steps; burst 977 vs 3,215 tok/s is confounded (rough)
        "batch_coeff": 0.051,
        "batch_exp": 0.67,
        # the g7e field report burst: mean TTFT 2.9 s for 500 x 200-token prompts, prefill first (SGLang),
        # chunked_prefill_size 8192 (the engine's default on this GPU).
        "prefill": "first",
        "prefill_s_per_token": 0.000049,
        "prefill_step_s": 0.043,
        "chunked_prefill_size": 8192,
        # the g7e field report: KV pool 17,892,656 tokens (the engine's own figure is used when it has one).
        "kv_per_seq_spec": 0.0,
        "kv_per_seq": 0.0,
        "kv_per_token_spec": 1.0 / 17892656,
        "kv_per_token": 1.0 / 17892656,
        # the g7e field report: EAGLE accept length 3.2 tokens/step (3 steps, 4 draft tokens), accept rate 0.81.
        "acceptance_sampled": (0.90, 0.75, 0.55, 0.35, 0.20, 0.10, 0.05, 0.02),
        "acceptance_greedy": (0.95, 0.85, 0.70, 0.50, 0.30, 0.15, 0.08, 0.04),
    },
}

# The GB10 field report s.2, the figures the gb10-vllm profile is calibrated to (chat 512 in / 256 out,
# guidellm concurrent profile, client concurrency = max-num-seqs, MTP k=2, temperature 1.0).
SEED000_SWEEP = {1: {"output_tok_s": 24.2, "ttft_s": None}, 4: {"output_tok_s": 47.7, "ttft_s": 1.2},
                 8: {"output_tok_s": 73.5, "ttft_s": 6.6}, 16: {"output_tok_s": 99.6, "ttft_s": 7.7},
                 32: {"output_tok_s": 131.3, "ttft_s": 9.1}}
# The g7e field report: 500-prompt burst, 200 in / 200 out (~101 output tokens per request), R2-R3 mean.
SEED002_BURST = {"output_tok_s": 3215.0, "requests_per_s": 31.9, "ttft_mean_s": 2.906, "itl_p50_s": 0.061}

SLOW_NIGHTLY_SLOWDOWN = 0.30  # ENGINE_SIM_FAULT=slow_nightly: 30 % fewer decode tokens per second


@dataclass(frozen=True)
class Params:
    step_s: float
    draft_cost: float
    batch_coeff: float
    batch_exp: float
    prefill: str
    prefill_s_per_token: float
    prefill_step_s: float
    kv_per_seq_spec: float
    kv_per_seq: float
    kv_per_token: float
    kv_per_token_spec: float
    acceptance_sampled: tuple
    acceptance_greedy: tuple
    chunked_prefill_size: int = 8192


def params(name: str, **changes) -> Params:
    """The named profile of :data:`PROFILES`, with ``changes`` applied."""
    return replace(Params(**PROFILES[name]), **changes)


def profile_for(engine: str) -> str:
    """The table row of an engine: the field reports measured vLLM on a GB10 and SGLang on 8x RTX PRO
    6000, so each engine runs at its seed's speed whatever GPU the lab host claims."""
    return "gb10-vllm" if engine == "vllm" else "g7e-sglang"


def legacy(latency_s: float, base: Params) -> Params:
    """ENGINE_SIM_TOKEN_LATENCY: every decode step takes ``latency_s`` whatever the batch, prefill
    is free (the simulator before it had a performance model; the watchdog lab tests use it)."""
    return replace(base, step_s=latency_s, batch_coeff=0.0, draft_cost=0.0, prefill="shared",
                   prefill_s_per_token=0.0, prefill_step_s=0.0)


def acceptance(p: Params, temperature: float, k: int) -> list[float]:
    """Unconditional per-position acceptance for ``k`` draft tokens at ``temperature``."""
    weight = min(max(float(temperature), 0.0), 1.0)
    return [g + (s - g) * weight for g, s in zip(p.acceptance_greedy[:k], p.acceptance_sampled[:k])]


def expected_tokens_per_step(per_position: list[float]) -> float:
    """1 + the sum of the unconditional acceptance of each draft position."""
    return 1.0 + sum(per_position)


def step_time(p: Params, decoding: int, k: int, slowdown: float = 1.0) -> float:
    """Seconds for one decode step of ``decoding`` sequences with ``k`` draft tokens each."""
    batch = 1.0 + p.batch_coeff * max(decoding - 1, 0) ** p.batch_exp
    return p.step_s * batch * (1.0 + k * p.draft_cost) * slowdown


def kv_per_sequence(p: Params, context_tokens: int, speculative: bool, kv_tokens: int | None = None) -> float:
    """Fraction of the KV cache one sequence of ``context_tokens`` holds."""
    per_token = (1.0 / kv_tokens) if kv_tokens else (p.kv_per_token_spec if speculative else p.kv_per_token)
    return (p.kv_per_seq_spec if speculative else p.kv_per_seq) + context_tokens * per_token


def kv_seq_limit(p: Params, context_tokens: int, speculative: bool, kv_tokens: int | None = None) -> int:
    """How many sequences of ``context_tokens`` fit in the KV cache at once."""
    per_seq = kv_per_sequence(p, context_tokens, speculative, kv_tokens)
    return int(1.0 / per_seq) if per_seq > 0 else 1 << 30


def conditional(unconditional: list[float]) -> list[float]:
    """P(position i accepted | position i-1 accepted) from unconditional rates."""
    probs, previous = [], 1.0
    for rate in unconditional:
        probs.append(min(rate / previous, 1.0) if previous > 0 else 0.0)
        previous = rate
    return probs


# ------------------------------------------------------------------------------------------
# The engine: sequences, admission, steps.
# ------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Sequence:
    prompt_tokens: int
    output_tokens: int
    accept_probs: list = field(default_factory=list)  # conditional, one per draft position
    seed: int = 0
    arrival: float = 0.0
    tag: object = None  # the caller's handle (the HTTP request)
    prefilled: int = 0
    generated: int = 0
    first_token: float | None = None
    finished: float | None = None
    last_token: float | None = None
    gaps: list = field(default_factory=list)  # seconds between the steps that gave it tokens

    def __post_init__(self):
        self.rng = random.Random(self.seed)


@dataclass
class StepResult:
    duration: float
    kind: str  # "decode" | "prefill" | "mixed"
    tokens: dict  # Sequence -> tokens emitted at the end of this step
    finished: list
    prefill_tokens: int
    drafts: int  # sequences that verified drafts this step
    draft_tokens: int
    accepted_per_pos: list
    running: int
    waiting: int


class Engine:
    """The scheduler of one engine; :meth:`step` decides a step and returns its duration and
    what it yields. The caller owns time (sleeps, or adds to a virtual clock)."""

    def __init__(self, p: Params, max_num_seqs: int, k: int = 0, max_num_batched_tokens: int = 8192,
                 kv_tokens: int | None = None, slowdown: float = 1.0):
        self.p, self.max_num_seqs, self.k = p, max(int(max_num_seqs), 1), int(k)
        self.budget = max(int(max_num_batched_tokens), 1)
        self.kv_tokens = kv_tokens
        self.slowdown = slowdown
        self.waiting: list[Sequence] = []
        self.running: list[Sequence] = []

    # ---------------------------------------------------------------- state
    def submit(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def idle(self) -> bool:
        return not self.waiting and not self.running

    def kv_usage(self) -> float:
        return min(1.0, sum(kv_per_sequence(self.p, s.prefilled + s.generated, self.k > 0, self.kv_tokens)
                            for s in self.running))

    def _reserved(self, seq: Sequence) -> float:
        return kv_per_sequence(self.p, seq.prompt_tokens + seq.output_tokens, self.k > 0, self.kv_tokens)

    def admit(self) -> None:
        """Move waiting sequences into the running batch while slots and KV allow."""
        reserved = sum(self._reserved(s) for s in self.running)
        while self.waiting and len(self.running) < self.max_num_seqs:
            need = self._reserved(self.waiting[0])
            if self.running and reserved + need > 1.0:
                break
            reserved += need
            self.running.append(self.waiting.pop(0))

    # ---------------------------------------------------------------- one step
    def step(self) -> StepResult | None:
        """Decide the next step; None when there is nothing to do."""
        self.admit()
        if not self.running:
            return None
        p = self.p
        decoding = [s for s in self.running if s.prefilled >= s.prompt_tokens]
        prefilling = [s for s in self.running if s.prefilled < s.prompt_tokens]
        chunks: dict = {}
        if p.prefill == "first" and prefilling:
            kind, budget = "prefill", p.chunked_prefill_size
            for seq in prefilling:
                if budget <= 0:
                    break
                chunks[seq] = min(seq.prompt_tokens - seq.prefilled, budget)
                budget -= chunks[seq]
            decoding = []
            total = sum(chunks.values())
            duration = p.prefill_step_s + total * p.prefill_s_per_token
        elif decoding:
            kind = "mixed" if prefilling else "decode"
            duration = step_time(p, len(decoding), self.k, self.slowdown)
            budget = self.budget - len(decoding) * (1 + self.k)
            share = (duration / (p.prefill_s_per_token * len(self.running)) if p.prefill_s_per_token > 0
                     else float("inf"))
            for seq in prefilling:
                if budget <= 0:
                    break
                chunks[seq] = int(min(seq.prompt_tokens - seq.prefilled, budget, max(share, 1.0)))
                budget -= chunks[seq]
        else:
            kind, budget = "prefill", self.budget
            for seq in prefilling:
                if budget <= 0:
                    break
                chunks[seq] = min(seq.prompt_tokens - seq.prefilled, budget)
                budget -= chunks[seq]
            duration = p.prefill_step_s + sum(chunks.values()) * p.prefill_s_per_token
        tokens: dict = {}
        for seq, chunk in chunks.items():
            seq.prefilled += chunk
            if seq.prefilled >= seq.prompt_tokens and seq.output_tokens > 0:
                tokens[seq] = 1  # the prefill step samples the first token
        accepted = [0] * self.k
        drafts = 0
        for seq in decoding:
            count = 1
            if self.k and seq.accept_probs:
                drafts += 1
                for position, prob in enumerate(seq.accept_probs):
                    if seq.rng.random() >= prob:
                        break
                    accepted[position] += 1
                    count += 1
            tokens[seq] = count
        finished = []
        for seq, count in list(tokens.items()):
            count = min(count, seq.output_tokens - seq.generated)
            tokens[seq] = count
            seq.generated += count
            if seq.generated >= seq.output_tokens:
                finished.append(seq)
        for seq in prefilling:
            if seq.output_tokens <= 0 and seq.prefilled >= seq.prompt_tokens:
                finished.append(seq)
        for seq in finished:
            self.running.remove(seq)
        return StepResult(duration, kind, {s: n for s, n in tokens.items() if n > 0}, finished,
                          sum(chunks.values()), drafts, drafts * self.k, accepted, len(self.running),
                          len(self.waiting))


# ------------------------------------------------------------------------------------------
# Load in virtual time (the unit tests' sweep; no clock, no sockets).
# ------------------------------------------------------------------------------------------
def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[index]


def _report(done: list[Sequence], started: float, ended: float, generated: int | None = None) -> dict:
    """Figures as a load generator reports them; ``generated`` counts the tokens of requests still
    in flight at the end too (a rate over the whole window, not only over finished requests)."""
    span = max(ended - started, 1e-9)
    ttft = [s.first_token - s.arrival for s in done]
    tpot = [(s.finished - s.first_token) / (s.generated - 1) for s in done if s.generated > 1]
    itl = [gap for s in done for gap in s.gaps]
    return {"requests": len(done), "duration_s": span,
            "output_tok_s": (sum(s.generated for s in done) if generated is None else generated) / span,
            "requests_per_s": len(done) / span,
            "ttft_mean_s": sum(ttft) / len(ttft) if ttft else 0.0,
            "ttft_p50_s": _percentile(ttft, 50), "ttft_p99_s": _percentile(ttft, 99),
            "tpot_mean_s": sum(tpot) / len(tpot) if tpot else 0.0,  # per request, guidellm's ITL
            "itl_p50_s": _percentile(itl, 50), "itl_p99_s": _percentile(itl, 99)}  # per gap, bench_serving's


def _advance(engine: Engine, clock: float, done: list, on_finish=None) -> float:
    result = engine.step()
    if result is None:
        return clock
    clock += result.duration
    for seq in result.tokens:
        if seq.first_token is None:
            seq.first_token = clock
        else:
            seq.gaps.append(clock - seq.last_token)
        seq.last_token = clock
    for seq in result.finished:
        seq.finished = clock
        done.append(seq)
        if on_finish:
            on_finish(seq, clock)
    return clock


def closed_loop(p: Params, concurrency: int, max_num_seqs: int, k: int = 2, prompt_tokens: int = 512,
                output_tokens: int = 256, duration_s: float = 180.0, temperature: float = 1.0,
                max_num_batched_tokens: int = 8192, slowdown: float = 1.0, seed: int = 1) -> dict:
    """``concurrency`` clients each sending the next request when its last one finished, for
    ``duration_s`` of virtual time (guidellm's concurrent profile, the GB10 field report's methodology)."""
    engine = Engine(p, max_num_seqs, k, max_num_batched_tokens, slowdown=slowdown)
    probs = conditional(acceptance(p, temperature, k))
    sent: list[Sequence] = []
    done: list[Sequence] = []

    def send(now: float) -> None:
        sent.append(Sequence(prompt_tokens, output_tokens, probs, seed * 100003 + len(sent), arrival=now))
        engine.submit(sent[-1])

    for dummy in range(concurrency):
        send(0.0)
    clock = 0.0
    while clock < duration_s:
        clock = _advance(engine, clock, done, lambda seq, now: send(now))
    return _report(done, 0.0, clock, sum(s.generated for s in sent))


def burst(p: Params, outputs: list[int], prompt_tokens: int = 200, max_num_seqs: int = 512, k: int = 0,
          temperature: float = 1.0, max_num_batched_tokens: int = 8192, kv_tokens: int | None = None,
          slowdown: float = 1.0, seed: int = 1) -> dict:
    """All requests at once (the g7e field report's burst: ``--request-rate inf``); one output length each."""
    engine = Engine(p, max_num_seqs, k, max_num_batched_tokens, kv_tokens=kv_tokens, slowdown=slowdown)
    probs = conditional(acceptance(p, temperature, k))
    for index, output in enumerate(outputs):
        engine.submit(Sequence(prompt_tokens, output, probs, seed * 100003 + index))
    done: list[Sequence] = []
    clock = 0.0
    while not engine.idle():
        clock = _advance(engine, clock, done)
    return _report(done, 0.0, clock)


def seed002_outputs(count: int = 500, seed: int = 1) -> list[int]:
    """Output lengths of the g7e field report's burst: 200 requested, the model stopped at ~101 on average
    (50,722 tokens over 500 requests): 2..200 evenly, in a shuffled order."""
    lengths = [2 + round(index * 198 / max(count - 1, 1)) for index in range(count)]
    random.Random(seed).shuffle(lengths)
    return lengths
