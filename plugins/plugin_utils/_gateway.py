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
# thousand tokens at ~20 tok/s (seed 000's single stream) runs minutes, so the request timeout is
# 10 min; a stream must send its first chunk within ``stream_timeout`` (TTFT ~9 s at saturation
# in seed 000, minutes for a long prompt under load). A failed deployment is cooled down at once
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
