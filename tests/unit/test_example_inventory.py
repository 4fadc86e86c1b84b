# SPDX-License-Identifier: GPL-3.0-or-later
"""inventories/example is the layout docs/lab-to-fleet.md describes: hosts.yml with serving (spark,
g7e), gateway and monitoring; group_vars/all/ a directory with main.yml (ansible_user, the serving
hosts' roles), pin.yml, benchmark.yml and a vault stub beside them, where pin.yml writes
image_lock.yml; group_vars/gateway.yml and monitoring.yml. Every option of every role's argument
spec is in it (scripts/example-inventory writes it; --check passes), each value it sets passes its
option's spec; it parses with ansible-inventory outside the repository, without warnings; the
amazon.aws.aws_ec2 example for g7e (inventories/example-aws) uses only options the plugin has."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "inventories", "example")
AWS_EC2 = os.path.join(ROOT, "inventories", "example-aws", "g7e.aws_ec2.yml")
BIN = os.path.dirname(sys.executable)
# The internal routing role's options are the parameters its includes pass, not inventory variables.
NOT_INVENTORY_VARIABLES = {"routing"}
GROUP_VARS = ["all/benchmark.yml", "all/main.yml", "all/pin.yml", "all/vault.yml", "g7e.yml", "gateway.yml",
              "monitoring.yml", "spark.yml"]


def spec_options():
    """(role, name) -> option, over every entry point of every role."""
    options = {}
    for spec_file in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        role = spec_file.split(os.sep)[-3]
        with open(spec_file, encoding="utf-8") as handle:
            for spec in yaml.safe_load(handle)["argument_specs"].values():
                for name, option in (spec.get("options") or {}).items():
                    options.setdefault((role, name), option)
    return options


def example_texts():
    texts = {}
    for path in GROUP_VARS:
        with open(os.path.join(EXAMPLE, "group_vars", path), encoding="utf-8") as handle:
            texts[path] = handle.read()
    return texts


def missing(names, texts):
    """The names that are neither set (`name:`) nor shown commented out (`# name:`) in any file."""
    found = set()
    for text in texts.values():
        found.update(re.findall(r"^(?:# )?([a-z][a-z0-9_]*):", text, re.M))
    return sorted(set(names) - found)


def test_the_layout_of_the_guide():
    assert sorted(os.listdir(os.path.join(EXAMPLE, "group_vars", "all"))) == \
        ["benchmark.yml", "main.yml", "pin.yml", "vault.yml"]
    assert sorted(os.listdir(os.path.join(EXAMPLE, "group_vars"))) == \
        ["all", "g7e.yml", "gateway.yml", "monitoring.yml", "spark.yml"]
    with open(os.path.join(EXAMPLE, "group_vars", "all", "vault.yml"), encoding="utf-8") as handle:
        stub = handle.read()
    assert "ansible-vault encrypt" in stub
    assert yaml.safe_load(stub) == {"vault_hf_token": "", "vault_gateway_master_key": ""}
    with open(os.path.join(ROOT, "docs", "lab-to-fleet.md"), encoding="utf-8") as handle:
        guide = handle.read()
    for path in ("group_vars/all/main.yml", "group_vars/all/vault.yml", "group_vars/all/pin.yml",
                 "group_vars/all/benchmark.yml", "group_vars/gateway.yml", "group_vars/monitoring.yml",
                 "inventories/example-aws/g7e.aws_ec2.yml", "scripts/example-inventory"):
        assert path in guide, path


def test_the_script_wrote_the_example():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "example-inventory"), "--check"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_every_option_of_every_role_is_in_the_example():
    names = [name for (role, name) in spec_options() if role not in NOT_INVENTORY_VARIABLES]
    assert len(names) > 150
    assert missing(names, example_texts()) == []


def test_a_missing_option_is_found():
    texts = example_texts()
    texts["all/main.yml"] = texts["all/main.yml"].replace("# server_port: 8000\n", "")
    texts["g7e.yml"] = texts["g7e.yml"].replace("server_port: 8000\n", "")
    assert missing(["server_port", "server_profile"], texts) == ["server_port"]


def test_the_values_it_sets_pass_their_specs():
    options = {name: option for (role, name), option in spec_options().items()}
    checked = 0
    for path, text in example_texts().items():
        for name, value in (yaml.safe_load(text) or {}).items():
            if name not in options:
                assert name.startswith(("ansible_", "vault_")), "%s in %s is no role's option" % (name, path)
                continue
            spec = {name: {key: option for key, option in options[name].items()
                           if key in ("type", "elements", "choices", "options", "required", "no_log")}}
            result = ArgumentSpecValidator(spec).validate({name: value})
            assert not result.error_messages, (path, name, result.error_messages)
            if name == "server_profile":
                assert os.path.exists(os.path.join(ROOT, "profiles", value + ".yml")), (path, value)
            checked += 1
    assert checked >= 6


def test_ansible_inventory_lists_it_outside_the_repository(tmp_path):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    result = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", EXAMPLE, "--list"], cwd=str(tmp_path),
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "WARNING" not in result.stderr, result.stderr
    listed = json.loads(result.stdout)
    assert sorted(listed["serving"]["children"]) == ["g7e", "spark"]
    assert listed["gateway"]["hosts"] == ["gw-01.example.internal"]
    assert listed["monitoring"]["hosts"] == ["monitor-01.example.internal"]
    hostvars = listed["_meta"]["hostvars"]
    g7e = hostvars["g7e-01.example.internal"]
    assert g7e["ansible_user"] == "ops" and g7e["server_profile"] == "g7e-fp8-sglang" and g7e["server_port"] == 8000
    assert g7e["vault_hf_token"] == "" and g7e["server_hf_token"] == "{{ vault_hf_token }}"
    assert "gateway_master_key" not in g7e
    assert hostvars["gw-01.example.internal"]["gateway_master_key"] == "{{ vault_gateway_master_key }}"
    assert hostvars["spark-01.example.internal"]["server_profile"] == "gb10-nvfp4-mtp-throughput"


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
