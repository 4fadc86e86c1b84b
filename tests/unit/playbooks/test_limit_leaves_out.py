# SPDX-License-Identifier: GPL-3.0-or-later
"""A host is added with one site.yml run without -l; a run whose -l names a serving host but not
the gateway or the monitoring host skips their plays, and says so (playbooks/gateway.yml and
playbooks/monitoring.yml): the host would serve without being routed or scraped. The serving hosts
are SSH hosts on a loopback port nothing listens on: the plans are made on the controller, the
warnings come before any connection."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INVENTORY = """
all:
  children:
    serving:
      hosts:
        spark-01: {ansible_host: 127.0.0.1, ansible_port: 1, server_profile: gb10-nvfp4-mtp-latency, server_port: 8101}
        spark-02: {ansible_host: 127.0.0.1, ansible_port: 1, server_profile: gb10-nvfp4-mtp-latency, server_port: 8103}
    gateway:
      hosts:
        gw-01: {ansible_host: 127.0.0.1, ansible_port: 1}
    monitoring:
      hosts:
        mon-01: {ansible_host: 127.0.0.1, ansible_port: 1}
"""


def run(tmp_path, playbook, *args):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), playbook, "-i",
                             str(tmp_path / "hosts.yml"), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=180, check=False)
    # ansible-core's YAML callback doubles the quotes inside a single-quoted message.
    return " ".join((result.stdout + result.stderr).split()).replace("''", "'")


@pytest.mark.parametrize("playbook, message", [
    ("playbooks/gateway.yml", "WARNING: this run's -l leaves out the gateway (gw-01): it keeps routing as before, and "
                              "a serving host new to it is not routed. Run site.yml (or playbooks/gateway.yml) without -l."),
    ("playbooks/monitoring.yml", "WARNING: this run's -l leaves out the monitoring host (mon-01): Prometheus keeps its "
                                 "targets, and a serving host new to it is not scraped. Run site.yml (or "
                                 "playbooks/monitoring.yml) without -l."),
])
def test_a_limit_without_the_gateway_or_the_monitoring_host_says_so(tmp_path, playbook, message):
    out = run(tmp_path, playbook, "-l", "spark-02")
    assert message in out, out[-3000:]


@pytest.mark.parametrize("playbook", ["playbooks/gateway.yml", "playbooks/monitoring.yml"])
def test_a_limit_that_includes_them_or_no_limit_says_nothing(tmp_path, playbook):
    for args in (("-l", "spark-02,gw-01,mon-01"), ()):
        out = run(tmp_path, playbook, *args)
        assert "WARNING: this run's -l" not in out, out[-3000:]
