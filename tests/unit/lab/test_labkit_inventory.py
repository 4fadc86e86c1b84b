# SPDX-License-Identifier: GPL-3.0-or-later
"""labkit.write_inventory (tests/lab/labkit.py), the one writer of the lab tests' inventories (the
shared Sparks' modules and tests/lab/test_benchmark.py): read back by ansible-inventory, no Docker.

The lab's lock and apt key pin, which tests/lab/lab.sh up writes into inventories/lab, are stood in
for by two small files of the same shape written here (the writer only copies them)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

LAB_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab")
_SPEC = importlib.util.spec_from_file_location("labkit", os.path.join(LAB_DIR, "labkit.py"))
labkit = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(labkit)

ANSIBLE_INVENTORY = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
# Stand-ins for inventories/lab/group_vars/all/{image_lock,apt_signing_key}.yml (lab.sh up writes them).
LOCK = "---\ninferops_serving_image_lock:\n  images: {}\n"
APT_KEY = "---\ncontainer_toolkit_repository_key_fingerprints:\n  - 224F9B8172267E93E13EE54ABF32F1093423F73D\n"


@pytest.fixture
def lab_files(tmp_path, monkeypatch):
    lab = tmp_path / "lab-group-vars"
    lab.mkdir()
    (lab / "image_lock.yml").write_text(LOCK, encoding="utf-8")
    (lab / "apt_signing_key.yml").write_text(APT_KEY, encoding="utf-8")
    monkeypatch.setattr(labkit, "LAB_LOCK", str(lab / "image_lock.yml"))
    monkeypatch.setattr(labkit, "LAB_APT_KEY", str(lab / "apt_signing_key.yml"))


def ansible_inventory(directory):
    listed = subprocess.run([ANSIBLE_INVENTORY, "-i", directory, "--list"], capture_output=True, text=True,
                            check=True, env=dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="true"))
    return json.loads(listed.stdout)


@pytest.mark.parametrize("group, extra", [("spark", {}), ("g7e", {"group": "g7e"})])
def test_each_host_gets_its_ports_the_groups_and_the_lab_files(tmp_path, lab_files, group, extra):
    group_vars = dict(labkit.GROUP_VARS, server_profile="g7e-fp8-sglang") if group == "g7e" else labkit.GROUP_VARS
    directory = str(tmp_path / "inventory")
    assert labkit.write_inventory(directory, {"host-a": 8151, "host-b": 8152}, group_vars, **extra) == directory

    listed = ansible_inventory(directory)
    assert sorted(listed["serving"]["children"]) == [group]
    assert sorted(listed[group]["hosts"]) == ["host-a", "host-b"]
    host = listed["_meta"]["hostvars"]["host-b"]
    assert host["server_port"] == 8152 and host["monitoring_node_exporter_port"] == 9152
    assert host["ansible_connection"] == "community.docker.docker"
    assert {key: host[key] for key in group_vars} == group_vars
    assert host["inferops_serving_image_lock"] == {"images": {}}
    assert host["container_toolkit_repository_key_fingerprints"] == ["224F9B8172267E93E13EE54ABF32F1093423F73D"]
    with open(os.path.join(directory, "group_vars", "all", "image_lock.yml"), encoding="utf-8") as handle:
        assert handle.read() == LOCK  # a copy: pin.yml in a test writes this one, never the lab's
