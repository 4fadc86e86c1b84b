# SPDX-License-Identifier: GPL-3.0-or-later
"""The server role's `resolve` entry point as preflight and the role itself run it in one play: one
lookup call each time, the second gets the first's plan back (same inputs: the plan carrying the
marker set after the first), a pin canary's digest overlay is planned again."""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DIGEST = "sha256:" + "ab" * 32

# A plan that resolve keeps carries the marker set after the first plan; a plan made anew does not.
PLAYBOOK = """
- name: Plan twice, then a canary
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    server_profile: gb10-nvfp4-mtp-throughput
    server_port: 8101
    server_profile_overrides: {args: {host: 127.0.0.1}}
  tasks:
    - name: Plan (as preflight does)
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - name: Mark the plan
      ansible.builtin.set_fact:
        server_deployment: "{{ server_deployment | combine({'kept': true}) }}"
        first_key: "{{ server_deployment.plan_key }}"
    - name: Plan again with the same inputs (as the server role does)
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - name: The plan was kept
      ansible.builtin.assert:
        that: [server_deployment.kept | default(false), server_deployment.plan_key == first_key]
    - name: Plan a pin canary (its digest over the profile)
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
      vars:
        server_profile_overrides: {args: {host: 127.0.0.1}, image: {digest: "%s"}}
    - name: The canary was planned anew
      ansible.builtin.assert:
        that:
          - not (server_deployment.kept | default(false))
          - server_deployment.plan_key != first_key
          - server_deployment.image.digest == "%s"
""" % (DIGEST, DIGEST)


def test_resolve_keeps_the_plan_of_the_same_inputs_and_plans_a_canary_anew(tmp_path):
    playbook = tmp_path / "plan_once.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                             str(playbook)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "failed=0" in result.stdout
    # One planning task per resolve, never a second lookup to decide whether to plan: the kept plan
    # (the marker survives, asserted in the play) comes back from the same task.
    planned = re.findall(r"TASK \[inferops\.serving\.server : Plan the deployment of profile [^\]]*\] \**\n(\w+):",
                         result.stdout)
    assert planned == ["ok", "ok", "ok"], result.stdout[-4000:]
    with open(os.path.join(ROOT, "roles", "server", "tasks", "resolve.yml"), encoding="utf-8") as handle:
        assert handle.read().count("lookup('inferops.serving.deployment'") == 1
