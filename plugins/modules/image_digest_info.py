#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: image_digest_info
short_description: The digest an image tag points to now, read from the registry's HTTP API without pulling
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Asks the registry of O(image) for the tag's manifest (C(HEAD /v2/<repository>/manifests/<tag>),
    the Docker Registry HTTP API V2 / OCI distribution specification) and returns the
    C(Docker-Content-Digest) it answers with. Nothing is pulled and nothing changes, on the
    target or on the registry, so the module runs in check mode too (C(playbooks/pin.yml --check)
    uses it to show what a rolling tag points to now).
  - The C(Accept) header names the OCI image index, the Docker manifest list, the Docker image
    manifest V2 and the OCI image manifest, so a multi-platform tag answers with its index, the
    digest C(docker pull) records in C(RepoDigests) and the image lock holds.
  - A registry that answers C(401) with a C(WWW-Authenticate) header C(Bearer realm=...,service=...,scope=...)
    (a challenge) (Docker Hub, GHCR, most registries) gets the token flow of Docker's token
    authentication specification, anonymous when no credentials are found; a C(Basic) challenge
    (a registry with htpasswd authentication) needs credentials.
  - The credentials are O(username) and O(password) when given, else the ones C(docker pull)
    (and community.docker's pull) would use on the host the module runs on, from the Docker CLI
    configuration O(docker_config), which C(docker login) writes. First the credential helper its
    C(credHelpers) names for the registry, or its C(credsStore) (C(docker-credential-<name> get),
    for example C(ecr-login) for ECR), then its C(auths) entry for the registry (base64 C(auth), or
    C(username) and C(password)). An identity token (an OAuth refresh token) is not exchanged.
    They are read only when the registry asks for them, and never returned or logged.
  - Credentials stay with their host. A redirect to another origin (scheme, host or port) is
    followed without the C(Authorization) header; the token realm of an https registry must be
    https; nothing the token endpoint answers is repeated in an error message (the realm may be
    any URL).
  - The image reference is read as docker reads it. A name without a registry host is on Docker
    Hub (C(docker.io), whose API is C(registry-1.docker.io)), a one-component Docker Hub name
    under C(library/). A registry on a loopback address (C(localhost), C(127.0.0.0/8), C(::1)) is
    asked over plain C(http) and never through a proxy; any other one over C(https) unless listed
    in O(insecure_registries).
  - Without a C(Docker-Content-Digest) header the digest is the SHA-256 of the manifest's bytes
    (a C(GET)).
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
  - inferops.serving._attributes.ACTIONGROUP_SERVING
options:
  image:
    description:
      - The image reference, C([registry[:port]/]repository[:tag]) or with C(@<digest>), for
        example V(vllm/vllm-openai:cu130-nightly) or V(127.0.0.1:5000/vllm/vllm-openai:cu130-nightly).
      - A reference without a tag asks for V(latest).
    type: str
    required: true
  insecure_registries:
    description:
      - Registries (C(host[:port]), as in Docker's C(daemon.json) C(insecure-registries)) asked
        over plain C(http) although not on a loopback address.
    type: list
    elements: str
    default: []
  username:
    description:
      - User name for the registry (its token endpoint for a C(Bearer) challenge, the registry
        for a C(Basic) one). Without it the token is requested anonymously.
    type: str
  password:
    description: Password or access token that goes with O(username).
    type: str
  docker_config:
    description:
      - The Docker CLI configuration file read for credentials when O(username) is not given.
      - Default, as the Docker CLI and community.docker find it on the host the module runs on (so,
        with C(become), root's) is C($DOCKER_CONFIG/config.json), else C(~/.docker/config.json).
        A missing file means no credentials.
    type: path
  validate_certs:
    description: Verify the registry's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 30
notes:
  - Runs wherever Ansible runs it; C(playbooks/pin.yml) runs it on the canary, which then reaches
    the registry the way its Docker daemon would (but without the daemon's mirrors and proxy settings).
seealso:
  - name: OCI distribution specification, pulling manifests
    description: The manifest request and the C(Docker-Content-Digest) header.
    link: https://github.com/opencontainers/distribution-spec/blob/main/spec.md#pulling-manifests
  - name: Docker token authentication specification
    description: The C(WWW-Authenticate) Bearer challenge and the token endpoint.
    link: https://distribution.github.io/distribution/spec/auth/token/
"""

EXAMPLES = r"""
- name: Read what the rolling tag points to now
  inferops.serving.image_digest_info:
    image: vllm/vllm-openai:cu130-nightly
  register: remote

- name: Compare it with the lock
  ansible.builtin.debug:
    msg: "{{ remote.digest }} (lock: {{ inferops_serving_image_lock.images['vllm/vllm-openai:cu130-nightly'].digest }})"

- name: Through the lab's registry (plain http on loopback)
  inferops.serving.image_digest_info:
    image: 127.0.0.1:5000/vllm/vllm-openai:cu130-nightly

- name: A private registry with credentials
  inferops.serving.image_digest_info:
    image: registry.example.com/inference/vllm:prod
    username: "{{ registry_user }}"
    password: "{{ registry_token }}"
  no_log: true

- name: A private registry, with the credentials docker login stored for root (as the pull uses them)
  inferops.serving.image_digest_info:
    image: nvcr.io/nvidia/vllm:25.11-py3
  become: true
"""

RETURN = r"""
digest:
  description: The manifest digest the tag points to now.
  returned: success
  type: str
  sample: sha256:3dbe092e8e5a4b1d2c7f0e6a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c
media_type:
  description: The media type of that manifest (an index or manifest list for a multi-platform tag).
  returned: success
  type: str
  sample: application/vnd.oci.image.index.v1+json
registry:
  description: The registry the reference names (V(docker.io) when it names none).
  returned: success
  type: str
  sample: docker.io
repository:
  description: The repository on it (with C(library/) for a one-component Docker Hub name).
  returned: success
  type: str
  sample: vllm/vllm-openai
tag:
  description: The tag asked for, V(null) for a digest reference.
  returned: success
  type: str
  sample: cu130-nightly
url:
  description: The manifest URL asked.
  returned: success
  type: str
  sample: https://registry-1.docker.io/v2/vllm/vllm-openai/manifests/cu130-nightly
authenticated:
  description: How the registry was asked in the end, V(none), V(bearer) or V(basic).
  returned: success
  type: str
  sample: bearer
credentials:
  description:
    - Where the credentials came from (never the credentials), V(none) when none were sent;
      else V(options), C(<config.json> auths[<key>]) or C(docker-credential-<helper>).
  returned: success
  type: str
  sample: /root/.docker/config.json auths[nvcr.io]
"""

import base64
import json
import os
import pwd
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.module_utils.urls import fetch_url

from ansible_collections.inferops.serving.plugins.module_utils._registry import (
    RegistryError,
    docker_config_auth,
    follow_redirect,
    helper_credentials,
    is_loopback,
    manifest_digest,
    manifest_request,
    parse_challenge,
    registry_errors,
    token_from_answer,
    token_request,
)


MAX_REDIRECTS = 5


class Registry(object):
    """The HTTP side: fetch_url with the headers the decisions in _registry chose.

    Redirects are followed here, not by urllib (main() turns its following off), so that the
    Authorization header never follows one to another origin (_registry.follow_redirect).
    """

    def __init__(self, module):
        self.module = module

    def ask(self, method, url, headers, use_proxy):
        """(status, lower-cased headers, body bytes, error text) of one request, redirects followed."""
        for dummy in range(MAX_REDIRECTS + 1):
            response, info = fetch_url(self.module, url, method=method, headers=headers, use_proxy=use_proxy,
                                       timeout=self.module.params["timeout"], force=True)
            status = info.get("status", -1)
            if status in (301, 302, 303, 307, 308) and info.get("location"):
                url, headers = follow_redirect(url, info["location"], headers)
                use_proxy = not is_loopback(urlsplit(url).netloc)
                continue
            # An HTTP error comes back as the (already read) HTTPError, its body in info["body"].
            if response is not None and "body" not in info:
                body = response.read() if method == "GET" else b""
            else:
                body = to_bytes(info.get("body") or b"")
            found = dict((str(key).lower(), value) for key, value in info.items() if isinstance(value, str))
            return status, found, body, info.get("msg")
        raise RegistryError("%s: more than %d redirects" % (url.split("?")[0], MAX_REDIRECTS))


def _basic(username, password):
    return "Basic " + to_text(base64.b64encode(to_bytes("%s:%s" % (username, password or ""))))


def _config_path(module):
    if module.params["docker_config"]:
        return module.params["docker_config"]
    if os.environ.get("DOCKER_CONFIG"):
        return os.path.join(os.environ["DOCKER_CONFIG"], "config.json")
    # The home directory as the Docker CLI finds it: $HOME, else the user's passwd entry.
    return os.path.join(os.environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir, ".docker", "config.json")


def _helper(module, helper, server):
    """The credentials the Docker credential helper keeps for ``server``, or None when it has none."""
    program = "docker-credential-%s" % helper
    path = module.get_bin_path(program)
    if not path:
        raise RegistryError("the Docker config names the credential helper %s for %s, which is not installed on "
                            "this host (install it, or give username and password)" % (program, server))
    rc, out, err = module.run_command([path, "get"], data=server, binary_data=True)
    if rc != 0:
        # docker-credential-helpers' ErrCredentialsNotFound; anything else is the helper's failure,
        # its output not repeated (a helper's error may quote what it holds).
        if "credentials not found" in (out + err).lower():
            return None
        raise RegistryError("%s get for %s exited %d" % (program, server, rc))
    found = helper_credentials(out)
    module.no_log_values.add(found["password"])
    return found


def credentials(module, registry):
    """(username, password, where they came from) for ``registry``, or (None, None, 'none')."""
    params = module.params
    if params["username"]:
        return params["username"], params["password"], "options"
    path = _config_path(module)
    if not os.path.exists(path):
        return None, None, "none"
    try:
        with open(path, "rb") as handle:
            config = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        # The parser's message names a position, never the content.
        raise RegistryError("cannot read the Docker config %s: %s" % (path, type(exc).__name__))
    where = docker_config_auth(config, registry)
    if where["helper"]:
        found = _helper(module, where["helper"], where["server"])
        if found:
            return found["username"], found["password"], "docker-credential-%s" % where["helper"]
    entry = where["entry"]
    if entry:
        module.no_log_values.add(entry["password"])
        return entry["username"], entry["password"], "%s auths[%s]" % (path, entry["key"])
    return None, None, "none"


def resolve(module, registry):
    params = module.params
    try:
        request = manifest_request(params["image"], params["insecure_registries"])
    except RegistryError as exc:
        module.fail_json(msg="image=%s: %s" % (params["image"], exc))
    url, use_proxy = request["url"], request["use_proxy"]
    headers = {"Accept": request["accept"]}
    authenticated, source = "none", "none"
    try:
        status, found, body, error = registry.ask("HEAD", url, headers, use_proxy)
        if status == 401:
            # Credentials are looked for only when the registry asks for them.
            username, password, source = credentials(module, request["registry"])
            basic = _basic(username, password) if username else None
            if basic:
                module.no_log_values.add(basic[len("Basic "):])
            scheme, challenge = parse_challenge(found.get("www-authenticate"))
            if scheme == "bearer":
                token_url = token_request(challenge, request["repository"], request["scheme"])
                token_headers = {"Accept": "application/json"}
                if basic:
                    token_headers["Authorization"] = basic
                realm_host = urlsplit(token_url).netloc
                token_status, dummy, token_body, token_error = registry.ask(
                    "GET", token_url, token_headers, not is_loopback(realm_host))
                if token_status != 200:
                    # Not a word of the answer: the realm may be any URL.
                    module.fail_json(msg="the token endpoint %s of %s answered %s%s"
                                         % (token_url.split("?")[0], request["registry"], token_status,
                                            " (%s)" % token_error if token_status == -1 and token_error else "")
                                         + (" for the credentials from %s" % source if basic else
                                            " (asked anonymously: give username and password, or docker login, "
                                            "for a private repository)"))
                token = token_from_answer(to_text(token_body))
                module.no_log_values.add(token)
                headers["Authorization"] = "Bearer " + token
            elif scheme == "basic":
                if not basic:
                    module.fail_json(msg="%s asks for a user name and password (Basic authentication): give "
                                         "username and password, or docker login to it on this host"
                                         % request["registry"])
                headers["Authorization"] = basic
            else:
                module.fail_json(msg="%s asks for %s authentication, which this module does not speak (Bearer "
                                     "and Basic only)" % (request["registry"], scheme))
            authenticated = scheme
            status, found, body, error = registry.ask("HEAD", url, headers, use_proxy)
        digest = manifest_digest(found) if status == 200 else None
        if status == 200 and digest is None:
            # No Docker-Content-Digest: the digest of the manifest's bytes.
            status, found, body, error = registry.ask("GET", url, headers, use_proxy)
            digest = manifest_digest(found, body) if status == 200 else None
        if status != 200 and not body:
            # A HEAD answer carries no body: ask again for the registry's error text.
            dummy, dummy2, body, error = registry.ask("GET", url, headers, use_proxy)
    except RegistryError as exc:
        module.fail_json(msg="%s: %s" % (url, exc))
    if status != 200:
        what = "has no manifest for %s" % request["reference"] if status == 404 else "answered %s" % status
        module.fail_json(msg="%s %s: %s" % (url, what, registry_errors(to_text(body)) or error),
                         status=status, url=url)
    return {"digest": digest, "media_type": (found.get("content-type") or "").split(";")[0].strip() or None,
            "registry": request["registry"], "repository": request["repository"], "tag": request["tag"],
            "url": url, "authenticated": authenticated, "credentials": source if authenticated != "none" else "none"}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            insecure_registries=dict(type="list", elements="str", default=[]),
            username=dict(type="str"),
            password=dict(type="str", no_log=True),
            docker_config=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        required_by={"password": "username"},
        supports_check_mode=True,
    )
    # Redirects are followed by Registry.ask, which decides which headers go along.
    module.params["follow_redirects"] = "none"
    module.exit_json(changed=False, **resolve(module, Registry(module)))


if __name__ == "__main__":
    main()
