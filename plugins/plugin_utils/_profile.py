# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Profiles: load, inherit, override, and render to one container launch.

A profile (``profiles/<name>.yml``) is data: engine, hardware, image, model, env, args,
expect, measured, fallback. This module is the single home for turning one into the argv,
env and Docker options of the container, and into the bash script that starts exactly that
container. The server role, ``playbooks/show_launch.yml`` and the lint all go through here.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping

import yaml

from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import quoted, scrub
from ansible_collections.inferops.serving.plugins.plugin_utils import _validate
from ansible_collections.inferops.serving.plugins.plugin_utils import _weights
from ansible_collections.inferops.serving.plugins.plugin_utils._engines import ENGINES, flag_key
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILES_DIR = os.path.join(COLLECTION_ROOT, "profiles")
KNOWN_BAD_FILE = os.path.join(COLLECTION_ROOT, "data", "known_bad_images.yml")

# Keys overlaid key by key (a null value deletes the key); every other key is replaced whole.
OVERLAY_KEYS = ("hardware", "image", "env", "args", "expect")
PROFILE_KEYS = ("name", "extends", "description", "engine", "hardware", "image", "model", "revision",
                "draft_revision", "env", "args", "expect", "measured", "fallback")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# Container label holding spec_digest(): what a running container was created from.
SPEC_LABEL = "inferops.serving.spec-sha256"


class ProfileError(Exception):
    """A profile, an override or a launch option is wrong; the message says how to fix it."""


def profile_names(dirs=None):
    """Sorted names of the profiles found in ``dirs`` (the collection's own dir by default)."""
    names = set()
    for directory in _search_dirs(dirs):
        if os.path.isdir(directory):
            names.update(f[:-4] for f in os.listdir(directory) if f.endswith(".yml"))
    return sorted(names)


def profile_files(dirs=None):
    """``[path, size, mtime_ns]`` of every profile file in the search directories, sorted: how
    the deployment plan's key (``_deployment.plan_key``) notices an edited profile."""
    found = []
    for directory in _search_dirs(dirs):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if entry.name.endswith(".yml") and entry.is_file():
                stat = entry.stat()
                found.append([entry.path, stat.st_size, stat.st_mtime_ns])
    return sorted(found)


def _search_dirs(dirs):
    return list(dirs or []) + [PROFILES_DIR]


# libyaml's parser when PyYAML has it (the plan reads a profile and its parents on every plan).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parsed(path):
    """The YAML of ``path`` (a mapping, or what the file holds). Parsed once per ``load_profile``
    (it keeps each file of an ``extends`` chain it read); a plan is memoised once, by its inputs'
    digest (``_deployment.plan_once``), not here."""
    with open(path, encoding="utf-8") as handle:
        loader = _LOADER(handle)
        try:
            return loader.get_single_data() or {}
        finally:
            loader.dispose()


def _read_profile(name, dirs, var="profile"):
    name = _validate.profile_name(name, var, error=ProfileError)
    for directory in _search_dirs(dirs):
        path = os.path.join(directory, name + ".yml")
        if os.path.isfile(path):
            data = _parsed(path)
            if not isinstance(data, dict):
                raise ProfileError("profile file %s is not a mapping" % path)
            unknown = sorted(set(data) - set(PROFILE_KEYS))
            if unknown:
                raise ProfileError("profile %s has unknown keys %s; allowed keys: %s"
                                   % (path, ", ".join(unknown), ", ".join(PROFILE_KEYS)))
            if data.get("name", name) != name:
                raise ProfileError("profile file %s declares name %r; rename the file or the name"
                                   % (path, data["name"]))
            return data
    raise ProfileError("unknown profile %r; available profiles: %s"
                       % (name, ", ".join(profile_names(dirs)) or "(none)"))


def load_profile(name, dirs=None):
    """The named profile with its ``extends`` chain applied (parents first)."""
    name = _validate.profile_name(name, "profile", error=ProfileError)
    chain, read = [], {}
    current, var = name, "profile"
    while current:
        if current in chain:
            raise ProfileError("profile %r extends itself through %s" % (name, " -> ".join(chain + [current])))
        chain.append(current)
        read[current] = _read_profile(current, dirs, var)
        current, var = read[current].get("extends"), "profile %s: extends" % current
    profile = {}
    for member in reversed(chain):
        profile = overlay(profile, read[member])
    profile.pop("extends", None)
    profile["name"] = name
    return profile


def overlay(base, delta, engine=None):
    """``delta`` laid over ``base``: the overlay keys merge key by key, a null deletes a key.

    Used both for ``extends`` and for inventory overrides, so both behave the same. Args are
    matched by flag identity (``max_num_seqs`` replaces ``max-num-seqs`` for vLLM) and keep the
    spelling and position of the base.
    """
    result = plain(base)
    engine = engine or delta.get("engine") or base.get("engine")
    for key, value in (delta or {}).items():
        if key in OVERLAY_KEYS and isinstance(value, dict):
            merged = dict(result.get(key) or {})
            for sub, subvalue in value.items():
                target = sub
                if key == "args":
                    target = next((k for k in merged if flag_key(engine, k) == flag_key(engine, sub)), sub)
                if subvalue is None:
                    merged.pop(target, None)
                else:
                    merged[target] = plain(subvalue)
            result[key] = merged
        elif value is None and key in result and key not in ("fallback",):
            result.pop(key)
        else:
            result[key] = plain(value)
    return result


def apply_overrides(profile, overrides):
    """Inventory overrides (``{args: {...}, env: {...}, image: {...}, expect: {...}}``) on a profile."""
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        raise ProfileError("profile overrides must be a mapping with keys among %s" % ", ".join(OVERLAY_KEYS))
    unknown = sorted(set(overrides) - set(OVERLAY_KEYS) - {"model", "revision", "draft_revision", "description"})
    if unknown:
        raise ProfileError("profile overrides have unknown keys %s; allowed: %s"
                           % (", ".join(unknown), ", ".join(OVERLAY_KEYS + ("model", "revision", "draft_revision"))))
    return overlay(profile, overrides, engine=profile.get("engine"))


def apply_lock(profile, lock):
    """Pin the profile's image from a lock file (``{images: {"repo:tag": {digest, engine_version}}}``).

    The lock file is what ``playbooks/pin.yml`` writes into an inventory after a digest was
    validated on a canary; an entry for the profile's ``repository:tag`` replaces its digest.
    A ``models: {"<model id>": {revision}}`` entry pins the model's revision the same way.
    """
    profile = _weights.apply_model_lock(profile, lock, error=ProfileError)
    image = profile.get("image") or {}
    entry = ((lock or {}).get("images") or {}).get("%s:%s" % (image.get("repository"), image.get("tag")))
    if not entry:
        return profile
    if not isinstance(entry, dict) or not entry.get("digest"):
        raise ProfileError("lock entry for %s:%s needs a digest" % (image.get("repository"), image.get("tag")))
    pinned = {"digest": entry["digest"]}
    for key in ("engine_version", "image_id"):
        if entry.get(key):
            pinned[key] = entry[key]
    return overlay(profile, {"image": pinned})


def resolve_profile(name, dirs=None, lock=None, overrides=None):
    """What a host deploys: the profile, pinned by the lock file, then the inventory overrides."""
    return apply_overrides(apply_lock(load_profile(name, dirs), lock), overrides)


def render_value(value):
    """One arg value as the engine's CLI expects it: mappings and lists as compact JSON.

    JSON escapes control characters, so a structured value is always one line; a scalar is
    checked where it is written (``validate_spec_text`` names the field).
    """
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_FLAG_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def render_args(args):
    """``{flag: value}`` to argv: ``true`` is a bare flag, ``false``/null are left out.

    A flag name must be one word (``max-num-seqs``, ``speculative_config.method``); anything
    else would become several words or a value, so it is refused.
    """
    if args is not None and not isinstance(args, Mapping):
        raise ProfileError("args: got a %s; expected a mapping of flag names to values" % type(args).__name__)
    argv = []
    for flag, value in (args or {}).items():
        if value is None or value is False:
            continue
        name = str(flag).lstrip("-")
        if not isinstance(flag, str) or not _FLAG_NAME_RE.fullmatch(name):
            raise ProfileError("args: %s is not a flag name; expected letters, digits, '-', '_' or '.' (e.g. "
                               "max-num-seqs), with the value as the entry's value" % quoted(flag))
        argv.append("--" + name)
        if value is not True:
            argv.append(render_value(value))
    return argv


def engine_port(profile):
    """The port the engine listens on inside the container."""
    engine = ENGINES[profile["engine"]]
    for flag, value in (profile.get("args") or {}).items():
        if flag_key(profile["engine"], flag) == "port":
            return int(value)
    return engine["default_port"]


def container_argv(profile):
    """The container's command: the engine's launcher, the model, then the profile's args."""
    engine_name = profile.get("engine")
    if engine_name not in ENGINES:
        raise ProfileError("profile %s: engine %s is not one of %s"
                           % (profile.get("name"), quoted(engine_name), ", ".join(sorted(ENGINES))))
    engine = ENGINES[engine_name]
    model = profile.get("model")
    if not model:
        raise ProfileError("profile %s has no model" % profile.get("name"))
    if str(model).startswith("-"):
        # vLLM reads a positional "--trust-remote-code" as the flag, not as a model.
        raise ProfileError("profile %s: model: got %s; expected a Hugging Face repo id (org/name) or an absolute "
                           "path: a name starting with '-' would be read by the engine as a flag (set flags in args)"
                           % (profile.get("name"), _validate.describe(model)))
    argv = list(engine["command"])
    argv += [engine["model_flag"], model] if engine["model_flag"] else [model]
    return argv + render_args(_weights.revision_args(profile))


def image_ref(profile, registry_prefix=""):
    """``repository@digest`` when pinned, else ``repository:tag``, behind an optional registry."""
    image = profile.get("image") or {}
    repository = image.get("repository")
    if not repository:
        raise ProfileError("profile %s has no image.repository" % profile.get("name"))
    prefix = registry_prefix or ""
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    if image.get("digest"):
        return "%s%s@%s" % (prefix, repository, image["digest"])
    return "%s%s:%s" % (prefix, repository, image.get("tag") or "latest")


LAUNCH_DEFAULTS = {
    "name": None,
    "port": None,
    "network_mode": "bridge",
    "registry_prefix": "",
    "model_cache_dir": "/root/.cache/huggingface",
    "extra_volumes": [],
    # Host directory for the engine's compile/JIT caches (one subdirectory per cache); None keeps
    # them in the container, so every new container pays the cold compile again.
    "engine_cache_dir": None,
    "secret_env": ["HF_TOKEN"],
    "env_file": None,
    "restart_retries": 3,
    "log_max_size": "100m",
    "log_max_file": 3,
    "labels": {},
    # HF_HUB_OFFLINE=1 in the container: None turns it on when the profile pins a revision (the
    # model_cache role stages and verifies it first), so an engine start never touches the network.
    "hf_hub_offline": None,
    # Seconds Docker waits after SIGTERM before it kills the engine (docker create --stop-timeout);
    # None: Docker's 10 s. Longer than the engine's own graceful shutdown (the plan decides).
    "stop_timeout": None,
}


def launch_spec(profile, options=None):
    """Everything ``docker run`` needs for this profile, in one mapping.

    The server role passes it to community.docker.docker_container; ``launch_script`` renders
    the same mapping as bash. Keys follow docker_container's option names.
    """
    opts = dict(LAUNCH_DEFAULTS)
    unknown = sorted(set(options or {}) - set(LAUNCH_DEFAULTS))
    if unknown:
        raise ProfileError("unknown launch options %s; allowed: %s"
                           % (", ".join(unknown), ", ".join(sorted(LAUNCH_DEFAULTS))))
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    if opts["network_mode"] not in ("bridge", "host"):
        raise ProfileError("network_mode must be bridge or host, not %s" % quoted(opts["network_mode"]))
    inner_port = engine_port(profile)
    port = int(opts["port"] or inner_port)
    if opts["network_mode"] == "host" and port != inner_port:
        # On the host network the engine itself must listen on the serving port.
        profile = overlay(profile, {"args": {"port": port}})
        inner_port = port
    argv = container_argv(profile)
    name = opts["name"] or profile["name"]
    volumes = ["%s:/root/.cache/huggingface" % opts["model_cache_dir"]]
    volumes += engine_cache_volumes(profile["engine"], opts["engine_cache_dir"])
    volumes += list(opts["extra_volumes"])
    labels = {
        "inferops.serving.profile": profile["name"],
        "inferops.serving.argv-sha256": argv_digest(profile, argv),
    }
    labels.update(opts["labels"] or {})
    env = {k: render_value(v) for k, v in (profile.get("env") or {}).items()}
    if _weights.offline(profile, opts["hf_hub_offline"]):
        env.setdefault(_weights.OFFLINE_ENV, "1")
    spec = {
        "name": name,
        "image": image_ref(profile, opts["registry_prefix"]),
        "command": argv,
        "env": env,
        "secret_env": list(opts["secret_env"] or []),
        "env_file": opts["env_file"],
        "device_requests": [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}],
        "ipc_mode": "host",
        "network_mode": opts["network_mode"],
        "published_ports": ["%d:%d" % (port, inner_port)] if opts["network_mode"] == "bridge" else [],
        "port": port,
        "volumes": volumes,
        "restart_policy": "on-failure",
        "restart_retries": int(opts["restart_retries"]),
        "log_driver": "json-file",
        "log_options": {"max-size": str(opts["log_max_size"]), "max-file": str(opts["log_max_file"])},
        "labels": labels,
    }
    if opts["stop_timeout"] is not None:
        spec["stop_timeout"] = int(opts["stop_timeout"])
    labels[SPEC_LABEL] = spec_digest(spec)
    return spec


def spec_digest(spec):
    """sha256 of everything the container is created from (the spec without this digest's label).

    A running container whose label differs is replaced by a converge: the server role stops it
    first (and waits for unified memory to be released) only when this differs.
    """
    payload = dict(spec, labels={k: v for k, v in spec["labels"].items() if k != SPEC_LABEL})
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def engine_cache_volumes(engine, cache_dir):
    """``host:container`` volumes persisting the engine's compile caches under ``cache_dir``.

    A restart then reuses the compiled graphs and kernels instead of paying the cold start again.
    """
    if not cache_dir:
        return []
    cache_dir = str(cache_dir).rstrip("/")
    return ["%s/%s:%s" % (cache_dir, name, path) for name, path in sorted(ENGINES[engine]["cache_paths"].items())]


def argv_digest(profile, argv=None):
    """sha256 of what makes two deployments the same container: image, env and argv."""
    payload = json.dumps({"image": image_ref(profile), "env": profile.get("env") or {},
                          "argv": argv if argv is not None else container_argv(profile)},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _q(word):
    """One shell word, single-quoted where needed; NUL (which no word can carry) is refused (where,
    not the word: it may be a secret's)."""
    text = str(word)
    if "\x00" in text:
        raise ProfileError("a launch script word contains a NUL character at character %d of %d (value not shown)"
                           % (text.index("\x00") + 1, len(text)))
    return shlex.quote(text)


def _shown(name):
    """A name (a flag's, a label's) as a message shows it: on one line (a control character
    escaped), any secret shape in it masked."""
    name = scrub(name)
    return name if name.isprintable() else repr(name)[1:-1]


def _command_fields(command, profile):
    """``(field, word)`` for each word of the container command, named as the profile names it."""
    model = (profile or {}).get("model")
    previous = None
    for index, word in enumerate(command):
        text = str(word)
        if text.startswith("--"):
            field = "args.%s (the flag name)" % _shown(text[2:])
        elif previous is not None:
            field = "args.%s" % _shown(previous)
        elif model is not None and text == str(model):
            field = "model"
        else:
            field = "command[%d]" % index
        previous = text[2:] if text.startswith("--") else None
        yield field, word


def _header_fields(profile):
    image = profile.get("image") or {}
    hardware = profile.get("hardware") or {}
    measured = profile.get("measured") or {}
    return [("profile name", profile.get("name")), ("engine", profile.get("engine")),
            ("hardware.platform", hardware.get("platform") if isinstance(hardware, Mapping) else hardware),
            ("image.repository", image.get("repository") if isinstance(image, Mapping) else image),
            ("image.tag", image.get("tag") if isinstance(image, Mapping) else None),
            ("image.engine_version", image.get("engine_version") if isinstance(image, Mapping) else None),
            ("measured.source", measured.get("source") if isinstance(measured, Mapping) else measured)]


def validate_spec_text(spec, profile=None):
    """Refuse, naming the field, any value of ``spec``/``profile`` that the launch script cannot hold
    on one line: every free-text field must be a single line (no newline, CR, NUL or other control
    character) and every list or mapping of the right type; no value over
    ``_validate.MAX_VALUE_BYTES``, and docker run's values (the engine's argv and env among them)
    not over ``_validate.MAX_TOTAL_BYTES`` in all. A message says where a control character is,
    never the text; a name or a wrong type is quoted through ``quoted`` (secret shapes masked).
    Returns None.
    """
    words = []  # (field, value) of each docker run word, for the total

    def text(field, value, counted=True):
        if isinstance(value, (Mapping, list, tuple)):
            raise ProfileError("launch script field %s: got a %s; expected a single-line value"
                               % (field, type(value).__name__))
        _validate.single_line(value, "launch script field " + field, error=ProfileError,
                              max_bytes=_validate.MAX_VALUE_BYTES)
        if counted:  # the header is comments; secret_env names are not rendered
            words.append((field, value))

    if not isinstance(spec, Mapping):
        raise ProfileError("launch_script needs a launch spec mapping, not a %s" % type(spec).__name__)
    if profile is not None:
        if not isinstance(profile, Mapping):
            raise ProfileError("launch_script's profile must be a mapping, not a %s" % type(profile).__name__)
        for field, value in _header_fields(profile):
            if value is not None:
                text(field, value, counted=False)
    text("name (server_container_name)", spec.get("name"))
    text("image", spec.get("image"))
    for key in ("ipc_mode", "network_mode", "restart_policy", "log_driver"):
        text(key, spec.get(key))
    if spec.get("env_file") is not None:
        text("env_file", spec["env_file"])
    retries = spec.get("restart_retries")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ProfileError("launch script field restart_retries: got %s; expected a whole number >= 0"
                           % quoted(retries))
    for key in ("published_ports", "volumes", "command", "secret_env"):
        values = _validate.str_list(spec.get(key), "launch script field " + key, error=ProfileError) \
            if key != "command" else spec.get("command")
        if not isinstance(values, (list, tuple)):
            raise ProfileError("launch script field command: got a %s; expected a list of words"
                               % type(values).__name__)
        if key == "command":
            for field, word in _command_fields(values, profile):
                text(field, word)
        else:
            for index, value in enumerate(values):
                text("%s[%d]" % (key, index), value, counted=key != "secret_env")
    for key, names in (("env", "env"), ("labels", "labels"), ("log_options", "log_options")):
        mapping = _validate.mapping(spec.get(key), "launch script field " + key, error=ProfileError)
        for name, value in mapping.items():
            if key == "env" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
                raise ProfileError("launch script field env: %s is not an env var name; expected letters, digits "
                                   "and '_' (no '=', no spaces)" % quoted(name))
            text("%s key %s" % (names, quoted(name, limit=40)), name)
            text("%s.%s" % (names, _shown(name)), value)
    for index, name in enumerate(spec.get("secret_env") or []):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ProfileError("launch script field secret_env[%d]: %s is not an env var name" % (index, quoted(name)))
    _validate.total_size(words, "launch script docker run (the engine's argv and env)", error=ProfileError)


def launch_script(spec, profile=None):
    """A bash script whose single ``docker run`` starts exactly the container of ``spec``.

    Every value is checked by ``validate_spec_text`` (single-line, or a ProfileError naming the
    field) and every ``docker run`` word is shell-quoted, so running the script executes that one
    command and nothing else. Secrets reach the container only through ``--env-file`` (Docker
    reads it literally; the script never sources it), never as values on the command line;
    ``secret_env`` names are not rendered (the env file carries the secrets).
    """
    validate_spec_text(spec, profile)
    lines = ["#!/usr/bin/env bash", "#"]
    if profile:
        image = profile.get("image") or {}
        platform = (profile.get("hardware") or {}).get("platform")
        lines += ["# inferops.serving profile %s (%s on %s)" % (profile["name"], profile.get("engine"), platform),
                  "# image %s:%s, engine %s" % (image.get("repository"), image.get("tag"),
                                                image.get("engine_version"))]
        measured = profile.get("measured") or {}
        if measured.get("source"):
            lines.append("# measured: %s" % measured["source"])
    lines += ["# Generated by inferops.serving from the profile; edit the profile, not this file.",
              "set -e", ""]
    run = ["docker run -d --name %s" % _q(spec["name"]), "--gpus all", "--ipc=%s" % _q(spec["ipc_mode"])]
    if spec["network_mode"] == "host":
        run.append("--network host")
    if spec.get("stop_timeout") is not None:
        run.append("--stop-timeout %d" % int(spec["stop_timeout"]))
    run += ["-p %s" % _q(p) for p in spec["published_ports"]]
    run += ["-v %s" % _q(v) for v in spec["volumes"]]
    if spec.get("env_file"):
        run.append("--env-file %s" % _q(spec["env_file"]))
    run += ["-e %s" % _q("%s=%s" % (k, v)) for k, v in spec["env"].items()]
    run += ["--restart %s" % _q("%s:%d" % (spec["restart_policy"], spec["restart_retries"])),
            "--log-driver %s" % _q(spec["log_driver"])]
    run += ["--log-opt %s" % _q("%s=%s" % kv) for kv in spec["log_options"].items()]
    run += ["--label %s" % _q("%s=%s" % kv) for kv in sorted(spec["labels"].items())]
    run.append(_q(spec["image"]))
    command = [str(word) for word in spec["command"]]
    i = 0
    while i < len(command) and not command[i].startswith("--") and command[i] != "-m":
        i += 1
    if i:  # the launcher and its module, e.g. python3 -m sglang.launch_server, on one line
        while i < len(command) and not command[i].startswith("--"):
            i += 1
        run.append("\t" + " ".join(_q(w) for w in command[:i]))
    while i < len(command):
        word = command[i]
        if word.startswith("--") and i + 1 < len(command) and not command[i + 1].startswith("--"):
            run.append("\t%s %s" % (_q(word), _q(command[i + 1])))
            i += 2
        else:
            run.append("\t" + _q(word))
            i += 1
    lines.append(" \\\n\t".join(run))
    return "\n".join(lines) + "\n"
