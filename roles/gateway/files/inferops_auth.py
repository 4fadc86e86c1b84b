# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops_auth: the gateway's client keys, checked against keyed hashes, and each key's usage.

Installed by the inferops.serving.gateway role next to the proxy's config.yaml and loaded by
LiteLLM from ``general_settings.custom_auth: inferops_auth.user_api_key_auth`` (LiteLLM's
documented custom auth, docs/proxy/custom_auth; 1.106 litellm/proxy/auth/user_api_key_auth.py
calls it for every authenticated route, before its own master-key check, and returns what it
returns) and ``litellm_settings.callbacks: [inferops_auth.usage]`` (the per-key counters).

No database: LiteLLM's virtual keys need PostgreSQL and Prisma engines downloaded at run time.
The keys file ``$INFEROPS_GATEWAY_KEYS_FILE`` (the role writes ``<gateway_config_dir>/client_keys.json``,
root-owned, readable by the proxy's group) holds, per key, its name, its client, its models
(each allowed model group and the aliases of those groups), its requests per minute, its expiry
and ``hmac``: HMAC-SHA256 of the key under a secret derived from the master key
(:func:`hash_secret`) - never the key. The gateway plan (plugins/plugin_utils/_gateway.py
``client_keys_file``) computes the same hashes; a unit test keeps the two equal.

Each request's bearer key is, in this order:

- the master key (``LITELLM_MASTER_KEY``, compared in constant time): the operator, LiteLLM's
  ``PROXY_ADMIN``, every route;
- a client key whose HMAC equals an entry's (every entry compared, in constant time): refused 401
  when expired, 403 on a route other than the OpenAI inference and model-list routes or for a
  model not its own; else ``UserAPIKeyAuth`` with ``key_alias`` (the entry's name), ``user_id``
  (its client), ``models`` and ``rpm_limit`` (LiteLLM's own limiter enforces it, 429);
- anything else: 401.

The file is read again only when it changed (inode, size, mtime); one that cannot be read keeps
the last good keys (logged), and before a first good read no client key is accepted.

LiteLLM loads this file twice, once for ``custom_auth`` and once for the callback, as two module
objects: each reads the keys file itself.

Usage: ``usage`` counts each key's requests and tokens (LiteLLM's success and failure callbacks)
and, at most once a second, writes them to ``$INFEROPS_GATEWAY_USAGE_FILE`` (the role's unit:
``usage.json`` in the proxy's own directory) atomically: ``{"since", "updated", "keys": {name:
{client, requests, failures, prompt_tokens, completion_tokens, total_tokens}}}``. The operator
reads it (the role's status entry point). Counters start again at each proxy start (``since``).

Standard library only, besides LiteLLM's own types.
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import os
import tempfile
import threading
import time

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # the collection's unit tests, without LiteLLM
    CustomLogger = object

KEYS_FILE_ENV = "INFEROPS_GATEWAY_KEYS_FILE"
DEFAULT_KEYS_FILE = "/etc/inferops-gateway/client_keys.json"
USAGE_FILE_ENV = "INFEROPS_GATEWAY_USAGE_FILE"
MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
FORMAT = "inferops-gateway-client-keys/1"
# The HMAC's secret is derived from the master key with this label: the keys file alone (readable
# by the proxy's user) does not let anyone test a guessed key offline.
HASH_LABEL = b"inferops.serving gateway client key v1"
# The routes a client key may call (with and without /v1): chat and text completions, the model list.
CLIENT_ROUTES = frozenset(["/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions",
                           "/v1/models", "/models"])
MODEL_FREE_ROUTES = frozenset(["/v1/models", "/models"])
LOG = logging.getLogger("inferops_auth")


def hash_secret(master_key):
    """The HMAC secret of the client keys' hashes, derived from the master key."""
    return hmac.new(master_key.encode("utf-8"), HASH_LABEL, hashlib.sha256).digest()


def key_hash(secret, key):
    """HMAC-SHA256 of ``key`` under ``secret`` (:func:`hash_secret`), hex."""
    return hmac.new(secret, key.encode("utf-8"), hashlib.sha256).hexdigest()


def bare_key(api_key):
    """The key of an Authorization value (``Bearer <key>``, or the key alone)."""
    key = (api_key or "").strip()
    if key[:7].lower() == "bearer ":
        key = key[7:].strip()
    return key


def parse_time(text):
    """An ISO 8601 time, UTC when it names no zone."""
    when = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def read_keys(path):
    """The entries of the keys file ``path``; raises OSError or ValueError."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("keys"), list):
        raise ValueError("expected {\"format\": \"%s\", \"keys\": [...]}" % FORMAT)
    entries = []
    for entry in data["keys"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("hmac"), str) or not entry.get("name"):
            raise ValueError("an entry without name or hmac")
        entries.append({"name": str(entry["name"]), "client": str(entry.get("client") or entry["name"]),
                        "hmac": entry["hmac"], "models": frozenset(str(m) for m in entry.get("models") or ()),
                        "rpm": int(entry["rpm"]) if entry.get("rpm") else None,
                        "expires": parse_time(entry["expires"]) if entry.get("expires") else None})
    return entries


def find(entries, digest):
    """The entry whose hmac is ``digest``: every entry compared in constant time, none skipped."""
    found = None
    for entry in entries:
        if hmac.compare_digest(entry["hmac"].encode("ascii"), digest.encode("ascii")):
            found = entry
    return found


class ClientKeys:
    """The keys file's entries, read again when it changed; the last good entries when it cannot be read."""

    def __init__(self, path, read=read_keys, stat=os.stat):
        self.path, self._read, self._stat = path, read, stat
        self.entries = []
        self._seen = None
        self._lock = threading.Lock()

    def current(self):
        with self._lock:
            try:
                info = self._stat(self.path)
                mark = (info.st_ino, info.st_size, info.st_mtime_ns)
            except OSError as exc:
                if self._seen is not None or not isinstance(exc, FileNotFoundError):
                    LOG.warning("inferops_auth: cannot stat %s (%s); keeping %d client keys",
                                self.path, exc, len(self.entries))
                return self.entries
            if mark == self._seen:
                return self.entries
            try:
                entries = self._read(self.path)
            except (OSError, ValueError, TypeError) as exc:
                LOG.warning("inferops_auth: cannot read %s (%s); keeping %d client keys", self.path, exc, len(self.entries))
                return self.entries
            self.entries, self._seen = entries, mark
            LOG.warning("inferops_auth: %d client keys: %s", len(entries), ", ".join(e["name"] for e in entries) or "none")
            return self.entries


class Refused(Exception):
    """Why a key is refused: ``status`` 401 or 403 and a message naming no secret."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def decide(key, master_key, entries, route, model, now):
    """Who ``key`` is: ``("admin", None)`` for the master key, ``("client", entry)`` for a client key
    allowed on ``route`` for ``model``; raises Refused (401 unknown or expired, 403 not allowed)."""
    given = key.encode("utf-8")
    if master_key and hmac.compare_digest(given, master_key.encode("utf-8")):
        return "admin", None
    entry = find(entries, key_hash(hash_secret(master_key), key)) if master_key and key else None
    if entry is None:
        raise Refused(401, "Authentication Error: unknown key")
    if entry["expires"] is not None and entry["expires"] <= now:
        raise Refused(401, "Authentication Error: key %s expired at %s" % (entry["name"], entry["expires"].isoformat()))
    if route not in CLIENT_ROUTES:
        raise Refused(403, "key %s may not call %s: client keys may call /v1/chat/completions, /v1/completions "
                      "and /v1/models" % (entry["name"], route))
    if route not in MODEL_FREE_ROUTES and model not in entry["models"]:
        raise Refused(403, "key %s may not use model %s; its models: %s"
                      % (entry["name"], model if isinstance(model, str) else "(none given)",
                         ", ".join(sorted(entry["models"]))))
    return "client", entry


KEYS = ClientKeys(os.environ.get(KEYS_FILE_ENV) or DEFAULT_KEYS_FILE)


async def _requested_model(request):
    """The ``model`` of the request's JSON body, as LiteLLM parsed it (it caches the parsed body)."""
    if request.method != "POST":
        return None
    from litellm.proxy.common_utils.http_parsing_utils import _read_request_body
    body = await _read_request_body(request=request)
    return body.get("model") if isinstance(body, dict) else None


async def user_api_key_auth(request, api_key):
    """LiteLLM's custom auth (``general_settings.custom_auth``): see the module's docstring."""
    from litellm.proxy._types import LitellmUserRoles, ProxyErrorTypes, ProxyException, UserAPIKeyAuth
    key = bare_key(api_key)
    route = request.url.path
    try:
        who, entry = decide(key, os.environ.get(MASTER_KEY_ENV), KEYS.current(), route,
                            await _requested_model(request) if route in CLIENT_ROUTES else None,
                            datetime.datetime.now(datetime.timezone.utc))
    except Refused as refused:
        raise ProxyException(message=refused.message, param="api_key", code=refused.status,
                             type=ProxyErrorTypes.auth_error if refused.status == 401 else "permission_error") from None
    if who == "admin":
        return UserAPIKeyAuth(api_key=key, user_role=LitellmUserRoles.PROXY_ADMIN)
    # api_key: the rate limiter's and the logs' name of the key - its hash, never the key itself.
    return UserAPIKeyAuth(api_key=entry["hmac"], key_alias=entry["name"], key_name=entry["name"], user_id=entry["client"],
                          models=sorted(entry["models"]), rpm_limit=entry["rpm"],
                          user_role=LitellmUserRoles.INTERNAL_USER)


# ---- usage per key ----

def _usage_of(response_obj):
    usage = getattr(response_obj, "usage", None)
    if usage is None and isinstance(response_obj, dict):
        usage = response_obj.get("usage")

    def get(name):
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        return int(value) if isinstance(value, (int, float)) else 0
    return get("prompt_tokens"), get("completion_tokens"), get("total_tokens")


def _key_of(kwargs, entries):
    """``(name, client)`` of the client key a logged call was made with; None for the master key and
    LiteLLM's own calls (its background health checks)."""
    metadata = ((kwargs or {}).get("litellm_params") or {}).get("metadata") or {}
    name = metadata.get("user_api_key_alias")
    for entry in entries:
        if entry["name"] == name:
            return entry["name"], entry["client"]
    return None


class Usage(CustomLogger):
    """Each client key's requests and tokens since the proxy started, written to the usage file."""

    def __init__(self, path=None, clock=time.time):
        if CustomLogger is not object:
            super().__init__()
        self.path = path if path is not None else os.environ.get(USAGE_FILE_ENV)
        self._clock = clock
        self.since = self._stamp()
        self.keys = {}
        self._written = 0.0
        self._pending = None
        self._lock = threading.Lock()

    def _stamp(self):
        return datetime.datetime.fromtimestamp(self._clock(), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def count(self, name, client, ok, tokens=(0, 0, 0)):
        with self._lock:
            row = self.keys.setdefault(name, {"client": client, "requests": 0, "failures": 0, "prompt_tokens": 0,
                                              "completion_tokens": 0, "total_tokens": 0})
            row["requests"] += 1
            row["failures"] += 0 if ok else 1
            for field, value in zip(("prompt_tokens", "completion_tokens", "total_tokens"), tokens):
                row[field] += value
        self.write()

    def snapshot(self):
        with self._lock:
            return {"since": self.since, "updated": self._stamp(), "keys": json.loads(json.dumps(self.keys))}

    def write(self, force=False):
        """The counters to the usage file, atomically, at most once a second (every call with ``force``)."""
        if not self.path:
            return
        if not force and self._clock() - self._written < 1.0:
            with self._lock:  # written a moment ago: once more in a second, with what came since
                if self._pending is None:
                    self._pending = threading.Timer(1.0, self.write, kwargs={"force": True})
                    self._pending.daemon = True
                    self._pending.start()
            return
        with self._lock:
            self._pending = None
        self._written = self._clock()
        text = json.dumps(self.snapshot(), indent=2, sort_keys=True) + "\n"
        try:
            handle, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path) or ".", prefix=".usage-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except OSError as exc:
            LOG.warning("inferops_auth: cannot write %s (%s)", self.path, exc)

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        key = _key_of(kwargs, KEYS.current())
        if key:
            self.count(key[0], key[1], True, _usage_of(response_obj))

    async def async_log_failure_event(self, kwargs, response_obj, start_time, end_time):
        key = _key_of(kwargs, KEYS.current())
        if key:
            self.count(key[0], key[1], False)


usage = Usage()
