# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What a tag points to, read from the registry's HTTP API (Docker Registry HTTP API V2 / OCI
distribution spec), as pure functions; the image_digest_info module does the HTTP.

The request: ``HEAD /v2/<repository>/manifests/<tag>`` with an ``Accept`` header naming the
OCI image index, the Docker manifest list, the Docker image manifest V2 and the OCI image
manifest, so a multi-platform tag answers with its index: the digest ``docker pull`` records in
``RepoDigests``. The answer's ``Docker-Content-Digest`` header is the digest (without it, the
SHA-256 of the manifest's bytes from a GET). A registry that wants a token answers 401 with
``WWW-Authenticate: Bearer realm="...",service="...",scope="..."``; the token comes from a GET of
the realm with ``service`` and ``scope`` as query parameters (the Docker token authentication
specification), JSON ``{"token": ...}`` or ``{"access_token": ...}``. Nothing here knows a
registry by name except Docker Hub's naming rules (``docker.io`` is served by
``registry-1.docker.io``; one-component names live under ``library/``), which are part of the
image reference format, not of its authentication.

Credentials stay with their host: a redirect to another origin (scheme, host, port) loses the
``Authorization`` header (as requests and community.docker do), the token realm of an https
registry must be https, and nothing a realm answers is repeated in a message. The credentials
``docker pull`` would use come from the Docker CLI's ``config.json`` (``auths`` entries, or the
credential helper ``credHelpers``/``credsStore`` names), looked up the way community.docker (the
pull) and the Docker CLI look them up.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import re

from urllib.parse import urlencode, urljoin, urlsplit

DOCKER_HUB = "docker.io"
# The host that serves docker.io's registry API (distribution/reference and the Docker CLI map
# docker.io and index.docker.io to it).
DOCKER_HUB_API = "registry-1.docker.io"
DOCKER_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")
# The key the Docker CLI writes for Docker Hub in config.json, and asks credential helpers for.
DOCKER_HUB_CONFIG_KEY = "https://index.docker.io/v1/"

# Media types of a tag's manifest, most specific last; all are accepted so a multi-platform tag
# answers with its index (the digest docker pull records), a single-platform one with its manifest.
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MANIFEST_MEDIA_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST, DOCKER_MANIFEST_V2, OCI_MANIFEST)
ACCEPT = ", ".join(MANIFEST_MEDIA_TYPES)

# distribution/reference's grammar (reference/regexp.go).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH_RE = re.compile(r"^%s(?:/%s)*$" % (_COMPONENT, _COMPONENT))
_TAG_RE = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")
_SHA256_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_HOST_RE = re.compile(r"^(?:\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
                      r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*)(?::[0-9]+)?$")


class RegistryError(ValueError):
    """A reference, a challenge or an answer of the registry that cannot be used; the message says why."""


def parse_reference(reference):
    """An image reference as docker reads it -> dict registry, repository, tag, digest, reference.

    ``registry`` is the host[:port] the reference names (``docker.io`` when it names none),
    ``repository`` the path on it (``library/<name>`` for a one-component Docker Hub name),
    ``tag`` the tag (``latest`` when neither tag nor digest is given), ``digest`` the digest
    given, and ``reference`` what the manifest URL asks for (the digest when one is given).
    """
    text = str(reference or "").strip()
    if not text:
        raise RegistryError("the image reference is empty")
    name, _at, digest = text.partition("@")
    if digest and not _DIGEST_RE.match(digest):
        raise RegistryError("%s: %r is not a digest (algorithm:hex)" % (text, digest))
    tag = None
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
        if not _TAG_RE.match(tag):
            raise RegistryError("%s: %r is not a valid tag" % (text, tag))
    first, sep, rest = name.partition("/")
    # The first component names a registry when it looks like a host: a dot, a port, localhost,
    # or upper case (distribution/reference's splitDockerDomain).
    if sep and ("." in first or ":" in first or first == "localhost" or first.lower() != first):
        registry, path = first, rest
        if not _HOST_RE.match(registry):
            raise RegistryError("%s: %r is not a registry host[:port]" % (text, registry))
    else:
        registry, path = DOCKER_HUB, name
    if registry.lower() in DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = "library/" + path
    if not _PATH_RE.match(path):
        raise RegistryError("%s: %r is not a repository name (lower-case components separated by '/')"
                            % (text, path))
    if tag is None and not digest:
        tag = "latest"
    return {"registry": registry, "repository": path, "tag": tag, "digest": digest or None,
            "reference": digest or tag}


def _host(registry):
    """The host of host[:port], without brackets around an IPv6 address."""
    if registry.startswith("["):
        return registry[1:registry.index("]")]
    return registry.rsplit(":", 1)[0] if registry.count(":") == 1 else registry


def is_loopback(registry):
    """True for a registry on this host: localhost, 127.0.0.0/8 or ::1."""
    host = _host(registry).lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def manifest_request(reference, insecure_registries=()):
    """How to ask the registry for a reference's manifest: dict url, accept, scheme, registry,
    repository, tag, digest, use_proxy.

    Plain http only for a loopback registry (the lab's 127.0.0.1:5000) or one listed in
    ``insecure_registries`` (host[:port], as in Docker's daemon.json); https otherwise. A loopback
    registry is never reached through a proxy.
    """
    ref = parse_reference(reference)
    insecure = set(str(item).strip().lower() for item in (insecure_registries or ()))
    api_host = DOCKER_HUB_API if ref["registry"] == DOCKER_HUB else ref["registry"]
    loopback = is_loopback(ref["registry"])
    scheme = "http" if loopback or ref["registry"].lower() in insecure else "https"
    return dict(ref, scheme=scheme, use_proxy=not loopback, accept=ACCEPT,
                url="%s://%s/v2/%s/manifests/%s" % (scheme, api_host, ref["repository"], ref["reference"]))


_AUTH_PARAM_RE = re.compile(r'\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)')


def parse_challenge(header):
    """``WWW-Authenticate`` -> (scheme lower-cased, {param: value}); RegistryError if unreadable.

    RFC 7235 auth-params: ``Bearer realm="https://auth.example/token",service="registry.example",
    scope="repository:org/name:pull"``; values may be quoted (with backslash escapes, commas and
    spaces inside) or tokens.
    """
    text = str(header or "").strip()
    scheme, _sp, rest = text.partition(" ")
    if not scheme or "=" in scheme:
        raise RegistryError("the registry's authentication challenge %r names no scheme" % text)
    params, pos, rest = {}, 0, rest.strip()
    while pos < len(rest):
        match = _AUTH_PARAM_RE.match(rest, pos)
        if not match:
            raise RegistryError("cannot read the registry's authentication challenge %r at %r" % (text, rest[pos:]))
        value = match.group(2)
        value = re.sub(r"\\(.)", r"\1", value) if value is not None else match.group(3)
        params[match.group(1).lower()] = value
        pos = match.end()
    return scheme.lower(), params


def token_request(params, repository, scheme="https"):
    """The token endpoint URL for a Bearer challenge's params: the realm with ``service`` and
    ``scope`` (the challenge's scope, else pull access to ``repository``) as query parameters.

    ``scheme`` is the registry's: the realm of an https registry must be https too, or the
    credentials sent to it (and the token it answers) would cross the network in clear text.
    """
    realm = params.get("realm")
    parts = urlsplit(realm or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RegistryError("the registry's Bearer challenge has no usable realm (%r)" % realm)
    if scheme == "https" and parts.scheme != "https":
        raise RegistryError("the registry is https but its Bearer challenge names the plain-http token realm "
                            "%s://%s: refused, the credentials and the token would cross the network in clear "
                            "text (a registry listed in insecure_registries may use one)" % (parts.scheme, parts.netloc))
    query = [(key, params[key]) for key in ("service",) if params.get(key)]
    query.append(("scope", params.get("scope") or "repository:%s:pull" % repository))
    return realm + ("&" if parts.query else "?") + urlencode(query)


def token_from_answer(text):
    """The bearer token in the token endpoint's JSON answer (``token``, else ``access_token``)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RegistryError("the token endpoint did not answer JSON: %s" % exc) from exc
    token = (data.get("token") or data.get("access_token")) if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        # Nothing of the answer is repeated: the realm may be any URL.
        raise RegistryError("the token endpoint's JSON answer has no token or access_token")
    return token


def _origin(url):
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def follow_redirect(url, location, headers):
    """(the URL a redirect from ``url`` leads to, the headers to send there).

    The ``Authorization`` header goes along only to the same origin (scheme, host and port): a
    registry that redirects elsewhere (a CDN, a mirror, a hostile host) never gets the Basic
    password or the Bearer token.
    """
    target = urljoin(url, str(location or ""))
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RegistryError("%s redirected to a location that is not an http(s) URL" % url.split("?")[0])
    if _origin(target) == _origin(url):
        return target, dict(headers)
    return target, dict((key, value) for key, value in headers.items() if key.lower() != "authorization")


def _config_host(key):
    """The registry a config.json key names: scheme and path dropped, Docker Hub's aliases as docker.io."""
    host = re.sub(r"^[a-z]+://", "", str(key)).split("/", 1)[0].lower()
    return DOCKER_HUB if host in DOCKER_HUB_ALIASES else host


def docker_config_auth(config, registry):
    """Where the Docker CLI config (``config.json``, parsed) keeps the credentials of ``registry``.

    Returns ``{"helper": name or None, "server": what to ask the helper for, "entry": ...}``:
    ``helper`` is the credential helper (``credHelpers[registry]``, else ``credsStore``) whose
    ``docker-credential-<helper> get`` is asked first; ``entry`` is the ``auths`` entry's
    ``{"key", "username", "password"}`` (from its base64 ``auth``, or its ``username`` and
    ``password``), or None. The same lookup as community.docker's (the pull): the exact key, then
    any key whose host is the registry (``https://index.docker.io/v1/`` for Docker Hub).
    RegistryError for an entry that cannot be used, naming the key, never the value.
    """
    if not isinstance(config, dict):
        raise RegistryError("the Docker config is not a JSON object")
    server = DOCKER_HUB_CONFIG_KEY if registry == DOCKER_HUB else registry
    helpers = config.get("credHelpers") or {}
    helper = (helpers.get(server) or helpers.get(registry)) if isinstance(helpers, dict) else None
    helper = helper or config.get("credsStore") or None
    auths = config.get("auths") or {}
    if not isinstance(auths, dict):
        raise RegistryError("the Docker config's auths is not a mapping")
    key = registry if registry in auths else next((k for k in auths if _config_host(k) == registry), None)
    entry = auths.get(key) if key is not None else None
    found = None
    if isinstance(entry, dict) and entry.get("auth"):
        try:
            username, sep, password = base64.b64decode(str(entry["auth"]), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            sep = username = password = ""
        if not sep or not username:
            raise RegistryError("the Docker config's auths entry %r has an auth value that is not base64 of "
                                "user:password (run docker login again)" % key)
        found = {"key": key, "username": username, "password": password}
    elif isinstance(entry, dict) and entry.get("username"):
        found = {"key": key, "username": str(entry["username"]), "password": str(entry.get("password") or "")}
    elif isinstance(entry, dict) and entry.get("identitytoken"):
        raise RegistryError("the Docker config's auths entry %r holds an identity token (an OAuth refresh token), "
                            "which image_digest_info does not exchange: give username and password" % key)
    return {"helper": str(helper) if helper else None, "server": server, "entry": found}


def helper_credentials(output):
    """``{"username", "password"}`` from a credential helper's ``get`` answer (``{"ServerURL",
    "Username", "Secret"}``, the docker-credential-helpers protocol); RegistryError without the value."""
    try:
        data = json.loads(output)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("Secret"), str) or not data.get("Username"):
        raise RegistryError("the credential helper's answer is not {ServerURL, Username, Secret}")
    if data["Username"] == "<token>":
        raise RegistryError("the credential helper holds an identity token (an OAuth refresh token), which "
                            "image_digest_info does not exchange: give username and password")
    return {"username": str(data["Username"]), "password": data["Secret"]}


def registry_errors(text):
    """The ``errors`` of a registry's JSON error body as ``CODE: message`` text, else the body's start."""
    try:
        errors = json.loads(text).get("errors") or []
        return "; ".join("%s: %s" % (e.get("code"), e.get("message")) for e in errors if isinstance(e, dict)) \
            or text[:200]
    except (ValueError, AttributeError):
        return str(text or "")[:200]


def manifest_digest(headers, body=None):
    """The manifest's digest: the ``Docker-Content-Digest`` header (any case), else the SHA-256 of
    ``body`` (the manifest's bytes from a GET); None when neither is there. RegistryError for a
    header that is not a sha256 digest or that disagrees with the body."""
    value = None
    for key, item in (headers or {}).items():
        if str(key).lower() == "docker-content-digest":
            value = str(item).strip()
    computed = "sha256:" + hashlib.sha256(body).hexdigest() if body is not None else None
    if value is not None and not _SHA256_RE.match(value):
        raise RegistryError("the registry's Docker-Content-Digest %r is not a sha256 digest" % value)
    if value and computed and value != computed:
        raise RegistryError("the registry's Docker-Content-Digest %s does not match the manifest it sent (%s)"
                            % (value, computed))
    return value or computed
