# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Read a saved log or a container's log bytes into a ``LogScanner``, at grep speed.

``scan_file`` streams a whole file in large binary chunks and, once the server is ready, only
decodes the chunks that contain a fatal needle (counting a large remainder in forked workers);
``feed_bytes`` does the same for the chunks of a container's log stream.
"""
from __future__ import annotations

import os
import stat

from ._log_patterns import FATAL_NEEDLES, METRICS_NEEDLES
from ._log_records import LINE_CAP
from ._log_scanner import TAIL_BYTES, LogScanner


class LogFileError(ValueError):
    """A log_path that is not a regular file."""


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def open_log(path):
    """Open a saved log for reading: ``(unbuffered binary file, size)``; LogFileError unless a regular file.

    Opened without blocking, so a FIFO with no writer is refused instead of waited for.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _FILE_TYPES if test(info.st_mode)), "not a regular file")
            raise LogFileError("%s is %s; backend_assert reads a saved log file (for example the output of "
                               "docker logs <container> > file), or use container to read a running one"
                               % (path, what))
    except Exception:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb", buffering=0), info.st_size


def _line_bounds(chunk, pos, start, end):
    """The bytes of the line of ``chunk`` containing ``pos`` (within ``[start, end)``, without the newline)."""
    lo = chunk.rfind(b"\n", start, pos) + 1
    if lo == 0:
        lo = start
    hi = chunk.find(b"\n", pos, end)
    if hi < 0:
        hi = end
    return bytes(chunk[lo:min(hi, lo + LINE_CAP)])


def _observe_metrics(scanner, chunk, start, end):
    """In a counted-only chunk: feed the last metrics line (the running measurement)."""
    needle = METRICS_NEEDLES.get(scanner.engine) if scanner.speculating else None
    if needle is not None:
        pos = chunk.rfind(needle, start, end)
        if pos >= 0:
            scanner.observe_line(_line_bounds(chunk, pos, start, end).decode("utf-8", "replace"))


def feed_bytes(scanner, chunk, end=None, start=0):
    """Feed ``chunk[start:end]``, whole lines ending with a newline; count it cheaply when only fatal needles matter."""
    if end is None:
        end = len(chunk)
    while start < end:
        if not scanner.wants_every_line and all(chunk.find(needle, start, end) < 0
                                                for needle in scanner.fatal_needles):
            _observe_metrics(scanner, chunk, start, end)
            tail_start = max(start, end - TAIL_BYTES)
            if tail_start > start:
                tail_start = chunk.find(b"\n", tail_start - 1, end) + 1 or end
            scanner.skip(chunk.count(b"\n", start, end), bytes(chunk[tail_start:end]))
            return
        scanner.replay_tail()
        while start < end:  # line by line, until only fatal needles matter again
            nl = chunk.find(b"\n", start, end)
            if nl < 0:
                nl = end
            scanner.feed(bytes(chunk[start:nl]).decode("utf-8", "replace"))
            start = nl + 1
            if not scanner.wants_every_line:
                break


# After start-up, a remainder larger than this is counted and needle-searched by forked workers,
# one byte range each (the common case, no fatal, then costs a fraction of a sequential pass).
PARALLEL_MIN_BYTES = 64 << 20
MAX_WORKERS = 8
_NEEDLE_OVERLAP = max(len(needle) for needle in FATAL_NEEDLES)
# How far back from the end a counted-only remainder is searched for its last metrics line.
METRICS_LOOKBACK = 64 << 20


def count_range(path, start, stop, chunk_size=1 << 20, needles=FATAL_NEEDLES):
    """``(newlines, needle_found)`` of the bytes ``[start, stop)`` of a file (any of ``needles``)."""
    newlines = 0
    found = False
    buf = bytearray(chunk_size)
    edge = b""
    with open(path, "rb", buffering=0) as handle:
        handle.seek(start)
        pos = start
        while pos < stop:
            with memoryview(buf) as view:
                count = handle.readinto(view[:min(chunk_size, stop - pos)])
            if not count:
                break
            newlines += buf.count(b"\n", 0, count)
            if not found:
                window = edge + bytes(buf[:min(count, _NEEDLE_OVERLAP)])  # needles across chunks
                found = any(buf.find(needle, 0, count) >= 0 or needle in window for needle in needles)
            if count >= _NEEDLE_OVERLAP:
                edge = bytes(buf[count - _NEEDLE_OVERLAP:count])
            else:
                edge = (edge + bytes(buf[:count]))[-_NEEDLE_OVERLAP:]
            pos += count
    return newlines, found


def _line_start_after(path, offset):
    """The offset of the first line starting at or after ``offset``."""
    with open(path, "rb") as handle:
        handle.seek(offset - 1)
        while True:
            data = handle.read(65536)
            if not data:
                return handle.tell()
            nl = data.find(b"\n")
            if nl >= 0:
                return handle.tell() - len(data) + nl + 1


def count_parallel(path, start, stop, workers, needles=FATAL_NEEDLES):
    """``count_range`` over ``[start, stop)`` split at line starts among forked workers."""
    bounds = [start]
    for i in range(1, workers):
        bounds.append(max(bounds[-1], _line_start_after(path, start + (stop - start) * i // workers)))
    bounds.append(stop)
    children = []
    for lo, hi in zip(bounds[1:-1], bounds[2:]):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            status = 1
            try:
                os.close(read_fd)
                os.write(write_fd, ("%d %d" % count_range(path, lo, hi, needles=needles)).encode("ascii"))
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        children.append((pid, read_fd))
    newlines, found = count_range(path, bounds[0], bounds[1], needles=needles)
    ok = True
    for pid, read_fd in children:
        with os.fdopen(read_fd, "rb") as pipe:
            answer = pipe.read().split()
        ok = os.waitpid(pid, 0)[1] == 0 and len(answer) == 2 and ok
        if ok:
            newlines += int(answer[0])
            found = found or answer[1] == b"1"
    return (newlines, found) if ok else (None, True)


def _last_metrics_lines(path, start, stop, needles, block=1 << 20):
    """The last line with one of ``needles`` within the last METRICS_LOOKBACK bytes of ``[start, stop)``."""
    found = {}
    low = max(start, stop - METRICS_LOOKBACK)
    with open(path, "rb") as handle:
        hi = stop
        while hi > low and not found:
            lo = max(low, hi - block)
            base = max(start, lo - LINE_CAP)  # the window starts before lo to begin a line, runs past hi to finish it
            handle.seek(base)
            data = handle.read(min(hi + LINE_CAP, stop) - base)
            for needle in needles:  # the last one from lo on, even one that hi cuts (the blocks after had none)
                pos = data.rfind(needle, lo - base)
                if pos >= 0:
                    found[needle] = _line_bounds(data, pos, 0, len(data))
            hi = lo
    return [line.decode("utf-8", "replace") for line in found.values()]


def scan_file(path, engine="auto", chunk_size=1 << 20, parallel=True):
    """Scan a saved log file, whole, and return ``LogScanner.result()``.

    Streams the file into one reused buffer (no copies of the bulk) line by line until the
    server is ready; then only counts lines and looks for fatal needles (in parallel for a large
    remainder), and decodes only what may hold a fatal. A line longer than the buffer is read as
    its first LINE_CAP bytes. Raises OSError or LogFileError (not a regular file).
    """
    scanner = LogScanner(engine)
    handle, size = open_log(path)
    buf = bytearray(max(chunk_size, 2))
    keep = 0  # bytes of an unfinished line at the start of buf
    head = None  # the first LINE_CAP bytes of a line longer than the buffer, while its rest is skipped
    workers = min(os.cpu_count() or 1, MAX_WORKERS) if parallel and hasattr(os, "fork") else 1
    with handle:
        while True:
            if workers > 1 and not scanner.wants_every_line and head is None:
                start = handle.tell() - keep
                if size - start >= PARALLEL_MIN_BYTES:
                    newlines, found = count_parallel(path, start, size, workers, scanner.fatal_needles)
                    if not found:
                        scanner.skip(newlines)
                        if scanner.speculating and scanner.engine in METRICS_NEEDLES:
                            for line in _last_metrics_lines(path, start, size, [METRICS_NEEDLES[scanner.engine]]):
                                scanner.observe_line(line)
                        handle.seek(size)
                        keep = 0
                        with open(path, "rb") as tail:  # a last line without its newline
                            tail.seek(max(size - 1, 0))
                            if size and tail.read(1) != b"\n":
                                scanner.lines += 1
                        break
                workers = 1  # a fatal needle is there: read it line by line
            with memoryview(buf) as view:
                count = handle.readinto(view[keep:])
            if not count:
                break
            end = keep + count
            begin = 0
            if head is not None:  # the rest of a line longer than the buffer: skip to its newline
                nl = buf.find(b"\n", 0, end)
                if nl < 0:
                    keep = 0
                    continue
                scanner.replay_tail()
                scanner.feed(head.decode("utf-8", "replace"))
                head = None
                begin = nl + 1
            cut = buf.rfind(b"\n", begin, end) + 1
            if cut > begin:
                feed_bytes(scanner, buf, cut, begin)
                begin = cut
            keep = end - begin
            if begin:
                buf[:keep] = buf[begin:end]
            if keep == len(buf):  # no newline in a full buffer
                if len(buf) <= LINE_CAP:
                    buf.extend(bytes(len(buf)))
                else:
                    head = bytes(buf[:LINE_CAP + 1])  # one byte over the cap: fed, it counts as cut
                    keep = 0
    if head is not None:
        scanner.replay_tail()
        scanner.feed(head.decode("utf-8", "replace"))
    elif keep:
        scanner.replay_tail()
        scanner.feed(bytes(buf[:keep]).decode("utf-8", "replace"))
    return scanner.result()


def scan_lines(lines, engine="auto"):
    """Scan an iterable of str lines (tests, small logs) and return ``LogScanner.result()``."""
    scanner = LogScanner(engine)
    for line in lines:
        scanner.feed(line.rstrip("\r\n"))
    return scanner.result()
