# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""A rollback changes the desired state: what it rolled back from is known-bad for the host's
hardware group, until the operator pins something else or clears the record.

``playbooks/rollback.yml`` returns a host to a recorded deployment while the inventory (the image
lock) still names the one it left: without a record, the next ``site.yml`` redeploys it and
``status.yml`` calls the host DRIFT. The record is an entry of the inventory's known-bad list
(``inferops_known_bad_images``, written like the pin's entries by ``inventory_entry``), scoped to a
hardware group (``_pin.hardware_group``) and marked ``rolled_back``:

* ``record(...)``: the entry for what the host ran before the rollback (the container read), the
  image digest it ran, or - when the rollback returned to the same image - the spec it ran;
* ``matches(...)``: the entries that name a plan on a host of that group: preflight refuses the
  plan (``refusals``), status calls the host ROLLED BACK (``status_note``).

The profile lint ignores these entries (they are a host group's, not a profile's): preflight's
host checks read them.
"""
from __future__ import annotations

from collections.abc import Mapping

SIGNATURE = "rolled_back"
KNOWN_BAD_VARIABLE = "inferops_known_bad_images"


def _digest(ref):
    """The ``sha256:...`` of an image reference (``repo@sha256:...`` or an image ID), or None."""
    ref = str(ref or "")
    if "@" in ref:
        return ref.rsplit("@", 1)[1]
    return ref if ref.startswith("sha256:") else None


def hardware_group(groups, given=None, serving_group="serving"):
    """The host's hardware group: ``inferops_hardware_group`` when given, else its first group other
    than the serving group, else the serving group (the pin's canaries are one per such group)."""
    if given:
        return str(given)
    return next((group for group in groups or [] if group != serving_group), serving_group)


def is_rollback_entry(entry):
    return isinstance(entry, Mapping) and isinstance(entry.get("rolled_back"), Mapping)


def record(current, deployment, host, group, now, reason="", known_bad_file=""):
    """What a rollback to ``deployment`` (the plan rebuilt from the record) records of the container
    it replaces (``current``: deployment_state's read of it, before the rollback acts).

    Returns ``{state, entry, message}``: ``state`` is ``record`` (``entry`` is the known-bad
    entry to write), ``none`` (no container, or it already runs the deployment: nothing is rolled
    back from) or ``unrecordable`` (a container that differs but names neither an image digest nor
    a spec: the rollback may act, but cannot say what it left).
    """
    current = current if isinstance(current, Mapping) else {}
    info = current.get("container") if current.get("exists") else None
    info = info if isinstance(info, Mapping) else {}
    config = info.get("Config") or {}
    labels = config.get("Labels") or {}
    to_image = deployment["spec"]["image"]
    to_digest = _digest(to_image)
    if not info:
        return {"state": "none", "entry": None, "message": "%s ran no container %s: nothing is rolled back from"
                                                           % (host, deployment["container"])}
    from_image = config.get("Image")
    from_spec = labels.get(deployment["spec_label"])
    if from_image == to_image and from_spec == deployment["spec_sha256"]:
        return {"state": "none", "entry": None, "message": "%s already runs %s: nothing is rolled back from"
                                                           % (host, to_image)}
    from_digest = _digest(from_image)
    reason = " ".join(str(reason or "").split()) or "no reason given (server_rollback_reason)"
    entry = {"signature": SIGNATURE, "hardware_group": str(group)}
    if from_digest and from_digest != to_digest:
        entry["digest"] = from_digest
        what = from_image
        key = from_digest
    elif from_spec:
        # The same image with another spec (flags, env): the spec is what the rollback left.
        entry["digest"] = from_digest or to_digest
        entry["spec_sha256"] = str(from_spec)
        what = "spec %s of %s" % (str(from_spec)[:12], from_image)
        key = "spec-%s" % from_spec
    else:
        return {"state": "unrecordable", "entry": None,
                "message": ("%s ran %s, which names no image digest and carries no spec label (%s): the "
                            "rollback cannot record what it left, so site.yml may redeploy it"
                            % (host, from_image, deployment["spec_label"]))}
    entry["id"] = "rolled-back:%s:%s" % (group, key)
    entry["symptom"] = "rolled back on %s: %s" % (host, reason)
    entry["source"] = "playbooks/rollback.yml on %s, %s" % (host, now)
    entry["rolled_back"] = {"host": str(host), "at": str(now), "reason": reason, "from": what, "to": to_image,
                            "file": str(known_bad_file or "")}
    return {"state": "record", "entry": entry,
            "message": "%s rolled back from %s to %s; recorded as known-bad for hardware group %s" % (
                host, what, to_image, group)}


def matches(deployment, known_bad, group):
    """The rollback entries of ``known_bad`` that name ``deployment`` on a host of hardware group
    ``group``: its spec (an entry with ``spec_sha256``) or its image digest."""
    found = []
    digest = (deployment.get("image") or {}).get("digest") or _digest(deployment["spec"]["image"])
    for entry in known_bad or []:
        if not is_rollback_entry(entry):
            continue
        if entry.get("hardware_group") not in (None, "", group):
            continue
        if entry.get("spec_sha256"):
            if entry["spec_sha256"] == deployment.get("spec_sha256"):
                found.append(entry)
        elif entry.get("digest") and entry["digest"] == digest:
            found.append(entry)
    return found


def _fix(entry):
    where = entry["rolled_back"].get("file") or "<inventory>/group_vars/all/known_bad_images.yml"
    return ("pin another digest (playbooks/pin.yml, or the image's entry in inferops_serving_image_lock) or, if it "
            "is good after all, delete the entry with id %r from %s in %s"
            % (entry.get("id"), KNOWN_BAD_VARIABLE, where))


def describe(entry):
    why = entry["rolled_back"]
    return "rolled back from %s on %s at %s (%s), hardware group %s" % (
        why.get("from") or entry.get("digest"), why.get("host"), why.get("at"), why.get("reason"),
        entry.get("hardware_group") or "any")


def refusals(deployment, known_bad, group):
    """Preflight's messages: one per rollback entry that names the plan (empty: not refused)."""
    return ["%s: playbooks/rollback.yml %s, so site.yml does not deploy it again; %s"
            % (deployment["profile"].get("name"), describe(entry), _fix(entry))
            for entry in matches(deployment, known_bad, group)]


def status_note(deployment, known_bad, group):
    """The ROLLED BACK state of status.yml for a host whose plan a rollback left, or None."""
    found = matches(deployment, known_bad, group)
    if not found:
        return None
    return "ROLLED BACK: %s; site.yml refuses the inventory's plan until you %s" % (
        "; ".join(describe(entry) for entry in found), _fix(found[0]))
