# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 15 in the lab: ``pin.yml --check`` reads a moved tag from the registry's manifest API and
changes nothing; the GB10 pre-start check with page cache in the way, with and without
``server_drop_caches_before_start``.

The first of the lab's shared simulated DGX Sparks (``labkit.SPARK_1``, port 8111, made once per
session by the first module needing it: tests/lab/labkit.py), taken with an inventory of this
module's own (its lock is a copy of the lab's) and converged from it first
(``labkit.module_fleet``). The rolling tag vllm/vllm-openai:cu130-nightly is moved in the lab
registry (127.0.0.1:5000, plain http) with tests/lab/nightly.sh and restored afterwards. The page
cache is simulated in the host's meminfo (/etc/inferops-lab/meminfo): MemFree low, Cached high,
MemAvailable unchanged, as unsloth PR 10704 measured on a GB10 with a model's weights in the page
cache. The lab hosts are containers with a read-only /proc/sys, so the drop writes
server_drop_caches_file, a plain file here.

What it leaves on the host for the next module's start to undo: the host serving the
drop test's deployment (max-cudagraph-capture-size 80, server_drop_caches_before_start), watchdog
history. The page-cache meminfo and the drop file are restored by the ``page_cache`` fixture.

Run (as root, the lab up or brought up by the fixture):
    .venv/bin/pytest tests/lab/test_pin_check_and_page_cache.py -m lab -v -p no:cacheprovider
"""
from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from labkit import (GROUP_VARS, IMAGE, MEMINFO, NIGHTLY, ROOT, SPARK_1, SPARKS, TAG, container, exec_on, folded, lock_text,
                    module_fleet, playbook, recap, run, tag_digest, write_inventory)

HOST = SPARK_1
PORT = SPARKS[HOST]
DROP_FILE = "/root/drop_caches"
# 40 GiB free, 70 GiB page cache (the weights the last load read): below the throughput
# profile's 0.9 x 121.6 GiB = 109.5 GiB, while MemAvailable (117.3 GiB in the lab) covers it.
MEMFREE_KB, CACHED_KB = 41943040, 73400320

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("shared_sparks")]  # one pytest-xdist worker: the shared Sparks


def host_images():
    return sorted(exec_on(HOST, "docker images --digests --format '{{.Repository}} {{.Tag}} {{.Digest}} {{.ID}}'")
                  .stdout.splitlines())


def locked_digest(inventory):
    return yaml.safe_load(lock_text(inventory))["inferops_serving_image_lock"]["images"][IMAGE]["digest"]


def converge(inventory, *extra, check=True):
    """site.yml on the host with one more arg, so the engine starts again (the pre-start check runs)."""
    return playbook(inventory, "site.yml", "-l", HOST, *extra, check=check)


def with_cudagraph(size, **variables):
    return json.dumps(dict(variables, server_profile_overrides={
        "args": {"host": "127.0.0.1", "max-cudagraph-capture-size": size}}))


@pytest.fixture(scope="module")
def fleet(shared_sparks, tmp_path_factory):
    original = tag_digest()
    with module_fleet(shared_sparks, tmp_path_factory, "pin-check", {HOST: PORT}) as inventory:
        yield {"inventory": inventory, "original": original}


# ------------------------------------------------------------------------------ pin.yml --check
def test_pin_check_with_the_tag_unmoved_compares_it_with_the_lock(fleet):
    result = playbook(fleet["inventory"], "playbooks/pin.yml", "--check", "-e", "pin_image=" + IMAGE)
    text = folded(result.stdout)
    if locked_digest(fleet["inventory"]) == fleet["original"]:
        assert "%s is still %s" % (IMAGE, fleet["original"]) in text and "nothing new" in text
    else:  # the lab's lock is older than the registry's tag
        assert "%s now points to %s" % (IMAGE, fleet["original"]) in text
    assert all(counts["changed"] == 0 for counts in recap(result.stdout).values())


def test_pin_check_reads_a_moved_tag_from_the_registry_and_changes_nothing(fleet):
    inventory = fleet["inventory"]
    new = run([NIGHTLY, "build", "0.19.3rc1.dev9"]).stdout.strip()
    run([NIGHTLY, "move", TAG, new])
    lock_before, images_before, container_before = lock_text(inventory), host_images(), container(HOST)

    result = playbook(inventory, "playbooks/pin.yml", "--check", "-e", "pin_image=" + IMAGE)
    text = folded(result.stdout)
    assert ("%s now points to %s (application/vnd.docker.distribution.manifest.v2+json, read from "
            "http://127.0.0.1:5000/v2/vllm/vllm-openai/manifests/%s); the lock has %s"
            % (IMAGE, new, TAG, locked_digest(inventory))) in text
    assert "Without --check: deploy it on canary %s" % HOST in text
    assert recap(result.stdout)[HOST]["changed"] == 0
    # Nothing pulled, deployed or written.
    assert host_images() == images_before, "pin.yml --check pulled an image"
    assert container(HOST) == container_before
    assert lock_text(inventory) == lock_before
    assert not os.path.exists(os.path.join(inventory, "group_vars", "all", "known_bad_images.yml"))
    run([NIGHTLY, "move", TAG, fleet["original"]])


# ------------------------------------------------------------- pin.yml on the example inventory
def test_pin_writes_the_lock_of_an_inventory_shaped_like_inventories_example(fleet, tmp_path):
    """Issues 15 and 26: a copy of inventories/example (group_vars/all/ with main.yml, pin.yml,
    benchmark.yml and the vault stub, no lock) pointed at the lab: pin.yml creates group_vars/all/image_lock.yml beside them,
    and site.yml deploys from it."""
    inventory = tmp_path / "example"
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), str(inventory))
    assert sorted(os.listdir(inventory / "group_vars" / "all")) == ["benchmark.yml", "main.yml", "pin.yml", "vault.yml"]
    # The example's groups and group_vars as shipped; its hosts replaced by the lab host, which
    # carries the lab's settings (registry, apt repository, simulated hardware) as host vars.
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    # The lab's vars as labkit.write_inventory gives a lab host (their one home): the serving group's
    # (docker exec), the host's own (its ports) and the apt key pin, with GROUP_VARS but the profile.
    lab = write_inventory(str(tmp_path / "lab"), {HOST: PORT}, {})
    with open(os.path.join(lab, "hosts.yml"), encoding="utf-8") as handle:
        lab_serving = yaml.safe_load(handle)["all"]["children"]["serving"]
    with open(os.path.join(lab, "group_vars", "all", "apt_signing_key.yml"), encoding="utf-8") as handle:
        lab_vars = dict(yaml.safe_load(handle), **lab_serving["vars"], **lab_serving["children"]["spark"]["hosts"][HOST])
    lab_vars.update({k: v for k, v in GROUP_VARS.items() if k != "server_profile"})
    lab_vars["ansible_user"] = "root"  # docker exec as root (the example's ansible_user is the fleet's SSH user)
    hosts["all"]["children"]["serving"]["children"] = {"spark": {"hosts": {HOST: lab_vars}}}
    # The example's gateway and monitoring hosts are names, not lab hosts: without them the serving
    # play has no gateway to drain through (their group_vars then apply to no host).
    for group in ("gateway", "monitoring"):
        del hosts["all"]["children"][group]
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    current = run([NIGHTLY, "digest", TAG]).stdout.strip()

    playbook(str(inventory), "playbooks/pin.yml", "-e", "pin_image=" + IMAGE)
    assert locked_digest(str(inventory)) == current
    # The lock's sidecar (.image_lock.yml.lock, inventory_entry's flock; the vars loader skips dotfiles) aside.
    assert sorted(name for name in os.listdir(inventory / "group_vars" / "all")
                  if not name.startswith(".")) == ["benchmark.yml", "image_lock.yml", "main.yml", "pin.yml", "vault.yml"]
    converged = playbook(str(inventory), "site.yml", "-l", HOST)
    assert recap(converged.stdout)[HOST]["failed"] == 0
    assert container(HOST)["image"].endswith("@" + current)


# ---------------------------------------------------------------------------------- page cache
@pytest.fixture
def page_cache():
    """The host's meminfo with 70 GiB of page cache: MemFree 40 GiB, MemAvailable unchanged."""
    exec_on(HOST, "cp {m} /root/meminfo.saved && sed -i -e 's/^MemFree:.*/MemFree:        {f} kB/' "
            "-e 's/^Cached:.*/Cached:         {c} kB/' {m}".format(m=MEMINFO, f=MEMFREE_KB, c=CACHED_KB))
    exec_on(HOST, "rm -f %s" % DROP_FILE)
    try:
        yield
    finally:
        exec_on(HOST, "mv /root/meminfo.saved %s" % MEMINFO)
        exec_on(HOST, "rm -f %s" % DROP_FILE)


def test_page_cache_in_the_way_is_reported_and_vllm_still_starts(fleet, page_cache):
    # vLLM's start-up check reads MemAvailable on GB10: the start goes ahead, with a warning that
    # names MemFree, the page cache and the variable.
    before = container(HOST)
    result = converge(fleet["inventory"], "-e", with_cudagraph(96))
    text = folded(result.stdout + result.stderr)
    assert "MemFree 40.0 GiB is less than the engine's share 0.9 x MemTotal 121.6 GiB = 109.5 GiB" in text
    assert "the page cache (70.0 GiB) holds the difference" in text
    assert "set server_drop_caches_before_start: true to start on free memory" in text
    assert container(HOST)["id"] != before["id"]
    assert exec_on(HOST, "test -e %s" % DROP_FILE, check=False).returncode != 0, "dropped without being asked"


def test_drop_caches_before_start_writes_the_drop_once_per_start(fleet, page_cache):
    variables = {"server_drop_caches_before_start": True, "server_drop_caches_file": DROP_FILE}
    # Check mode predicts the drop and writes nothing.
    checked = converge(fleet["inventory"], "--check", "-e", with_cudagraph(80, **variables))
    assert exec_on(HOST, "test -e %s" % DROP_FILE, check=False).returncode != 0, "check mode dropped the cache"
    assert "Drop the page cache before the engine claims unified memory" in checked.stdout

    before = container(HOST)
    result = converge(fleet["inventory"], "-e", with_cudagraph(80, **variables))
    text = folded(result.stdout + result.stderr)
    assert exec_on(HOST, "cat %s" % DROP_FILE).stdout == "1\n"
    assert container(HOST)["id"] != before["id"]
    # The simulated meminfo does not change when the file is written: the rule says so.
    assert "although it was just dropped" in text and "reads MemAvailable and passes" in text

    # A converge that starts nothing drops nothing.
    exec_on(HOST, "rm -f %s" % DROP_FILE)
    again = converge(fleet["inventory"], "-e", with_cudagraph(80, **variables))
    assert recap(again.stdout)[HOST]["changed"] == 0
    assert exec_on(HOST, "test -e %s" % DROP_FILE, check=False).returncode != 0
