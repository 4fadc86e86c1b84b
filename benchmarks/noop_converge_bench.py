#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a converge that changes nothing costs on the controller, before and after, in one run.

For a baseline commit (default e531bb9, before the deployment plan) and for the working tree,
each in turn: converge the lab fleet with that version's site.yml, then converge again (the
no-op run) and measure it - tasks per host (executed = ok + changed, and skipped, from the
PLAY RECAP), the controller's CPU-seconds (user + system of ansible-playbook and its workers)
and the wall time - once for one host (-l <first host>) and once for every host of the
inventory. Prints both versions and their ratios.

    .venv/bin/python benchmarks/noop_converge_bench.py [--inventory inventories/lab] [--baseline e531bb9]

Needs the lab (tests/lab/lab.sh up) and its fleet (tests/lab/fleet.yml). More hosts: make a
larger fleet inventory (tests/lab/fleet.yml creates any host of an inventory's `serving` group,
each with its own server_port) and pass it with --inventory; forks follow ansible.cfg (-f N).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def converge(root, inventory, limit=None, forks=None):
    """Run ``root``'s site.yml once; (seconds, cpu seconds, {host: recap})."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    args = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, os.path.join(root, "site.yml")]
    if limit:
        args += ["-l", limit]
    if forks:
        args += ["-f", str(forks)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit("site.yml failed in %s:\n%s" % (root, result.stdout[-5000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recap = {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
             for host, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", result.stdout, re.M)}
    return wall, cpu, recap


def hosts_of(inventory):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    out = subprocess.run([os.path.join(BIN, "ansible"), "-i", inventory, "serving", "--list-hosts"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines()[1:] if line.strip()]


def measure(label, root, inventory, limit, forks):
    converge(root, inventory, limit, forks)  # brings the hosts to this version's deployment
    wall, cpu, recap = converge(root, inventory, limit, forks)
    hosts = [h for h in recap if h != "localhost"]
    changed = sum(recap[h]["changed"] for h in hosts)
    executed = sum(recap[h]["ok"] + recap[h]["changed"] for h in hosts) / len(hosts)
    skipped = sum(recap[h]["skipped"] for h in hosts) / len(hosts)
    print("%-9s %-6s hosts=%d  tasks/host executed=%.0f skipped=%.0f  changed=%d  controller CPU=%.1f s  wall=%.1f s"
          % (label, "1 host" if limit else "all", len(hosts), executed, skipped, changed, cpu, wall), flush=True)
    return {"executed": executed, "skipped": skipped, "cpu": cpu, "wall": wall, "changed": changed}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default=os.path.join(ROOT, "inventories", "lab"))
    parser.add_argument("--baseline", default="e531bb9", help="commit to compare with (default: before the plan)")
    parser.add_argument("--forks", type=int, default=None)
    opts = parser.parse_args()
    inventory = os.path.abspath(opts.inventory)
    hosts = hosts_of(inventory)
    base = tempfile.mkdtemp(prefix="noop-bench-")
    baseline = os.path.join(base, "baseline")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", baseline, opts.baseline], check=True,
                   capture_output=True)
    try:
        subprocess.run([os.path.join(baseline, "scripts", "link-collection")], check=True)
        results = {}
        for label, root in (("baseline", baseline), ("current", ROOT)):
            for limit in (hosts[0], None):
                results[(label, limit)] = measure(label, root, inventory, limit, opts.forks)
        print("\nno-op converge, current / baseline (%s), measured in this run:" % opts.baseline)
        for limit in (hosts[0], None):
            old, new = results[("baseline", limit)], results[("current", limit)]
            print("  %-6s tasks/host executed %.0f -> %.0f (%.2fx), skipped %.0f -> %.0f, controller CPU %.1f -> %.1f s "
                  "(%.2fx), wall %.1f -> %.1f s (%.2fx)"
                  % ("1 host" if limit else "%d hosts" % len(hosts), old["executed"], new["executed"],
                     new["executed"] / old["executed"], old["skipped"], new["skipped"], old["cpu"], new["cpu"],
                     new["cpu"] / old["cpu"], old["wall"], new["wall"], new["wall"] / old["wall"]))
        if any(r["changed"] for r in results.values()):
            print("WARNING: a no-op run changed something; the figures are not of a no-op converge")
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", baseline], check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
