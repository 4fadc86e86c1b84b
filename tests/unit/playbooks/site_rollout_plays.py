# SPDX-License-Identifier: GPL-3.0-or-later
"""Run site.yml's rollout as the playbooks have it, on this machine (local connection, no lab):
the plan play, the serving play and the summary play of playbooks/serving.yml, then a gateway and
a monitoring play, then playbooks/site.yml's last play. What stands in (test_site_rollout.py):

- the serving play's four roles (preflight, container_toolkit, model_cache, server) are replaced by
  a task that records the host's batch (``ansible_play_batch``) in a file and fails where the
  host's ``converge_fails`` says, as a converge that broke would (the rest of the play, its hold,
  its reach and its rescue, runs as it is);
- the plan play's read of each host's container (the server role's ``rollout`` entry point: its
  plan, then deployment_state on the host's Docker) is replaced by the role's ``resolve`` entry
  point and a read of a running container of an older plan (the host changes), or of its own plan
  for a host whose ``unchanged`` is true, registered as the entry point registers it;
- the gateway's and monitoring's plays (playbooks/gateway.yml, playbooks/monitoring.yml) are
  replaced by a task on their groups' hosts that records it ran.

The plan play is otherwise the real one: the server role's resolve entry point plans each host from
the shipped profiles on the controller.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "inferops_become": False}
ROLE_IMPORT = "ansible.builtin.import_role"


def _plays(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _stand_in_roles(play, record_dir):
    """The serving play with its roles replaced by one recording (and maybe failing) task."""
    for task in play["tasks"]:
        if "block" not in task:
            continue
        kept = [entry for entry in task["block"] if ROLE_IMPORT not in entry]
        kept.append({"name": "Stand in for the roles: record the batch", "ansible.builtin.copy": {
            "content": "{{ {'batch': ansible_play_batch, 'facts': ansible_facts.distribution is defined} | to_json }}",
            "dest": "%s/{{ inventory_hostname }}.json" % record_dir, "mode": "0644"},
            "delegate_to": "localhost"})
        kept.append({"name": "Stand in for a converge that broke", "ansible.builtin.fail": {
            "msg": "{{ inventory_hostname }}: the engine answered 5 to 2+2"},
            "when": "converge_fails | default(false)"})
        task["block"] = kept
    return play


# The container read of the server role's rollout entry point (deployment_state on the host's
# Docker, registered as server_rollout_read): a running container of an older plan, or, for a host
# whose ``unchanged`` is true, the container of its plan.
READ = {"exists": True, "container": {"State": {"Running": True}, "Config": {
    "Image": "{{ server_deployment.spec.image }}",
    "Labels": "{{ {server_deployment.spec_label: server_deployment.spec_sha256 if unchanged | default(false) "
              "else 'older'} }}"}}}


def _stand_in_read(play):
    """The plan play with the server role's rollout entry point replaced by its resolve entry point
    and READ (registered under the entry point's name)."""
    replaced = 0
    for task in play["tasks"]:
        for index, entry in enumerate(task.get("block") or []):
            include = entry.get("ansible.builtin.include_role") or {}
            if include.get("tasks_from") == "rollout":
                include["tasks_from"] = "resolve"
                task["block"].insert(index + 1, {"name": "Stand in for the container read", "ansible.builtin.set_fact": {
                    "server_rollout_read": READ}, "tags": ["always"]})
                replaced += 1
                break
    assert replaced == 1, "the plan play no longer includes the server role's rollout entry point"
    return play


def run_site(tmp_path, children, *args, alone=False):
    """The rollout over ``children`` (group: {hosts: {...}}); returns (result, {host: batch}, ran)
    where ``ran`` is {play: [hosts]} for the stand-in gateway and monitoring plays. ``alone``:
    playbooks/serving.yml's plays only, as ``ansible-playbook playbooks/serving.yml`` runs them."""
    record = tmp_path / "batches"
    record.mkdir(exist_ok=True)
    ran = tmp_path / "ran"
    ran.mkdir(exist_ok=True)
    serving = _plays("playbooks/serving.yml")
    by_name = {play["name"]: play for play in serving}
    site = _plays("playbooks/site.yml")
    imported = next(entry for entry in site if entry.get("ansible.builtin.import_playbook") == "serving.yml")
    plays = [_stand_in_read(by_name["Plan the rollout of the serving fleet"]),
             _stand_in_roles(by_name["Serve the tuned profiles"], record),
             by_name["Summarise the fleet"],
             by_name["Fail the run when a serving host failed (this playbook alone)"]]
    for play in plays:
        play["vars"] = dict(play.get("vars") or {}, **({} if alone else imported.get("vars") or {}))
    for name, hosts in () if alone else (("gateway", "gateway"), ("monitoring", "monitoring")):
        plays.append({"name": "Stand in for the %s play" % name, "hosts": hosts, "gather_facts": False, "tasks": [
            {"name": "Record that the play ran", "ansible.builtin.copy": {
                "content": "ran", "dest": "%s/%s-{{ inventory_hostname }}" % (ran, name), "mode": "0644"},
             "delegate_to": "localhost"}]})
    if not alone:
        plays.append(next(entry for entry in site if entry.get("name") == "Fail the run when a serving host failed"))
    (tmp_path / "site.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    inventory = {"all": {"vars": LOCAL, "children": children}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             str(tmp_path / "site.yml"), "-i", str(tmp_path / "hosts.yml")] + list(args),
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    batches = {name[:-5]: json.loads((record / name).read_text()) for name in os.listdir(record)}
    done = {}
    for name in os.listdir(ran):
        play, host = name.split("-", 1)
        done.setdefault(play, []).append(host)
    return result, batches, {play: sorted(hosts) for play, hosts in done.items()}
