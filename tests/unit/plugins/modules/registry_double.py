# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST DOUBLE of a container registry's HTTP API: the Docker Registry HTTP API V2 / OCI
distribution specification (manifest requests) and Docker's token authentication specification
(the Bearer challenge and its token endpoint), on 127.0.0.1 (or another loopback address,
``host``: another origin), a port in 8270-8279.

It answers as the real ones do, as far as image_digest_info uses them:

* ``HEAD|GET /v2/<name>/manifests/<tag or digest>``: 200 with ``Content-Type`` (the manifest's
  media type), ``Content-Length`` and ``Docker-Content-Digest`` (the SHA-256 of the stored
  manifest bytes; ``omit_digest_header`` drops it, as some registries do); the body on GET only.
  A stored index whose media type the ``Accept`` header does not name is answered 404
  MANIFEST_UNKNOWN, as distribution (registry:2) answers a client that does not accept OCI
  indexes. An unknown tag: 404 ``{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest
  unknown","detail":{"Tag":...}}]}``.
* ``auth="bearer"``: without ``Authorization: Bearer <issued token>`` a 401 with
  ``WWW-Authenticate: Bearer realm="http://127.0.0.1:<port>/token",service="registry.test",
  scope="repository:<name>:pull"`` and distribution's UNAUTHORIZED error body; ``GET /token``
  answers ``{"token": ..., "access_token": ..., "expires_in": 300, "issued_at": ...}`` (the shape
  auth.docker.io sends).
* ``auth="basic"``: without ``Authorization: Basic <user:password>`` a 401 with
  ``WWW-Authenticate: Basic realm="Registry Realm"`` (distribution's htpasswd auth).

* ``redirect_to="http://127.0.0.2:<port>"``: every authorized manifest request is answered ``307
  Temporary Redirect`` to the same path there, as a registry redirects to a mirror or a storage backend.
* ``token_status`` other than 200: the token endpoint answers that status with ``token_error_body``
  (a realm may answer anything).
* ``realm``: the realm the Bearer challenge names instead of this double's own ``/token``.

Every request is recorded (method, path, query, headers) for the tests to assert on.
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading
from urllib.parse import parse_qs, urlsplit

PORTS = range(8270, 8280)
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


def manifest(media_type, platforms=("linux/amd64", "linux/arm64")):
    """Manifest bytes of the given media type (an index lists one manifest per platform)."""
    if media_type == OCI_INDEX:
        body = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 1000 + i,
             "digest": "sha256:" + hashlib.sha256(p.encode()).hexdigest(),
             "platform": {"os": p.split("/")[0], "architecture": p.split("/")[1]}}
            for i, p in enumerate(platforms)]}
    else:
        body = {"schemaVersion": 2, "mediaType": media_type,
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 7023,
                           "digest": "sha256:" + "c" * 64},
                "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 32654,
                            "digest": "sha256:" + "d" * 64}]}
    return json.dumps(body, separators=(",", ":")).encode()


class RegistryDouble(object):
    """``RegistryDouble(manifests={"vllm/vllm-openai:cu130-nightly": (media_type, bytes)}, auth=None)``."""

    def __init__(self, manifests, auth=None, user=("robot", "s3cret"), omit_digest_header=False,
                 token_status=200, token_error_body=b'{"details":"token service unavailable"}', host="127.0.0.1",
                 redirect_to=None, realm=None):
        self.manifests = dict(manifests)
        self.host = host
        self.redirect_to = redirect_to
        self.realm = realm
        self.token_error_body = token_error_body
        self.auth = auth
        self.user = user
        self.omit_digest_header = omit_digest_header
        self.token_status = token_status
        self.requests = []
        self.issued = set()
        self.server = None
        self.port = None

    def digest(self, key):
        return "sha256:" + hashlib.sha256(self.manifests[key][1]).hexdigest()

    def __enter__(self):
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, headers, body=b"", head=False):
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Docker-Distribution-Api-Version", "registry/2.0")
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _errors(self, status, code, message, detail=None, head=False, headers=None):
                body = json.dumps({"errors": [{"code": code, "message": message, "detail": detail}]}).encode()
                self._send(status, dict({"Content-Type": "application/json"}, **(headers or {})), body, head)

            def _handle(self, head):
                parts = urlsplit(self.path)
                double.requests.append({"method": self.command, "path": parts.path, "query": parse_qs(parts.query),
                                        "headers": dict((k.lower(), v) for k, v in self.headers.items())})
                if parts.path == "/token":
                    return self._token(parts)
                if not parts.path.startswith("/v2/") or "/manifests/" not in parts.path:
                    return self._errors(404, "NAME_UNKNOWN", "repository name not known to registry", head=head)
                name, reference = parts.path[4:].split("/manifests/", 1)
                if not self._authorized(name, head):
                    return None
                if double.redirect_to:
                    return self._send(307, {"Location": double.redirect_to + self.path}, head=head)
                key = name + ("@" if reference.startswith("sha256:") else ":") + reference
                if key not in double.manifests:
                    return self._errors(404, "MANIFEST_UNKNOWN", "manifest unknown", {"Tag": reference}, head)
                media_type, body = double.manifests[key]
                accepted = [item.strip() for item in self.headers.get("Accept", "").split(",")]
                if media_type == OCI_INDEX and OCI_INDEX not in accepted:
                    return self._errors(404, "MANIFEST_UNKNOWN", "OCI index found, but accept header does not "
                                        "support OCI indexes", head=head)
                headers = {"Content-Type": media_type}
                if not double.omit_digest_header:
                    headers["Docker-Content-Digest"] = double.digest(key)
                return self._send(200, headers, body, head)

            def _authorized(self, name, head):
                given = self.headers.get("Authorization", "")
                if double.auth == "bearer":
                    if given.startswith("Bearer ") and given[7:] in double.issued:
                        return True
                    realm = double.realm or "http://%s:%d/token" % (double.host, double.port)
                    challenge = ('Bearer realm="%s",service="registry.test",'
                                 'scope="repository:%s:pull"' % (realm, name))
                elif double.auth == "basic":
                    wanted = "Basic " + base64.b64encode(("%s:%s" % double.user).encode()).decode()
                    if given == wanted:
                        return True
                    challenge = 'Basic realm="Registry Realm"'
                else:
                    return True
                self._errors(401, "UNAUTHORIZED", "authentication required",
                             [{"Type": "repository", "Name": name, "Action": "pull"}], head,
                             {"WWW-Authenticate": challenge})
                return False

            def _token(self, parts):
                if double.token_status != 200:
                    return self._send(double.token_status, {"Content-Type": "application/json"},
                                      double.token_error_body)
                token = "tok-%d" % len(double.issued)
                double.issued.add(token)
                body = json.dumps({"token": token, "access_token": token, "expires_in": 300,
                                   "issued_at": "2026-11-30T17:00:00Z"}).encode()
                return self._send(200, {"Content-Type": "application/json"}, body)

            def do_HEAD(self):
                self._handle(head=True)

            def do_GET(self):
                self._handle(head=False)

        for port in PORTS:
            try:
                self.server = http.server.ThreadingHTTPServer((self.host, port), Handler)
            except OSError:
                continue
            self.port = port
            break
        else:
            raise RuntimeError("no free port in 8270-8279 for the registry double")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
