# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test) of backend_assert's log reader against ``grep -c 'Using'`` on a 1 GiB log.

Run from the collection root: ``python3 benchmarks/backend_assert_bench.py [--size-mib 1024]``.
Writes a log to /tmp (the GB10 start-up fixture, then request, stats and speculative-decoding
metrics lines up to the size), warms the page cache, times ``grep -c 'Using' <file>`` and the
module's parsing core (``_log_reading.scan_file``: the whole file, every fatal needle, the last
metrics line) on the same file, prints both and the ratio measured in this run (target <= 2x; the
machine's load is printed with it, as the ratio depends on free cores), and the ratio of the CPU
time both used (the scan's forked workers included), which a loaded machine disturbs less;
deletes it.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plugins"))

from module_utils import _log_reading  # noqa: E402  (the module_utils files themselves, without the collection loader)

STARTUP = os.path.join(ROOT, "tests", "unit", "fixtures", "logs", "vllm-0.19-gb10-nvfp4-mtp-ok.log")


def body_block():
    lines = []
    stats = ("(APIServer pid=1) INFO 06-09 %02d:%02d:%02d [loggers.py:257] Engine 000: Avg prompt throughput: %.1f "
             "tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: 0 reqs, GPU KV cache "
             "usage: %.1f%%, Prefix cache hit rate: 0.0%%")
    for i in range(2000):
        lines.append(stats % (i // 3600 % 24, i // 60 % 60, i % 60, i % 97 * 1.3, i % 89 * 0.7, i % 32, i % 70 * 1.1))
        lines.append(
            "(APIServer pid=1) INFO 06-09 10:09:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
            "2.03, Accepted throughput: 12.10 tokens/s, Drafted throughput: 23.40 tokens/s, Accepted: %d tokens, "
            "Drafted: %d tokens, Per-position acceptance rate: 0.670, 0.360, Avg Draft acceptance rate: 51.5%%"
            % (i, 2 * i))
        for port in range(4):
            lines.append('(APIServer pid=1) INFO:     172.17.0.%d:%d - "POST /v1/chat/completions HTTP/1.1" 200 OK'
                         % (port + 2, 40000 + i))
    return ("\n".join(lines) + "\n").encode()


def write_log(path, size):
    with open(STARTUP, "rb") as handle:
        startup = handle.read()
    block = body_block()
    with open(path, "wb") as out:
        out.write(startup)
        written = len(startup)
        while written < size:
            out.write(block)
            written += len(block)
    return written


def cpu_seconds():
    """CPU time (user + system) of this process and of its waited-for children (grep, forked workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(func):
    start, start_cpu = time.perf_counter(), cpu_seconds()
    value = func()
    return time.perf_counter() - start, cpu_seconds() - start_cpu, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    args = parser.parse_args()
    fd, path = tempfile.mkstemp(prefix="backend_assert_bench_", suffix=".log", dir="/tmp")
    os.close(fd)
    try:
        size = write_log(path, args.size_mib << 20)
        grep = ["grep", "-c", "Using", path]
        subprocess.run(grep, stdout=subprocess.DEVNULL, check=False)  # warm the page cache
        grep_s, grep_cpu, out = timed(lambda: subprocess.run(grep, stdout=subprocess.PIPE, check=False).stdout)
        scan_s, scan_cpu, result = timed(lambda: _log_reading.scan_file(path))
        print("log: %s, %.0f MiB, %d lines" % (path, size / 2.0 ** 20, result["log_lines_read"]))
        print("grep -c 'Using':           %.3f s, CPU %.3f s (%s matching lines)" % (
            grep_s, grep_cpu, out.decode().strip()))
        print("backend_assert scan_file:  %.3f s, CPU %.3f s (ready=%s, moe_backend=%s, fatal=%s)" % (
            scan_s, scan_cpu, result["ready"], result["observed"].get("moe_backend"), result["fatal"]))
        print("backend_assert observed:   mean_acceptance_length=%s" % result["observed"].get("mean_acceptance_length"))
        print("ratio: %.2fx (target <= 2x), load average %s on %d CPUs; CPU time ratio %.2fx" % (
            scan_s / grep_s, " ".join("%.2f" % x for x in os.getloadavg()), os.cpu_count() or 1,
            scan_cpu / grep_cpu))
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
