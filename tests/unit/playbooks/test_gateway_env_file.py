# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's env file (the master key and the engines' keys) is written 0600, owned by root,
under no_log: the gateway role run in check mode on this machine (its configuration step, the
plan before it), every task's templated arguments recorded (role_runs.py): the task that writes the env file
(ansible.builtin.copy's dest, or an entry of a module writing several files) asks for it. Check mode because
the step also creates the proxy's system user and its systemd unit: a test must not; the
arguments are what the real run would be given."""
from __future__ import annotations

import json

from role_runs import LOCAL, run

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d

MASTER = "sk-unit-gateway-master-0123456789"
ENGINE_KEY = "sk-unit-engine-key-0123456789"


def entries(args, path):
    """The mappings of a task's arguments that write ``path`` (its dest, or an entry of a list of
    files such as inferops.serving.host_files' ``files``), wherever they are nested."""
    if isinstance(args, dict):
        if path in (args.get("dest"), args.get("path")):
            yield args
        for value in args.values():
            yield from entries(value, path)
    elif isinstance(args, list):
        for value in args:
            yield from entries(value, path)


def test_the_env_file_is_written_0600_root_and_hidden(tmp_path):
    config_dir, state_dir = tmp_path / "etc", tmp_path / "state"
    plan = d.plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101, "network_mode": "host",
                                             "secret_env": ["VLLM_API_KEY"]})
    inventory = {"all": {"children": {
        "serving": {"hosts": {"spark-1": dict(LOCAL, server_deployment=json.loads(json.dumps(plan)),
                                              server_secrets={"VLLM_API_KEY": ENGINE_KEY})}},
        "gateway": {"hosts": {"gw-01": dict(LOCAL, gateway_config_dir=str(config_dir), gateway_state_dir=str(state_dir),
                                            gateway_master_key=MASTER)}}}}}
    plays = [{"name": "Gateway", "hosts": "gateway", "gather_facts": False,
              "roles": [{"role": "inferops.serving.gateway"}]}]
    result = run(tmp_path, inventory, plays, "--check", "--tags", "gateway_configure")
    assert result.code == 0, result.output[-4000:]
    env_file = str(config_dir / "gateway.env")
    writes = [(record, entry) for record in result.records for entry in entries(record["args"], env_file)]
    assert len(writes) == 1, [record["args"] for record in result.records if record["action"] != "ansible.builtin.debug"]
    record, entry = writes[0]
    assert entry.get("mode") in ("0600", "600", 0o600), entry.get("mode")
    assert entry.get("owner") == "root" and record["no_log"]
    # The keys went into the file's content, never into the output.
    assert MASTER in json.dumps(entry) and ENGINE_KEY in json.dumps(entry)
    assert MASTER not in result.output and ENGINE_KEY not in result.output
    assert not config_dir.exists()  # check mode wrote nothing


def pem_pair():
    """A self-signed certificate and its key, PEM text (cryptography)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gw-01")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode())


CERT, KEY = pem_pair()
OTHER_KEY = pem_pair()[1]


def tls_inventory(tmp_path, **gateway_vars):
    plan = d.plan("gb10-nvfp4-mtp-latency", {"name": "inferops-serving", "port": 8101, "network_mode": "host"})
    return {"all": {"children": {
        "serving": {"hosts": {"spark-1": dict(LOCAL, server_deployment=json.loads(json.dumps(plan)))}},
        "gateway": {"hosts": {"gw-01": dict(LOCAL, gateway_config_dir=str(tmp_path / "etc"),
                                            gateway_state_dir=str(tmp_path / "state"), gateway_master_key=MASTER,
                                            **gateway_vars)}}}}}


PLAYS = [{"name": "Gateway", "hosts": "gateway", "gather_facts": False, "roles": [{"role": "inferops.serving.gateway"}]}]


def test_the_tls_key_is_written_0640_to_the_proxys_group_and_hidden(tmp_path):
    result = run(tmp_path, tls_inventory(tmp_path, gateway_tls_certificate=CERT, gateway_tls_key=KEY), PLAYS,
                 "--check", "--tags", "gateway_configure")
    assert result.code == 0, result.output[-4000:]
    key_file = str(tmp_path / "etc" / "tls" / "key.pem")
    writes = [(record, entry) for record in result.records for entry in entries(record["args"], key_file)]
    assert len(writes) == 1
    record, entry = writes[0]
    assert entry.get("mode") == "0640" and entry.get("owner") == "root" and entry.get("group") == "inferops-gateway"
    assert record["no_log"]
    body = KEY.strip().splitlines()[1]
    assert body in json.dumps(entry) and body not in result.output
    unit = [r for r in result.records if str(r["args"].get("dest", "")).endswith("inferops-gateway.service")]
    assert unit, "the unit is written"


def test_a_key_that_is_not_the_certificates_is_refused_before_anything_changes(tmp_path):
    result = run(tmp_path, tls_inventory(tmp_path, gateway_tls_certificate=CERT, gateway_tls_key=OTHER_KEY), PLAYS,
                 "--check", "--tags", "gateway_configure")
    assert result.code != 0
    assert "gateway_tls_key does not match gateway_tls_certificate" in result.output
    assert OTHER_KEY.strip().splitlines()[1] not in result.output
    assert not [r for r in result.records if r["action"] in ("ansible.builtin.copy", "ansible.builtin.file",
                                                             "ansible.builtin.template", "ansible.builtin.user")]
