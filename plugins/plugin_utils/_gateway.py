# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The front door: the LiteLLM proxy configuration derived from the fleet's deployment plans.

``gateway_config()`` turns the serving hosts' plans (the server role's public ``server_deployment``
fact, one per host) into LiteLLM's proxy ``config.yaml`` as a plain mapping: one model group per
served model name, one deployment per serving host (its ``api_base`` from the host's address
and the plan's port, its API key, when the engine has one, as an ``os.environ/<VAR>``
reference), the extra served names and the operator's aliases as ``model_group_alias``, the
router's retries, cooldowns, timeouts and health-check routing, and the master key as
``os.environ/LITELLM_MASTER_KEY``. The config holds no secret value: the values travel in the
gateway's 0600 env file, written by ``gateway_env_text()`` (systemd ``EnvironmentFile=``).

``gateway_plan()`` is what the gateway role reads (the ``inferops.serving.gateway_plan`` lookup,
computed once): ``gateway_config()`` of the serving hosts' variables plus the URLs, the hosts the
run proved and the keys' problems, no secret value; ``gateway_env_file()`` is the env file's text
apart, for a no_log task. ``routing_plan()`` is what the internal routing role (outage, drain,
undrain) needs of each gateway host, read from that host's own variables in one place.

Schema: LiteLLM 1.106 (``litellm/proxy/proxy_server.py`` ``load_config``: ``model_list``,
``router_settings`` passed to ``Router(...)``, ``general_settings.master_key`` resolved through
``os.environ/``; ``litellm/router.py`` ``Router.__init__``: ``num_retries``, ``timeout``,
``stream_timeout``, ``allowed_fails``, ``cooldown_time``, ``model_group_alias``,
``enable_health_check_routing``; the proxy's ``background_health_checks`` and
``health_check_interval`` general settings).
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.plugin_utils import _engines as engines
from ansible_collections.inferops.serving.plugins.plugin_utils import _validate


class GatewayError(ValueError):
    """A gateway setting or a serving host's plan the gateway cannot front; the message names it."""


MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
# The env file's name in gateway_config_dir (the gateway role's __gateway_env_file).
ENV_FILE_NAME = "gateway.env"
# The drain filter (roles/gateway/files/inferops_drain.py, installed beside config.yaml as
# inferops_drain.py): LiteLLM loads ``<module>.<instance>`` from the config's directory.
DRAIN_CALLBACK = "inferops_drain.drain_filter"
# The client keys (roles/gateway/files/inferops_auth.py, installed beside config.yaml): LiteLLM's
# documented custom auth (general_settings.custom_auth) and the per-key usage counters (a callback).
AUTH_HOOK = "inferops_auth.user_api_key_auth"
USAGE_CALLBACK = "inferops_auth.usage"
# The keys file's format and the HMAC's label (inferops_auth.FORMAT, HASH_LABEL: a unit test keeps them equal).
CLIENT_KEYS_FORMAT = "inferops-gateway-client-keys/1"
CLIENT_KEY_HASH_LABEL = b"inferops.serving gateway client key v1"
CLIENT_KEY_MIN_LENGTH = 32
CLIENT_KEY_FIELDS = ("name", "key", "models", "client", "rpm", "expires")
# Docker's stop timeout when the plan sets none, and the server role's readiness cap of a restart
# (roles/server/defaults/main.yml server_ready_timeout; a unit test keeps them equal): the
# routing role's outage estimate (roles/server/vars/main.yml __server_outage_seconds).
DOCKER_STOP_TIMEOUT = 10
SERVER_READY_TIMEOUT = 1800
# LiteLLM's OpenAI-compatible provider for self-hosted engines: ``hosted_vllm/<model>`` sends the
# request to ``<api_base>/chat/completions`` (or ``/completions``) unchanged and leaves the
# Authorization header out when no key is set (litellm/llms/hosted_vllm/chat/transformation.py).
# SGLang serves the same OpenAI API, so one provider fronts both engines.
PROVIDER = {"vllm": "hosted_vllm", "sglang": "hosted_vllm"}
ROUTING_STRATEGIES = ("simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing-v2")
# The router's settings with their defaults, suited to long generations: a completion of a few
# thousand tokens at ~20 tok/s (the GB10 field report's single stream) runs minutes, so the request timeout is
# 10 min; a stream must send its first chunk within ``stream_timeout`` (TTFT ~9 s at saturation
# in the GB10 field report, minutes for a long prompt under load). A failed deployment is cooled down at once
# (``allowed_fails`` 0) so the retry goes to another host of the group: an engine that answers
# 5xx is draining, restarting or dead. LiteLLM never cools down a group's only deployment.
SETTINGS = {
    "num_retries": 2,
    "allowed_fails": 0,
    "cooldown_time": 30,
    "timeout": 600,
    "stream_timeout": 120,
    "health_check_interval": 30,
    "routing_strategy": "simple-shuffle",
    "aliases": {},
}
_INT_SETTINGS = {"num_retries": (0, 10), "allowed_fails": (0, 100), "cooldown_time": (1, 3600),
                 "timeout": (1, 86400), "stream_timeout": (1, 86400), "health_check_interval": (5, 3600)}
# What systemd's EnvironmentFile= reads literally without quoting: no quotes, backslashes,
# dollars (expanded by newer systemd), spaces or control characters.
_ENV_VALUE_RE = re.compile(r"[A-Za-z0-9._~+/=:@%^,-]+")


def _var(name):
    return "gateway_" + name


# LiteLLM reads any config value beginning os.environ/ from the proxy's environment
# (litellm/proxy/proxy_server.py load_config -> get_secret): a served name or an alias spelled so
# would hand a client the master key or an engine key. Only the role's own references may.
ENV_REFERENCE = "os.environ/"


def _is_env_reference(value):
    return isinstance(value, str) and value.strip().lower().startswith(ENV_REFERENCE)


def _refuse_env_reference(value, what):
    if _is_env_reference(value):
        raise GatewayError("%s: %s begins with %s, which LiteLLM resolves from the gateway's environment (its keys); "
                           "only the role's own key references may: give it another name"
                           % (what, _validate.describe(value), ENV_REFERENCE))


def url_host(address):
    """``address`` as the host part of a URL: an IPv6 address in brackets (``[fd00::5]``)."""
    address = str(address).strip()
    if address.startswith("[") and address.endswith("]"):
        return address
    try:
        if ipaddress.ip_address(address).version == 6:
            return "[%s]" % address
    except ValueError:
        pass
    return address


def check_settings(settings=None):
    """The gateway's settings (``gateway_*`` role variables without the prefix) checked, with defaults."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise GatewayError("unknown gateway settings %s; allowed: %s" % (", ".join(unknown), ", ".join(SETTINGS)))
    checked = dict(SETTINGS, **{k: v for k, v in settings.items() if v is not None})
    for key, (low, high) in _INT_SETTINGS.items():
        value = checked[key]
        if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, str) and value.isdigit()):
            raise GatewayError("%s: got %s; expected a whole number from %d to %d"
                               % (_var(key), _validate.describe(value), low, high))
        value = int(value)
        if not low <= value <= high:
            raise GatewayError("%s: got %d; expected a whole number from %d to %d" % (_var(key), value, low, high))
        checked[key] = value
    if checked["routing_strategy"] not in ROUTING_STRATEGIES:
        raise GatewayError("gateway_routing_strategy: got %s; expected one of %s"
                           % (_validate.describe(checked["routing_strategy"]), ", ".join(ROUTING_STRATEGIES)))
    aliases = checked["aliases"]
    if not isinstance(aliases, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip()
                                                   for k, v in aliases.items()):
        raise GatewayError("gateway_model_aliases: got %s; expected a mapping of alias to served model name, "
                           "e.g. {nemotron: RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4}"
                           % _validate.describe(aliases))
    checked["aliases"] = dict(aliases)
    return checked


def served_names(deployment):
    """Every name the host's engine answers to: the plan's served model name first, then the
    other names of ``--served-model-name`` (vLLM and SGLang take several)."""
    engine = deployment.get("engine")
    first = deployment.get("served_model_name")
    value = engines.arg_value(engine, (deployment.get("profile") or {}).get("args") or {},
                              engines.SERVED_MODEL_NAME_FLAGS.get(engine, ()))
    if isinstance(value, str):
        value = value.split()
    names = [first] + [str(v) for v in (value if isinstance(value, (list, tuple)) else []) if str(v) != first]
    return list(dict.fromkeys(names))


def key_env_name(host, secret):
    """The gateway env file's variable for ``host``'s engine key: ``GATEWAY_<HOST>_<SECRET>``."""
    return re.sub(r"[^A-Z0-9_]", "_", "GATEWAY_%s_%s" % (str(host).upper(), str(secret).upper()))


def _backend(index, backend):
    if not isinstance(backend, Mapping):
        raise GatewayError("serving host %d: got %s; expected {host, address, deployment}"
                           % (index, _validate.describe(backend)))
    host = backend.get("host")
    if not isinstance(host, str) or not host:
        raise GatewayError("serving host %d: no inventory name (host)" % index)
    deployment = backend.get("deployment")
    if not isinstance(deployment, Mapping) or not deployment.get("served_model_name") or not deployment.get("port"):
        raise GatewayError("%s: no deployment plan (server_deployment) in this run: run site.yml (or "
                           "playbooks/gateway.yml) with a --limit that includes it, or plan it first with the server "
                           "role's resolve entry point (inferops.serving.server, tasks_from: resolve)" % host)
    address = backend.get("address")
    if not isinstance(address, str) or not address.strip() or re.search(r"[\s/]", address):
        raise GatewayError("%s: gateway_backend_address got %s; expected the host name or IP address the gateway "
                           "reaches the engine at" % (host, _validate.describe(address)))
    bare = address.strip()[1:-1] if address.strip().startswith("[") and address.strip().endswith("]") else address
    if ":" in bare:
        try:
            ipaddress.IPv6Address(bare.strip())
        except ValueError:
            raise GatewayError("%s: gateway_backend_address got %s; expected a host name, an IPv4 address or an IPv6 "
                               "address (a port is the plan's: leave it out)" % (host, _validate.describe(address))) from None
    if deployment.get("engine") not in PROVIDER:
        raise GatewayError("%s: engine %r has no LiteLLM provider here; expected one of %s"
                           % (host, deployment.get("engine"), ", ".join(sorted(PROVIDER))))
    return host, address, deployment


def expected_back_seconds(host, deployment, ready_timeout=None):
    """Seconds until ``host``'s engine is expected back once it stops: its plan's stop timeout
    (``spec.stop_timeout``, Docker's 10 s when it sets none) plus the server role's readiness cap of
    a restart (``server_ready_timeout``, 1800 s by default) - the routing role's outage estimate
    (roles/server/vars/main.yml ``__server_outage_seconds``). The drain's 503 sends it as Retry-After."""
    stop = ((deployment.get("spec") or {}).get("stop_timeout")) or DOCKER_STOP_TIMEOUT
    ready = SERVER_READY_TIMEOUT if ready_timeout is None else ready_timeout
    for name, value in (("spec.stop_timeout", stop), ("server_ready_timeout", ready)):
        if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.strip().isdigit()):
            raise GatewayError("%s: %s got %s; expected a whole number of seconds" % (host, name, _validate.describe(value)))
    return int(stop) + int(ready)


def gateway_config(backends, settings=None, client_auth=False):
    """The LiteLLM proxy configuration of the serving hosts ``backends``.

    ``backends``: a list of ``{host, address, deployment}`` - the inventory name, the address the
    gateway reaches the host at, and its plan (``server_deployment``). Returns
    ``{config, groups, aliases, key_env}``: ``config`` is LiteLLM's ``config.yaml`` (no secret
    value), ``groups`` each model group's hosts, ``aliases`` alias -> group, ``key_env`` each env
    file variable -> ``{host, secret}`` (the name in that host's ``server_secrets``). With
    ``client_auth`` (client keys declared) the config loads the client-key hook and its usage counters.
    """
    settings = check_settings(settings)
    if not isinstance(backends, (list, tuple)) or not backends:
        raise GatewayError("the gateway has no serving host to front: the inventory's serving hosts have no "
                           "deployment plan (set gateway_serving_hosts to their group)")
    groups, models, model_list, key_env, aliases = {}, {}, [], {}, {}
    seen = set()
    for index, backend in enumerate(backends):
        host, address, deployment = _backend(index, backend)
        if host in seen:
            raise GatewayError("%s: listed twice among the serving hosts" % host)
        seen.add(host)
        names = served_names(deployment)
        for name in names:
            _refuse_env_reference(name, "%s: served model name (its profile's --served-model-name, else its model)"
                                  % host)
        group = names[0]
        model = deployment.get("model")
        if group in models and models[group][1] != model:
            raise GatewayError("model group %s: %s serves %s but %s serves %s under the same name; a group's hosts "
                               "must serve one checkpoint (give one of them another --served-model-name)"
                               % (group, models[group][0], models[group][1], host, model))
        models.setdefault(group, (host, model))
        groups.setdefault(group, []).append(host)
        params = {
            "model": "%s/%s" % (PROVIDER[deployment["engine"]], group),
            "api_base": "http://%s:%d/v1" % (url_host(address), int(deployment["port"])),
        }
        if deployment.get("api_key_env"):
            var = key_env_name(host, deployment["api_key_env"])
            if var in key_env and key_env[var]["host"] != host:
                raise GatewayError("serving hosts %s and %s would share the gateway's engine-key variable %s (a name "
                                   "keeps only letters, digits and _, in upper case): rename one of them in the "
                                   "inventory so the two differ in more than - . _ or case"
                                   % (key_env[var]["host"], host, var))
            key_env[var] = {"host": host, "secret": deployment["api_key_env"]}
            params["api_key"] = "os.environ/" + var
        model_list.append({"model_name": group, "litellm_params": params,
                           # id: the deployment's stable id (LiteLLM's model_id); inferops_host: the
                           # serving host it is, read by the drain and by status (_gateway_routing);
                           # inferops_retry_after: the drain's Retry-After when no host of the group is left.
                           "model_info": {"id": host, "inferops_host": host, "mode": "chat",
                                          "inferops_retry_after": expected_back_seconds(
                                              host, deployment, backend.get("ready_timeout"))}})
        for alias in names[1:]:
            aliases.setdefault(alias, group)
    for alias, target in sorted(settings["aliases"].items()):
        _refuse_env_reference(alias, "gateway_model_aliases (an alias)")
        _refuse_env_reference(target, "gateway_model_aliases.%s" % alias)
        if target not in groups:
            raise GatewayError("gateway_model_aliases.%s: %s is not a served model name of the fleet; expected one "
                               "of %s" % (alias, target, ", ".join(sorted(groups))))
        aliases[alias] = target
    for alias, target in aliases.items():
        if alias in groups:
            raise GatewayError("alias %s (for %s) is also the served model name of %s; an alias must be a name no "
                               "host serves" % (alias, target, ", ".join(groups[alias])))
    model_list.sort(key=lambda entry: (entry["model_name"], entry["model_info"]["id"]))
    router = {
        "routing_strategy": settings["routing_strategy"],
        "num_retries": settings["num_retries"],
        "allowed_fails": settings["allowed_fails"],
        "cooldown_time": settings["cooldown_time"],
        "timeout": settings["timeout"],
        "stream_timeout": settings["stream_timeout"],
        "enable_health_check_routing": True,
    }
    if aliases:
        router["model_group_alias"] = dict(sorted(aliases.items()))
    config = {
        "model_list": model_list,
        "router_settings": router,
        # Requests pass through unchanged: an unknown parameter is the engine's to refuse.
        "litellm_settings": {"drop_params": False, "request_timeout": settings["timeout"],
                             # The drained hosts leave the routing (module beside config.yaml);
                             # with client keys, each key's requests and tokens are counted.
                             "callbacks": [DRAIN_CALLBACK] + ([USAGE_CALLBACK] if client_auth else [])},
        "general_settings": {
            "master_key": "os.environ/" + MASTER_KEY_ENV,
            "background_health_checks": True,
            "health_check_interval": settings["health_check_interval"],
            # /health lists each deployment's api_base and error, not the request parameters.
            "health_check_details": False,
        },
    }
    if client_auth:
        # Every authenticated request: the master key, else a client key's keyed hash (inferops_auth.py).
        config["general_settings"]["custom_auth"] = AUTH_HOOK
    _only_own_env_references(config)
    return {"config": config, "groups": {k: sorted(v) for k, v in sorted(groups.items())},
            "aliases": dict(sorted(aliases.items())), "key_env": dict(sorted(key_env.items()))}


def _only_own_env_references(config):
    """Every ``os.environ/`` reference of ``config`` (keys and values) is one the role put there: the
    master key's and each deployment's ``api_key``; any other is refused, naming where it is."""
    allowed = {("general_settings", "master_key")}
    allowed.update(("model_list", index, "litellm_params", "api_key") for index in range(len(config["model_list"])))

    def walk(node, path):
        items = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if _is_env_reference(key):
                _refuse_env_reference(key, "the gateway configuration at %s" % ".".join(map(str, path)))
            if _is_env_reference(value) and path + (key,) not in allowed:
                _refuse_env_reference(value, "the gateway configuration at %s" % ".".join(map(str, path + (key,))))
            walk(value, path + (key,))
    walk(config, ())


def _env_problem(value, what):
    if not isinstance(value, str) or not value:
        return "%s: missing or not a string; the gateway needs it (value not shown)" % what
    if not _ENV_VALUE_RE.fullmatch(value):
        return ("%s: the value has a character systemd's EnvironmentFile= would not read literally (a quote, "
                "backslash, dollar, space or control character); use a key of letters, digits and "
                "._~+/=:@%%^,- (value not shown)" % what)
    return None


def _env_entries(key_env, host_secrets, master_key):
    """``[(variable, value, problem or None)]``: the master key first, then each engine key."""
    entries = []
    problem = _env_problem(master_key, "gateway_master_key")
    if problem is None and (not master_key.startswith("sk-") or len(master_key) < 12):
        problem = ("gateway_master_key: not 12 or more characters beginning with 'sk-' as LiteLLM's keys are; set "
                   "it in the vault, e.g. ansible-vault encrypt_string \"sk-$(openssl rand -hex 24)\" --name "
                   "gateway_master_key (value not shown)")
    entries.append((MASTER_KEY_ENV, master_key, problem))
    for var, source in sorted((key_env or {}).items()):
        secrets = (host_secrets or {}).get(source["host"]) or {}
        value = secrets.get(source["secret"]) if isinstance(secrets, Mapping) else None
        entries.append((var, value, _env_problem(value, "%s: server_secrets.%s" % (source["host"], source["secret"]))))
    return entries


def gateway_env_problems(key_env, host_secrets, master_key):
    """What is wrong with the gateway's keys, one message each naming the variable; no value ever."""
    return [problem for _var_name, _value, problem in _env_entries(key_env, host_secrets, master_key) if problem]


def gateway_env_text(key_env, host_secrets, master_key):
    """The gateway's 0600 env file: ``LITELLM_MASTER_KEY`` and each engine key of ``key_env``.

    ``host_secrets``: each serving host's ``server_secrets`` (env var name -> value). LiteLLM's
    keys begin with ``sk-``; so must the master key. Errors name the variable, never a value.
    """
    entries = _env_entries(key_env, host_secrets, master_key)
    problems = [problem for _var_name, _value, problem in entries if problem]
    if problems:
        raise GatewayError("; ".join(problems))
    return "".join("%s=%s\n" % (var, value) for var, value, _problem in entries)


# ---- the client keys (gateway_client_keys) ----

# ansible-core's vaulted strings (2.18 AnsibleVaultEncryptedUnicode, 2.19+ EncryptedString): str() decrypts.
_VAULT_TYPES = ("AnsibleVaultEncryptedUnicode", "EncryptedString")
_CLIENT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CLIENT_KEYS_FIX = ("gateway_client_keys: a list of {name, key, models, client, rpm, expires}, e.g. "
                    "[{name: team-a-2026-12, key: \"{{ vault_team_a_key }}\", models: [nemotron], rpm: 60, "
                    "expires: \"2027-06-30T00:00:00Z\"}]")


def client_key_hash(master_key, key):
    """HMAC-SHA256 (hex) of the client key ``key`` under a secret derived from the master key: what
    the keys file holds, and what inferops_auth.py computes of each request's key."""
    secret = hmac.new(master_key.encode("utf-8"), CLIENT_KEY_HASH_LABEL, hashlib.sha256).digest()
    return hmac.new(secret, key.encode("utf-8"), hashlib.sha256).hexdigest()


def _expiry(value):
    """An ISO 8601 date or time (a YAML date too) as UTC ``YYYY-MM-DDTHH:MM:SSZ``; a date alone is its
    00:00 UTC; a time without a zone is UTC. Raises ValueError."""
    if isinstance(value, datetime.datetime):
        when = value
    elif isinstance(value, datetime.date):
        when = datetime.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        when = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    else:
        raise ValueError(value)
    when = when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_client_keys(client_keys, groups, aliases, master_key=None):
    """``(entries, problems)`` of ``gateway_client_keys``: each entry ``{name, client, key, models, rpm,
    expires}`` - ``models`` every name a client may send for its models (each group it names, by its
    served name or an alias, with all of that group's aliases), ``expires`` UTC or None - and what is
    wrong, one message each naming the variable, the entry, the problem and the fix, never a key."""
    if client_keys is None or client_keys == "":
        client_keys = []
    if not isinstance(client_keys, (list, tuple)):
        return [], ["gateway_client_keys: got %s; expected %s" % (_validate.describe(client_keys), _CLIENT_KEYS_FIX)]
    by_group = {}
    for alias, group in aliases.items():
        by_group.setdefault(group, []).append(alias)
    entries, problems, names, hashes = [], [], set(), {}
    for index, raw in enumerate(client_keys):
        where = "gateway_client_keys[%d]" % index
        if not isinstance(raw, Mapping):
            problems.append("%s: got %s; expected a mapping {name, key, models, ...} (%s)"
                            % (where, _validate.describe(raw), _CLIENT_KEYS_FIX))
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not _CLIENT_NAME_RE.fullmatch(name):
            problems.append("%s.name: got %s; expected 1 to 64 letters, digits, '.', '_' or '-', beginning with a "
                            "letter or digit (e.g. team-a-2026-12)" % (where, _validate.describe(name)))
            continue
        where = "gateway_client_keys[%d] (%s)" % (index, name)
        unknown = sorted(set(map(str, raw)) - set(CLIENT_KEY_FIELDS))
        if unknown:
            problems.append("%s: unknown field %s; the fields are %s" % (where, ", ".join(unknown), ", ".join(CLIENT_KEY_FIELDS)))
        if name in names:
            problems.append("%s: the name %s is used twice; each key needs its own name (a rotation is two entries "
                            "with two names, e.g. team-a-2026-11 and team-a-2026-12, and one client: team-a)" % (where, name))
        names.add(name)
        client = raw.get("client", name)
        if client is None:
            client = name
        if not isinstance(client, str) or not _CLIENT_NAME_RE.fullmatch(client):
            problems.append("%s.client: got %s; expected 1 to 64 letters, digits, '.', '_' or '-' (the client the "
                            "key belongs to; two keys of one client during a rotation)" % (where, _validate.describe(client)))
        key = raw.get("key")
        if type(key).__name__ in _VAULT_TYPES:  # a vaulted value ansible-core left encrypted in a list
            key = str(key)
        if not isinstance(key, str) or not key:
            problems.append("%s.key: missing or not a string; set it from the vault, e.g. ansible-vault encrypt_string "
                            "\"sk-$(openssl rand -hex 24)\" (value not shown)" % where)
        elif len(key) < CLIENT_KEY_MIN_LENGTH or key != key.strip() or any(ord(c) < 33 or ord(c) == 127 for c in key):
            problems.append("%s.key: shorter than %d characters or with a space or control character; use a random "
                            "key of %d or more, e.g. \"sk-$(openssl rand -hex 24)\" from the vault (value not shown)"
                            % (where, CLIENT_KEY_MIN_LENGTH, CLIENT_KEY_MIN_LENGTH))
        elif isinstance(master_key, str) and master_key and hmac.compare_digest(key.encode("utf-8"), master_key.encode("utf-8")):
            problems.append("%s.key: is the master key (gateway_master_key), which stays the operator's; give the client "
                            "a key of its own (value not shown)" % where)
        else:
            digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
            if digest in hashes:
                problems.append("%s.key: the same key as %s; each entry needs its own key (value not shown)"
                                % (where, hashes[digest]))
            hashes.setdefault(digest, name)
        models = raw.get("models")
        if isinstance(models, str):
            models = [models]
        allowed = []
        if not isinstance(models, (list, tuple)) or not models or not all(isinstance(m, str) and m for m in models):
            problems.append("%s.models: got %s; expected a list of the fleet's served model names or aliases, e.g. [%s]"
                            % (where, _validate.describe(models), ", ".join(sorted(groups)[:2])))
        else:
            for model in models:
                group = model if model in groups else aliases.get(model)
                if group is None:
                    problems.append("%s.models: %s is not served by the fleet; expected a served model name or alias: %s"
                                    % (where, model, ", ".join(sorted(set(groups) | set(aliases)))))
                    continue
                allowed += [group] + by_group.get(group, [])
        rpm = raw.get("rpm")
        if rpm is not None and (isinstance(rpm, bool) or not (isinstance(rpm, int) or isinstance(rpm, str) and rpm.strip().isdigit())
                                or not 1 <= int(rpm) <= 1000000):
            problems.append("%s.rpm: got %s; expected requests per minute, a whole number from 1 to 1000000, or leave "
                            "it out for no limit" % (where, _validate.describe(rpm)))
            rpm = None
        expires = raw.get("expires")
        if expires is not None:
            try:
                expires = _expiry(expires)
            except (ValueError, TypeError, OverflowError):
                problems.append("%s.expires: got %s; expected an ISO 8601 date or time, e.g. 2027-06-30 or "
                                "2027-06-30T12:00:00Z (UTC when no zone is given), or leave it out for no expiry"
                                % (where, _validate.describe(expires)))
                expires = None
        entries.append({"name": name, "client": client if isinstance(client, str) else name, "key": key,
                        "models": sorted(set(allowed)), "rpm": int(rpm) if rpm is not None else None, "expires": expires})
    return entries, problems


def client_keys_summary(entries):
    """What the plan shows of the client keys: no key, no hash."""
    return [{k: entry[k] for k in ("name", "client", "models", "rpm", "expires")} for entry in entries]


def client_keys_text(entries, master_key):
    """The keys file inferops_auth.py reads: each entry's hash (:func:`client_key_hash`), never the key."""
    keys = [{"name": e["name"], "client": e["client"], "hmac": client_key_hash(master_key, e["key"]),
             "models": e["models"], "rpm": e["rpm"], "expires": e["expires"]} for e in sorted(entries, key=lambda e: e["name"])]
    return json.dumps({"format": CLIENT_KEYS_FORMAT, "hash": "hmac-sha256", "keys": keys}, indent=2, sort_keys=True) + "\n"


# ---- the plan the gateway role reads (the gateway_plan lookup) ----

def local_url(listen_address, port, tls=False):
    """Where the gateway host's own requests reach the proxy: loopback when it listens there or on
    every interface (IPv4 ``0.0.0.0``, IPv6 ``::``: ``[::1]``), else its listen address, an IPv6
    one in brackets; ``https`` with ``tls`` (a certificate and key are given)."""
    address = str(listen_address).strip()
    if address in ("0.0.0.0", "127.0.0.1", ""):
        address = "127.0.0.1"
    elif address in ("::", "[::]"):
        address = "::1"
    return "%s://%s:%d" % (scheme(tls), url_host(address), int(port))


def scheme(tls):
    """``https`` when the proxy speaks TLS, else ``http``."""
    return "https" if tls else "http"


def gateway_address(listen_address, port, host_address=None, tls=False):
    """``{client_url, local_url}``: the URL clients use (``_gateway_routing.client_url``) and
    where the gateway host's own requests reach the proxy (:func:`local_url`); https with ``tls``."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import client_url
    if isinstance(port, bool) or not (isinstance(port, int) or isinstance(port, str) and port.strip().isdigit()) \
            or not 0 < int(port) < 65536:
        raise GatewayError("gateway_port: got %s; expected the port the proxy listens on, e.g. 4000"
                           % _validate.describe(port))
    return {"client_url": client_url(str(listen_address), int(port), str(host_address or "localhost"), scheme(tls)),
            "local_url": local_url(listen_address, int(port), tls)}


# ---- TLS (gateway_tls_certificate, gateway_tls_key: PEM text from the vault) ----

TLS_CERTIFICATE_VAR = "gateway_tls_certificate"
TLS_KEY_VAR = "gateway_tls_key"
# Where the role writes them, under gateway_config_dir: the certificate 0644, the key 0640 root:<proxy group>.
TLS_DIR = "tls"
TLS_CERTIFICATE_FILE = "certificate.pem"
TLS_KEY_FILE = "key.pem"


def _given(value):
    return value is not None and not (isinstance(value, str) and not value.strip())


def check_tls(certificate=None, key=None, now=None):
    """``(problems, tls)`` of the proxy's certificate and key (PEM text).

    Neither given: ``([], None)`` - the proxy speaks plain HTTP. Else each problem names the
    variable, what is wrong and the fix (never a byte of the key): one given without the other, a
    text that is no PEM certificate (the server's first, its chain after) or no unencrypted PEM
    private key (LiteLLM's --ssl_keyfile_path takes no passphrase), a key that is not the
    certificate's, a certificate past its end. ``tls``: ``{fingerprint, names, not_after}`` - the
    SHA-256 of the server certificate's DER bytes (the role's own reads pin it), its DNS and IP
    names, its end (ISO 8601).
    """
    if not _given(certificate) and not _given(key):
        return [], None
    if not _given(certificate) or not _given(key):
        missing, given = (TLS_CERTIFICATE_VAR, TLS_KEY_VAR) if not _given(certificate) else (TLS_KEY_VAR, TLS_CERTIFICATE_VAR)
        return ["%s is set but %s is not: give both (the PEM certificate and its private key, from the vault) for "
                "TLS, or neither for plain HTTP" % (given, missing)], None
    if not isinstance(certificate, str) or not isinstance(key, str):
        bad = TLS_CERTIFICATE_VAR if not isinstance(certificate, str) else TLS_KEY_VAR
        return ["%s: got a %s; expected PEM text (-----BEGIN ...)"
                % (bad, type(certificate if bad == TLS_CERTIFICATE_VAR else key).__name__)], None
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
    except ImportError:
        return ["%s, %s: the controller's Python has no cryptography library to check them; install it "
                "(pip install cryptography: ansible-core's own dependency)" % (TLS_CERTIFICATE_VAR, TLS_KEY_VAR)], None
    problems = []
    cert = None
    try:
        cert = x509.load_pem_x509_certificates(certificate.encode("utf-8"))[0]
    except (ValueError, TypeError):
        problems.append("%s: not a PEM certificate (expected -----BEGIN CERTIFICATE-----, the server's certificate "
                        "first, its chain after)" % TLS_CERTIFICATE_VAR)
    private = None
    try:
        private = serialization.load_pem_private_key(key.encode("utf-8"), password=None)
    except TypeError:
        problems.append("%s: the private key is encrypted; LiteLLM takes no passphrase: give it unencrypted "
                        "(openssl pkey -in key.pem -out plain.pem) and keep it in the vault" % TLS_KEY_VAR)
    except Exception:  # noqa: BLE001 - any parse error of the library; never its text (it may quote the key)
        problems.append("%s: not a PEM private key (expected -----BEGIN PRIVATE KEY----- or -----BEGIN RSA/EC "
                        "PRIVATE KEY-----)" % TLS_KEY_VAR)
    if cert is None or private is None:
        return problems, None

    def public(item):
        return item.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)

    if public(cert) != public(private):
        problems.append("%s does not match %s: the key is not the certificate's (compare openssl x509 -noout -pubkey "
                        "with openssl pkey -pubout); give the key the certificate was issued for"
                        % (TLS_KEY_VAR, TLS_CERTIFICATE_VAR))
    not_after = cert.not_valid_after_utc
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if not_after <= now:
        problems.append("%s: the certificate expired on %s; renew it" % (TLS_CERTIFICATE_VAR, not_after.isoformat()))
    names = []
    try:
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [str(n) for n in alt.get_values_for_type(x509.DNSName)] + \
            [str(n) for n in alt.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        pass
    return problems, {"fingerprint": cert.fingerprint(hashes.SHA256()).hex(), "names": names,
                      "not_after": not_after.isoformat()}


def tls_files(config_dir):
    """``{certificate_file, key_file, dir}`` under ``gateway_config_dir``."""
    base = str(config_dir).rstrip("/") + "/" + TLS_DIR
    return {"dir": base, "certificate_file": base + "/" + TLS_CERTIFICATE_FILE, "key_file": base + "/" + TLS_KEY_FILE}


def _vars_of(hostvars, host):
    found = hostvars.get(host) if isinstance(hostvars, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def serving_backends(hosts, hostvars):
    """``[{host, address, deployment}]`` of the serving hosts ``hosts`` from their variables: the
    address the gateway reaches each at (``gateway_backend_address``, else ``ansible_host``, else
    the inventory name) and its published plan (``server_deployment``; None when it has none)."""
    found = []
    for host in hosts:
        host_vars = _vars_of(hostvars, host)
        if "gateway_backend_address" in host_vars:
            address = host_vars["gateway_backend_address"]
        else:
            address = host_vars.get("ansible_host", host)
        found.append({"host": str(host), "address": address, "deployment": host_vars.get("server_deployment"),
                      "ready_timeout": host_vars.get("server_ready_timeout")})
    return found


def proven_hosts(hosts, hostvars):
    """The serving hosts the server role proved in this run (its public ``server_summary``) and did
    not fail after (``server_failure``: its rescue puts the host back itself once its rollback is
    proven; ``inferops_serving_failure``: site.yml's record of a host whose converge failed)."""
    return [str(host) for host in hosts if host in hostvars and "server_summary" in _vars_of(hostvars, host)
            and not {"server_failure", "inferops_serving_failure"} & set(_vars_of(hostvars, host))]


def host_secrets(hosts, hostvars):
    """Each serving host's ``server_secrets`` (for the engine keys of the env file)."""
    return {str(host): _vars_of(hostvars, host).get("server_secrets") or {} for host in hosts}


# The proxy's environment (systemd Environment=), LiteLLM's production settings
# (docs.litellm.ai/docs/proxy/prod): LITELLM_MODE=PRODUCTION (proxy_cli.py loads no .env file from
# its working directory), JSON_LOGS (one JSON object a line to the journal), LITELLM_LOG above
# DEBUG (litellm/_logging.py defaults to DEBUG, which logs request parameters); the package's own
# model cost map (no download from GitHub at start).
PRODUCTION_ENV = (("LITELLM_MODE", "PRODUCTION"), ("JSON_LOGS", "True"), ("LITELLM_LOG", "WARNING"),
                  ("LITELLM_LOCAL_MODEL_COST_MAP", "True"))
# The unit's paths the lookup is given (roles/gateway/vars/main.yml __gateway_unit_paths).
UNIT_PATHS = ("venv", "config_file", "env_file", "proxy_dir", "drain_file", "keys_file", "usage_file", "config_dir")


def gateway_unit(paths, user, listen_address, port, tls=False):
    """The values of the gateway unit's template (roles/gateway/templates/etc/systemd/system/
    inferops-gateway.service.j2): ``exec_start`` (LiteLLM's CLI, with --ssl_certfile_path and
    --ssl_keyfile_path under TLS), ``environment`` (each ``Environment=`` value, quoted),
    ``state_directory`` (the proxy's own writable directory under /var/lib), ``capabilities``
    (CAP_NET_BIND_SERVICE for a port under 1024, else none), ``user``. Every path escaped
    (plugins/plugin_utils/_systemd.py); a value no unit line can carry is refused, naming its variable.
    """
    from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import SystemdValueError, systemd_escape
    paths = dict(paths or {})
    missing = [name for name in UNIT_PATHS if not paths.get(name)]
    if missing:
        raise GatewayError("the gateway unit's paths lack %s (roles/gateway/vars/main.yml __gateway_unit_paths)"
                           % ", ".join(missing))
    names = {"venv": "gateway_venv", "config_file": "gateway_config_dir", "env_file": "gateway_config_dir",
             "config_dir": "gateway_config_dir", "drain_file": "gateway_state_dir", "keys_file": "gateway_config_dir",
             "proxy_dir": "gateway_state_dir", "usage_file": "gateway_state_dir"}
    try:
        def word(value, var):
            return systemd_escape(value, var, "exec")

        argv = [word(str(paths["venv"]).rstrip("/") + "/bin/litellm", "gateway_venv"),
                "--config", word(paths["config_file"], "gateway_config_dir"),
                "--host", word(listen_address, "gateway_listen_address"), "--port", str(int(port))]
        if tls:
            files = tls_files(paths["config_dir"])
            argv += ["--ssl_certfile_path", word(files["certificate_file"], "gateway_config_dir"),
                     "--ssl_keyfile_path", word(files["key_file"], "gateway_config_dir")]
        environment = ["%s=%s" % pair for pair in PRODUCTION_ENV]
        for name, key in (("HOME", "proxy_dir"), ("INFEROPS_GATEWAY_DRAIN_FILE", "drain_file"),
                          ("INFEROPS_GATEWAY_KEYS_FILE", "keys_file"), ("INFEROPS_GATEWAY_USAGE_FILE", "usage_file")):
            environment.append(name + "=" + str(paths[key]))
        environment = [systemd_escape(value, names.get(value.split("=", 1)[0], "gateway_state_dir"), "text",
                                      quote="always") for value in environment]
        for key in ("env_file", "proxy_dir"):
            systemd_escape(paths[key], names[key], "text")
        proxy_dir = "/" + str(paths["proxy_dir"]).strip("/")
        if not proxy_dir.startswith("/var/lib/") or len(proxy_dir) <= len("/var/lib/"):
            raise GatewayError("the proxy's directory %s is not under /var/lib (systemd's StateDirectory=)" % proxy_dir)
        user_word = systemd_escape(user, "gateway_user", "text")
    except SystemdValueError as exc:
        raise GatewayError(str(exc)) from None
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", str(user)):
        raise GatewayError("gateway_user: got %s; expected a system user name (lower-case letters, digits, - and _)"
                           % _validate.describe(user))
    return {"exec_start": " ".join(argv), "environment": environment, "user": user_word,
            "env_file": systemd_escape(paths["env_file"], "gateway_config_dir", "text"),
            "state_directory": proxy_dir[len("/var/lib/"):], "working_directory": proxy_dir,
            "capabilities": "CAP_NET_BIND_SERVICE" if int(port) < 1024 else ""}


def gateway_plan(hosts, hostvars, settings=None, listen_address="127.0.0.1", port=4000, host_address=None,
                 master_key=None, client_keys=None, tls_certificate=None, tls_key=None, unit_paths=None,
                 user="inferops-gateway"):
    """Everything the gateway role writes and proves, from the serving hosts' published plans.

    ``hosts``: the serving hosts (``gateway_serving_hosts`` expanded); ``hostvars``: every host's
    variables (only ``server_deployment``, ``gateway_backend_address``, ``ansible_host``,
    ``server_summary``, ``server_failure`` and, for ``key_problems``, ``server_secrets`` are
    read). Returns :func:`gateway_config`'s ``config``, ``groups``, ``aliases``, ``key_env`` and
    ``backends`` (each host's ``{host, address, group, api_base}``), ``expect`` (every model group
    and alias the proof must see listed), ``client_url`` (what clients use), ``local_url`` (the
    role's own requests on the gateway host), ``hosts`` and ``proven`` (the hosts this run proved,
    which the role puts back in routing), ``client_keys`` (each client key's name, client, models,
    rpm and expiry: no key, no hash) and ``key_problems`` (what is wrong with the master key, an
    engine key or a client key, naming the variable, never a value), ``tls`` (None for plain
    HTTP, else the certificate's ``fingerprint``, ``names`` and ``not_after`` and where the role
    writes it and its key, from :func:`check_tls` of ``tls_certificate`` and ``tls_key``: a
    problem of theirs is in ``key_problems``, naming the variable), and with ``unit_paths`` the
    systemd unit's values (:func:`gateway_unit`). No secret value in it.
    """
    hosts = [str(host) for host in hosts]
    tls_problems, tls = check_tls(tls_certificate, tls_key)
    tls_on = _given(tls_certificate) or _given(tls_key)
    backends = serving_backends(hosts, hostvars)
    result = gateway_config(backends, settings, client_auth=bool(client_keys))
    by_host = {entry["model_info"]["id"]: entry for entry in result["config"]["model_list"]}
    result["backends"] = [{"host": backend["host"], "address": backend["address"],
                           "group": by_host[backend["host"]]["model_name"],
                           "api_base": by_host[backend["host"]]["litellm_params"]["api_base"]} for backend in backends]
    result["expect"] = sorted(result["groups"]) + sorted(result["aliases"])
    result.update(gateway_address(listen_address, port, host_address, tls_on))
    if tls is not None and unit_paths:
        tls.update(tls_files(unit_paths.get("config_dir")))
    result["tls"] = tls
    if unit_paths:
        result["unit"] = gateway_unit(unit_paths, user, listen_address, port, tls_on)
    result["hosts"] = hosts
    result["proven"] = proven_hosts(hosts, hostvars)
    result["key_problems"] = gateway_env_problems(result["key_env"], host_secrets(hosts, hostvars), master_key)
    entries, problems = check_client_keys(client_keys, result["groups"], result["aliases"], master_key)
    result["client_keys"] = client_keys_summary(entries)
    result["key_problems"] += problems + tls_problems
    return result


def gateway_client_keys_file(hosts, hostvars, settings=None, master_key=None, client_keys=None):
    """The keys file's text (:func:`client_keys_text`) for the fleet of ``hosts``; refuses what
    :func:`check_client_keys` or the master key's check finds wrong. Key material: no_log only."""
    hosts = [str(host) for host in hosts]
    result = gateway_config(serving_backends(hosts, hostvars), settings, client_auth=bool(client_keys))
    entries, problems = check_client_keys(client_keys, result["groups"], result["aliases"], master_key)
    problems = gateway_env_problems({}, {}, master_key) + problems
    if problems:
        raise GatewayError("; ".join(problems))
    return client_keys_text(entries, master_key)


def gateway_env_file(hosts, hostvars, settings=None, master_key=None):
    """The gateway's 0600 env file text for the serving hosts ``hosts`` (:func:`gateway_env_text`
    of their plans' keys and their ``server_secrets``). A secret: use it under no_log only."""
    hosts = [str(host) for host in hosts]
    key_env = gateway_config(serving_backends(hosts, hostvars), settings)["key_env"]
    return gateway_env_text(key_env, host_secrets(hosts, hostvars), master_key)


# ---- the routing plan (the routing role: outage, drain, undrain) ----

# The gateway role's defaults of the variables the routing role reads from each gateway host
# (roles/gateway/defaults/main.yml; a unit test keeps them equal): a gateway host's own value, an
# extra var included, wins.
ROUTING_DEFAULTS = {
    "gateway_config_dir": "/etc/inferops-gateway",
    "gateway_state_dir": "/var/lib/inferops-gateway",
    "gateway_listen_address": "127.0.0.1",
    "gateway_port": 4000,
    "gateway_service_name": "inferops-gateway",
    "gateway_drain": True,
    "gateway_drain_timeout": 600,
    "gateway_allow_outage": False,
    "gateway_tls_certificate": "",
}
_BOOL_TRUE = ("y", "yes", "on", "1", "true", "t")
_BOOL_FALSE = ("n", "no", "off", "0", "false", "f")


def _bool(gateway, name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _BOOL_TRUE or text in _BOOL_FALSE:
        return text in _BOOL_TRUE
    raise GatewayError("%s: %s got %s; expected true or false" % (gateway, name, _validate.describe(value)))


def _seconds(gateway, name, value, low=0):
    if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, str) and value.strip().isdigit()):
        raise GatewayError("%s: %s got %s; expected a whole number of seconds" % (gateway, name, _validate.describe(value)))
    if int(value) < low:
        raise GatewayError("%s: %s got %d; expected %d or more" % (gateway, name, int(value), low))
    return int(value)


def routing_plan(gateways, hostvars):
    """What the routing role needs of each gateway host, read from that host's own variables.

    ``gateways``: the ``gateway`` group's hosts. Returns ``{gateways: [{host, config_dir, state_dir, url,
    health_url, service, drain, drain_timeout, allow_outage}], draining: [hosts whose drain is
    on], drain_timeout}`` - ``drain_timeout`` the longest of the draining gateways' (the wait for
    the engine's requests is one wait). No secret in it: the master keys are
    :func:`routing_master_keys`'.
    """
    found = []
    for gateway in gateways:
        gateway = str(gateway)
        own = _vars_of(hostvars, gateway)

        def read(name, own=own):
            return own[name] if name in own and own[name] is not None else ROUTING_DEFAULTS[name]

        port = _seconds(gateway, "gateway_port", read("gateway_port"), low=1)
        pin = tls_pin(gateway, read("gateway_tls_certificate"))
        found.append({
            "host": gateway,
            "config_dir": str(read("gateway_config_dir")),
            "env_file": "%s/%s" % (str(read("gateway_config_dir")).rstrip("/"), ENV_FILE_NAME),
            "state_dir": str(read("gateway_state_dir")),
            "url": local_url(read("gateway_listen_address"), port, bool(pin)),
            "health_url": local_url(read("gateway_listen_address"), port, bool(pin)) + "/health",
            "tls_fingerprint": pin,
            "service": str(read("gateway_service_name")),
            "drain": _bool(gateway, "gateway_drain", read("gateway_drain")),
            "drain_timeout": _seconds(gateway, "gateway_drain_timeout", read("gateway_drain_timeout")),
            "allow_outage": _bool(gateway, "gateway_allow_outage", read("gateway_allow_outage")),
        })
    draining = [entry for entry in found if entry["drain"]]
    return {"gateways": found, "draining": [entry["host"] for entry in draining],
            "drain_timeout": max([entry["drain_timeout"] for entry in draining] or [0])}


def tls_pin(gateway, certificate):
    """The SHA-256 of the gateway host's certificate (``gateway_tls_certificate``), hex, which its
    own reads on loopback pin; None without one (plain HTTP)."""
    if not _given(certificate):
        return None
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        return x509.load_pem_x509_certificates(str(certificate).encode("utf-8"))[0].fingerprint(hashes.SHA256()).hex()
    except (ImportError, ValueError, TypeError):
        raise GatewayError("%s: %s is no PEM certificate the controller can read (cryptography); fix it and run "
                           "playbooks/gateway.yml" % (gateway, TLS_CERTIFICATE_VAR)) from None


def routing_master_keys(gateways, hostvars):
    """Each gateway host's ``gateway_master_key`` (None where it has none). A secret: no_log only."""
    return {str(gateway): _vars_of(hostvars, str(gateway)).get("gateway_master_key") for gateway in gateways}


# ---- a host leaves the fleet (playbooks/undeploy.yml, the routing role's `forget`) ----

ENV_REF = "os.environ/"


def forget_hosts(config, hosts):
    """The running LiteLLM configuration without the deployments of the serving hosts ``hosts``.

    ``config``: the gateway host's ``config.yaml`` as written by :func:`gateway_config` (parsed);
    ``hosts``: the inventory names leaving the fleet. The other hosts' deployments, the router's
    and the proxy's settings stay as they are (no plan of the other hosts is needed: a run limited
    to the hosts that leave edits what the gateway runs). Aliases of a model group left without a
    deployment go too. Returns ``{config, groups, removed, env}``: the new configuration, each
    model group's remaining hosts (routing.json), the hosts whose deployments were found and
    removed, and the env file's variables only they referenced (their engine keys: the lines to
    remove from the env file); ``expect`` the model groups and aliases the proxy must list after.
    Nothing is removed for a host the configuration does not list.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("model_list"), list):
        raise GatewayError("the gateway's config.yaml has no model_list (got %s): it was not written by the "
                           "gateway role; run playbooks/gateway.yml first" % _validate.describe(config))
    leaving = {str(host) for host in hosts or ()}
    kept, removed, env_removed, env_kept = [], set(), set(), set()
    for entry in config["model_list"]:
        info = entry.get("model_info") if isinstance(entry, Mapping) else None
        host = str((info or {}).get("inferops_host") or (info or {}).get("id") or "")
        key = ((entry.get("litellm_params") or {}).get("api_key") if isinstance(entry, Mapping) else None)
        env = key[len(ENV_REF):] if isinstance(key, str) and key.startswith(ENV_REF) else None
        if host in leaving:
            removed.add(host)
            if env:
                env_removed.add(env)
            continue
        kept.append(entry)
        if env:
            env_kept.add(env)
    groups = {}
    for entry in kept:
        info = entry.get("model_info") or {}
        groups.setdefault(str(entry.get("model_name")), []).append(str(info.get("inferops_host") or info.get("id")))
    new = dict(config, model_list=kept)
    router = config.get("router_settings")
    if isinstance(router, Mapping) and isinstance(router.get("model_group_alias"), Mapping):
        router = dict(router)
        aliases = {alias: target for alias, target in router["model_group_alias"].items()
                   if not isinstance(target, str) or target in groups}
        if aliases:
            router["model_group_alias"] = aliases
        else:
            del router["model_group_alias"]
        new["router_settings"] = router
    aliases = (new.get("router_settings") or {}).get("model_group_alias") or {}
    return {"config": new, "groups": {group: sorted(members) for group, members in sorted(groups.items())},
            "expect": sorted(groups) + sorted(alias for alias, target in aliases.items() if isinstance(target, str)),
            "removed": sorted(removed), "env": sorted(env_removed - env_kept)}


def probe_url(gateway, hostvars):
    """Where the monitoring host probes one gateway host's readiness: the URL its clients use
    (:func:`gateway_address` of its own ``gateway_listen_address``, ``gateway_port`` and
    ``ansible_host``), or its ``monitoring_scrape_address`` when set, then ``/health/readiness``
    (LiteLLM answers 200 there once the proxy serves, without a key); https when the gateway host has
    a certificate (``gateway_tls_certificate``: the monitoring host must trust its issuer)."""
    own = _vars_of(hostvars, str(gateway))
    tls = _given(own.get(TLS_CERTIFICATE_VAR))
    listen = own.get("gateway_listen_address") or ROUTING_DEFAULTS["gateway_listen_address"]
    port = own.get("gateway_port") if own.get("gateway_port") is not None else ROUTING_DEFAULTS["gateway_port"]
    address = own.get("monitoring_scrape_address")
    if address:
        _seconds(gateway, "gateway_port", port, low=1)
        url = "%s://%s:%d/v1" % (scheme(tls), url_host(address), int(port))
    else:
        url = gateway_address(listen, port, own.get("ansible_host") or str(gateway), tls)["client_url"]
    return url[:-len("/v1")] + "/health/readiness"
