# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway's TLS and its systemd unit (plugins/plugin_utils/_gateway.py): a certificate and key
checked before anything changes (both or neither, the key the certificate's; named, never shown),
https everywhere the gateway's URL is built, the role's own reads pinning the certificate
(plugins/module_utils/_bounded_http.py, against a real TLS server on loopback), and the real unit
template rendered from the plan and read back by the installed systemd (systemd-analyze verify
and security --offline: at most 3.0; skipped where systemd-analyze is missing)."""
from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import os
import re
import shutil
import ssl
import subprocess
import threading

import jinja2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.inferops.serving.plugins.module_utils._bounded_http import CertificateMismatch, bounded_request
from ansible_collections.inferops.serving.plugins.plugin_utils import _gateway as g
from ansible_collections.inferops.serving.plugins.plugin_utils import _monitoring as m

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TEMPLATE = os.path.join(ROOT, "roles", "gateway", "templates", "etc", "systemd", "system", "inferops-gateway.service.j2")
ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
NOW = datetime.datetime.now(datetime.timezone.utc)
PATHS = {"venv": "/opt/inferops-gateway/venv", "config_dir": "/etc/inferops-gateway",
         "config_file": "/etc/inferops-gateway/config.yaml", "env_file": "/etc/inferops-gateway/gateway.env",
         "proxy_dir": "/var/lib/inferops-gateway/proxy", "drain_file": "/var/lib/inferops-gateway/drained.json",
         "keys_file": "/etc/inferops-gateway/client_keys.json", "usage_file": "/var/lib/inferops-gateway/proxy/usage.json"}


def pair(name="gw.example", days=30, start=-1):
    """A self-signed certificate for ``name`` (and 127.0.0.1) and its key, as PEM text."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW + datetime.timedelta(days=start)).not_valid_after(NOW + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem, cert.fingerprint(hashes.SHA256()).hex()


CERT, KEY, FINGERPRINT = pair()
OTHER_CERT, OTHER_KEY, _ = pair("other.example")


def test_no_certificate_no_key_is_plain_http():
    assert g.check_tls("", "") == ([], None) and g.check_tls(None, None) == ([], None)


def test_a_matching_pair_gives_the_fingerprint_and_names():
    problems, tls = g.check_tls(CERT, KEY)
    assert problems == [] and tls["fingerprint"] == FINGERPRINT and tls["names"] == ["gw.example", "127.0.0.1"]


@pytest.mark.parametrize("certificate, key, message", [
    (CERT, "", "^gateway_tls_certificate is set but gateway_tls_key is not: give both"),
    ("", KEY, "^gateway_tls_key is set but gateway_tls_certificate is not: give both"),
    (CERT, OTHER_KEY, "^gateway_tls_key does not match gateway_tls_certificate: the key is not the certificate's"),
    ("not a certificate", KEY, "^gateway_tls_certificate: not a PEM certificate"),
    (CERT, "-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n", "^gateway_tls_key: not a PEM private key"),
    (pair(days=-1, start=-10)[0], pair(days=-1, start=-10)[1], None),
], ids=["certificate alone", "key alone", "another key", "not a certificate", "not a key", "expired"])
def test_a_bad_pair_is_refused_naming_the_variables_and_never_the_key(certificate, key, message):
    problems, _tls = g.check_tls(certificate, key)
    assert len(problems) == 1 or message is None
    if message is None:  # an expired certificate (its own key: a second pair, so also a mismatch)
        assert any("the certificate expired on" in p for p in problems)
    else:
        assert re.match(message, problems[0]), problems
    for problem in problems:
        assert not key or all(line not in problem for line in key.strip().splitlines()[1:-1])


def test_an_encrypted_key_is_refused_with_the_fix():
    key = serialization.load_pem_private_key(KEY.encode(), None).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase")).decode()
    problems, _tls = g.check_tls(CERT, key)
    assert problems and problems[0].startswith("gateway_tls_key: the private key is encrypted; LiteLLM takes no passphrase")


HOSTVARS = {"gw-tls": {"gateway_tls_certificate": CERT, "gateway_listen_address": "0.0.0.0", "ansible_host": "gw.example"},
            "gw-plain": {}}


def test_every_url_of_the_gateway_is_https_under_tls():
    address = g.gateway_address("0.0.0.0", 4000, "gw.example", tls=True)
    assert address == {"client_url": "https://gw.example:4000/v1", "local_url": "https://127.0.0.1:4000"}
    routing = {entry["host"]: entry for entry in g.routing_plan(["gw-tls", "gw-plain"], HOSTVARS)["gateways"]}
    assert routing["gw-tls"]["health_url"] == "https://127.0.0.1:4000/health"
    assert routing["gw-tls"]["tls_fingerprint"] == FINGERPRINT
    assert routing["gw-plain"]["health_url"] == "http://127.0.0.1:4000/health" and routing["gw-plain"]["tls_fingerprint"] is None
    assert g.probe_url("gw-tls", HOSTVARS) == "https://gw.example:4000/health/readiness"
    assert g.probe_url("gw-plain", HOSTVARS) == "http://127.0.0.1:4000/health/readiness"
    assert g.probe_url("gw-tls", {"gw-tls": dict(HOSTVARS["gw-tls"], monitoring_scrape_address="10.0.0.9")}) \
        == "https://10.0.0.9:4000/health/readiness"
    assert m.play_plan([], HOSTVARS, {"gateways": ["gw-tls"]})["unplanned"] == []


MASTER = "sk-lab-unit-test-master-key-0123"


def serving():
    from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
    spark = d.plan("gb10-nvfp4-mtp-throughput", {"name": "inferops-serving", "port": 8101, "network_mode": "host"})
    return {"spark-1": {"server_deployment": spark, "ansible_host": "10.0.0.11"}}


def test_the_plan_under_tls_names_its_files_and_holds_no_key():
    plan = g.gateway_plan(["spark-1"], serving(), {}, "0.0.0.0", 4000, "gw.example", MASTER,
                          tls_certificate=CERT, tls_key=KEY, unit_paths=PATHS)
    assert plan["key_problems"] == []
    assert plan["client_url"] == "https://gw.example:4000/v1" and plan["local_url"] == "https://127.0.0.1:4000"
    assert plan["tls"]["fingerprint"] == FINGERPRINT
    assert plan["tls"]["key_file"] == "/etc/inferops-gateway/tls/key.pem"
    assert plan["tls"]["certificate_file"] == "/etc/inferops-gateway/tls/certificate.pem"
    assert "--ssl_certfile_path /etc/inferops-gateway/tls/certificate.pem --ssl_keyfile_path " \
        "/etc/inferops-gateway/tls/key.pem" in plan["unit"]["exec_start"]
    text = json.dumps(plan)
    assert KEY.strip().splitlines()[1] not in text and MASTER not in text


def test_the_plan_refuses_half_a_pair_before_anything_changes():
    plan = g.gateway_plan(["spark-1"], serving(), {}, "127.0.0.1", 4000, None, MASTER, tls_certificate=CERT,
                          unit_paths=PATHS)
    assert plan["key_problems"] == ["gateway_tls_certificate is set but gateway_tls_key is not: give both (the PEM "
                                    "certificate and its private key, from the vault) for TLS, or neither for plain HTTP"]
    plain = g.gateway_plan(["spark-1"], serving(), {}, "127.0.0.1", 4000, None, MASTER, unit_paths=PATHS)
    assert plain["tls"] is None and "--ssl" not in plain["unit"]["exec_start"]


def test_the_unit_runs_litellm_in_production_mode():
    unit = g.gateway_unit(PATHS, "inferops-gateway", "127.0.0.1", 4000)
    assert unit["environment"][:4] == ['"LITELLM_MODE=PRODUCTION"', '"JSON_LOGS=True"', '"LITELLM_LOG=WARNING"',
                                       '"LITELLM_LOCAL_MODEL_COST_MAP=True"']
    assert unit["capabilities"] == "" and g.gateway_unit(PATHS, "inferops-gateway", "0.0.0.0", 443)["capabilities"] \
        == "CAP_NET_BIND_SERVICE"
    assert unit["state_directory"] == "inferops-gateway/proxy"


@pytest.mark.parametrize("key, variable", [("venv", "gateway_venv"), ("config_file", "gateway_config_dir")])
def test_a_path_no_unit_line_carries_is_refused_naming_its_variable(key, variable):
    with pytest.raises(g.GatewayError, match="^%s: the value contains the control character" % variable):
        g.gateway_unit(dict(PATHS, **{key: "/opt/a\nExecStartPre=/bin/rm -rf /"}), "inferops-gateway", "127.0.0.1", 4000)
    with pytest.raises(g.GatewayError, match="^gateway_user: got"):
        g.gateway_unit(PATHS, "Root User", "127.0.0.1", 4000)


def render(unit):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters["comment"] = lambda text: "# " + text
    with open(TEMPLATE, encoding="utf-8") as handle:
        template = env.from_string(handle.read())
    return template.render(ansible_managed="Ansible managed", __gateway_plan={"unit": unit})


@needs_systemd
@pytest.mark.parametrize("port, tls", [(4000, False), (4000, True), (443, True)], ids=["plain", "tls", "port 443"])
def test_the_rendered_unit_is_sandboxed_to_at_most_3(tmp_path, port, tls):
    text = render(g.gateway_unit(PATHS, "inferops-gateway", "0.0.0.0", port, tls))
    unit = tmp_path / "inferops-gateway.service"
    unit.write_text(text, encoding="utf-8")
    verified = subprocess.run([ANALYZE, "verify", str(unit)], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert "Unknown key" not in verified.stderr and "Failed to parse" not in verified.stderr, verified.stderr
    ran = subprocess.run([ANALYZE, "security", "--offline=yes", str(unit)], capture_output=True, text=True,
                         check=False, cwd=tmp_path)
    if "--offline" in ran.stderr and "unrecognized" in ran.stderr:
        pytest.skip("this systemd-analyze has no --offline (systemd < 250)")
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", ran.stdout)
    assert level, ran.stdout + ran.stderr
    assert float(level.group(1)) <= 3.0, ran.stdout
    for directive in ("ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateDevices=yes", "ProtectHome=yes",
                      "Environment=\"LITELLM_MODE=PRODUCTION\"", "SystemCallFilter=@system-service"):
        assert directive + "\n" in text
    assert ("--ssl_keyfile_path" in text) is tls
    assert ("AmbientCapabilities=CAP_NET_BIND_SERVICE\n" in text) is (port < 1024)


@pytest.fixture(name="tls_server")
def fixture_tls_server(tmp_path):
    """A TLS server on loopback with CERT and KEY, answering 200 {"ok": true} to any GET."""
    (tmp_path / "cert.pem").write_text(CERT)
    (tmp_path / "key.pem").write_text(KEY)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "https://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_roles_own_read_pins_the_certificate(tls_server):
    assert bounded_request("GET", tls_server + "/health", timeout=10, pin=FINGERPRINT) == (200, b'{"ok": true}')
    with pytest.raises(CertificateMismatch, match="not the pinned"):
        bounded_request("GET", tls_server + "/health", timeout=10, pin="00" * 32)
    # Without a pin the system's trust store decides: a self-signed certificate is refused.
    with pytest.raises(ssl.SSLError):
        bounded_request("GET", tls_server + "/health", timeout=10)
