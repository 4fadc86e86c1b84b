#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a converge that changes nothing costs on the controller, before and after, in one run.

For a baseline commit (default: main) and for the working tree, each in turn: converge the lab
fleet with that version's site.yml, then converge again (the no-op run) and measure it - tasks
per host (executed = ok + changed, and skipped, from the PLAY RECAP), the controller's
CPU-seconds (user + system of ansible-playbook and its workers; per host: divided by the hosts),
the wall time and the whole machine's busy core-seconds (/proc/stat: the lab's targets run their
modules on the controller's cores) - once for one host (-l <first host>) and once for every host of the
inventory. Prints both versions, their ratios, how the fleet scales (all hosts / one host) and
the targets of issue 21 (at most 25 tasks and 5 controller CPU-seconds per host; all hosts at
most 3x the wall time of one), with the least wall time the machine's cores allow the fleet's run.

    .venv/bin/python benchmarks/noop_converge_bench.py [--inventory inventories/lab] [--baseline main]
        [--hosts 10] [--forks 10] [--no-baseline] [--repeat 3]

Needs the lab (tests/lab/lab.sh up) and its fleet (tests/lab/fleet.yml); run it under the lab's
lock (flock /work/lab.lock ...). More hosts: --hosts N makes a fleet of N hosts from the
inventory (its hosts, then copies of its first host lab-bench-<i>, each with its own server_port
from --port-base and node_exporter port 1000 above it), creates the copies with
tests/lab/fleet.yml, and removes them afterwards. Or pass a larger fleet inventory of your own
with --inventory (fleet.yml creates any host of its `serving` group). Forks: -f N (default:
ansible.cfg's, or the number of hosts with --hosts). Each case runs --repeat no-op runs (default 3)
and reports the one of median controller CPU.
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

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
TASKS_PER_HOST, CPU_PER_HOST, FLEET_WALL_RATIO = 25, 5.0, 3.0


def env_for(root):
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                PATH=BIN + os.pathsep + os.environ.get("PATH", ""))


def machine_busy():
    """CPU-seconds the whole machine has been busy since boot (all cores; /proc/stat's user, nice,
    system, irq, softirq and steal), or None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    ticks = [int(value) for value in fields[1:9]]
    return (sum(ticks[0:3]) + sum(ticks[5:8])) / os.sysconf("SC_CLK_TCK")


def playbook(root, inventory, path, limit=None, forks=None):
    """Run one playbook; (seconds, controller cpu seconds, machine busy core-seconds or None, stdout,
    return code)."""
    args = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, path]
    if limit:
        args += ["-l", limit]
    if forks:
        args += ["-f", str(forks)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_before = machine_busy()
    started = time.monotonic()
    result = subprocess.run(args, cwd=root, env=env_for(root), capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    busy_after = machine_busy()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    busy = busy_after - busy_before if busy_before is not None and busy_after is not None else None
    return wall, cpu, busy, result.stdout, result.returncode


def converge(root, inventory, limit=None, forks=None):
    """Run ``root``'s site.yml once; (seconds, cpu seconds, machine busy core-seconds, {host: recap})."""
    wall, cpu, busy, out, code = playbook(root, inventory, os.path.join(root, "site.yml"), limit, forks)
    if code != 0:
        raise SystemExit("site.yml failed in %s:\n%s" % (root, out[-5000:]))
    recap = {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
             for host, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M)}
    return wall, cpu, busy, recap


def hosts_of(inventory):
    out = subprocess.run([os.path.join(BIN, "ansible"), "-i", inventory, "serving", "--list-hosts"], env=env_for(ROOT),
                         capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines()[1:] if line.strip()]


def larger_fleet(inventory, count, port_base, workdir):
    """An inventory of ``count`` hosts: ``inventory``'s hosts, then copies of its first host
    (same groups, so the same group_vars and profile; each its own server_port and node_exporter
    port). Returns (path, the names of the copies)."""
    with open(os.path.join(inventory, "hosts.yml") if os.path.isdir(inventory) else inventory,
              encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    hosts = hosts_of(inventory)
    serving = data["all"]["children"]["serving"]
    group = next(name for name, child in (serving.get("children") or {}).items()
                 if hosts[0] in ((child or {}).get("hosts") or {}))
    members = serving["children"][group].setdefault("hosts", {})
    copies = ["lab-bench-%d" % i for i in range(1, count - len(hosts) + 1)]
    for index, name in enumerate(copies):
        # node_exporter on a port of its own too (the lab's rule: server_port + 1000), or every
        # copy's would collide with the first host's on the shared loopback.
        members[name] = {"server_port": port_base + index, "monitoring_node_exporter_port": port_base + index + 1000}
    os.makedirs(workdir, exist_ok=True)
    base = inventory if os.path.isdir(inventory) else os.path.dirname(inventory)
    os.symlink(os.path.join(base, "group_vars"), os.path.join(workdir, "group_vars"))
    if os.path.isdir(os.path.join(base, "host_vars")):
        os.symlink(os.path.join(base, "host_vars"), os.path.join(workdir, "host_vars"))
    path = os.path.join(workdir, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)
    return path, copies


def measure(label, root, inventory, limit, forks, repeat=1):
    """A converge (to this version's deployment), then ``repeat`` no-op runs: the run of median
    controller CPU (a run's figures vary by 10-20% on a shared 2-core machine)."""
    converge(root, inventory, limit, forks)  # brings the hosts to this version's deployment
    runs = sorted((converge(root, inventory, limit, forks) for _attempt in range(max(1, repeat))), key=lambda run: run[1])
    wall, cpu, busy, recap = runs[len(runs) // 2]
    if len(runs) > 1:
        print("%-9s %-8s controller CPU of the %d no-op runs: %s s (the median's figures below)"
              % (label, "1 host" if limit else "all", len(runs), ", ".join("%.1f" % run[1] for run in runs)),
              flush=True)
    hosts = [h for h in recap if h != "localhost"]
    changed = sum(recap[h]["changed"] for h in hosts)
    executed = sum(recap[h]["ok"] + recap[h]["changed"] for h in hosts) / len(hosts)
    skipped = sum(recap[h]["skipped"] for h in hosts) / len(hosts)
    print("%-9s %-8s hosts=%d  tasks/host executed=%.1f skipped=%.1f  changed=%d  controller CPU=%.1f s "
          "(%.2f s/host)  wall=%.1f s  machine busy=%s core-s"
          % (label, "1 host" if limit else "all", len(hosts), executed, skipped, changed, cpu, cpu / len(hosts), wall,
             "?" if busy is None else "%.1f" % busy), flush=True)
    # The hosts differ: the `monitoring` host also runs Prometheus, the `gateway` host only the gateway.
    print("          tasks executed (skipped) by host: %s"
          % ", ".join("%s %d (%d)" % (h, recap[h]["ok"] + recap[h]["changed"], recap[h]["skipped"]) for h in recap
                      if h != "localhost"), flush=True)
    return {"hosts": len(hosts), "executed": executed, "skipped": skipped, "cpu": cpu, "cpu_host": cpu / len(hosts),
            "wall": wall, "busy": busy, "changed": changed}


def ratio(new, old):
    return new / old if old else float("nan")


def report(results, labels, baseline, hosts):
    if "baseline" in labels:
        print("\nno-op converge, current / baseline (%s), measured in this run:" % baseline)
        for limit in (hosts[0], None):
            old, new = results[("baseline", limit)], results[("current", limit)]
            print("  %-8s tasks/host executed %.1f -> %.1f (%.2fx), skipped %.1f -> %.1f, controller CPU/host "
                  "%.2f -> %.2f s (%.2fx), wall %.1f -> %.1f s (%.2fx)"
                  % ("1 host" if limit else "%d hosts" % new["hosts"], old["executed"], new["executed"],
                     ratio(new["executed"], old["executed"]), old["skipped"], new["skipped"], old["cpu_host"],
                     new["cpu_host"], ratio(new["cpu_host"], old["cpu_host"]), old["wall"], new["wall"],
                     ratio(new["wall"], old["wall"])))
    print("\n%d hosts / 1 host, measured in this run:" % results[(labels[-1], None)]["hosts"])
    for label in labels:
        one, fleet = results[(label, hosts[0])], results[(label, None)]
        print("  %-9s wall %.1f -> %.1f s (%.2fx), controller CPU %.1f -> %.1f s (%.2fx)"
              % (label, one["wall"], fleet["wall"], ratio(fleet["wall"], one["wall"]), one["cpu"], fleet["cpu"],
                 ratio(fleet["cpu"], one["cpu"])))
    one, fleet = results[("current", hosts[0])], results[("current", None)]
    floor = None
    if fleet["busy"] is not None:
        # A run that keeps every core busy cannot end sooner than its busy core-seconds / cores.
        cores = os.cpu_count() or 1
        floor = fleet["busy"] / cores
        print("  current   the %d-host run kept the machine busy %.1f core-s in %.1f s (%.1f of its %d cores): "
              "on these cores it cannot take less than %.1f s, %.2fx one host's wall"
              % (fleet["hosts"], fleet["busy"], fleet["wall"], fleet["busy"] / fleet["wall"], cores, floor,
                 ratio(floor, one["wall"])))
    checks = [("tasks executed per host <= %d" % TASKS_PER_HOST, max(one["executed"], fleet["executed"]),
               max(one["executed"], fleet["executed"]) <= TASKS_PER_HOST),
              ("controller CPU-seconds per host <= %.0f (1 host)" % CPU_PER_HOST, one["cpu_host"],
               one["cpu_host"] <= CPU_PER_HOST),
              ("controller CPU-seconds per host <= %.0f (%d hosts)" % (CPU_PER_HOST, fleet["hosts"]), fleet["cpu_host"],
               fleet["cpu_host"] <= CPU_PER_HOST),
              ("%d hosts' wall <= %.0fx one host's" % (fleet["hosts"], FLEET_WALL_RATIO), ratio(fleet["wall"], one["wall"]),
               ratio(fleet["wall"], one["wall"]) <= FLEET_WALL_RATIO)]
    print("\ntargets (current):")
    for name, value, ok in checks:
        print("  %-50s %6.2f  %s" % (name, value, "met" if ok else "NOT MET"))
    if floor is not None and ratio(floor, one["wall"]) > FLEET_WALL_RATIO:
        print("  (the wall ratio cannot be met on this machine: its cores' floor for the fleet's run is %.2fx)"
              % ratio(floor, one["wall"]))
    if any(r["changed"] for r in results.values()):
        print("WARNING: a no-op run changed something; the figures are not of a no-op converge")


def remove_containers(names):
    for name in names:
        subprocess.run(["docker", "rm", "-f", "-v", name], check=False, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default=os.path.join(ROOT, "inventories", "lab"))
    parser.add_argument("--baseline", default="main", help="commit to compare with (default: main)")
    parser.add_argument("--no-baseline", action="store_true", help="measure the working tree only")
    parser.add_argument("--hosts", type=int, default=None, help="a fleet of N hosts (copies of the first host)")
    parser.add_argument("--port-base", type=int, default=8160, help="server_port of the first copy (--hosts)")
    parser.add_argument("--forks", "-f", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="no-op runs per case, the median reported (default 3)")
    opts = parser.parse_args()
    inventory = os.path.abspath(opts.inventory)
    base = tempfile.mkdtemp(prefix="noop-bench-")
    copies = []
    baseline = os.path.join(base, "baseline")
    labels = ("current",) if opts.no_baseline else ("baseline", "current")
    try:
        if opts.hosts:
            inventory, copies = larger_fleet(inventory, opts.hosts, opts.port_base, os.path.join(base, "fleet"))
            forks = opts.forks or opts.hosts
            if copies:
                fleet_yml = os.path.join(ROOT, "tests", "lab", "fleet.yml")
                wall, _cpu, _busy, out, code = playbook(ROOT, inventory, fleet_yml, forks=forks)
                if code != 0:
                    raise SystemExit("tests/lab/fleet.yml failed:\n%s" % out[-5000:])
                print("created %d lab hosts (%s) in %.0f s" % (len(copies), ", ".join(copies), wall), flush=True)
        else:
            forks = opts.forks
        hosts = hosts_of(inventory)
        if not opts.no_baseline:
            subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", baseline, opts.baseline], check=True,
                           capture_output=True)
            subprocess.run([os.path.join(baseline, "scripts", "link-collection")], check=True)
        results = {}
        for label in labels:
            root = baseline if label == "baseline" else ROOT
            for limit in (hosts[0], None):
                results[(label, limit)] = measure(label, root, inventory, limit, forks, opts.repeat)
        report(results, labels, opts.baseline, hosts)
    finally:
        remove_containers(copies)
        if not opts.no_baseline:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", baseline], check=False,
                           capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
