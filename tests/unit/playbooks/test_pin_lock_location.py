# SPDX-License-Identifier: GPL-3.0-or-later
"""Where pin.yml writes the lock when the fleet has two inventory sources (docs/lab-to-fleet.md: the
fleet's static directory, then inventories/example-aws/g7e.aws_ec2.yml for the g7e hosts).

Ansible reads group_vars/all/ beside every inventory source, and a later source's
inferops_serving_image_lock replaces an earlier one's for every host. The pin role once wrote the
lock beside the source that defined each canary (its inventory_dir): the g7e canary's lock beside
the aws_ec2 file shadowed the Spark canary's, and the Spark pins vanished for every host. Here each
hardware group's canary writes its pin through the pin role's lock task (as tests/unit/playbooks/
test_pin_refusals.py runs it), and ansible-inventory over both sources shows every pin on every host.

- ``test_two_static_sources_keep_every_pin``: the second source is a static hosts.yml in another
  directory (always runs);
- ``test_a_static_and_an_aws_ec2_source_keep_every_pin``: the second source is the guide's real
  amazon.aws.aws_ec2 configuration, pointed at moto's EC2 server on loopback (its ``endpoint_url``
  option); it needs boto3 and moto (requirements-dev.txt) and amazon.aws, and is skipped without them.

Test double: community.docker's docker_image_pull, a module of the same name in a collection placed
before the real one on the collections path; it takes the real module's options and answers as the
real one does after a pull, with the image's RepoDigests (a digest made from the image's name).
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys

import pytest
import yaml
from role_runs import collections_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.dirname(sys.executable)
AWS_EC2 = os.path.join(ROOT, "inventories", "example-aws", "g7e.aws_ec2.yml")
SPARK_IMAGE, G7E_IMAGE = "vllm/vllm-openai:cu130-nightly", "lmsysorg/sglang:v0.5.13-cu130"

PULL = '''#!/usr/bin/python
# Stands for community.docker.docker_image_pull: its options, and the image's RepoDigests after a pull.
import hashlib
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec=dict(name=dict(type="str", required=True), tag=dict(type="str", default="latest"),
                                          pull=dict(type="str"), docker_host=dict(type="str"),
                                          platform=dict(type="str")), supports_check_mode=True)
repository = module.params["name"].rsplit(":", 1)[0]
module.exit_json(changed=False, actions=[], image={
    "Id": "sha256:" + "1d" * 32, "Os": "linux", "Architecture": "amd64",
    "RepoDigests": ["%s@sha256:%s" % (repository, hashlib.sha256(repository.encode()).hexdigest())]})
'''

LOCK_PLAY = """
- name: Each hardware group's canary pins its image (the pin role's lock task; main runs it for 'lock')
  hosts: serving
  gather_facts: false
  tasks:
    - name: Plan the deployment
      ansible.builtin.include_role: {name: inferops.serving.server, tasks_from: resolve}
    - name: Decide what to do with the tag's new digest
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: digest}
    - name: Write the lock
      ansible.builtin.include_role: {name: inferops.serving.pin, tasks_from: lock}
"""


def digest(image):
    repository = image.rsplit(":", 1)[0]
    return "sha256:" + hashlib.sha256(repository.encode()).hexdigest()


def fleet(tmp_path):
    """The fleet's static inventory: spark-1 in spark, the g7e group (its hosts come from the other
    source) with its profile; every host reached locally."""
    inv = tmp_path / "fleet"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"serving": {"children": {
        "spark": {"hosts": {"spark-1": None}}, "g7e": {}}}}}}))
    (inv / "group_vars" / "all" / "main.yml").write_text(yaml.safe_dump({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "inferops_become": False}))
    (inv / "group_vars" / "spark.yml").write_text(yaml.safe_dump({"server_profile": "gb10-nvfp4-mtp-latency"}))
    (inv / "group_vars" / "g7e.yml").write_text(yaml.safe_dump({"server_profile": "g7e-fp8-sglang-eagle"}))
    return inv


def environment(tmp_path, **extra):
    modules = tmp_path / "collections" / "ansible_collections" / "community" / "docker" / "plugins" / "modules"
    modules.mkdir(parents=True, exist_ok=True)
    (modules / "docker_image_pull.py").write_text(PULL)
    (modules / "docker_image_pull.py").chmod(0o755 | stat.S_IXUSR)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_COLLECTIONS_PATH=collections_path(tmp_path / "collections"))
    env.update(extra)
    return env


def pin_and_list(tmp_path, sources, env):
    """Run the lock task on every canary with ``sources`` as -i (in that order); then what
    ansible-inventory over the same sources gives each host as its lock's images."""
    play = tmp_path / "lock.yml"
    play.write_text(LOCK_PLAY)
    inventory = [arg for source in sources for arg in ("-i", str(source))]
    result = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(play), *inventory], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    listed = subprocess.run([os.path.join(BIN, "ansible-inventory"), "--list", *inventory], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr[-3000:]
    hostvars = json.loads(listed.stdout)["_meta"]["hostvars"]
    return result.stdout, {host: {image: entry["digest"] for image, entry in
                                  ((variables.get("inferops_serving_image_lock") or {}).get("images") or {}).items()}
                           for host, variables in hostvars.items()}


def lock_files(tmp_path):
    return sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("image_lock.yml"))


EVERY_PIN = {SPARK_IMAGE: digest(SPARK_IMAGE), G7E_IMAGE: digest(G7E_IMAGE)}


def test_two_static_sources_keep_every_pin(tmp_path):
    inv = fleet(tmp_path)
    cloud = tmp_path / "cloud"
    cloud.mkdir()
    (cloud / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "g7e": {"hosts": {"g7e-1": None}}, "serving": {"children": {"g7e": {}}}}}}))
    output, pins = pin_and_list(tmp_path, [inv, cloud / "hosts.yml"], environment(tmp_path))
    assert "changed: [spark-1 -> localhost]" in output and "changed: [g7e-1 -> localhost]" in output, output[-3000:]
    assert pins == {"spark-1": EVERY_PIN, "g7e-1": EVERY_PIN}
    # One lock, beside the first source; none beside the source that defined g7e-1.
    assert lock_files(tmp_path) == ["fleet/group_vars/all/image_lock.yml"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def ec2():
    """moto's EC2 API server on loopback (the real botocore wire protocol), with the guide's g7e
    instance (running, tagged for the fleet) and one of another fleet; yields its endpoint."""
    moto_server = pytest.importorskip("moto.server", reason="moto (requirements-dev.txt) is not installed here")
    boto3 = pytest.importorskip("boto3", reason="boto3 (requirements-dev.txt) is not installed here")
    doc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "inventory", "--json", "amazon.aws.aws_ec2"],
                         capture_output=True, text=True, timeout=120, check=False)
    if doc.returncode != 0:
        pytest.skip("amazon.aws is not installed here: %s" % doc.stderr.strip()[:200])
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = "http://127.0.0.1:%d" % port
    try:
        client = boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint,
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        for name, fleet_tag in (("g7e-1", "prod"), ("g7e-staging", "staging")):
            client.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g7e.48xlarge",
                                 TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                     {"Key": "Name", "Value": name}, {"Key": "inferops-fleet", "Value": fleet_tag}]}])
        yield endpoint
    finally:
        server.stop()


def test_a_static_and_an_aws_ec2_source_keep_every_pin(tmp_path, ec2):
    inv = fleet(tmp_path)
    cloud = tmp_path / "example-aws"
    cloud.mkdir()
    with open(AWS_EC2, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    config["endpoint_url"] = ec2  # the plugin's own option (aws_endpoint_url), as for any AWS-compatible API
    (cloud / "g7e.aws_ec2.yml").write_text(yaml.safe_dump(config))
    env = environment(tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    env.pop("AWS_PROFILE", None)
    output, pins = pin_and_list(tmp_path, [inv, cloud / "g7e.aws_ec2.yml"], env)
    assert "changed: [g7e-1 -> localhost]" in output, output[-3000:]
    # The instance tagged for another fleet is not in the inventory; every host has every pin.
    assert pins == {"spark-1": EVERY_PIN, "g7e-1": EVERY_PIN}
    assert lock_files(tmp_path) == ["fleet/group_vars/all/image_lock.yml"]
