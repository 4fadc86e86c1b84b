# SPDX-License-Identifier: GPL-3.0-or-later
"""gateway_drain: the drain state file on a real temporary gateway state directory."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.inferops.serving.plugins.modules import gateway_drain

MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"


def configured(tmp_path, groups=None):
    default = {MODEL: ["spark-1", "spark-2"], "sglang-m": ["g7e-1"]}
    (tmp_path / "routing.json").write_text(json.dumps({"groups": groups or default}))
    return str(tmp_path)


def drained(tmp_path):
    return json.loads((tmp_path / "drained.json").read_text())["hosts"]


def test_drains_once_then_changes_nothing_and_puts_back(run_module, tmp_path):
    args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "by": "site.yml swap"}
    failed, result = run_module(gateway_drain, args, diff=True)
    assert not failed and result["changed"], result
    entry = drained(tmp_path)["spark-1"]
    assert entry["by"] == "site.yml swap" and entry["since"].endswith("Z")
    assert stat.S_IMODE(os.stat(tmp_path / "drained.json").st_mode) == 0o644
    assert result["diff"]["before"] == "" and "spark-1" in result["diff"]["after"]
    failed, result = run_module(gateway_drain, args)
    assert not failed and not result["changed"] and drained(tmp_path)["spark-1"] == entry
    assert result["previously_drained"] == {"spark-1": entry}
    failed, result = run_module(gateway_drain, dict(args, state="routed"))
    assert not failed and result["changed"] and drained(tmp_path) == {}
    failed, result = run_module(gateway_drain, dict(args, state="routed"))
    assert not failed and not result["changed"]


def test_the_last_host_of_a_group_is_refused_and_nothing_is_written(run_module, tmp_path):
    state_dir = configured(tmp_path)
    run_module(gateway_drain, {"hosts": ["spark-2"], "state_dir": state_dir})
    before = (tmp_path / "drained.json").read_text()
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "expected_seconds": 90})
    assert failed
    assert "model group %s has no other host in routing than spark-1" % MODEL in result["msg"]
    assert "expected up to 90 s" in result["msg"]
    assert (tmp_path / "drained.json").read_text() == before
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "allow_outage": True})
    assert not failed and set(drained(tmp_path)) == {"spark-1", "spark-2"}
    assert result["outages"] == [{"group": MODEL, "hosts": ["spark-1"]}]


def test_check_mode_asks_the_question_and_writes_nothing(run_module, tmp_path):
    state_dir = configured(tmp_path)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir}, check_mode=True)
    assert not failed and result["changed"] and not (tmp_path / "drained.json").exists()
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1", "spark-2"], "state_dir": state_dir},
                                check_mode=True)
    assert failed and result["outages"] == [{"group": MODEL, "hosts": ["spark-1", "spark-2"]}]
    assert not (tmp_path / "drained.json").exists()


def test_a_host_asking_about_its_batch_refuses_only_an_outage_it_takes_part_in(run_module, tmp_path):
    """site.yml's first wave: spark-1 (of a group of two) and g7e-1 (a group of one) stop, spark-2
    does not change; each asks about the whole batch. Only g7e-1's converge is refused: spark-1 and
    spark-2 go on (they saw the outage, in the result)."""
    state_dir = configured(tmp_path)
    batch = {"hosts": ["spark-1", "g7e-1"], "state_dir": state_dir, "expected_seconds": 190}
    for host in ("spark-1", "spark-2"):
        failed, result = run_module(gateway_drain, dict(batch, asking=host), check_mode=True)
        assert not failed, result
        assert result["outages"] == [{"group": "sglang-m", "hosts": ["g7e-1"]}]
    failed, result = run_module(gateway_drain, dict(batch, asking="g7e-1"), check_mode=True)
    assert failed and "model group sglang-m has no other host in routing than g7e-1" in result["msg"]
    assert MODEL not in result["msg"]
    # Both Sparks in one batch: an outage each of them takes part in.
    both = {"hosts": ["spark-1", "spark-2"], "state_dir": state_dir}
    for host in ("spark-1", "spark-2"):
        failed, result = run_module(gateway_drain, dict(both, asking=host), check_mode=True)
        assert failed and "model group %s has no other host in routing than spark-1, spark-2" % MODEL in result["msg"]
    assert not (tmp_path / "drained.json").exists()


def test_a_gateway_not_configured_yet_has_nothing_to_drain(run_module, tmp_path):
    state_dir = tmp_path / "not-yet"
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": str(state_dir)})
    assert not failed and not result["changed"] and "not configured yet" in result["msg"]
    assert not state_dir.exists()


# ---- issue 39: root keeps its own state ----

def test_a_configured_gateway_without_its_routing_file_fails_naming_it(run_module, tmp_path):
    """Deleting routing.json no longer switches the drain off ("nothing to drain")."""
    state_dir = configured(tmp_path)
    (tmp_path / "routing.json").unlink()
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed
    assert result["msg"].startswith("%s: missing, but the gateway's state directory %s exists" % (
        tmp_path / "routing.json", tmp_path))
    assert "Rerun the gateway role" in result["msg"] and not (tmp_path / "drained.json").exists()


def test_links_in_the_state_directory_are_not_followed(run_module, tmp_path):
    state_dir = configured(tmp_path)
    outside = tmp_path.parent / (tmp_path.name + "-secret")
    outside.write_text('{"groups": {"m": ["spark-1", "spark-2"]}}')
    outside.chmod(0o600)
    (tmp_path / "routing.json").unlink()
    (tmp_path / "routing.json").symlink_to(outside)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and result["msg"].startswith("%s: a symbolic link, refused" % (tmp_path / "routing.json"))
    (tmp_path / "routing.json").unlink()
    configured(tmp_path)
    # a link planted as the state file: refused, and its target keeps its mode (no chmod through it)
    (tmp_path / "drained.json").symlink_to(outside)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and "drained.json: a symbolic link, refused" in result["msg"]
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o600
    (tmp_path / "drained.json").unlink()
    # a link planted as the lock (e.g. to /etc/nologin): not followed, nothing created at its target
    nologin = tmp_path.parent / (tmp_path.name + "-nologin")
    (tmp_path / ".drained.lock").unlink()  # the last run's lock
    (tmp_path / ".drained.lock").symlink_to(nologin)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and ".drained.lock: a symbolic link, refused" in result["msg"]
    assert not nologin.exists()


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777])
def test_a_state_directory_others_can_write_is_refused(run_module, tmp_path, mode):
    state_dir = configured(tmp_path)
    tmp_path.chmod(mode)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and result["msg"].startswith("%s: the gateway's state directory is writable by its group or others"
                                               % tmp_path)
    assert "root-owned, mode 0755" in result["msg"] and not (tmp_path / "drained.json").exists()


def test_a_state_directory_that_is_a_link_is_refused(run_module, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    configured(real)
    (tmp_path / "state").symlink_to(real)
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": str(tmp_path / "state")})
    assert failed and "the gateway's state directory is a symbolic link, refused" in result["msg"]


def test_a_state_directory_another_user_owns_is_refused():
    from ansible_collections.inferops.serving.plugins.module_utils import _drain
    import tempfile
    with tempfile.TemporaryDirectory() as path:
        os.chmod(path, 0o755)
        owner = os.stat(path).st_uid
        assert _drain.state_dir_problem(path, uid=owner) is None
        assert "is owned by uid %d, not %d" % (owner, owner + 1) in _drain.state_dir_problem(path, uid=owner + 1)


def test_a_corrupt_state_file_fails_naming_it(run_module, tmp_path):
    state_dir = configured(tmp_path)
    (tmp_path / "drained.json").write_text("{half")
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    assert failed and result["msg"].startswith(str(tmp_path / "drained.json") + ": not JSON")


def test_parallel_drains_are_all_recorded(tmp_path):
    """Two serving hosts of one batch drain at the same time (forks): the lock keeps both."""
    state_dir = configured(tmp_path, {"m%d" % i: ["h%d" % i, "x%d" % i] for i in range(8)})
    # ansible-core >= 2.19 has patch_module_args; 2.18 (the lowest the collection claims) reads
    # basic._ANSIBLE_ARGS
    code = ("import contextlib,json,sys\nfrom ansible.module_utils import basic\n"
            "try:\n    from ansible.module_utils.testing import patch_module_args\n"
            "except ImportError:\n    @contextlib.contextmanager\n    def patch_module_args(args):\n"
            "        basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()\n        yield\n"
            "from ansible_collections.inferops.serving.plugins.modules import gateway_drain\n"
            "with patch_module_args(json.loads(sys.argv[1])):\n    gateway_drain.main()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-c", code, json.dumps({"hosts": ["h%d" % i], "state_dir": state_dir})],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for i in range(8)]
    for proc in procs:
        proc.communicate(timeout=60)
    assert set(drained(tmp_path)) == {"h%d" % i for i in range(8)}


class Health:
    """A stand-in for LiteLLM's /health on loopback: the deployment ids it lists unhealthy, the keys it was sent."""

    def __init__(self, unhealthy=(), status=200):
        import http.server
        import threading

        self.unhealthy, self.status, self.keys = list(unhealthy), status, []
        health = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                health.keys.append(self.headers.get("authorization"))
                body = json.dumps({"healthy_endpoints": [], "unhealthy_endpoints": [
                    {"model": "hosted_vllm/" + MODEL, "model_id": host} for host in health.unhealthy]}).encode()
                self.send_response(health.status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/health" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()


def test_the_health_wait_sends_the_key_and_passes_when_another_host_is_healthy(run_module, tmp_path):
    health = Health()
    try:
        args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": health.url,
                "master_key": "sk-unit-drain-key-0123", "health_timeout": 4}
        failed, result = run_module(gateway_drain, args, check_mode=True)
    finally:
        health.close()
    assert not failed and result["waiting"] == [] and result["health_answered"] is True, result
    assert health.keys == ["Bearer sk-unit-drain-key-0123"]
    assert "sk-unit-drain-key-0123" not in json.dumps(result)
    assert not (tmp_path / "drained.json").exists()


def test_the_health_wait_sends_the_key_the_running_proxy_has(run_module, tmp_path):
    """A run rotating the master key: the serving hosts' drains run before the gateway play restarts
    the proxy with the new key, so the key read from the gateway's env file (the one the proxy was
    started with) is sent, not the new one; without the file, the key given."""
    config = tmp_path / "config"
    config.mkdir()
    env_file = config / "gateway.env"
    env_file.write_text("LITELLM_MASTER_KEY=sk-unit-running-key-4567\nGATEWAY_SPARK_1_VLLM_API_KEY=x\n")
    state = tmp_path / "state"
    state.mkdir()
    health = Health()
    try:
        args = {"hosts": ["spark-1"], "state_dir": configured(state), "health_url": health.url,
                "master_key": "sk-unit-rotated-key-0123", "master_key_file": str(env_file), "health_timeout": 4}
        failed, result = run_module(gateway_drain, args, check_mode=True)
        failed_missing, dummy = run_module(gateway_drain, dict(args, master_key_file=str(config / "none.env")),
                                           check_mode=True)
    finally:
        health.close()
    assert not failed and not failed_missing and result["health_answered"] is True, result
    assert health.keys == ["Bearer sk-unit-running-key-4567", "Bearer sk-unit-rotated-key-0123"]
    assert "sk-unit-running-key-4567" not in json.dumps(result)


def test_the_health_wait_names_the_groups_still_without_another_healthy_host(run_module, tmp_path):
    health = Health(unhealthy=["spark-2"])
    try:
        args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": health.url,
                "master_key": "sk-unit-drain-key-0123", "health_timeout": 1}
        failed, result = run_module(gateway_drain, args)
    finally:
        health.close()
    # Not failed: the task says why (the routing role names the host, the gateway and the seconds).
    assert not failed and result["waiting"] == [MODEL] and not result["changed"], result
    assert len(health.keys) >= 2  # read again until the time ran out
    assert not (tmp_path / "drained.json").exists()


def test_no_health_wait_for_a_host_out_of_routing_already_an_allowed_outage_or_an_outage(run_module, tmp_path):
    state_dir = configured(tmp_path)
    nowhere = "http://127.0.0.1:9/health"  # nothing answers: a read would say so
    run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir})
    failed, result = run_module(gateway_drain, {"hosts": ["spark-1"], "state_dir": state_dir, "health_url": nowhere},
                                check_mode=True)
    assert not failed and result["health_answered"] is None and result["waiting"] == []
    failed, result = run_module(gateway_drain, {"hosts": ["g7e-1"], "state_dir": state_dir, "health_url": nowhere,
                                                "allow_outage": True}, check_mode=True)
    assert not failed and result["health_answered"] is None
    failed, result = run_module(gateway_drain, {"hosts": ["g7e-1"], "state_dir": state_dir, "health_url": nowhere},
                                check_mode=True)
    assert failed and "model group sglang-m has no other host in routing than g7e-1" in result["msg"]


def test_an_allowed_outage_still_waits_for_the_other_groups_healthy_host(run_module, tmp_path):
    """g7e-1 (a group of one, its outage accepted) and spark-1 drained together: the Sparks' group
    still waits for spark-2, which the gateway sees unhealthy, so nothing is drained."""
    health = Health(unhealthy=["spark-2"])
    try:
        args = {"hosts": ["spark-1", "g7e-1"], "state_dir": configured(tmp_path), "health_url": health.url,
                "master_key": "sk-unit-drain-key-0123", "health_timeout": 1, "allow_outage": True}
        failed, result = run_module(gateway_drain, args)
    finally:
        health.close()
    assert not failed and result["waiting"] == [MODEL] and not result["changed"], result
    assert result["outages"] == [{"group": "sglang-m", "hosts": ["g7e-1"]}]
    assert not (tmp_path / "drained.json").exists()
    health = Health()
    try:
        failed, result = run_module(gateway_drain, dict(args, health_url=health.url, health_timeout=4))
    finally:
        health.close()
    assert not failed and result["changed"] and set(drained(tmp_path)) == {"spark-1", "g7e-1"}, result


def test_a_health_url_that_answers_nothing_is_reported_not_read(run_module, tmp_path):
    args = {"hosts": ["spark-1"], "state_dir": configured(tmp_path), "health_url": "http://127.0.0.1:9/health",
            "master_key": "sk-unit-drain-key-0123", "health_timeout": 0}
    failed, result = run_module(gateway_drain, args, check_mode=True)
    assert not failed and result["health_answered"] is False and result["waiting"] == []
