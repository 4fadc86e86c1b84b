# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment plan on the lab fleet (issue 9): the README's override example deploys and is
proven with expectations derived from the overridden flags, a second converge changes nothing,
removing the override redeploys the profile as shipped, and ``show_launch.yml -e host=<host>``
writes, byte for byte, the script the server role wrote on that host; an operator's ``-e
server_profile_overrides=...`` keeps the weights the lab's lock pins.

Uses the lab fleet of ``inventories/lab`` (shared with the demo test) through a copy of that
inventory whose ``group_vars/spark.yml`` carries the override, exactly as an operator writes it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SCRIPT = "/usr/local/lib/inferops-serving/inferops-serving.sh"


def run(args, timeout=1800):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def playbook(inventory, path, *extra):
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", inventory, path, *extra])
    assert result.returncode == 0, (result.stdout + result.stderr)[-8000:]
    return result.stdout


def recap(output):
    return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
            for host, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", output, re.M)}


def folded(output):
    """The output with the YAML callback's line folding undone."""
    return " ".join(output.split())


def observed(output, host):
    """The backends the summary reports as observed for ``host``."""
    table = output[output.index("Summarise the fleet"):]
    row = re.search(r"^\W*%s\s+\|.*\n\W*backends observed: (.*?)'?$" % re.escape(host), table, re.M)
    assert row, table
    return dict(pair.split("=", 1) for pair in row.group(1).strip().split(", "))


@pytest.fixture(scope="module")
def inventories(tmp_path_factory):
    """The lab inventory as shipped, and a copy with the README's override in group_vars/spark.yml."""
    shipped = os.path.join(ROOT, "inventories", "lab")
    playbook(shipped, "tests/lab/fleet.yml")
    overridden = str(tmp_path_factory.mktemp("inventory") / "lab")
    shutil.copytree(shipped, overridden)
    spark = os.path.join(overridden, "group_vars", "spark.yml")
    with open(spark, encoding="utf-8") as handle:
        group_vars = yaml.safe_load(handle)
    # The README's args, beside the lab's own override (its loopback host; the lock pins the Hub stand-in's revision).
    group_vars["server_profile_overrides"]["args"].update({
        "max-num-seqs": 16, "speculative_config.num_speculative_tokens": 1})
    with open(spark, "w", encoding="utf-8") as handle:
        yaml.safe_dump(group_vars, handle)
    return shipped, overridden


def test_readme_override_deploys_is_proven_and_converges(inventories):
    shipped, overridden = inventories
    first = playbook(overridden, "site.yml", "-l", "lab-spark")
    backends = observed(first, "lab-spark")
    assert backends["max_num_seqs"] == "16" and backends["num_speculative_tokens"] == "1"
    assert re.search(r"lab-spark\s+\|\s+gb10-nvfp4-mtp-throughput\s+\|.*\|\s+(\d+)/\1 proven", first), first
    second = playbook(overridden, "site.yml", "-l", "lab-spark")
    assert recap(second)["lab-spark"]["changed"] == 0, second[-4000:]
    # Without the override the profile as shipped comes back, proven as shipped.
    back = playbook(shipped, "site.yml", "-l", "lab-spark")
    backends = observed(back, "lab-spark")
    assert backends["max_num_seqs"] == "32" and backends["num_speculative_tokens"] == "2"


def test_check_diff_says_whether_the_engine_restarts_and_why(inventories):
    """``site.yml --check --diff`` on a converged host: ``no restart`` as shipped; with the README's
    override, ``restart:`` and the flags it changes (read from the launch spec the host recorded),
    and the engine untouched either way."""
    shipped, overridden = inventories
    playbook(shipped, "site.yml", "-l", "lab-spark")
    inspect = ["docker", "exec", "lab-spark", "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}",
               "inferops-serving"]
    before = run(inspect)
    unchanged = folded(playbook(shipped, "site.yml", "-l", "lab-spark", "--check", "--diff"))
    assert re.search(r"ok: \[lab-spark\] => msg: no restart", unchanged), unchanged[-4000:]
    changing = folded(playbook(overridden, "site.yml", "-l", "lab-spark", "--check", "--diff"))
    line = re.search(r"ok: \[lab-spark\] => msg: '?(restart: .*?\(out of service up to \d+ s\))", changing)
    assert line, changing[-4000:]
    assert "--max-num-seqs 32 -> 16" in line.group(1), line.group(1)
    # One key of the JSON flag is its own dotted flag, which vLLM merges in (README): added, the
    # profile's JSON untouched.
    assert "--speculative_config.num_speculative_tokens 1 added" in line.group(1), line.group(1)
    assert "--speculative_config {" not in line.group(1), line.group(1)
    assert "image " not in line.group(1), line.group(1)  # the same digest: only what changed
    after = run(inspect)
    assert before.returncode == 0 and before.stdout == after.stdout


def test_an_operators_overrides_keep_the_labs_weights(inventories):
    """The lab pins the Hub stand-in's commit of each model in its lock (``models``, as pin.yml pins a
    fleet's), not in server_profile_overrides: ``-e server_profile_overrides=...``, which replaces the
    inventory's overrides whole, keeps the weights. Here the operator passes the inventory's own
    overrides: the plan is the shipped one, model_cache stages nothing new (no 404 for the profile's
    real commit, which the stand-in does not serve) and the converge changes nothing."""
    shipped, _overridden = inventories
    playbook(shipped, "site.yml", "-l", "lab-spark")
    with open(os.path.join(shipped, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        pinned = yaml.safe_load(handle)["inferops_serving_image_lock"]["models"][
            "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"]["revision"]
    again = playbook(shipped, "site.yml", "-l", "lab-spark",
                     "-e", json.dumps({"server_profile_overrides": {"args": {"host": "127.0.0.1"}}}))
    assert recap(again)["lab-spark"]["changed"] == 0, again[-4000:]
    argv = json.loads(run(["docker", "exec", "lab-spark", "docker", "inspect", "-f", "{{json .Config.Cmd}}",
                           "inferops-serving"]).stdout)
    assert argv[argv.index("--revision") + 1] == pinned


def test_a_contradicting_expectation_is_refused_before_the_host_changes(inventories):
    shipped, _overridden = inventories
    before = run(["docker", "exec", "lab-spark", "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}",
                  "inferops-serving"])
    result = run([os.path.join(BIN, "ansible-playbook"), "-i", shipped, "site.yml", "-l", "lab-spark", "-e",
                  '{"server_profile_overrides": {"args": {"host": "127.0.0.1", "max-num-seqs": 16},'
                  ' "expect": {"max_num_seqs": 32}}}'])
    assert result.returncode != 0
    assert "expect.max_num_seqs: 32 contradicts args.max-num-seqs = 16" in result.stdout
    after = run(["docker", "exec", "lab-spark", "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}",
                 "inferops-serving"])
    assert before.stdout == after.stdout and before.returncode == 0


@pytest.mark.parametrize("host", ["lab-spark", "lab-g7e"])
def test_show_launch_writes_the_hosts_script_byte_for_byte(inventories, host, tmp_path):
    shipped, _overridden = inventories
    playbook(shipped, "site.yml", "-l", host)
    dest = tmp_path / "launch.sh"
    playbook(shipped, "playbooks/show_launch.yml", "-e", "host=%s" % host, "-e", "dest=%s" % dest)
    on_host = run(["docker", "exec", host, "cat", SCRIPT])
    assert on_host.returncode == 0, on_host.stderr
    assert dest.read_text(encoding="utf-8") == on_host.stdout


def test_status_reads_the_fleet_and_fails_on_a_container_replaced_by_hand(inventories):
    shipped, _overridden = inventories
    # lab-g7e left out of the gateway's routing, as by a run interrupted between its drain and its
    # proof: the converge finds its engine running its plan (nothing stops it, so the server role
    # does not put it back) and the gateway's play routes it again, in one task for every host.
    left = run(["docker", "exec", "lab-gateway", "bash", "-c", "cd /var/lib/inferops-gateway && printf '%s' "
                "'{\"hosts\": {\"lab-g7e\": {\"by\": \"an interrupted run\", \"since\": \"2026-12-04T00:00:00Z\"}}}'"
                " > drained.json"])
    assert left.returncode == 0, left.stderr
    converged = playbook(shipped, "site.yml")
    assert not re.search(r"^(ok|changed): \[lab-g7e -> lab-gateway\]", converged, re.M), converged[-4000:]
    # An include_role's banner names no role: "TASK [Put the serving hosts ...]", then "included: ...".
    routed = converged[converged.index("Put the serving hosts this run proved back in routing] *"):]
    routed = routed[routed.index("TASK [inferops.serving.routing : Put the host back in the gateway's routing]"):]
    assert routed.split("\n")[1] == "changed: [lab-gateway] => (item=lab-gateway)", routed[:400]
    drained = run(["docker", "exec", "lab-gateway", "cat", "/var/lib/inferops-gateway/drained.json"])
    assert json.loads(drained.stdout)["hosts"] == {}, drained.stdout
    assert "routes to 3 of 3 hosts" in converged, converged[-4000:]
    healthy = playbook(shipped, "playbooks/status.yml")
    for host in ("lab-spark", "lab-g7e"):
        assert re.search(r"%s\s+\|.*\|\s+serving$" % host, healthy, re.M), healthy[-4000:]
    assert recap(healthy)["lab-spark"]["changed"] == 0
    with open(os.path.join(shipped, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        images = yaml.safe_load(handle)["inferops_serving_image_lock"]["images"]
    planned, other = images["vllm/vllm-openai:cu130-nightly"]["digest"], images["vllm/vllm-openai:v0.17.1-cu130"]["digest"]
    # An operator replaces the container by hand: the same launch script with another digest.
    replaced = run(["docker", "exec", "lab-spark", "bash", "-c",
                    "sed 's/%s/%s/' %s > /tmp/by-hand.sh && docker rm -f inferops-serving >/dev/null && bash /tmp/by-hand.sh"
                    % (planned, other, SCRIPT)])
    assert replaced.returncode == 0, replaced.stderr
    try:
        drifted = run([os.path.join(BIN, "ansible-playbook"), "-i", shipped, "playbooks/status.yml"])
        assert drifted.returncode != 0
        assert re.search(r"lab-spark: DRIFT: runs 127.0.0.1:5000/vllm/vllm-openai@%s, the inventory \(lock\) says "
                         r"127.0.0.1:5000/vllm/vllm-openai@%s" % (other, planned), drifted.stdout), drifted.stdout[-4000:]
        assert re.search(r"lab-g7e\s+\|.*\|\s+serving$", drifted.stdout, re.M)
    finally:
        playbook(shipped, "site.yml", "-l", "lab-spark")


def test_tags_and_check_mode_act_as_documented(inventories):
    """Issue 15: with `--tags server` preflight still checks the host first; `--tags verify`
    re-proves without changing anything; `--check` on a converged fleet says "unchanged"."""
    shipped, _overridden = inventories
    playbook(shipped, "site.yml")
    server = playbook(shipped, "site.yml", "--tags", "server")
    assert "inferops.serving.preflight : Check the host against profile" in server
    assert all(counts["changed"] == 0 for counts in recap(server).values()), server[-3000:]
    verify = playbook(shipped, "site.yml", "--tags", "verify")
    assert "inferops.serving.server : Assert the backends the engine selected" in verify
    assert "inferops.serving.server : Smoke-test a completion" in verify
    assert "Create container" not in verify and "Write the role's directories" not in verify
    assert all(counts["changed"] == 0 for counts in recap(verify).values()), verify[-3000:]
    before = {host: run(["docker", "exec", host, "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}",
                         "inferops-serving"]).stdout for host in ("lab-spark", "lab-g7e")}
    checked = playbook(shipped, "site.yml", "--check")
    assert checked.count("unchanged (check mode)") >= 2, checked[-3000:]
    # Nothing is counted as changed, the repository's signing key included: it is downloaded (a
    # read) and compared with the installed one, as it is on every run to catch a rotated key.
    changed = [block.split("]", 1)[0] for block in checked.split("TASK [")[1:] if "\nchanged: [" in block]
    assert changed == [], changed
    assert all(counts["changed"] == 0 for counts in recap(checked).values()), checked[-3000:]
    after = {host: run(["docker", "exec", host, "docker", "inspect", "-f", "{{.Id}} {{.State.StartedAt}}",
                        "inferops-serving"]).stdout for host in ("lab-spark", "lab-g7e")}
    assert after == before
