# SPDX-License-Identifier: GPL-3.0-or-later
"""What the lab test modules that drive simulated DGX Sparks share: the shared hosts, their
settings, and the helpers that run playbooks and look at a host.

The hosts (``SPARKS``) are built once per pytest session, each by the start of the first module
needing it, and removed at the session's end (``SharedSparks``, the ``shared_sparks`` fixture of
tests/lab/conftest.py). Each module takes the ones it needs with ``module_fleet()``: an inventory
of its own (its group_vars, its copy of the lab's lock, its known-bad file: inventory-side state
stays per module) pointing at them, and a start that makes a host no module made yet (the
minutes a host costs: its target container, the toolkit installed, the image pulled cold into
its nested engine) and puts the others back in the state a new host had, whatever a module before it left:

* tests/lab/fleet.yml from the module's inventory: a missing target container is created, a
  stopped one started again, the simulated hardware files (``/etc/inferops-lab/gpu.json``,
  ``meminfo``) are rewritten when they differ from ``lab_hardware`` (set-hardware is
  idempotent), and Docker is waited for;
* site.yml from the module's inventory: the module's deployment (its profile, overrides, watchdog
  settings, lock) replaces whatever the host served (the product's own promise: a converge brings
  the inventory's deployment back);
* the watchdog's history (its state file: restarts within the hour, ``gave_up``) is emptied: a
  converge keeps it by design (the restart budget spans converges), and a new host had none.

At the module's end the rolling tag ``vllm/vllm-openai:cu130-nightly`` is moved back to the digest
it had when the module started (the session moves it back to its own start's digest too).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "tests", "lab")
DOCKER = "/usr/bin/docker"
NIGHTLY = os.path.join(LAB, "nightly.sh")
TAG = "cu130-nightly"
IMAGE = "vllm/vllm-openai:" + TAG
MEMINFO = "/etc/inferops-lab/meminfo"
LAB_LOCK = os.path.join(ROOT, "inventories", "lab", "group_vars", "all", "image_lock.yml")
# The lab apt key's pinned fingerprint (container_toolkit_repository_key_fingerprints; lab.sh up writes it).
LAB_APT_KEY = os.path.join(ROOT, "inventories", "lab", "group_vars", "all", "apt_signing_key.yml")

# The shared simulated DGX Sparks and their serving ports (811x: tests/lab/README.md's port plan).
# Modules that need one host take the first. SPARKS (the pin and rollout tests, which move the
# registry's rolling tag) and SPARK_3 (the readiness and watchdog tests, which never move it) are two
# pytest-xdist groups, each on a worker of its own, so the two chains run side by side.
SPARKS = {"shared-spark-1": 8111, "shared-spark-2": 8112}
SPARK_1, SPARK_2 = list(SPARKS)
SPARK_3 = "shared-spark-3"
ALL_SPARKS = dict(SPARKS, **{SPARK_3: 8113})

# The watchdog of the serving container (server_container_name's default) and its history.
WATCHDOG_SERVICE = "inferops-watchdog@inferops-serving.service"
WATCHDOG_STATE = "/var/lib/inferops-serving/watchdog-inferops-serving.json"

# The settings every shared Spark needs in the lab (a container on one machine without GPUs);
# a module adds its own on top (a copy: never change this dict).
GROUP_VARS = {
    "inferops_become": False,
    "lab_target_image": "inferops-lab/target:bookworm",
    "lab_hardware": "gb10",
    "container_toolkit_repository_url": "http://127.0.0.1:5080/libnvidia-container",
    "container_toolkit_version": "1.17.8-1",
    "container_toolkit_daemon_json_settings": {"storage-driver": "overlay2", "iptables": False, "bridge": "none"},
    "server_registry_prefix": "127.0.0.1:5000",
    "server_network_mode": "host",
    # Docker's calls wait while the whole suite loads the machine's 2 cores (a 60 s call timed out
    # in CI when the nested engine was on vfs, which copied an image's files at every create).
    "server_docker_timeout": 180,
    "server_ready_timeout": 180,
    "server_request_timeout": 60,
    "preflight_disk_free_gib": 2,
    "preflight_disk_free_gib_cached": 1,
    "preflight_meminfo_path": MEMINFO,
    "server_profile": "gb10-nvfp4-mtp-throughput",
    "server_profile_overrides": {"args": {"host": "127.0.0.1"}},
    # The shared Sparks stage no weights: their tests (pin, rollout, readiness, watchdog) are about
    # the image and the engine, and staging would cost each new shared host the Hub client's install
    # (the lab's lock, copied into each module's inventory, pins the stand-in's revision of the model
    # all the same: the engine is given it). inventories/lab's fleet stages (make site), and
    # tests/lab/test_model_cache_in_the_lab.py and tests/unit/playbooks/test_model_cache_role.py
    # test the role.
    "model_cache_enabled": False,
}


def run(args, check=True, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s"
                             % (args, result.returncode, result.stdout[-6000:], result.stderr[-3000:]))
    return result


def playbook_env(**extra):
    """The environment every playbook of these tests runs in: the repository's ansible.cfg and venv."""
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                PATH=os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ["PATH"], **extra)


def playbook(inventory, path, *extra, check=True):
    return run([os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", inventory, path, *extra],
               check=check, cwd=ROOT, env=playbook_env())


# inventories/lab's fleet as the shipped inventory's converge left it. The lab fleet's modules run
# one after another on one pytest-xdist worker (the group `lab_fleet`), and several start with the
# shipped converge the module before them ended with (its secrets or keys taken off again, or the
# demo's second run): that converge, a whole-fleet no-op of about a minute and 80 busy
# core-seconds, is left out when the module before ended with one. The mark is written after such
# a converge passed (mark_fleet_shipped), and taken away before every module of the group starts
# (tests/lab/conftest.py, pytest_runtest_setup), which records whether it was there in the
# module's FLEET_SHIPPED_AT_START: so it never reaches past the module right after the one that
# wrote it, whatever ran in between (-k, a failed teardown: no mark, the converge runs).
FLEET_SHIPPED_MARK = os.path.join(ROOT, ".lab", "state", "fleet-shipped")


def lab_fleet_hosts():
    """Every host of inventories/lab (hosts.yml)."""
    with open(os.path.join(ROOT, "inventories", "lab", "hosts.yml"), encoding="utf-8") as handle:
        groups = [yaml.safe_load(handle)["all"]]
    hosts = set()
    while groups:
        group = groups.pop() or {}
        hosts.update(group.get("hosts") or {})
        groups.extend((group.get("children") or {}).values())
    return hosts


def mark_fleet_shipped(output):
    """Called after a converge of inventories/lab passed: marks the fleet as shipped when its recap
    has every host of the fleet (no --limit) and none failed or was unreachable."""
    hosts = recap(output)
    if set(hosts) >= lab_fleet_hosts() and all(h.get("failed", 1) == 0 and h.get("unreachable", 1) == 0
                                               for h in hosts.values()):
        os.makedirs(os.path.dirname(FLEET_SHIPPED_MARK), exist_ok=True)
        with open(FLEET_SHIPPED_MARK, "w", encoding="utf-8") as handle:
            handle.write(" ".join(sorted(hosts)) + "\n")


def take_fleet_shipped_mark():
    """Whether the mark was there; it is gone afterwards."""
    try:
        os.remove(FLEET_SHIPPED_MARK)
        return True
    except FileNotFoundError:
        return False


def shipped_fleet(module, inventory):
    """inventories/lab's fleet as shipped: tests/lab/fleet.yml then site.yml from ``inventory``
    (the shipped one), unless the module before this one left it so (``FLEET_SHIPPED_AT_START``)."""
    if getattr(module, "FLEET_SHIPPED_AT_START", False):
        return None
    playbook(inventory, os.path.join(LAB, "fleet.yml"))
    return playbook(inventory, "site.yml").stdout


def recap(output):
    """{host: {ok, changed, failed, ...}} from the PLAY RECAP."""
    found = {}
    for host, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", output, re.M):
        found[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
    return found


def folded(output):
    """The output with the YAML callback's line folding undone."""
    return " ".join(output.split())


def exec_on(host, script, check=True):
    return run([DOCKER, "exec", host, "bash", "-c", script], check=check)


def container(host):
    """Id, StartedAt and image reference of the serving container on ``host``."""
    out = exec_on(host, "docker inspect -f '{{.Id}} {{.State.StartedAt}} {{.Config.Image}}' inferops-serving")
    cid, started, image = out.stdout.split()
    return {"id": cid, "started": started, "image": image}


def containers_on(host):
    """Names of all containers on ``host``, running or not."""
    return sorted(exec_on(host, "docker ps -a --format '{{.Names}}'").stdout.split())


def serving(port, timeout=60):
    """True once ``http://127.0.0.1:<port>/health`` answers 200 (within ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    return False


def lock_text(inventory):
    with open(os.path.join(inventory, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        return handle.read()


def lock(inventory):
    return yaml.safe_load(lock_text(inventory))["inferops_serving_image_lock"]["images"]


def known_bad(inventory):
    path = os.path.join(inventory, "group_vars", "all", "known_bad_images.yml")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["inferops_known_bad_images"]


def tag_digest():
    """The digest the lab registry's rolling tag (``IMAGE``) points to now."""
    return run([NIGHTLY, "digest", TAG]).stdout.strip()


def write_inventory(directory, hosts, group_vars, group="spark"):
    """An inventory in ``directory``: ``hosts`` ({name: server_port}) in the ``group`` group of
    ``serving``, reached with ``docker exec``, ``group_vars`` for ``serving``, and a copy of the
    lab's lock and apt key pin (tests/lab/lab.sh up writes both). Returns ``directory``."""
    os.makedirs(os.path.join(directory, "group_vars", "all"))
    inventory = {"all": {"children": {"serving": {
        "vars": {"ansible_connection": "community.docker.docker"},
        # Each host's node_exporter (site.yml's monitoring play) on a port of its own on the shared
        # loopback: 9111 for the Spark serving on 8111 (the lab fleet's are 9101, 9102).
        "children": {group: {"hosts": {name: {"server_port": port, "monitoring_node_exporter_port": port + 1000}
                                       for name, port in hosts.items()}}}}}}}
    with open(os.path.join(directory, "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(inventory, handle)
    with open(os.path.join(directory, "group_vars", "serving.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(group_vars, handle)
    shutil.copy(LAB_LOCK, os.path.join(directory, "group_vars", "all", "image_lock.yml"))
    shutil.copy(LAB_APT_KEY, os.path.join(directory, "group_vars", "all", "apt_signing_key.yml"))
    return directory


def reset_watchdog(host):
    """Empty the watchdog's history on ``host`` (what a new host has): stop it, drop its state file, start it."""
    exec_on(host, "systemctl stop %s && rm -f %s && systemctl start %s" % (WATCHDOG_SERVICE, WATCHDOG_STATE,
                                                                           WATCHDOG_SERVICE))


class SharedSparks:
    """The session's shared Sparks: which are built, which to remove at the session's end."""

    def __init__(self):
        self.built = []  # made and converged by a module's start
        self.made = []  # every host a module's start began to make: what the session's end removes

    def claim(self, hosts):
        """The ``hosts`` not built yet, for the caller's fleet.yml to make: an old container of
        the same name (an interrupted session's) is removed first."""
        new = [host for host in hosts if host not in self.built]
        for host in new:
            run([DOCKER, "rm", "-f", "-v", host], check=False)
            if host not in self.made:
                self.made.append(host)
        return new

    def remove(self):
        for host in self.made:
            run([DOCKER, "rm", "-f", "-v", host], check=False)


@contextlib.contextmanager
def module_fleet(shared, tmp_path_factory, name, hosts, group_vars=None, restore_tag=True):
    """A module's hold on the shared Sparks (``shared``: the ``shared_sparks`` fixture): an
    inventory of the module's own for ``hosts`` ({name: port}, a subset of ``SPARKS``) with
    ``group_vars`` (``GROUP_VARS`` when not given), fleet.yml and site.yml from it (which make
    and converge a host no module made yet, and converge back the others: see the module
    docstring); yields the inventory's path. At the end the rolling tag is moved back, unless
    ``restore_tag`` is false (a module that never moves it, whose worker runs beside one that does)."""
    unknown = sorted(host for host, port in hosts.items() if ALL_SPARKS.get(host) != port)
    assert not unknown, "not shared Sparks with their shared ports: %s (labkit.ALL_SPARKS)" % unknown
    new = shared.claim(hosts)
    original = tag_digest() if restore_tag else None
    inventory = write_inventory(str(tmp_path_factory.mktemp(name + "-inventory")), hosts,
                                GROUP_VARS if group_vars is None else group_vars)
    try:
        playbook(inventory, os.path.join(LAB, "fleet.yml"))
        playbook(inventory, "site.yml")
        shared.built.extend(new)
        for host in hosts:
            reset_watchdog(host)
        yield inventory
    finally:
        if restore_tag:
            run([NIGHTLY, "move", TAG, original], check=False)
