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

import re
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.plugin_utils import _engines as engines
from ansible_collections.inferops.serving.plugins.plugin_utils import _validate


class GatewayError(ValueError):
    """A gateway setting or a serving host's plan the gateway cannot front; the message names it."""


MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
# The drain filter (roles/gateway/files/inferops_drain.py, installed beside config.yaml as
# inferops_drain.py): LiteLLM loads ``<module>.<instance>`` from the config's directory.
DRAIN_CALLBACK = "inferops_drain.drain_filter"
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
    if deployment.get("engine") not in PROVIDER:
        raise GatewayError("%s: engine %r has no LiteLLM provider here; expected one of %s"
                           % (host, deployment.get("engine"), ", ".join(sorted(PROVIDER))))
    return host, address, deployment


def gateway_config(backends, settings=None):
    """The LiteLLM proxy configuration of the serving hosts ``backends``.

    ``backends``: a list of ``{host, address, deployment}`` - the inventory name, the address the
    gateway reaches the host at, and its plan (``server_deployment``). Returns
    ``{config, groups, aliases, key_env}``: ``config`` is LiteLLM's ``config.yaml`` (no secret
    value), ``groups`` each model group's hosts, ``aliases`` alias -> group, ``key_env`` each env
    file variable -> ``{host, secret}`` (the name in that host's ``server_secrets``).
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
            "api_base": "http://%s:%d/v1" % (address.strip(), int(deployment["port"])),
        }
        if deployment.get("api_key_env"):
            var = key_env_name(host, deployment["api_key_env"])
            key_env[var] = {"host": host, "secret": deployment["api_key_env"]}
            params["api_key"] = "os.environ/" + var
        model_list.append({"model_name": group, "litellm_params": params,
                           # id: the deployment's stable id (LiteLLM's model_id); inferops_host: the
                           # serving host it is, read by the drain and by status (_gateway_routing).
                           "model_info": {"id": host, "inferops_host": host, "mode": "chat"}})
        for alias in names[1:]:
            aliases.setdefault(alias, group)
    for alias, target in sorted(settings["aliases"].items()):
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
                             # The drained hosts leave the routing (module beside config.yaml).
                             "callbacks": [DRAIN_CALLBACK]},
        "general_settings": {
            "master_key": "os.environ/" + MASTER_KEY_ENV,
            "background_health_checks": True,
            "health_check_interval": settings["health_check_interval"],
            # /health lists each deployment's api_base and error, not the request parameters.
            "health_check_details": False,
        },
    }
    return {"config": config, "groups": {k: sorted(v) for k, v in sorted(groups.items())},
            "aliases": dict(sorted(aliases.items())), "key_env": dict(sorted(key_env.items()))}


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


# ---- the plan the gateway role reads (the gateway_plan lookup) ----

def local_url(listen_address, port):
    """Where the gateway host's own requests reach the proxy: loopback when it listens there or on
    every IPv4 interface, else its listen address."""
    address = "127.0.0.1" if str(listen_address) in ("0.0.0.0", "127.0.0.1") else str(listen_address)
    return "http://%s:%d" % (address, int(port))


def gateway_address(listen_address, port, host_address=None):
    """``{client_url, local_url}``: the URL clients use (``_gateway_routing.client_url``) and
    where the gateway host's own requests reach the proxy (:func:`local_url`)."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._gateway_routing import client_url
    if isinstance(port, bool) or not (isinstance(port, int) or isinstance(port, str) and port.strip().isdigit()) \
            or not 0 < int(port) < 65536:
        raise GatewayError("gateway_port: got %s; expected the port the proxy listens on, e.g. 4000"
                           % _validate.describe(port))
    return {"client_url": client_url(str(listen_address), int(port), str(host_address or "localhost")),
            "local_url": local_url(listen_address, int(port))}


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
        found.append({"host": str(host), "address": address, "deployment": host_vars.get("server_deployment")})
    return found


def proven_hosts(hosts, hostvars):
    """The serving hosts the server role proved in this run (its public ``server_summary``) and did
    not fail after (``server_failure``: its rescue puts the host back itself once its rollback is
    proven)."""
    return [str(host) for host in hosts if host in hostvars
            and "server_summary" in _vars_of(hostvars, host) and "server_failure" not in _vars_of(hostvars, host)]


def host_secrets(hosts, hostvars):
    """Each serving host's ``server_secrets`` (for the engine keys of the env file)."""
    return {str(host): _vars_of(hostvars, host).get("server_secrets") or {} for host in hosts}


def gateway_plan(hosts, hostvars, settings=None, listen_address="127.0.0.1", port=4000, host_address=None,
                 master_key=None):
    """Everything the gateway role writes and proves, from the serving hosts' published plans.

    ``hosts``: the serving hosts (``gateway_serving_hosts`` expanded); ``hostvars``: every host's
    variables (only ``server_deployment``, ``gateway_backend_address``, ``ansible_host``,
    ``server_summary``, ``server_failure`` and, for ``key_problems``, ``server_secrets`` are
    read). Returns :func:`gateway_config`'s ``config``, ``groups``, ``aliases``, ``key_env`` and
    ``backends`` (each host's ``{host, address, group, api_base}``), ``expect`` (every model group
    and alias the proof must see listed), ``client_url`` (what clients use), ``local_url`` (the
    role's own requests on the gateway host), ``hosts`` and ``proven`` (the hosts this run proved,
    which the role puts back in routing) and ``key_problems`` (what is wrong with the master key or
    an engine key, naming the variable, never a value). No secret value in it.
    """
    hosts = [str(host) for host in hosts]
    backends = serving_backends(hosts, hostvars)
    result = gateway_config(backends, settings)
    by_host = {entry["model_info"]["id"]: entry for entry in result["config"]["model_list"]}
    result["backends"] = [{"host": backend["host"], "address": backend["address"],
                           "group": by_host[backend["host"]]["model_name"],
                           "api_base": by_host[backend["host"]]["litellm_params"]["api_base"]} for backend in backends]
    result["expect"] = sorted(result["groups"]) + sorted(result["aliases"])
    result.update(gateway_address(listen_address, port, host_address))
    result["hosts"] = hosts
    result["proven"] = proven_hosts(hosts, hostvars)
    result["key_problems"] = gateway_env_problems(result["key_env"], host_secrets(hosts, hostvars), master_key)
    return result


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
    "gateway_state_dir": "/var/lib/inferops-gateway",
    "gateway_listen_address": "127.0.0.1",
    "gateway_port": 4000,
    "gateway_service_name": "inferops-gateway",
    "gateway_drain": True,
    "gateway_drain_timeout": 600,
    "gateway_allow_outage": False,
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

    ``gateways``: the ``gateway`` group's hosts. Returns ``{gateways: [{host, state_dir,
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
        found.append({
            "host": gateway,
            "state_dir": str(read("gateway_state_dir")),
            "health_url": local_url(read("gateway_listen_address"), port) + "/health",
            "service": str(read("gateway_service_name")),
            "drain": _bool(gateway, "gateway_drain", read("gateway_drain")),
            "drain_timeout": _seconds(gateway, "gateway_drain_timeout", read("gateway_drain_timeout")),
            "allow_outage": _bool(gateway, "gateway_allow_outage", read("gateway_allow_outage")),
        })
    draining = [entry for entry in found if entry["drain"]]
    return {"gateways": found, "draining": [entry["host"] for entry in draining],
            "drain_timeout": max([entry["drain_timeout"] for entry in draining] or [0])}


def routing_master_keys(gateways, hostvars):
    """Each gateway host's ``gateway_master_key`` (None where it has none). A secret: no_log only."""
    return {str(gateway): _vars_of(hostvars, str(gateway)).get("gateway_master_key") for gateway in gateways}
