# SPDX-License-Identifier: GPL-3.0-or-later
"""After the faulty deployments (engine_faults.yml, the second part of side_effect.yml): their
containers were kept with the logs that prove the fault (no auto-remove: the seed's lost crash
logs), bounded restarts stopped the start-up crash loop, and the serving container next to them was
never touched (molecule/shared/tests/test_serving.py, run in the same verify, checks it still serves)."""
from __future__ import annotations

import json

import pytest

FAULT_EVIDENCE = {
    "fault-bad-compile": "RuntimeError: CUDA error: an illegal instruction was encountered",
    "fault-bad-nightly": "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "fault-wrong-backend": "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM",
}


@pytest.mark.parametrize("name", sorted(FAULT_EVIDENCE))
def test_faulty_container_kept_its_evidence(host, name):
    logs = host.run("docker logs %s", name)
    assert logs.rc == 0, logs.stderr
    assert FAULT_EVIDENCE[name] in logs.stdout + logs.stderr


def test_startup_crash_loop_is_bounded(host):
    state = json.loads(host.check_output("docker inspect --format '{{json .State}}' fault-bad-compile"))
    restarts = int(host.check_output("docker inspect --format '{{.RestartCount}}' fault-bad-compile"))
    assert (restarts, state["Running"], state["ExitCode"]) == (3, False, 1)  # server_restart_retries


def test_serving_container_never_restarted(host):
    assert host.check_output("docker inspect --format '{{.RestartCount}}' inferops-serving") == "0"
