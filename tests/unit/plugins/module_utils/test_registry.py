# SPDX-License-Identifier: GPL-3.0-or-later
"""The registry API decisions of image_digest_info (plugins/module_utils/_registry.py): references as
docker reads them, the manifest request, the Bearer challenge, the token answer, the digest."""
from __future__ import annotations

import hashlib

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._registry import (
    ACCEPT,
    RegistryError,
    docker_config_auth,
    follow_redirect,
    helper_credentials,
    is_loopback,
    manifest_digest,
    manifest_request,
    parse_challenge,
    parse_reference,
    registry_errors,
    token_from_answer,
    token_request,
)


@pytest.mark.parametrize("reference, registry, repository, tag, digest", [
    # The seeds' rolling tag on Docker Hub.
    ("vllm/vllm-openai:cu130-nightly", "docker.io", "vllm/vllm-openai", "cu130-nightly", None),
    # One-component Docker Hub names live under library/.
    ("ubuntu", "docker.io", "library/ubuntu", "latest", None),
    ("docker.io/ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", None),
    ("index.docker.io/lmsysorg/sglang:v0.5.6.post2-cu129", "docker.io", "lmsysorg/sglang", "v0.5.6.post2-cu129",
     None),
    # The lab registry (server_registry_prefix 127.0.0.1:5000) in front of the same names.
    ("127.0.0.1:5000/vllm/vllm-openai:cu130-nightly", "127.0.0.1:5000", "vllm/vllm-openai", "cu130-nightly", None),
    ("127.0.0.1:5000/x/y:tag", "127.0.0.1:5000", "x/y", "tag", None),
    ("localhost/x:1", "localhost", "x", "1", None),
    ("nvcr.io/nvidia/vllm:26.05-py3", "nvcr.io", "nvidia/vllm", "26.05-py3", None),
    ("[::1]:5000/a/b", "[::1]:5000", "a/b", "latest", None),
    ("vllm/vllm-openai@sha256:" + "3d" * 32, "docker.io", "vllm/vllm-openai", None, "sha256:" + "3d" * 32),
    ("vllm/vllm-openai:cu130-nightly@sha256:" + "3d" * 32, "docker.io", "vllm/vllm-openai", "cu130-nightly",
     "sha256:" + "3d" * 32),
])
def test_parse_reference(reference, registry, repository, tag, digest):
    ref = parse_reference(reference)
    assert (ref["registry"], ref["repository"], ref["tag"], ref["digest"]) == (registry, repository, tag, digest)
    assert ref["reference"] == (digest or tag)


@pytest.mark.parametrize("reference, message", [
    ("", "empty"),
    ("vllm/vLLM-openai:x", "not a repository name"),
    ("vllm/vllm-openai:bad tag", "not a valid tag"),
    ("vllm/vllm-openai@sha256", "not a digest"),
    ("registry.example:port/x:1", "not a registry host"),
])
def test_bad_references_are_refused(reference, message):
    with pytest.raises(RegistryError, match=message):
        parse_reference(reference)


@pytest.mark.parametrize("registry, loopback", [
    ("127.0.0.1:5000", True), ("127.0.0.2", True), ("localhost:5000", True), ("[::1]:5000", True),
    ("docker.io", False), ("10.0.0.5:5000", False), ("registry.example.com:5000", False), ("localhostx:1", False),
])
def test_is_loopback(registry, loopback):
    assert is_loopback(registry) is loopback


def test_docker_hub_is_asked_at_registry_1_over_https_through_any_proxy():
    request = manifest_request("vllm/vllm-openai:cu130-nightly")
    assert request["url"] == "https://registry-1.docker.io/v2/vllm/vllm-openai/manifests/cu130-nightly"
    assert request["use_proxy"] is True and request["scheme"] == "https"


def test_the_lab_registry_is_plain_http_and_never_proxied():
    request = manifest_request("127.0.0.1:5000/vllm/vllm-openai:cu130-nightly")
    assert request["url"] == "http://127.0.0.1:5000/v2/vllm/vllm-openai/manifests/cu130-nightly"
    assert request["use_proxy"] is False


def test_other_registries_are_http_only_when_listed_as_insecure():
    assert manifest_request("10.0.0.5:5000/x/y:1")["scheme"] == "https"
    request = manifest_request("10.0.0.5:5000/x/y:1", insecure_registries=["10.0.0.5:5000"])
    assert request["url"] == "http://10.0.0.5:5000/v2/x/y/manifests/1" and request["use_proxy"] is True


def test_a_digest_reference_asks_for_the_digest():
    assert manifest_request("x.example/a@sha256:" + "0" * 64)["url"].endswith("/a/manifests/sha256:" + "0" * 64)


def test_accept_names_index_list_and_both_manifests():
    # Without the index types, a registry answers a multi-platform tag with 404 or one platform's
    # manifest: another digest than docker pull records.
    assert ACCEPT.split(", ") == ["application/vnd.oci.image.index.v1+json",
                                  "application/vnd.docker.distribution.manifest.list.v2+json",
                                  "application/vnd.docker.distribution.manifest.v2+json",
                                  "application/vnd.oci.image.manifest.v1+json"]


# The challenge Docker Hub sends for an anonymous manifest request (Docker's token authentication
# specification, docs.docker.com/registry/spec/auth/token: "Bearer realm=\"https://auth.docker.io/token\",
# service=\"registry.docker.io\",scope=\"repository:samalba/my-app:pull,push\"").
HUB_CHALLENGE = ('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
                 'scope="repository:vllm/vllm-openai:pull"')


def test_parse_docker_hubs_challenge():
    assert parse_challenge(HUB_CHALLENGE) == ("bearer", {"realm": "https://auth.docker.io/token",
                                                         "service": "registry.docker.io",
                                                         "scope": "repository:vllm/vllm-openai:pull"})


def test_parse_challenge_with_spaces_commas_escapes_and_tokens():
    scheme, params = parse_challenge('BEARER  realm = "http://127.0.0.1:8270/token" , '
                                     'scope="repository:a/b:pull,push repository:c:pull", error=invalid_token, '
                                     'x="say \\"hi\\""')
    assert scheme == "bearer"
    assert params == {"realm": "http://127.0.0.1:8270/token", "scope": "repository:a/b:pull,push repository:c:pull",
                      "error": "invalid_token", "x": 'say "hi"'}
    assert parse_challenge('Basic realm="Registry Realm"') == ("basic", {"realm": "Registry Realm"})


@pytest.mark.parametrize("header", ["", 'realm="x"', 'Bearer realm="unterminated'])
def test_unreadable_challenges(header):
    with pytest.raises(RegistryError):
        parse_challenge(header)


def test_token_request_carries_service_and_scope():
    url = token_request(parse_challenge(HUB_CHALLENGE)[1], "vllm/vllm-openai")
    assert url == ("https://auth.docker.io/token?service=registry.docker.io"
                   "&scope=repository%3Avllm%2Fvllm-openai%3Apull")


def test_token_request_without_scope_asks_for_pull_of_the_repository():
    url = token_request({"realm": "https://auth.example/token?client=x"}, "org/name")
    assert url == "https://auth.example/token?client=x&scope=repository%3Aorg%2Fname%3Apull"


@pytest.mark.parametrize("realm", [None, "", "auth.example/token", "ftp://auth.example/token"])
def test_token_request_needs_an_http_realm(realm):
    with pytest.raises(RegistryError, match="no usable realm"):
        token_request({"realm": realm}, "a/b")


def test_token_answers():
    assert token_from_answer('{"token": "t1", "access_token": "t2", "expires_in": 300}') == "t1"
    assert token_from_answer('{"access_token": "t2"}') == "t2"
    with pytest.raises(RegistryError, match=r"no token or access_token$"):
        # Nothing of a realm's answer is repeated (the realm may be any URL).
        token_from_answer('{"expires_in": 300, "details": "internal-path-/srv/x"}')
    with pytest.raises(RegistryError, match="did not answer JSON"):
        token_from_answer("<html>")


def test_registry_errors():
    # distribution's answer for an unknown tag.
    body = '{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"nope"}}]}'
    assert registry_errors(body) == "MANIFEST_UNKNOWN: manifest unknown"
    assert registry_errors("502 Bad Gateway") == "502 Bad Gateway"


def test_manifest_digest_from_the_header_or_the_body():
    body = b'{"schemaVersion":2}'
    computed = "sha256:" + hashlib.sha256(body).hexdigest()
    assert manifest_digest({"Docker-Content-Digest": computed}) == computed
    assert manifest_digest({"docker-content-digest": computed}, body) == computed
    assert manifest_digest({}, body) == computed
    assert manifest_digest({}) is None
    with pytest.raises(RegistryError, match="does not match"):
        manifest_digest({"Docker-Content-Digest": "sha256:" + "0" * 64}, body)
    with pytest.raises(RegistryError, match="not a sha256 digest"):
        manifest_digest({"Docker-Content-Digest": "md5:abc"})


# Credentials stay with their host (issue 25, finding 3).
@pytest.mark.parametrize("location,kept", [
    ("/v2/a/manifests/1?x=1", True),                              # same origin, relative
    ("https://registry.example:443/v2/a/manifests/1", True),      # same origin, default port spelled out
    ("https://REGISTRY.example/v2/a/manifests/1", True),          # host names are case-insensitive
    ("https://cdn.example/blob", False),                          # another host
    ("https://registry.example:8443/v2/a/manifests/1", False),    # another port
    ("http://registry.example/v2/a/manifests/1", False),          # another scheme (a downgrade)
])
def test_authorization_follows_a_redirect_only_to_the_same_origin(location, kept):
    headers = {"Accept": "x", "Authorization": "Bearer t"}
    target, sent = follow_redirect("https://registry.example/v2/a/manifests/1", location, headers)
    assert target.startswith(("https://", "http://")) and sent["Accept"] == "x"
    assert ("Authorization" in sent) is kept


def test_a_redirect_to_something_else_than_http_is_refused():
    with pytest.raises(RegistryError, match="not an http"):
        follow_redirect("https://registry.example/v2/a", "file:///etc/shadow", {})


def test_an_https_registry_needs_an_https_realm():
    with pytest.raises(RegistryError, match="plain-http token realm http://auth.example: refused"):
        token_request({"realm": "http://auth.example/token"}, "a/b", "https")
    # A plain-http registry (loopback, or listed as insecure) may name one.
    assert token_request({"realm": "http://127.0.0.1:5001/token"}, "a/b", "http").startswith("http://127.0.0.1:5001/")


# config.json as `docker login` writes it (Docker CLI 27: base64 "user:password" under auths,
# Docker Hub under its v1 index URL); credHelpers/credsStore as docker-credential-helpers documents.
def test_docker_config_auths_entry_by_host_or_url():
    config = {"auths": {"https://index.docker.io/v1/": {"auth": "cm9ib3Q6czNjcmV0"},
                        "nvcr.io": {"auth": "JG9hdXRodG9rZW46bnZhcGktMTIz"},
                        "http://registry.example:5000/v2/": {"username": "u", "password": "p"}}}
    assert docker_config_auth(config, "docker.io") == {
        "helper": None, "server": "https://index.docker.io/v1/",
        "entry": {"key": "https://index.docker.io/v1/", "username": "robot", "password": "s3cret"}}
    assert docker_config_auth(config, "nvcr.io")["entry"] == {"key": "nvcr.io", "username": "$oauthtoken",
                                                              "password": "nvapi-123"}
    assert docker_config_auth(config, "registry.example:5000")["entry"]["username"] == "u"
    assert docker_config_auth(config, "ghcr.io") == {"helper": None, "server": "ghcr.io", "entry": None}


def test_docker_config_helpers():
    config = {"credsStore": "desktop", "credHelpers": {"123.dkr.ecr.us-east-1.amazonaws.com": "ecr-login"},
              "auths": {"ghcr.io": {}}}
    assert docker_config_auth(config, "123.dkr.ecr.us-east-1.amazonaws.com")["helper"] == "ecr-login"
    assert docker_config_auth(config, "ghcr.io") == {"helper": "desktop", "server": "ghcr.io", "entry": None}


@pytest.mark.parametrize("entry,problem", [
    ({"auth": "not base64!"}, "not base64 of user:password"),
    ({"auth": "bm9jb2xvbg=="}, "not base64 of user:password"),       # "nocolon"
    ({"identitytoken": "eyJhbGciOi"}, "identity token"),
])
def test_unusable_docker_config_entries_are_named_without_their_value(entry, problem):
    with pytest.raises(RegistryError, match=problem) as caught:
        docker_config_auth({"auths": {"registry.example": entry}}, "registry.example")
    assert "registry.example" in str(caught.value)
    assert all(str(value) not in str(caught.value) for value in entry.values())


def test_helper_answers():
    assert helper_credentials('{"ServerURL": "ghcr.io", "Username": "robot", "Secret": "s3cret"}') == {
        "username": "robot", "password": "s3cret"}
    with pytest.raises(RegistryError, match="identity token"):
        helper_credentials('{"ServerURL": "x", "Username": "<token>", "Secret": "refresh"}')
    with pytest.raises(RegistryError, match="not {ServerURL, Username, Secret}") as caught:
        helper_credentials("secret-looking output")
    assert "secret-looking" not in str(caught.value)
