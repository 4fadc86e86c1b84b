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


# The digests the plan puts in the container's labels (_profile.SPEC_LABEL, _deployment.ARGV_LABEL,
# spelled here: this module imports nothing): they change with what they digest, which the lines
# name; their own change is no news.
_DIGEST_LABELS = ("inferops.serving.spec-sha256", "inferops.serving.argv-sha256")
# The launch spec's keys that plan_changes compares one by one (the rest: by value).
_OWN_LINES = ("image", "command", "env", "secret_env", "volumes", "labels", "published_ports")


def container_action(deployment, current=None, changes=False):
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
    - ``drift``: why it is not this plan's container, one line each (empty when it is);
    - ``changes`` (only when ``changes``): what the engine's restart would change, one line each
      (``plan_changes``, and ``secrets: changed`` when only their digest differs), empty when the
      engine is not (re)started.
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
    action = {
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
    if changes:
        action["changes"] = plan_changes(deployment, current) if action["starting"] else []
        if secrets_changed and not any(line.startswith("secrets") for line in action["changes"]):
            action["changes"].append("secrets: changed (their keyed digest differs; values never shown)")
    return action


def _flags(argv):
    """``(positional, {flag: value})`` of an engine's argv: the words before the first flag (the
    launcher, the model), then each ``--flag`` (or ``--flag=value``) with the words up to the next
    flag (``""`` for a bare flag). A repeated flag keeps its values, in order."""
    positional, flags, flag = [], {}, None
    for word in [str(w) for w in argv or []]:
        if word.startswith("--"):
            flag, dummy, value = word.partition("=")
            flags[flag] = " ".join(v for v in (flags.get(flag, ""), value) if v)
        elif flag is None:
            positional.append(word)
        else:
            flags[flag] = " ".join(v for v in (flags[flag], word) if v)
    return positional, flags


def _command_lines(old, new):
    old_pos, old_flags = _flags(old)
    new_pos, new_flags = _flags(new)
    lines = []
    if old_pos != new_pos:
        lines.append("command %s -> %s" % (" ".join(old_pos) or "(none)", " ".join(new_pos) or "(none)"))
    for flag in new_flags:
        if flag not in old_flags:
            lines.append("%s %s added" % (flag, new_flags[flag]) if new_flags[flag] else "%s added" % flag)
        elif old_flags[flag] != new_flags[flag]:
            lines.append("%s %s -> %s" % (flag, old_flags[flag] or "(bare)", new_flags[flag] or "(bare)"))
    for flag in old_flags:
        if flag not in new_flags:
            lines.append("%s %s removed" % (flag, old_flags[flag]) if old_flags[flag] else "%s removed" % flag)
    return lines


def _names(what, old, new, changed=()):
    """``env added: A, B`` and the like: names only, never a value."""
    lines = []
    for verb, names in (("added", [n for n in new if n not in old]), ("removed", [n for n in old if n not in new]),
                        ("changed", list(changed))):
        if names:
            lines.append("%s %s: %s" % (what, verb, ", ".join(sorted(str(n) for n in names))))
    return lines


def _items(what, old, new):
    old, new = [_bind(item) for item in old], [_bind(item) for item in new]
    return (["%s added: %s" % (what, item) for item in new if item not in old]
            + ["%s removed: %s" % (what, item) for item in old if item not in new])


def _bind(item):
    """A mount as compared: Docker's default mode (``:rw``) left out."""
    item = str(item)
    return item[:-3] if item.endswith(":rw") else item


def _secret_name(name):
    return "secret" in str(name).lower() or "token" in str(name).lower() or "key" in str(name).lower()


def _label_lines(old, new):
    lines, secrets = [], False
    for name in sorted(set(old) | set(new)):
        if name in _DIGEST_LABELS or name == SECRETS_LABEL or old.get(name) == new.get(name):
            continue
        if _secret_name(name):
            # A digest of the secrets (or any label named like one): whether, never what.
            secrets = True
        elif name not in old:
            lines.append("label %s=%s added" % (name, new[name]))
        elif name not in new:
            lines.append("label %s removed" % name)
        else:
            lines.append("label %s %s -> %s" % (name, old[name], new[name]))
    return lines + (["secrets: changed"] if secrets else [])


def _from_inspect(info):
    """The launch spec's keys a container's inspect shows (Engine API names -> spec names): only
    those present, so a field the read left out is not reported as removed. The environment is
    never among them (deployment_state leaves ``Config.Env`` out: the env file's secrets)."""
    config = info.get("Config") or {}
    host = info.get("HostConfig") or {}
    # The image's own labels are in the container's too: only the collection's are compared.
    seen = {"image": config.get("Image"),
            "labels": {k: v for k, v in (config.get("Labels") or {}).items() if str(k).startswith("inferops.")}}
    if "Cmd" in config:
        seen["command"] = list(config.get("Cmd") or [])
    if "Binds" in host:
        seen["volumes"] = list(host.get("Binds") or [])
    if "NetworkMode" in host:
        seen["network_mode"] = host["NetworkMode"]
    if "PortBindings" in host:
        seen["published_ports"] = sorted(
            "%s:%s" % (bind.get("HostPort"), port.split("/")[0])
            for port, binds in (host.get("PortBindings") or {}).items() for bind in binds or [])
    if isinstance(host.get("RestartPolicy"), dict) and "MaximumRetryCount" in host["RestartPolicy"]:
        seen["restart_retries"] = host["RestartPolicy"]["MaximumRetryCount"]
    if isinstance(host.get("LogConfig"), dict) and "Config" in host["LogConfig"]:
        seen["log_options"] = dict(host["LogConfig"]["Config"] or {})
    if config.get("StopTimeout") is not None:
        seen["stop_timeout"] = config["StopTimeout"]
    return seen


def _recorded_spec(current, spec_sha256):
    """The launch spec the host recorded for the running container's spec digest (the state's
    last known-good or history, ``deployment_state``'s read), or None."""
    for entry in [current.get("last_known_good") or {}] + list(current.get("history") or []):
        if spec_sha256 and entry.get("spec_sha256") == spec_sha256 and isinstance(entry.get("spec"), dict):
            return entry["spec"]
    return None


def plan_changes(deployment, current=None):
    """What restarting the engine for ``deployment`` changes against the container found, one
    line each: ``--max-num-seqs 4 -> 16``, ``image A -> B``, ``env added: NAME``, ``mount added:
    ...``, ``secrets: changed``. Empty when the container runs this plan and is running.

    ``current`` is deployment_state's read (the container's inspect, the host's proven
    deployments). The running container's launch spec is the one the host recorded under its spec
    label's digest when there is one (every key compared; the environment by name, its values
    being hidden in the read); otherwise what the inspect shows (the image, the command, mounts,
    ports, labels, restart and log settings). Never a value of the environment or of a secret:
    the plan holds secret names only, so a secret's value changed shows only where a label digests
    the secrets.
    """
    current = current or {}
    spec = deployment["spec"]
    if not current.get("exists"):
        return ["no container %s: it is created and started" % deployment["container"]]
    info = current.get("container") or {}
    labels = (info.get("Config") or {}).get("Labels") or {}
    running = bool((info.get("State") or {}).get("Running"))
    label = labels.get(deployment["spec_label"])
    if label == deployment["spec_sha256"] and (info.get("Config") or {}).get("Image") == spec["image"]:
        return [] if running else ["container %s is not running: it is started" % deployment["container"]]
    recorded = _recorded_spec(current, label)
    old = dict(recorded) if recorded is not None else _from_inspect(info)
    if recorded is not None:
        # The inspect is what runs: a container replaced by hand keeps its label, not its image.
        old["image"] = (info.get("Config") or {}).get("Image", old.get("image"))
    lines = []
    if "image" in old and old["image"] != spec["image"]:
        lines.append("image %s -> %s" % (old["image"], spec["image"]))
    if "command" in old:
        lines += _command_lines(old["command"], spec["command"])
    if isinstance(old.get("env"), dict):
        hidden = {name for name, value in old["env"].items() if value == "<hidden>"}
        lines += _names("env", old["env"], spec["env"],
                        changed=[n for n in spec["env"] if n in old["env"] and n not in hidden
                                 and old["env"][n] != spec["env"][n]])
    if "secret_env" in old:
        lines += _names("secret env", old["secret_env"] or [], spec.get("secret_env") or [])
    if "volumes" in old:
        lines += _items("mount", old["volumes"] or [], spec["volumes"])
    if "published_ports" in old:
        lines += _items("port", old["published_ports"] or [], spec["published_ports"])
    new_labels = spec["labels"]
    if recorded is None:
        new_labels = {k: v for k, v in new_labels.items() if str(k).startswith("inferops.")}
    lines += _label_lines(old.get("labels") or {}, new_labels)
    secrets = "secrets: changed" in lines
    for key in sorted(set(spec) | set(old)):
        if key in _OWN_LINES or key == "name" or key not in old or old.get(key) == spec.get(key):
            continue
        if _secret_name(key):
            secrets = True  # a digest of the secrets in the spec: whether, never what
        else:
            lines.append("%s %s -> %s" % (key, _show(old.get(key)), _show(spec.get(key))))
    if secrets and "secrets: changed" not in lines:
        lines.append("secrets: changed")
    if not lines:
        lines.append("launch spec %s -> %s (%s)"
                     % (str(label or "none")[:12], deployment["spec_sha256"][:12],
                        "env values or secrets changed" if recorded is not None
                        else "the host has no record of the running spec to compare"))
    if not running:
        lines.append("container %s is not running" % deployment["container"])
    return lines


def _show(value):
    if isinstance(value, dict):
        return ",".join("%s=%s" % (k, value[k]) for k in sorted(value)) or "{}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "[]"
    return "none" if value is None else str(value)
