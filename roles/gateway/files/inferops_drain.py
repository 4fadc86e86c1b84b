# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops_drain: the gateway's routing leaves out the serving hosts being drained.

Installed by the inferops.serving.gateway role next to the proxy's config.yaml and loaded by
LiteLLM from ``litellm_settings.callbacks: [inferops_drain.drain_filter]`` (LiteLLM 1.106
litellm/proxy/types_utils/utils.py ``get_instance_fn`` finds ``<module>.py`` beside the config).
LiteLLM's router calls every callback's ``async_filter_deployments`` after its cooldown filter
and before it picks a deployment (litellm/router.py ``async_callback_filter_deployments``).

The drain state is ``$INFEROPS_GATEWAY_DRAIN_FILE`` (the role's systemd unit sets it to
``<gateway_state_dir>/drained.json``), ``{"hosts": {"<inventory_hostname>": {since, by}}}``,
written by the collection's gateway_drain module (plugins/module_utils/_drain.py defines it).
Each deployment carries ``model_info.inferops_host``; a deployment whose host is drained gets
no new request. The file is read again only when it changed (inode, size, mtime); a file that
cannot be read keeps the last state read (logged): a half-written or removed file must not send
requests to an engine that is stopping.

When every deployment the router offers is drained, the request has nowhere to go: the filter
raises LiteLLM's ``ServiceUnavailableError`` (``status_code`` 503) naming the model group and
its drained hosts. The router lets a filter's exception through
(``async_callback_filter_deployments`` re-raises it) and the proxy answers with the exception's
``status_code`` (litellm/proxy/common_request_processing.py ``handle_llm_api_exception``):
a clear 503 at once. Returning an empty list instead would make the router's own
``No deployments available for selected model``, which the proxy answers 429 (rate limited:
the wrong thing to tell a client of a group that is down).

Standard library only, besides LiteLLM's own base class.
"""
from __future__ import annotations

import json
import logging
import os

try:
    from litellm.exceptions import ServiceUnavailableError
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # the collection's unit tests, without LiteLLM
    CustomLogger = object

    class ServiceUnavailableError(Exception):
        """LiteLLM's 503 (litellm/exceptions.py), as far as the proxy reads it: ``status_code``, ``message``."""

        def __init__(self, message, llm_provider, model):
            self.status_code, self.llm_provider, self.model = 503, llm_provider, model
            self.message = "litellm.ServiceUnavailableError: %s" % message
            super().__init__(self.message)

DRAIN_FILE_ENV = "INFEROPS_GATEWAY_DRAIN_FILE"
DEFAULT_DRAIN_FILE = "/var/lib/inferops-gateway/drained.json"
LOG = logging.getLogger("inferops_drain")


def read_drained(path):
    """The drained hosts of the state file ``path``; raises OSError or ValueError."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    hosts = data.get("hosts") if isinstance(data, dict) else None
    if not isinstance(hosts, dict):
        raise ValueError("expected {\"hosts\": {...}}")
    return frozenset(str(host) for host in hosts)


def routable(deployments, drained):
    """``deployments`` (LiteLLM's deployment dicts) without those of the ``drained`` hosts."""
    if not drained or not isinstance(deployments, list):
        return deployments
    return [d for d in deployments if ((d.get("model_info") or {}).get("inferops_host")) not in drained]


def nowhere_message(model, deployments):
    """Why a request for ``model`` has no host: ``deployments`` (all drained) named by host."""
    hosts = sorted({str((d.get("model_info") or {}).get("inferops_host")) for d in deployments})
    return ("model group %s has no host in the gateway's routing: %s drained (taken out for a restart or a "
            "rollout; it is put back once its engine is proven)" % (model, ", ".join(hosts)))


class DrainedHosts:
    """The drained hosts, read again when the file changed; the last good state when it cannot be read."""

    def __init__(self, path, read=read_drained, stat=os.stat):
        self.path, self._read, self._stat = path, read, stat
        self.hosts = frozenset()
        self._seen = None

    def current(self):
        try:
            info = self._stat(self.path)
            mark = (info.st_ino, info.st_size, info.st_mtime_ns)
        except FileNotFoundError:
            mark = None
        except OSError as exc:
            LOG.warning("inferops_drain: cannot stat %s (%s); keeping the drained hosts %s",
                        self.path, exc, sorted(self.hosts))
            return self.hosts
        if mark == self._seen:
            return self.hosts
        if mark is None:
            if self.hosts:
                LOG.warning("inferops_drain: %s is gone; keeping the drained hosts %s", self.path, sorted(self.hosts))
            self._seen = None
            return self.hosts
        try:
            hosts = self._read(self.path)
        except (OSError, ValueError) as exc:
            LOG.warning("inferops_drain: cannot read %s (%s); keeping the drained hosts %s",
                        self.path, exc, sorted(self.hosts))
            return self.hosts
        if hosts != self.hosts:
            LOG.warning("inferops_drain: out of routing now: %s", ", ".join(sorted(hosts)) or "none")
        self.hosts, self._seen = hosts, mark
        return self.hosts


class DrainFilter(CustomLogger):
    """LiteLLM's callback: each routing decision leaves out the drained hosts' deployments."""

    def __init__(self, path=None):
        if CustomLogger is not object:
            super().__init__()
        self.drained = DrainedHosts(path or os.environ.get(DRAIN_FILE_ENV) or DEFAULT_DRAIN_FILE)

    async def async_filter_deployments(self, model, healthy_deployments, messages, request_kwargs=None,
                                       parent_otel_span=None):
        left = routable(healthy_deployments, self.drained.current())
        if healthy_deployments and not left:
            raise ServiceUnavailableError(nowhere_message(model, healthy_deployments), llm_provider="", model=model)
        return left


drain_filter = DrainFilter()
