# SPDX-License-Identifier: GPL-3.0-or-later
"""inventories/example is the layout docs/lab-to-fleet.md describes (issue 26): group_vars/all/ a
directory with main.yml (ansible_user, the token from the vault) and a vault stub beside it, where
pin.yml writes image_lock.yml; it parses with ansible-inventory outside the repository, without
warnings; the amazon.aws.aws_ec2 example for g7e (inventories/example-aws) uses only options the
plugin has."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "inventories", "example")
AWS_EC2 = os.path.join(ROOT, "inventories", "example-aws", "g7e.aws_ec2.yml")
BIN = os.path.dirname(sys.executable)


def test_the_layout_of_the_guide():
    assert sorted(os.listdir(os.path.join(EXAMPLE, "group_vars", "all"))) == ["main.yml", "vault.yml"]
    with open(os.path.join(EXAMPLE, "group_vars", "all", "vault.yml"), encoding="utf-8") as handle:
        stub = handle.read()
    assert "ansible-vault encrypt" in stub and yaml.safe_load(stub) == {"vault_hf_token": ""}
    with open(os.path.join(ROOT, "docs", "lab-to-fleet.md"), encoding="utf-8") as handle:
        guide = handle.read()
    for path in ("group_vars/all/main.yml", "group_vars/all/vault.yml", "inventories/example-aws/g7e.aws_ec2.yml"):
        assert path in guide


def test_ansible_inventory_lists_it_outside_the_repository(tmp_path):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    result = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", EXAMPLE, "--list"], cwd=str(tmp_path),
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "WARNING" not in result.stderr, result.stderr
    listed = json.loads(result.stdout)
    assert sorted(listed["serving"]["children"]) == ["g7e", "spark"]
    g7e = listed["_meta"]["hostvars"]["g7e-01.example.internal"]
    assert g7e["ansible_user"] == "ops" and g7e["server_profile"] == "g7e-fp8-sglang"
    assert g7e["vault_hf_token"] == "" and g7e["server_hf_token"] == "{{ vault_hf_token }}"


def test_the_aws_ec2_example_uses_the_plugins_options():
    with open(AWS_EC2, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    assert config["plugin"] == "amazon.aws.aws_ec2" and config["filters"]["instance-type"] == "g7e.48xlarge"
    assert config["groups"] == {"g7e": True, "serving": True}
    doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "inventory", "--json", "amazon.aws.aws_ec2"],
                         capture_output=True, text=True, timeout=120, check=False)
    if doc.returncode != 0:
        pytest.skip("amazon.aws is not installed here: %s" % doc.stderr.strip()[:200])
    options = json.loads(doc.stdout)["amazon.aws.aws_ec2"]["doc"]["options"]
    assert set(config) - {"plugin"} <= set(options), set(config) - set(options)
