# SPDX-License-Identifier: GPL-3.0-or-later
"""Process life cycle of both personalities: parse, query the GPU, decide, print the start-up
phases (spread over ENGINE_SIM_STARTUP_DELAY seconds), serve, crash or shut down.

Exit statuses: 2 argparse error, 1 start-up/configuration failure or engine death, 137 when
the real engine is killed (SGLang OOM kill / process-tree kill), 0 after SIGTERM/SIGINT.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from . import sglang_cli, sglang_log, vllm_cli, vllm_log
from .decide import decide_sglang, decide_vllm, no_gpu_fault
from .gpu import NoGpuError, query_gpus
from .models import model_facts
from .printer import SglangPrinter, VllmPrinter, emit, release_stall, traceback_lines
from .serving import EngineState, make_server
from .versions import release

DEFAULT_VERSION = {"vllm": "0.19.2rc1.dev134", "sglang": "0.5.13"}
# Phase weights of the start-up delay: config, weights, drafter, memory, graphs, ready.
PHASES = (0.1, 0.35, 0.1, 0.1, 0.25, 0.1)


def _delay() -> float:
    try:
        return max(float(os.environ.get("ENGINE_SIM_STARTUP_DELAY", "2")), 0.0)
    except ValueError:
        return 2.0


def _display_pid() -> int:
    return 1 if os.environ.get("ENGINE_SIM_UNDER_INIT") else os.getpid()


class Lifecycle:
    """Sleeps between phases unless SIGTERM arrived; owns the HTTP server thread."""

    def __init__(self, state: EngineState):
        self.state = state
        self.delay = _delay()
        self.server = None
        self.terminated = False
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame):
        release_stall()
        state = self.state
        timeout = getattr(state.args, "shutdown_timeout", 0) or 0
        if timeout > 0 and state.ready.is_set() and not state.dead and not state.draining.is_set():
            state.draining.set()
            threading.Thread(target=self._drain, args=(timeout,), name="drain", daemon=True).start()
            return
        self._stop()

    def _stop(self) -> None:
        self.terminated = True
        self.state.exit_code = 0
        self.state.stop.set()

    def _drain(self, timeout: int) -> None:
        """vLLM's graceful shutdown (>= 0.18, --shutdown-timeout N > 0), read in the 0.19.1 wheel:
        on SIGTERM the API server (vllm/entrypoints/launcher.py) calls the engine client's
        shutdown(timeout); the engine core (vllm/v1/engine/core.py _handle_shutdown) logs
        "Draining N in-flight requests", rejects every request added meanwhile
        (_reject_add_in_shutdown), finishes the running ones and exits when no work is left;
        the processes still running after ``timeout`` seconds are killed
        (vllm/v1/engine/utils.py shutdown). With 0 (the default) the in-flight requests are
        aborted at once. A second signal stops at once."""
        state = self.state
        with state.lock:
            in_flight = state.in_flight
        vllm_log.drain_start(state.printer, timeout, in_flight)
        deadline = time.monotonic() + timeout
        while state.in_flight and time.monotonic() < deadline and not state.stop.is_set():
            time.sleep(0.05)
        if not state.in_flight:
            vllm_log.drain_end(state.printer)
        self._stop()

    def pause(self, weight: float) -> bool:
        """Sleep for this phase's share of the delay; False when asked to stop."""
        return not self.state.stop.wait(self.delay * weight)

    def serve(self, host: str, port: int) -> None:
        self.server = make_server(self.state, host, port)
        threading.Thread(target=self.server.serve_forever, name="http", daemon=True).start()

    def close(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()


def _kill_tree() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _bind_error(exc: OSError, site_frames) -> int:
    for line in traceback_lines(site_frames, f"OSError: [Errno {exc.errno}] {exc.strerror}"):
        emit(line, "stderr")
    return 1


# ---------------------------------------------------------------------------------------- vLLM

def run_vllm(argv: list[str]) -> int:
    version = os.environ.get("ENGINE_SIM_VERSION", DEFAULT_VERSION["vllm"])
    try:
        gpus = query_gpus()
    except NoGpuError:
        emit(f"INFO {time.strftime('%m-%d %H:%M:%S')} [__init__.py:216] No platform detected, vLLM is running "
             "on UnspecifiedPlatform")
        frames = [("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
                  ("vllm/entrypoints/cli/main.py", 54, "main",
                   "cmd.subparser_init(subparsers).set_defaults(dispatch_function=cmd.cmd)"),
                  ("vllm/entrypoints/cli/serve.py", 150, "subparser_init", "serve_parser = make_arg_parser(serve_parser)"),
                  ("vllm/engine/arg_utils.py", 1034, "add_cli_args", "vllm_kwargs = get_kwargs(VllmConfig)"),
                  ("vllm/config/device.py", 58, "__post_init__", "raise RuntimeError(")]
        for line in traceback_lines(frames, no_gpu_fault("vllm").message):
            emit(line, "stderr")
        return 1
    args, non_default = vllm_cli.parse(argv, version)
    plan = decide_vllm(version, args, os.environ, gpus[0], model_facts(args.model))
    api_pid = _display_pid()
    printer = VllmPrinter(release(version), api_pid, api_pid + 175)
    state = EngineState("vllm", plan, args, printer)
    state.drain_reject = lambda request_id: vllm_log.drain_reject(printer, request_id)
    life = Lifecycle(state)
    host = args.host or "0.0.0.0"
    try:
        life.serve(host, args.port)
    except OSError as exc:
        return _bind_error(exc, [("vllm/entrypoints/openai/api_server.py", 1893, "create_server_socket",
                                  "sock.bind(addr)")])
    fault = plan.fault
    steps = [
        (vllm_log.config_phase, (printer, plan, args, non_default, os.environ), ("config",), vllm_log.config_fault),
        (vllm_log.engine_init_phase, (printer, plan, args), ("engine_init",), vllm_log.engine_fault),
        (vllm_log.draft_phase, (printer, plan), ("draft_load",), vllm_log.engine_fault),
        (vllm_log.memory_phase, (printer, plan, args), (), None),
        (vllm_log.graph_phase, (printer, plan, args), ("cuda_graph",), vllm_log.engine_fault),
    ]
    for weight, (phase, phase_args, fault_phases, on_fault) in zip(PHASES, steps):
        if not life.pause(weight):
            return _vllm_stop(life, printer)
        phase(*phase_args)
        if fault and fault.phase in fault_phases:
            if fault.name == "kv_cache_no_memory" and phase is not vllm_log.graph_phase:
                continue
            on_fault(printer, plan)
            life.close()
            return fault.exit_code
        if fault and fault.name == "kv_cache_no_memory" and phase is vllm_log.memory_phase:
            vllm_log.engine_fault(printer, plan)
            life.close()
            return fault.exit_code
    if not life.pause(PHASES[-1]):
        return _vllm_stop(life, printer)
    vllm_log.ready_phase(printer, plan, args, args.host or "0.0.0.0")
    if fault and fault.phase == "first_spec_request":
        state.crash_handler = lambda: _vllm_crash(state)
    state.runtime_crash = lambda: _vllm_crash(state, vllm_log.misaligned_address_crash)
    state.ready.set()
    interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10"))
    if not args.disable_log_stats and interval > 0:
        threading.Thread(target=_stats_loop, args=(state, interval), daemon=True).start()
    state.stop.wait()
    return _vllm_stop(life, printer)


def _stats_loop(state: EngineState, interval: float) -> None:
    while not state.stop.wait(interval):
        if not state.dead:
            state.log_stats(interval)


def _vllm_crash(state: EngineState, record=None) -> None:
    """The engine core died: its crash record (the bad nightly's by default), /health 503, exit 1."""
    with state.lock:
        if state.dead:
            return
        state.dead = True
        running = state.running
    if record is None:
        vllm_log.runtime_crash(state.printer, state.plan)
    else:
        record(state.printer, state.plan, running)
    state.exit_code = 1
    grace = float(os.environ.get("ENGINE_SIM_EXIT_GRACE", "1.0"))
    threading.Timer(grace, state.stop.set).start()


def _vllm_stop(life: Lifecycle, printer: VllmPrinter) -> int:
    vllm_log.shutdown(printer, life.state.dead)
    life.close()
    return life.state.exit_code


# -------------------------------------------------------------------------------------- SGLang

def run_sglang(argv: list[str]) -> int:
    version = os.environ.get("ENGINE_SIM_VERSION", DEFAULT_VERSION["sglang"])
    args = sglang_cli.parse(argv, version)
    printer = SglangPrinter()
    try:
        gpus = query_gpus()
    except NoGpuError:
        fault = no_gpu_fault("sglang")
        frames = [("<frozen runpy>", 198, "_run_module_as_main", ""), ("<frozen runpy>", 88, "_run_code", ""),
                  ("/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", 29, "<module>",
                   "server_args = prepare_server_args(sys.argv[1:])"),
                  ("sglang/srt/server_args.py", 612, "__post_init__", "self._handle_gpu_memory_settings(gpu_mem)"),
                  ("sglang/srt/utils/common.py", 1690, "get_device_memory_capacity",
                   "gpu_mem = get_nvgpu_memory_capacity()"),
                  ("torch/cuda/__init__.py", 412, "_lazy_init", "torch._C._cuda_init()")]
        for line in traceback_lines(frames, fault.message):
            emit(line, "stderr")
        return 1
    plan = decide_sglang(version, args, os.environ, gpus[0], model_facts(args.model_path))
    state = EngineState("sglang", plan, args, printer)
    life = Lifecycle(state)
    fault = plan.fault
    if not life.pause(PHASES[0]):
        return _sglang_stop(life, printer)
    sglang_log.config_phase(printer, plan)
    if fault and fault.phase == "config":
        sglang_log.config_fault(printer, plan)
        return fault.exit_code
    try:
        life.serve(args.host, args.port)
    except OSError as exc:
        return _bind_error(exc, [("sglang/srt/entrypoints/http_server.py", 1402, "launch_server", "uvicorn.run(")])
    steps = [(sglang_log.load_phase, "engine_init"), (sglang_log.draft_phase, "draft_load"),
             (sglang_log.memory_phase, None), (sglang_log.graph_phase, "cuda_graph")]
    for weight, (phase, fault_phase) in zip(PHASES[1:], steps):
        if not life.pause(weight):
            return _sglang_stop(life, printer)
        phase(printer, plan)
        if fault and fault.phase == fault_phase:
            if fault.name != "eagle_draft_moe_oom":  # the OOM killer leaves no last words
                sglang_log.scheduler_fault(printer, plan)
            _kill_tree()
    if not life.pause(PHASES[-1]):
        return _sglang_stop(life, printer)
    sglang_log.ready_phase(printer, plan, args.host, args.port)
    info_path = "/model_info" if release(version) >= (0, 5, 6) else "/get_model_info"
    printer.uvicorn(f'127.0.0.1:40102 - "GET {info_path} HTTP/1.1" 200 OK')
    sglang_log.prefill_line(printer, plan, 6, 0, 0, 0)
    printer.uvicorn('127.0.0.1:40110 - "POST /generate HTTP/1.1" 200 OK')
    sglang_log.fired_up(printer)
    state.runtime_crash = lambda: _sglang_runtime_crash(state)
    state.ready.set()
    state.stop.wait()
    return _sglang_stop(life, printer)


def _sglang_runtime_crash(state: EngineState) -> None:
    """A scheduler exception while serving: SGLang's launcher kills the whole tree (137)."""
    with state.lock:
        if state.dead:
            return
        state.dead = True
    sglang_log.runtime_crash(state.printer)
    _kill_tree()


def _sglang_stop(life: Lifecycle, printer: SglangPrinter) -> int:
    printer.uvicorn("Shutting down")
    printer.uvicorn("Waiting for application shutdown.")
    printer.uvicorn("Application shutdown complete.")
    printer.uvicorn("Finished server process [1]")
    life.close()
    return life.state.exit_code


# --------------------------------------------------------------------------------------- entry

def _run(personality: str, argv: list[str]) -> int:
    try:
        if personality == "vllm":
            return run_vllm(argv)
        if personality == "sglang":
            return run_sglang(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    emit(f"engine_sim: unknown personality {personality!r} (expected vllm or sglang)", "stderr")
    return 2


def _run_as_init(personality: str, argv: list[str]) -> int:
    """PID 1 ignores signals it has no handler for, SIGKILL from itself included: run the
    engine in a child and mirror its fate, so a killed engine gives the container status 137."""
    child = os.fork()
    if child == 0:
        os.environ["ENGINE_SIM_UNDER_INIT"] = "1"
        code = _run(personality, argv)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda s, f: os.kill(child, s))
    while True:
        try:
            status = os.waitpid(child, 0)[1]
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def main(personality: str, argv: list[str]) -> int:
    if os.getpid() == 1:
        return _run_as_init(personality, argv)
    return _run(personality, argv)
