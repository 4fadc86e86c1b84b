# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one summary play of a playbook, as the playbook has it, after a play standing in for what
the roles record (test_site_summary.py, test_gateway_summary.py): on this machine, no lab."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Every host is this machine.
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def run_play(tmp_path, playbook, play, stand_in, children, task, *args):
    """``stand_in`` then the play named ``play`` of playbooks/``playbook``, over an inventory of
    ``children`` (group: hosts); returns the run and the list ``task`` printed as its msg (None
    when it printed none)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": LOCAL, "children": children}}, sort_keys=False))
    with open(os.path.join(ROOT, "playbooks", playbook), encoding="utf-8") as handle:
        plays = [entry for entry in yaml.safe_load(handle) if entry["name"] == play]
    written = tmp_path / ("summary-" + playbook)
    written.write_text(yaml.safe_dump([stand_in] + plays, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(written),
                             "-i", str(inventory)] + list(args), cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    marker = "TASK [%s]" % task
    printed = result.stdout[result.stdout.index(marker):] if marker in result.stdout else ""
    match = re.search(r'"msg": (\[.*?\n    \])', printed, re.S)
    return result, (json.loads(match.group(1)) if match else None)
