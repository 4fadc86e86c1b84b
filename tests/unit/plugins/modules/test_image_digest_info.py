# SPDX-License-Identifier: GPL-3.0-or-later
"""image_digest_info as a whole module against a registry test double on 127.0.0.1 (registry_double.py:
the Docker Registry HTTP API V2 / OCI distribution spec and Docker's token authentication)."""
from __future__ import annotations

import base64
import json
import os
import socket

import pytest

from registry_double import DOCKER_MANIFEST_V2, OCI_INDEX, RegistryDouble, manifest

from ansible_collections.inferops.serving.plugins.modules import image_digest_info

TAG = "vllm/vllm-openai:cu130-nightly"
ACCEPTED = {"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.manifest.v1+json"}


@pytest.fixture(autouse=True)
def docker_config(tmp_path, monkeypatch):
    """An empty Docker config directory (DOCKER_CONFIG), so no test reads the runner's own
    ~/.docker/config.json; ``docker_config(data)`` writes its config.json."""
    directory = tmp_path / "docker-config"
    directory.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(directory))

    def write(data):
        (directory / "config.json").write_text(json.dumps(data))
        return str(directory / "config.json")

    return write


def image(double, name=TAG):
    return "127.0.0.1:%d/%s" % (double.port, name)


def manifest_requests(double):
    return [r for r in double.requests if "/manifests/" in r["path"]]


def test_an_open_registry_answers_one_head_with_the_digest(run_module):
    # The lab's registry (docker-registry on 127.0.0.1:5000): no authentication, a pushed single-platform image.
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        failed, result = run_module(image_digest_info, {"image": image(double)}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["digest"] == double.digest(TAG) and result["media_type"] == DOCKER_MANIFEST_V2
    where = (result["registry"], result["repository"], result["tag"])
    assert where == ("127.0.0.1:%d" % double.port, "vllm/vllm-openai", "cu130-nightly")
    assert result["url"] == "http://127.0.0.1:%d/v2/vllm/vllm-openai/manifests/cu130-nightly" % double.port
    assert result["authenticated"] == "none"
    [request] = double.requests
    assert request["method"] == "HEAD" and set(request["headers"]["accept"].split(", ")) == ACCEPTED


def test_a_multi_platform_tag_answers_with_its_index(run_module):
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}) as double:
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert not failed and result["digest"] == double.digest(TAG) and result["media_type"] == OCI_INDEX


def test_the_bearer_challenge_is_answered_with_an_anonymous_token(run_module):
    # Docker Hub's flow: 401 + WWW-Authenticate Bearer, GET the realm with service and scope, retry with the token.
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        failed, result = run_module(image_digest_info, {"image": image(double)}, check_mode=True)
    assert not failed and result["digest"] == double.digest(TAG) and result["authenticated"] == "bearer"
    first, token, second = double.requests
    assert first["method"] == "HEAD" and "authorization" not in first["headers"]
    assert token["path"] == "/token" and "authorization" not in token["headers"]
    assert token["query"] == {"service": ["registry.test"], "scope": ["repository:vllm/vllm-openai:pull"]}
    assert second["method"] == "HEAD" and second["headers"]["authorization"] == "Bearer tok-0"
    assert "tok-0" not in repr(result)


def test_credentials_go_to_the_token_endpoint_not_the_registry(run_module):
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        failed, result = run_module(image_digest_info, {"image": image(double), "username": "robot", "password": "s3cret"})
    assert not failed
    token = [r for r in double.requests if r["path"] == "/token"][0]
    assert token["headers"]["authorization"] == "Basic cm9ib3Q6czNjcmV0"
    assert manifest_requests(double)[-1]["headers"]["authorization"] == "Bearer tok-0"
    assert "s3cret" not in repr(result)


def test_a_failing_token_endpoint_is_named_and_its_answer_not_repeated(run_module):
    # The realm may be any URL: nothing it answers comes back in the message (issue 25, finding 3).
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer", token_status=503,
                        token_error_body=b'{"details":"db at 10.1.2.3:5432 user=tokensvc"}') as double:
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert failed
    assert result["msg"] == ("the token endpoint http://127.0.0.1:%d/token of 127.0.0.1:%d answered 503 (asked "
                             "anonymously: give username and password, or docker login, for a private repository)"
                             % (double.port, double.port))
    assert "tokensvc" not in repr(result)


def test_basic_authentication_needs_credentials(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, auth="basic") as double:
        failed, result = run_module(image_digest_info, {"image": image(double)})
        assert failed and result["msg"] == ("127.0.0.1:%d asks for a user name and password (Basic authentication): "
                                            "give username and password, or docker login to it on this host"
                                            % double.port)
        failed, result = run_module(image_digest_info, {"image": image(double), "username": "robot",
                                                        "password": "s3cret"})
    assert not failed and result["digest"] == double.digest(TAG) and result["authenticated"] == "basic"


def test_without_docker_content_digest_the_manifest_bytes_are_hashed(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, omit_digest_header=True) as double:
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert not failed and result["digest"] == double.digest(TAG)
    assert [r["method"] for r in double.requests] == ["HEAD", "GET"]


def test_an_unknown_tag_fails_with_the_registrys_error(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        failed, result = run_module(image_digest_info, {"image": image(double, "vllm/vllm-openai:no-such-tag")})
    assert failed and result["status"] == 404
    assert result["msg"] == ("http://127.0.0.1:%d/v2/vllm/vllm-openai/manifests/no-such-tag has no manifest for "
                             "no-such-tag: MANIFEST_UNKNOWN: manifest unknown" % double.port)


def test_a_bad_reference_fails_before_any_request(run_module):
    with RegistryDouble({}) as double:
        failed, result = run_module(image_digest_info, {"image": "127.0.0.1:%d/Vllm/x:1" % double.port})
    assert failed and "is not a repository name" in result["msg"] and double.requests == []


def test_a_registry_that_does_not_answer(run_module):
    # A loopback port this test holds bound but not listening: connections are refused, and no
    # other process can take it meanwhile (a port a closed server freed can be: in a CI run another
    # test's server answered on one). The connection error is the message.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        failed, result = run_module(image_digest_info, {"image": "127.0.0.1:%d/%s" % (port, TAG), "timeout": 5})
    assert failed and result["status"] == -1 and "127.0.0.1:%d" % port in result["msg"]


def test_a_digest_reference_is_asked_by_digest(run_module):
    body = manifest(DOCKER_MANIFEST_V2)
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, body)}) as double:
        double.manifests["vllm/vllm-openai@" + double.digest(TAG)] = (DOCKER_MANIFEST_V2, body)
        failed, result = run_module(image_digest_info, {"image": image(double, "vllm/vllm-openai@" + double.digest(TAG))})
    assert not failed and result["digest"] == double.digest(TAG) and result["tag"] is None


# Credentials stay with their host (issue 25, finding 3).
@pytest.mark.parametrize("auth", ["basic", "bearer"])
def test_credentials_do_not_follow_a_redirect_to_another_host(run_module, auth):
    # The registry (127.0.0.1) checks the credentials, then redirects the manifest to another host
    # (127.0.0.2): the password or token must not be sent there.
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, host="127.0.0.2") as elsewhere:
        with RegistryDouble({}, auth=auth, redirect_to="http://127.0.0.2:%d" % elsewhere.port) as double:
            failed, result = run_module(image_digest_info, {"image": image(double), "username": "robot",
                                                            "password": "s3cret"})
    assert not failed, result
    assert result["digest"] == elsewhere.digest(TAG)
    assert elsewhere.requests and all("authorization" not in r["headers"] for r in elsewhere.requests)
    assert any("authorization" in r["headers"] for r in manifest_requests(double))


class HttpsRegistry(image_digest_info.Registry):
    """Stands for an https registry (registry.example.com) whose Bearer challenge names a plain-http
    realm; the realm is a registry double on loopback that records what reaches it."""

    realm = None

    def ask(self, method, url, headers, use_proxy):
        if url.startswith("https://registry.example.com/"):
            return 401, {"www-authenticate": 'Bearer realm="%s",service="registry.example.com"' % self.realm}, b"", None
        return super(HttpsRegistry, self).ask(method, url, headers, use_proxy)


def test_an_https_registry_naming_a_plain_http_realm_gets_no_credentials(run_module, monkeypatch):
    with RegistryDouble({}) as realm:
        HttpsRegistry.realm = "http://127.0.0.1:%d/token" % realm.port
        monkeypatch.setattr(image_digest_info, "Registry", HttpsRegistry)
        failed, result = run_module(image_digest_info, {"image": "registry.example.com/inference/vllm:prod",
                                                        "username": "robot", "password": "s3cret"})
    assert failed and realm.requests == []
    assert result["msg"] == ("https://registry.example.com/v2/inference/vllm/manifests/prod: the registry is https "
                             "but its Bearer challenge names the plain-http token realm http://127.0.0.1:%d: refused, "
                             "the credentials and the token would cross the network in clear text (a registry "
                             "listed in insecure_registries may use one)" % realm.port)


def test_a_realms_answer_without_a_token_is_not_repeated(run_module):
    # The realm may be any URL: here one answering 200 with JSON that holds no token.
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        with RegistryDouble({"internal/thing:1": (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as realm:
            double.realm = "http://127.0.0.1:%d/v2/internal/thing/manifests/1" % realm.port
            failed, result = run_module(image_digest_info, {"image": image(double)})
    assert failed and result["msg"].endswith("the token endpoint's JSON answer has no token or access_token")
    assert "schemaVersion" not in result["msg"] and "layers" not in result["msg"]


# The credentials the real pull uses: the Docker CLI config (issue 26).
def basic_auth(user, password):
    return base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


@pytest.mark.parametrize("entry", [{"auth": basic_auth("robot", "s3cret")}, {"username": "robot", "password": "s3cret"}])
def test_docker_logins_credentials_answer_a_basic_registry(run_module, docker_config, entry):
    # A registry with htpasswd authentication, as `docker login` left it in config.json.
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, auth="basic") as double:
        path = docker_config({"auths": {"127.0.0.1:%d" % double.port: entry}})
        failed, result = run_module(image_digest_info, {"image": image(double)}, check_mode=True)
    assert not failed, result
    assert result["digest"] == double.digest(TAG) and result["authenticated"] == "basic"
    assert result["credentials"] == "%s auths[127.0.0.1:%d]" % (path, double.port)
    assert "s3cret" not in repr(result)


def test_docker_logins_credentials_go_to_the_token_endpoint(run_module, docker_config):
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        docker_config({"auths": {"http://127.0.0.1:%d" % double.port: {"auth": basic_auth("robot", "s3cret")}}})
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert not failed and result["authenticated"] == "bearer"
    token = [r for r in double.requests if r["path"] == "/token"][0]
    assert token["headers"]["authorization"] == "Basic cm9ib3Q6czNjcmV0"


def test_an_open_registry_never_reads_the_docker_config(run_module, docker_config):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        docker_config({"auths": {"127.0.0.1:%d" % double.port: {"auth": basic_auth("robot", "s3cret")}}})
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert not failed and result["credentials"] == "none"
    assert all("authorization" not in r["headers"] for r in double.requests)


HELPER = """#!/bin/sh
# TEST DOUBLE of a Docker credential helper (docker-credential-helpers' protocol, as
# docker-credential-ecr-login or -pass speak it): `get` reads the server URL on stdin and prints
# {"ServerURL", "Username", "Secret"}, or "credentials not found in native keychain" and exits 1.
read server
if [ "$1" = get ] && [ "$server" = "%s" ]; then
  printf '{"ServerURL":"%%s","Username":"robot","Secret":"s3cret"}' "$server"
else
  echo "credentials not found in native keychain"; exit 1
fi
"""


def test_a_credential_helper_is_asked(run_module, docker_config, tmp_path, monkeypatch):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, auth="basic") as double:
        helper = tmp_path / "bin" / "docker-credential-labtest"
        helper.parent.mkdir()
        helper.write_text(HELPER % ("127.0.0.1:%d" % double.port))
        helper.chmod(0o755)
        monkeypatch.setenv("PATH", "%s%s%s" % (helper.parent, os.pathsep, os.environ["PATH"]))
        docker_config({"credHelpers": {"127.0.0.1:%d" % double.port: "labtest"}})
        failed, result = run_module(image_digest_info, {"image": image(double)})
        assert not failed, result
        assert result["credentials"] == "docker-credential-labtest" and "s3cret" not in repr(result)
        # A helper that has nothing for the registry: the auths entry is next, as for the pull.
        helper.write_text(HELPER % "other.example")
        docker_config({"credsStore": "labtest", "auths": {"127.0.0.1:%d" % double.port: {}}})
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert failed and "asks for a user name and password" in result["msg"]


def test_a_missing_credential_helper_is_named(run_module, docker_config):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, auth="basic") as double:
        docker_config({"credsStore": "no-such-helper-here"})
        failed, result = run_module(image_digest_info, {"image": image(double)})
    assert failed
    assert result["msg"].endswith("the Docker config names the credential helper docker-credential-no-such-helper-here "
                                  "for 127.0.0.1:%d, which is not installed on this host (install it, or give "
                                  "username and password)" % double.port)
