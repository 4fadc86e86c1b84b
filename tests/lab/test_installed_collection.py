# SPDX-License-Identifier: GPL-3.0-or-later
"""The installed collection is the whole product, on the lab fleet: the tarball built from this
tree (``ansible-galaxy collection build``), installed offline into an empty collections path, and
``ansible-playbook -i inventories/lab inferops.serving.site`` run from outside the repository with
a controller's own ansible.cfg (not the repository's, which links the working tree) converges the
fleet as the repository's site.yml does: the serving hosts, then the gateway, which puts a host an
interrupted run left out of routing back in it, then monitoring. From the fleet as shipped the
serving hosts change nothing: the installed copy plans exactly what the working tree planned.

Uses the lab fleet of ``inventories/lab`` (the ``lab_fleet`` group: one worker, modules one after
another), like test_plan_in_the_lab.py; ends with the fleet as shipped (mark_fleet_shipped).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

import labkit

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

SHIPPED = os.path.join(labkit.ROOT, "inventories", "lab")
BIN = os.path.join(labkit.ROOT, ".venv", "bin")
ENGINES = ("lab-spark", "lab-spark-2", "lab-g7e")
DRAINED = "/var/lib/inferops-gateway/drained.json"
# What docs/lab-to-fleet.md says to copy from the repository's ansible.cfg into a controller's own;
# no collections_path (ANSIBLE_COLLECTIONS_PATH names the installed copy alone).
CONTROLLER_CFG = """[defaults]
callbacks_enabled = inferops.serving.gc_freeze
interpreter_python = auto_silent
retry_files_enabled = false

[connection]
pipelining = true
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The collection built from this tree and installed into an empty collections path; the
    environment and directory a controller runs it from."""
    where = tmp_path_factory.mktemp("installed")
    config = where / "ansible.cfg"
    config.write_text(CONTROLLER_CFG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(where / "collections"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ["PATH"])
    labkit.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(where / "dist"),
                labkit.ROOT], cwd=where, env=env)
    (tarball,) = (where / "dist").iterdir()
    labkit.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "-p",
                str(where / "collections"), str(tarball)], cwd=where, env=env)
    listed = labkit.run([os.path.join(BIN, "ansible-galaxy"), "collection", "list", "inferops.serving",
                         "--format", "json"], cwd=where, env=env).stdout
    # The one inferops.serving ansible sees is the installed copy (no working tree link).
    assert list(json.loads(listed)) == [str(where / "collections" / "ansible_collections")], listed
    return {"dir": where, "env": env}


def test_the_installed_site_converges_the_fleet_and_puts_a_drained_host_back(installed, request):
    labkit.shipped_fleet(request.module, SHIPPED)
    # lab-g7e left out of the gateway's routing, as by a run interrupted between its drain and its proof.
    labkit.exec_on("lab-gateway", "printf '%%s' '%s' > %s" % (json.dumps(
        {"hosts": {"lab-g7e": {"by": "an interrupted run", "since": "2026-12-04T00:00:00Z"}}}), DRAINED))
    result = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", SHIPPED, "inferops.serving.site"],
                            cwd=installed["dir"], env=installed["env"], capture_output=True, text=True, timeout=1800,
                            check=False)
    out = result.stdout
    assert result.returncode == 0, (out + result.stderr)[-8000:]
    for play in ("Serve the tuned profiles", "Summarise the fleet", "Run the gateway in front of the serving fleet",
                 "Summarise the gateway", "Run Prometheus and Alertmanager"):
        assert "PLAY [%s]" % play in out, play
    recap = labkit.recap(out)
    assert set(recap) >= labkit.lab_fleet_hosts(), recap
    assert all(host["failed"] == 0 and host["unreachable"] == 0 for host in recap.values()), recap
    # The installed copy plans what the working tree planned: nothing on a serving host changes.
    assert all(recap[host]["changed"] == 0 for host in ENGINES), recap
    # The gateway's play put lab-g7e back.
    assert json.loads(labkit.exec_on("lab-gateway", "cat " + DRAINED).stdout)["hosts"] == {}
    assert "routes to 3 of 3 hosts" in labkit.folded(out), out[-4000:]
    labkit.mark_fleet_shipped(out)
