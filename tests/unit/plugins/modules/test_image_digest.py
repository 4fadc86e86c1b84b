# SPDX-License-Identifier: GPL-3.0-or-later
"""image_digest as a whole module against a registry test double on 127.0.0.1 (registry_double.py:
the Docker Registry HTTP API V2 / OCI distribution spec and Docker's token authentication)."""
from __future__ import annotations

from registry_double import DOCKER_MANIFEST_V2, OCI_INDEX, RegistryDouble, manifest

from ansible_collections.inferops.serving.plugins.modules import image_digest

TAG = "vllm/vllm-openai:cu130-nightly"
ACCEPTED = {"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.manifest.v1+json"}


def image(double, name=TAG):
    return "127.0.0.1:%d/%s" % (double.port, name)


def manifest_requests(double):
    return [r for r in double.requests if "/manifests/" in r["path"]]


def test_an_open_registry_answers_one_head_with_the_digest(run_module):
    # The lab's registry (docker-registry on 127.0.0.1:5000): no authentication, a pushed single-platform image.
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        failed, result = run_module(image_digest, {"image": image(double)}, check_mode=True)
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
        failed, result = run_module(image_digest, {"image": image(double)})
    assert not failed and result["digest"] == double.digest(TAG) and result["media_type"] == OCI_INDEX


def test_the_bearer_challenge_is_answered_with_an_anonymous_token(run_module):
    # Docker Hub's flow: 401 + WWW-Authenticate Bearer, GET the realm with service and scope, retry with the token.
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        failed, result = run_module(image_digest, {"image": image(double)}, check_mode=True)
    assert not failed and result["digest"] == double.digest(TAG) and result["authenticated"] == "bearer"
    first, token, second = double.requests
    assert first["method"] == "HEAD" and "authorization" not in first["headers"]
    assert token["path"] == "/token" and "authorization" not in token["headers"]
    assert token["query"] == {"service": ["registry.test"], "scope": ["repository:vllm/vllm-openai:pull"]}
    assert second["method"] == "HEAD" and second["headers"]["authorization"] == "Bearer tok-0"
    assert "tok-0" not in repr(result)


def test_credentials_go_to_the_token_endpoint_not_the_registry(run_module):
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer") as double:
        failed, result = run_module(image_digest, {"image": image(double), "username": "robot", "password": "s3cret"})
    assert not failed
    token = [r for r in double.requests if r["path"] == "/token"][0]
    assert token["headers"]["authorization"] == "Basic cm9ib3Q6czNjcmV0"
    assert manifest_requests(double)[-1]["headers"]["authorization"] == "Bearer tok-0"
    assert "s3cret" not in repr(result)


def test_a_failing_token_endpoint_is_named(run_module):
    with RegistryDouble({TAG: (OCI_INDEX, manifest(OCI_INDEX))}, auth="bearer", token_status=503) as double:
        failed, result = run_module(image_digest, {"image": image(double)})
    assert failed
    assert result["msg"] == ("the token endpoint http://127.0.0.1:%d/token of 127.0.0.1:%d answered 503: "
                             '{"details":"token service unavailable"} (asked anonymously: give username and '
                             "password for a private repository)" % (double.port, double.port))


def test_basic_authentication_needs_credentials(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, auth="basic") as double:
        failed, result = run_module(image_digest, {"image": image(double)})
        assert failed and result["msg"] == ("127.0.0.1:%d asks for a user name and password (Basic authentication): "
                                            "give username and password" % double.port)
        failed, result = run_module(image_digest, {"image": image(double), "username": "robot",
                                                   "password": "s3cret"})
    assert not failed and result["digest"] == double.digest(TAG) and result["authenticated"] == "basic"


def test_without_docker_content_digest_the_manifest_bytes_are_hashed(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}, omit_digest_header=True) as double:
        failed, result = run_module(image_digest, {"image": image(double)})
    assert not failed and result["digest"] == double.digest(TAG)
    assert [r["method"] for r in double.requests] == ["HEAD", "GET"]


def test_an_unknown_tag_fails_with_the_registrys_error(run_module):
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, manifest(DOCKER_MANIFEST_V2))}) as double:
        failed, result = run_module(image_digest, {"image": image(double, "vllm/vllm-openai:no-such-tag")})
    assert failed and result["status"] == 404
    assert result["msg"] == ("http://127.0.0.1:%d/v2/vllm/vllm-openai/manifests/no-such-tag has no manifest for "
                             "no-such-tag: MANIFEST_UNKNOWN: manifest unknown" % double.port)


def test_a_bad_reference_fails_before_any_request(run_module):
    with RegistryDouble({}) as double:
        failed, result = run_module(image_digest, {"image": "127.0.0.1:%d/Vllm/x:1" % double.port})
    assert failed and "is not a repository name" in result["msg"] and double.requests == []


def test_a_registry_that_does_not_answer(run_module):
    # Nothing listens on the port any more: the connection error is the message.
    with RegistryDouble({}) as double:
        port = double.port
    failed, result = run_module(image_digest, {"image": "127.0.0.1:%d/%s" % (port, TAG), "timeout": 5})
    assert failed and result["status"] == -1 and "127.0.0.1:%d" % port in result["msg"]


def test_a_digest_reference_is_asked_by_digest(run_module):
    body = manifest(DOCKER_MANIFEST_V2)
    with RegistryDouble({TAG: (DOCKER_MANIFEST_V2, body)}) as double:
        double.manifests["vllm/vllm-openai@" + double.digest(TAG)] = (DOCKER_MANIFEST_V2, body)
        failed, result = run_module(image_digest, {"image": image(double, "vllm/vllm-openai@" + double.digest(TAG))})
    assert not failed and result["digest"] == double.digest(TAG) and result["tag"] is None
