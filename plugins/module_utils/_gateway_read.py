# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What the gateway's answers prove, decided apart from the reads (``gateway_info`` reads).

The gateway role proves a running LiteLLM proxy after every converge: it answers
``/health/readiness``, lists every model group and alias of the plan on ``GET /v1/models`` with
the master key, and refuses that request without it (401). It then reads which deployments the
proxy runs (``GET /v1/model/info``) for ``gateway_routing``: only each deployment's
``model_name`` and ``model_info.inferops_host`` are kept, never its ``litellm_params`` (which
carry the engines' keys).
"""
from __future__ import annotations

import json
from collections.abc import Mapping


def parse_json(data):
    """The JSON of an answer's body (bytes), or None when it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def error_message(answer):
    """LiteLLM's own reason in an error answer (``{"error": {"message": ...}}``), or None."""
    error = answer.get("error") if isinstance(answer, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    return " ".join(str(message).split()) if message else None


def listed_ids(answer):
    """The ids ``GET /v1/models`` lists (OpenAI's ``{"data": [{"id": ...}]}``), in its order."""
    entries = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [str(entry["id"]) for entry in entries if isinstance(entry, Mapping) and entry.get("id") is not None]


def readiness_message(url, seconds, last, service):
    """Why the proxy is not proven ready yet: what ``/health/readiness`` answered last."""
    return ("The gateway on %s did not answer /health/readiness with 200 within %d s (last: %s); see journalctl -u %s."
            % (url, seconds, last, service))


def proof_problems(url, service, expect, models_status, listed, unauthenticated_status, reason=None):
    """The messages of what the answers do not prove (empty: proven). ``expect``: the model groups
    and aliases that must be listed; ``models_status``: the status of ``GET /v1/models`` with the
    master key (``reason``: LiteLLM's message with it); ``unauthenticated_status``: its status
    without a key. LiteLLM 1.106.12 without a database answers a key that is not its master key
    with 400 "No connected db.", not 401."""
    problems = []
    if models_status != 200:
        problems.append("GET %s/v1/models with gateway_master_key answered %s%s, not 200: the proxy does not take "
                        "the key it was converged with (another run changed it?), or fails; see journalctl -u %s."
                        % (url, models_status, " (%s)" % reason if reason else "", service))
    else:
        missing = [name for name in expect if name not in listed]
        if missing:
            problems.append("The gateway on %s does not list %s (it lists %s); see journalctl -u %s."
                            % (url, ", ".join(missing), ", ".join(listed) or "nothing", service))
    if unauthenticated_status != 401:
        problems.append("GET %s/v1/models without a key answered %s, not 401: the proxy serves anyone who reaches "
                        "it (is gateway_master_key in its environment?); see journalctl -u %s."
                        % (url, unauthenticated_status, service))
    return problems


def deployments_read(status, answer, error=None):
    """``GET /v1/model/info``'s read as ``gateway_routing`` takes it (the shape of a registered
    ``ansible.builtin.uri`` result: ``status``, ``msg``, ``json``), each deployment reduced to its
    ``model_name`` and ``model_info.inferops_host``. ``status`` -1 and ``error`` when nothing answered."""
    if error is not None:
        return {"status": -1, "msg": error}
    reason = error_message(answer)
    read = {"status": status, "msg": "OK" if status == 200 else "HTTP Error %s%s" % (status, ": " + reason if reason else "")}
    entries = answer.get("data") if isinstance(answer, Mapping) else None
    if status == 200 and isinstance(entries, list):
        kept = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue
            info = entry.get("model_info")
            host = info.get("inferops_host") if isinstance(info, Mapping) else None
            kept.append({"model_name": entry.get("model_name"), "model_info": {"inferops_host": host}})
        read["json"] = {"data": kept}
    elif status == 200:
        read["msg"] = "the answer is not LiteLLM's {\"data\": [...]}"
    return read
