# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What a converge does with the container it finds, given the deployment plan.

A module of its own, importing nothing: the server role's tasks template it (through
``__server_action``) in most of their workers, and each worker would otherwise compile the whole
plan (``_deployment`` and what it imports) to compare two labels.
"""
from __future__ import annotations

# The label that carries the keyed digest of the secrets the container read at its creation
# (deployment_state's ``secrets_digest``: HMAC-SHA256 with a host-local key, never the secret nor
# its plain hash). Docker reads the env file and the secret files only when it creates a container:
# a restart keeps the old values, so a changed secret replaces the container.
SECRETS_LABEL = "inferops.serving.secrets-hmac"


def has_secrets(deployment):
    """Whether the plan's container reads secrets at its start (an env file or secret files)."""
    return bool(deployment.get("env_file") or deployment.get("secret_files"))


def container_action(deployment, current=None):
    """What a converge does with the container it finds: the one home of "does it run this plan".

    ``current`` is the read of the plan's container (``exists``, ``container``: deployment_state's
    read, shaped as community.docker.docker_container_info's result, and ``secrets_digest``: the
    keyed digest of the secrets the plan's container is to read). A container runs the plan when
    it carries the plan's spec label AND runs the plan's image (a container replaced by hand from
    the launch script keeps the label, so the label alone is not enough) AND carries the digest
    of today's secrets (``SECRETS_LABEL``; none when the plan has no secret). A plan with secrets
    and a read without their digest is refused (ValueError): not knowing is never "unchanged".
    Returns:

    - ``exists``, ``running``: what was found;
    - ``differs``: it is not this plan's container (or there is none);
    - ``swapping``: one exists but is not this plan's: the new one is created under the staged
      name and swapped in (container_swap);
    - ``replacing``: a running container that is not this plan's will be stopped;
    - ``starting``: the engine will be (re)started, so the host must be proven from a cold start;
    - ``secrets_changed``: it runs the plan's image and spec, but was created with other secrets
      (or carries no digest of them): it is replaced like any other change;
    - ``labels``: the labels a container created for this plan carries (the spec's, and the
      secrets' digest);
    - ``drift``: why it is not this plan's container, one line each (empty when it is).
    """
    current = current or {}
    secrets = has_secrets(deployment)
    planned_secrets = current.get("secrets_digest") if secrets else None
    if secrets and not planned_secrets:
        raise ValueError(
            "cannot decide whether container %s runs the plan: the keyed digest of its secrets (%s) was not "
            "read (deployment_state's secrets and secrets_key); refusing rather than calling them unchanged"
            % (deployment["container"], ", ".join(sorted(
                [deployment["env_file"]] * bool(deployment.get("env_file"))
                + [str(path) for path in (deployment.get("secret_files") or {}).values()]))))
    exists = bool(current.get("exists"))
    info = current.get("container") or {}
    config = info.get("Config") or {}
    labels = config.get("Labels") or {}
    running = exists and bool((info.get("State") or {}).get("Running"))
    drift = []
    if not exists:
        drift.append("no container %s" % deployment["container"])
    else:
        if config.get("Image") != deployment["spec"]["image"]:
            drift.append("runs %s, the inventory (lock) says %s" % (config.get("Image"), deployment["spec"]["image"]))
        if labels.get(deployment["spec_label"]) != deployment["spec_sha256"]:
            drift.append("its container was not created from this inventory's plan (spec %s, planned %s): "
                         "site.yml would redeploy it"
                         % (str(labels.get(deployment["spec_label"]) or "none")[:12], deployment["spec_sha256"][:12]))
    secrets_changed = exists and labels.get(SECRETS_LABEL) != planned_secrets
    if secrets_changed:
        if not planned_secrets:
            why = "the plan has none, the container was created with some"
        elif not labels.get(SECRETS_LABEL):
            why = "the container carries no digest of them (created by hand, or before the digest existed)"
        else:
            why = "server_secrets (or server_hf_token) differ from those the container was created with"
        drift.append("secrets changed: %s; Docker reads them only when it creates a container, so site.yml "
                     "would recreate it" % why)
    differs = bool(drift)
    created_labels = dict(deployment["spec"].get("labels") or {})
    if planned_secrets:
        created_labels[SECRETS_LABEL] = planned_secrets
    return {
        "exists": exists,
        "running": running,
        "differs": differs,
        "swapping": exists and differs,
        "replacing": running and differs,
        "starting": differs or not running,
        "secrets_changed": secrets_changed,
        "labels": created_labels,
        "drift": drift,
    }
