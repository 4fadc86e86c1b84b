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


def container_action(deployment, current=None):
    """What a converge does with the container it finds: the one home of "does it run this plan".

    ``current`` is the read of the plan's container (``exists``, ``container``: deployment_state's
    read, shaped as community.docker.docker_container_info's result). A container runs the plan when it carries the plan's spec label
    AND runs the plan's image: a container replaced by hand from the launch script keeps the
    label, so the label alone is not enough. Returns:

    - ``exists``, ``running``: what was found;
    - ``differs``: it is not this plan's container (or there is none);
    - ``swapping``: one exists but is not this plan's: the new one is created under the staged
      name and swapped in (container_swap);
    - ``replacing``: a running container that is not this plan's will be stopped;
    - ``starting``: the engine will be (re)started, so the host must be proven from a cold start;
    - ``drift``: why it is not this plan's container, one line each (empty when it is).
    """
    current = current or {}
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
    differs = bool(drift)
    return {
        "exists": exists,
        "running": running,
        "differs": differs,
        "swapping": exists and differs,
        "replacing": running and differs,
        "starting": differs or not running,
        "drift": drift,
    }
