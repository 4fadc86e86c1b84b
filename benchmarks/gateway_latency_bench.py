#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""Latency the gateway adds to a short completion (issue 22; not a test, `make bench` or by hand).

One run sends the same short, non-streamed chat completion (``max_tokens`` 1, temperature 0) one
at a time, alternating between the engine directly and the same model through the gateway
(LiteLLM on lab-gateway), so both paths see the same engine in the same minutes. It prints each
path's p50 and p99 in ms and, measured in this run, the gateway's added latency (p50 and p99
differences) and the ratio of the p50s.

    .venv/bin/python benchmarks/gateway_latency_bench.py [--engine http://127.0.0.1:8102/v1]
        [--gateway http://127.0.0.1:4000/v1] [--requests 200] [--warmup 10] [--json]

Default engine: lab-g7e, the only host of its model group, so the gateway's requests reach the
engine the direct ones do. The master key is read from the environment (INFEROPS_GATEWAY_KEY),
else from the lab's inventories/lab/group_vars/gateway.yml (its published lab key); it never goes
on argv. An engine with an API key: --engine-key-env <VAR> names the variable holding it.
Needs the lab fleet converged (make site).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_GATEWAY_VARS = os.path.join(ROOT, "inventories", "lab", "group_vars", "gateway.yml")
KEY_ENV = "INFEROPS_GATEWAY_KEY"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Latency the gateway adds to a short completion (p50/p99 ms).")
    parser.add_argument("--engine", default="http://127.0.0.1:8102/v1", help="the engine's OpenAI base URL")
    parser.add_argument("--gateway", default="http://127.0.0.1:4000/v1", help="the gateway's OpenAI base URL")
    parser.add_argument("--model", help="the served model name (default: the engine's first in /v1/models)")
    parser.add_argument("--requests", type=int, default=200, help="measured requests per path (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured requests per path first (default 10)")
    parser.add_argument("--max-tokens", type=int, default=1, help="tokens per completion (default 1)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--engine-key-env", help="environment variable holding the engine's API key, if it has one")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.requests < 2:
        parser.error("--requests: got %d; expected 2 or more (a p99 of one request says nothing)" % args.requests)
    if args.warmup < 0 or args.max_tokens < 1 or args.timeout <= 0:
        parser.error("--warmup must be 0 or more, --max-tokens 1 or more, --timeout above 0")
    for name in ("engine", "gateway"):
        url = getattr(args, name)
        if not url.startswith(("http://", "https://")):
            parser.error("--%s: got %r; expected an http(s):// base URL such as http://127.0.0.1:4000/v1" % (name, url))
        setattr(args, name, url.rstrip("/"))
    if args.engine_key_env and not os.environ.get(args.engine_key_env):
        parser.error("--engine-key-env: %s is not set in the environment" % args.engine_key_env)
    return args


def master_key(environ=None, lab_vars=LAB_GATEWAY_VARS):
    """The gateway's master key: $INFEROPS_GATEWAY_KEY, else the lab inventory's published key."""
    environ = os.environ if environ is None else environ
    if environ.get(KEY_ENV):
        return environ[KEY_ENV]
    try:
        import yaml  # the repository's venv has it

        with open(lab_vars, encoding="utf-8") as handle:
            key = (yaml.safe_load(handle) or {}).get("gateway_master_key")
    except OSError:
        key = None
    if not isinstance(key, str) or not key.startswith("sk-"):
        raise SystemExit("no gateway master key: set %s (the key is never taken from argv)" % KEY_ENV)
    return key


def percentile(values, fraction):
    """The nearest-rank percentile (``fraction`` 0.5 for p50) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def figures(direct_ms, gateway_ms):
    """p50/p99 of each path, the gateway's added ms at p50 and p99, and the p50 ratio."""
    result = {}
    for name, values in (("direct", direct_ms), ("gateway", gateway_ms)):
        result[name] = {"requests": len(values), "p50_ms": round(percentile(values, 0.5), 2),
                        "p99_ms": round(percentile(values, 0.99), 2)}
    result["added_p50_ms"] = round(result["gateway"]["p50_ms"] - result["direct"]["p50_ms"], 2)
    result["added_p99_ms"] = round(result["gateway"]["p99_ms"] - result["direct"]["p99_ms"], 2)
    result["ratio_p50"] = round(result["gateway"]["p50_ms"] / result["direct"]["p50_ms"], 2) \
        if result["direct"]["p50_ms"] else None
    return result


def _request(url, body, key, timeout):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def timed(url, body, key, timeout):
    """Milliseconds of one completion; fails loudly on anything but a 200 with a choice."""
    started = time.perf_counter()
    answer = _request(url + "/chat/completions", body, key, timeout)
    elapsed = (time.perf_counter() - started) * 1000.0
    if not answer.get("choices"):
        raise SystemExit("%s answered no choice: %r" % (url, answer))
    return elapsed


def main(argv=None):
    args = parse_args(argv)
    key = master_key()
    engine_key = os.environ.get(args.engine_key_env) if args.engine_key_env else None
    try:
        model = args.model or _request(args.engine + "/models", None, engine_key, args.timeout)["data"][0]["id"]
        body = {"model": model, "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": args.max_tokens,
                "temperature": 0, "stream": False}
        paths = (("direct", args.engine, engine_key), ("gateway", args.gateway, key))
        for _index in range(args.warmup):
            for _name, url, auth in paths:
                timed(url, body, auth, args.timeout)
        measured = {"direct": [], "gateway": []}
        for _index in range(args.requests):
            for name, url, auth in paths:
                measured[name].append(timed(url, body, auth, args.timeout))
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit("a request failed: %s (is the lab converged? make site)" % exc) from None
    result = dict(figures(measured["direct"], measured["gateway"]), model=model, engine_url=args.engine,
                  gateway_url=args.gateway, max_tokens=args.max_tokens)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print("model %s, %d requests per path (after %d warm-up), max_tokens %d, one at a time, alternating"
          % (model, args.requests, args.warmup, args.max_tokens))
    print("%-8s %-32s %9s %9s" % ("path", "url", "p50 ms", "p99 ms"))
    for name, url in (("direct", args.engine), ("gateway", args.gateway)):
        print("%-8s %-32s %9.2f %9.2f" % (name, url, result[name]["p50_ms"], result[name]["p99_ms"]))
    print("gateway adds %.2f ms at p50 (x%s), %.2f ms at p99"
          % (result["added_p50_ms"], result["ratio_p50"], result["added_p99_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
