# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""The deployment plan: everything a host runs, computed once.

``plan()`` turns a profile (by name, with the inventory's lock and overrides, or an already
resolved one from a host's recorded state) and the role's launch options into one plain
mapping: the image, the container spec, the launch script, the memory the engine claims, the
URLs, the smoke request, the metric names, and the expectations the engine's log must prove,
derived from the final flags. The server role publishes it as ``server_deployment``; preflight,
pin, rollback, show_launch and the summaries read it. Rollback rebuilds it from a host's record
with the same function.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

from ansible_collections.inferops.serving.plugins.module_utils._prometheus import metric_by_label, metric_max, metric_sum
from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import quoted
from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _engines as engines
from ansible_collections.inferops.serving.plugins.plugin_utils import _validate
from ansible_collections.inferops.serving.plugins.plugin_utils import _weights
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    LAUNCH_DEFAULTS,
    ProfileError,
    SPEC_LABEL,
    launch_script,
    launch_spec,
    overlay,
    profile_files,
    resolve_profile,
    spec_digest,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import (
    HF_TOKEN_MOUNT,
    env_file_text,
    hf_token_as_file,
    refuse_secrets,
    secret_file_text,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._undeploy import undeploy_parts
from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import (
    SERVING_UNIT_FILE,
    WATCHDOG_UNIT_FILE,
    SystemdValueError,
    systemd_escape,
    watchdog_unit,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._watchdog import (
    HOST_LIBRARIES,
    WatchdogConfigError,
    library_source,
    watchdog_config,
)

# The role's launch options that shape the container (launch_spec's options), and the ones that
# only place the role's files and requests.
SPEC_OPTIONS = ("name", "port", "network_mode", "registry_prefix", "model_cache_dir", "extra_volumes",
                "engine_cache_dir", "secret_env", "restart_retries", "log_max_size", "log_max_file",
                "labels", "hf_hub_offline")
PLAN_OPTIONS = SPEC_OPTIONS + ("config_dir", "script_dir", "state_dir", "textfile_dir", "smoke", "image_by_id",
                               "docker_host", "shutdown_timeout")
# Seconds Docker waits past the engine's own graceful shutdown before it kills the container: the
# engine's exit after its last request (process teardown, GPU memory release) takes some.
STOP_MARGIN = 30
ARGV_LABEL = "inferops.serving.argv-sha256"
# The role's directories when the options leave them out (the server role's defaults).
CONFIG_DIR = "/etc/inferops-serving"
SCRIPT_DIR = "/usr/local/lib/inferops-serving"
STATE_DIR = "/var/lib/inferops-serving"
DOCKER_HOST = "unix:///var/run/docker.sock"
# The watchdog's program (the watchdog role's files/) and the host libraries it imports, installed
# in the script directory; every deployment on a host shares them (and the two template units).
WATCHDOG_PROGRAM = "inferops_watchdog.py"


def _check_options(options):
    """Options of the right type and shape, each error naming the role variable (never a value
    it could not show: secrets are names only here)."""
    unknown = sorted(set(options) - set(PLAN_OPTIONS))
    if unknown:
        raise ProfileError("unknown deployment options %s; allowed: %s" % (", ".join(unknown), ", ".join(PLAN_OPTIONS)))
    checked = dict(options)
    if options.get("name") is not None:
        checked["name"] = _validate.container_name(options["name"], error=ProfileError)
    if options.get("port") is not None:
        checked["port"] = _validate.port(options["port"], error=ProfileError)
    if options.get("network_mode") is not None and options["network_mode"] not in ("bridge", "host"):
        raise ProfileError("server_network_mode: got %s; expected bridge or host"
                           % _validate.describe(options["network_mode"]))
    for key, var in (("extra_volumes", "server_extra_volumes"), ("secret_env", "server_secrets (names)")):
        if options.get(key) is not None:
            checked[key] = _validate.str_list(options[key], var, error=ProfileError,
                                              example="/data:/data" if key == "extra_volumes" else None)
    for index, volume in enumerate(checked.get("extra_volumes") or []):
        _validate.single_line(volume, "server_extra_volumes[%d]" % index, error=ProfileError)
    for key, var in (("labels", "server_labels"), ("smoke", "the smoke request (server_smoke_*)")):
        if options.get(key) is not None:
            checked[key] = _validate.mapping(options[key], var, error=ProfileError)
    for key, var in (("model_cache_dir", "server_model_cache_dir"), ("config_dir", "server_config_dir"),
                     ("script_dir", "server_script_dir"), ("state_dir", "server_state_dir"),
                     ("textfile_dir", "watchdog_textfile_dir"), ("engine_cache_dir", "server_engine_cache_dir")):
        if options.get(key):
            if ".." in str(options[key]).split("/"):
                raise ProfileError("%s: got %s; expected an absolute path without '..'"
                                   % (var, _validate.describe(options[key])))
            checked[key] = _validate.absolute_path(options[key], var, error=ProfileError,
                                                   volume=key in ("model_cache_dir", "engine_cache_dir"))
    if options.get("shutdown_timeout") is not None:
        checked["shutdown_timeout"] = _validate.whole_number(options["shutdown_timeout"], "server_shutdown_timeout",
                                                             low=0, high=3600, error=ProfileError)
    if options.get("docker_host") is not None:
        # Also written into the serving unit: a newline there would add a setting of its own.
        checked["docker_host"] = _validate.single_line(options["docker_host"], "server_docker_host", error=ProfileError)
    if options.get("registry_prefix"):
        checked["registry_prefix"] = _validate.single_line(options["registry_prefix"], "server_registry_prefix",
                                                           error=ProfileError)
    return checked


def shutdown_plan(engine, engine_version, args, timeout):
    """How the engine is stopped: ``{graceful, timeout, flag, add_flag, stop_timeout, note}``.

    ``timeout`` is ``server_shutdown_timeout``: the seconds the engine gets to finish its
    in-flight requests after SIGTERM, given as the engine's graceful-shutdown flag
    (``engines.GRACEFUL_SHUTDOWN_FLAG``: vLLM ``--shutdown-timeout``) when its release has it (the
    engine catalog says which do) and the profile does not set it itself. ``stop_timeout`` is
    Docker's (``docker create --stop-timeout``, used by every stop: the swap, a rollback, the
    watchdog's restart), ``STOP_MARGIN`` longer than the engine's own; None leaves Docker's 10 s.
    ``note`` says, when the stop is not graceful, why (no silent fallback).
    """
    flag = engines.GRACEFUL_SHUTDOWN_FLAG.get(engine)
    label = engines.label(engine)
    result = {"graceful": False, "timeout": 0, "flag": flag, "add_flag": False, "stop_timeout": None, "note": None}
    own = engines.arg_value(engine, args or {}, (flag,)) if flag else None
    if own is not None:
        try:
            seconds = int(own)
        except (TypeError, ValueError):
            raise ProfileError("args.%s: got %s; expected whole seconds" % (flag, _validate.describe(own))) from None
        result.update(graceful=seconds > 0, timeout=seconds,
                      stop_timeout=seconds + STOP_MARGIN if seconds > 0 else None,
                      note=None if seconds > 0 else "the profile sets --%s 0: in-flight requests are cut at the stop" % flag)
        return result
    timeout = 0 if timeout is None else int(timeout)
    if timeout == 0:
        result["note"] = "server_shutdown_timeout is 0: in-flight requests are cut at the stop"
        return result
    if not flag:
        result["note"] = ("%s has no graceful shutdown: its in-flight requests are cut at the stop (the gateway's "
                          "drain waits for them to finish first)" % label)
        return result
    if not engine_version:
        result["note"] = ("the lock gives no engine_version for this image: whether its %s has --%s is unknown, so "
                          "it is not given; in-flight requests are cut at the stop" % (label, flag))
        return result
    release, _exact = catalog.nearest_release(engine, str(engine_version))
    if "--" + flag not in release.strings:
        first = catalog.option_releases(engine, "--" + flag)
        result["note"] = ("%s %s has no --%s (%s): in-flight requests are cut at the stop (the gateway's drain waits "
                          "for them to finish first)" % (label, engine_version, flag,
                                                         "from %s on" % first[0] if first else "no release has it"))
        return result
    result.update(graceful=True, timeout=timeout, add_flag=True, stop_timeout=timeout + STOP_MARGIN)
    return result


def _same(explicit, derived):
    """Whether an explicit expectation states the derived value (as backend_assert compares them)."""
    if explicit is None:
        return derived in (None, "none")
    if isinstance(derived, bool):
        return str(explicit).strip().lower() in (("true", "1", "yes", "on") if derived else ("false", "0", "no", "off"))
    if isinstance(derived, (int, float)):
        try:
            return float(explicit) == float(derived)
        except (TypeError, ValueError):
            return False
    return str(explicit).strip().lower() == str(derived).strip().lower()


def _set_by_override(engine, source, overrides):
    """Whether the flag behind a derived expectation was set by the inventory's overrides."""
    keys = {engines.flag_key(engine, flag) for flag in ((overrides or {}).get("args") or {})}
    if source == "the speculative decoding flags":
        return any(key.startswith("speculative") for key in keys)
    return source.startswith("args.") and engines.flag_key(engine, source[5:]) in keys


def derive_expect(profile, overrides=None):
    """``(expect, sources, superseded)``: what the engine's log must prove, where each value came
    from, and the profile's own expectations that an overridden flag superseded.

    Every key a flag determines is derived from the flag's final value (after ``extends``, the
    lock and the inventory's overrides); the profile's ``expect`` adds what no flag states (a
    backend the engine picks by itself on this hardware, one chosen through an env var). When the
    inventory sets that flag, the flag decides (the profile's expectation described the engine's
    own choice). An explicit key that contradicts its flag otherwise - both in the profile, or an
    expectation the inventory states itself - is refused, naming both values and their sources.
    """
    engine = profile.get("engine")
    explicit = dict(profile.get("expect") or {})
    override_expect = set(((overrides or {}).get("expect") or {}))
    derived = engines.derive_expect(engine, profile.get("args") or {})
    expect, sources, conflicts, superseded = {}, {}, [], []
    for key, (value, source) in derived.items():
        expect[key], sources[key] = value, source
    for key, value in explicit.items():
        if key in derived:
            wanted, source = derived[key]
            if _same(value, wanted):
                continue
            if key not in override_expect and _set_by_override(engine, source, overrides):
                superseded.append(key)
                sources[key] = "%s (inventory override; the profile expected %s)" % (source, quoted(value))
                continue
            conflicts.append("expect.%s: %s contradicts %s = %s. The flag decides what the engine selects: "
                             "remove expect.%s (from the profile or server_profile_overrides.expect), or change "
                             "the flag" % (key, quoted(value), source, quoted(wanted), key))
            continue
        if value is None:
            continue
        expect[key], sources[key] = value, "profile expect"
    if conflicts:
        raise ProfileError("profile %s: %s" % (profile.get("name"), "; ".join(conflicts)))
    if engine and "engine" not in expect:
        expect["engine"], sources["engine"] = engine, "profile engine"
    return expect, sources, superseded


def plan(profile, options=None, lock=None, overrides=None, dirs=None, watchdog=None):
    """The whole deployment of ``profile`` (a name, or a resolved profile) with the role's options,
    and what its host gets (``host_view``: the role's files, the units, the watchdog's
    configuration when ``watchdog`` gives its settings)."""
    return host_view(_plan(profile, options, lock=lock, overrides=overrides, dirs=dirs), watchdog)


def _plan(profile, options=None, lock=None, overrides=None, dirs=None):
    """The deployment itself (the container, its script, URLs, expectations), without the host's files."""
    options = _check_options(dict(options or {}))
    if isinstance(profile, str):
        profile = resolve_profile(profile, dirs=dirs, lock=lock, overrides=overrides)
    else:
        profile = plain(profile)
    # First: any later message (a launch script field refused) would quote a misplaced secret.
    refuse_secrets(profile, overrides, labels=options.get("labels"))
    engine = profile.get("engine")
    if engine not in engines.ENGINES:
        raise ProfileError("profile %s: engine %s is not one of %s"
                           % (profile.get("name"), quoted(engine), ", ".join(sorted(engines.ENGINES))))
    expect, sources, superseded = derive_expect(profile, overrides)
    if superseded:
        # The resolved profile (what a rollback rebuilds) no longer states what the flag decides.
        profile["expect"] = {k: v for k, v in profile["expect"].items() if k not in superseded}
    image = profile.get("image") or {}
    spec_options = {k: options[k] for k in SPEC_OPTIONS if options.get(k) is not None}
    config_dir = options.get("config_dir") or CONFIG_DIR
    script_dir = options.get("script_dir") or SCRIPT_DIR
    state_dir = options.get("state_dir") or STATE_DIR
    name = options.get("name") or profile["name"]
    secret_env = list(options.get("secret_env") or [])
    secret_files, spec_profile = {}, profile
    if "HF_TOKEN" in secret_env and hf_token_as_file(engine, image.get("engine_version")):
        # Out of Config.Env (docker inspect): a 0600 file, mounted read-only, named by HF_TOKEN_PATH.
        secret_files["HF_TOKEN"] = "%s/%s.hf_token" % (config_dir.rstrip("/"), name)
        secret_env.remove("HF_TOKEN")
        spec_options["secret_env"] = secret_env
        spec_options["extra_volumes"] = (list(spec_options.get("extra_volumes") or [])
                                         + ["%s:%s:ro" % (secret_files["HF_TOKEN"], HF_TOKEN_MOUNT)])
        spec_profile = overlay(profile, {"env": {"HF_TOKEN_PATH": HF_TOKEN_MOUNT}})
    env_file = "%s/%s.env" % (config_dir.rstrip("/"), name) if secret_env else None
    spec_options["env_file"] = env_file
    shutdown = shutdown_plan(engine, image.get("engine_version"), profile.get("args"), options.get("shutdown_timeout"))
    if shutdown["add_flag"]:
        spec_profile = overlay(spec_profile, {"args": {shutdown["flag"]: shutdown["timeout"]}})
    spec_options["stop_timeout"] = shutdown["stop_timeout"]
    spec = launch_spec(spec_profile, spec_options)
    if options.get("image_by_id"):
        if not image.get("image_id"):
            raise ProfileError("profile %s: running from an image archive needs the lock entry's image_id for %s:%s"
                               % (profile["name"], image.get("repository"), image.get("tag")))
        spec["image"] = image["image_id"]
        spec["labels"][SPEC_LABEL] = spec_digest(spec)
    base = "http://127.0.0.1:%d" % spec["port"]
    smoke = dict(options.get("smoke") or {})
    served = engines.served_model_name(engine, profile.get("args"), profile.get("model"))
    if smoke.get("prompt"):
        # The smoke request's body, one for the proof (verify.yml) and the status (status.yml):
        # a real completion at temperature 0 (the g7e field report's correctness gate, "2+2" = 4).
        smoke["request"] = {"model": served, "messages": [{"role": "user", "content": smoke["prompt"]}],
                            "temperature": 0, "max_tokens": int(smoke.get("max_tokens") or 64)}
    return {
        "profile": profile,
        "overrides": plain(overrides or {}),
        "options": {k: plain(v) for k, v in options.items()},
        "engine": engine,
        "engine_label": engines.label(engine),
        "container": spec["name"],
        "staged_container": spec["name"] + "-next",
        "spec": spec,
        "script": launch_script(spec, profile),
        "script_path": "%s/%s.sh" % (script_dir.rstrip("/"), spec["name"]),
        "env_file": env_file,
        # Secrets the container reads from a file of their own (name -> host path), not the env file.
        "secret_files": secret_files,
        "watchdog": _watchdog_files(spec["name"], config_dir, state_dir, options.get("textfile_dir")),
        # The host's record of this container's last known-good deployments (deployment_state).
        "state_file": "%s/%s.json" % (state_dir.rstrip("/"), spec["name"]),
        "image": {
            "ref": spec["image"],
            "repository": image.get("repository"),
            "tag": image.get("tag"),
            "digest": image.get("digest"),
            "engine_version": image.get("engine_version"),
            "image_id": image.get("image_id"),
            "by_id": spec["image"].startswith("sha256:"),
        },
        "model": profile.get("model"),
        # The model's commit (and the draft's), and whether the container runs with HF_HUB_OFFLINE=1.
        "weights": dict(_weights.weights(profile), offline=spec["env"].get(_weights.OFFLINE_ENV) == "1"),
        "served_model_name": served,
        # The secret the role's and the watchdog's requests authenticate with (its name only).
        "api_key_env": (engines.API_KEY_ENV[engine]
                        if engines.API_KEY_ENV[engine] in (options.get("secret_env") or []) else None),
        "port": spec["port"],
        "urls": dict({k: base + path for k, path in engines.ENDPOINTS[engine].items()}, base=base),
        "memory": {"fraction": engines.memory_fraction(engine, profile.get("args")),
                   "unified": bool((profile.get("hardware") or {}).get("unified_memory")),
                   "reads": engines.UNIFIED_MEMORY_READS[engine]},
        "metrics": dict(engines.METRICS[engine]),
        # How the engine is stopped (graceful shutdown, Docker's stop timeout, or why not).
        "shutdown": shutdown,
        "expect": expect,
        "expect_sources": sources,
        "smoke": smoke,
        "spec_label": SPEC_LABEL,
        "spec_sha256": spec["labels"][SPEC_LABEL],
        "argv_sha256": spec["labels"][ARGV_LABEL],
    }


def plan_key(profile, options=None, lock=None, overrides=None, dirs=None, watchdog=None):
    """What ``plan(profile, options, lock, overrides, dirs, watchdog)`` is computed from, as one digest.

    Every input: the profile's name, the launch options, the whole lock, the overrides, the
    profile directories, and the profile files found there (path, size, modification time), so
    a file edited between two plans of one run is read again, and the watchdog's settings.
    Secret values are never inputs (options carry the names of secret variables only).
    """
    inputs = {"profile": plain(profile), "options": plain(options or {}), "lock": plain(lock or {}),
              "overrides": plain(overrides or {}), "dirs": [str(d) for d in dirs or []],
              "files": profile_files(dirs), "watchdog": plain(watchdog)}
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_once(profile, options=None, lock=None, overrides=None, dirs=None, previous=None, watchdog=None):
    """The plan of these inputs: ``previous`` unchanged when it was planned from the very same
    inputs (its ``plan_key``), else ``plan()`` anew, carrying its key. This is the one memo of a
    plan: the key is cheap (a digest of the inputs and the profile files' stat), so the role
    calls this once per ``resolve`` and gets the kept plan back.

    One run plans a host once: preflight plans it, the server role's ``resolve`` finds the same
    key and keeps it; a pin canary's digest overlay or a tune candidate's overrides change the
    key, so their plan is computed again. A plan rebuilt from a record (rollback) has no key and
    is never kept.
    """
    key = plan_key(profile, options, lock, overrides, dirs, watchdog)
    if isinstance(previous, Mapping) and previous.get("plan_key") == key:
        return previous
    deployment = plan(profile, options, lock=lock, overrides=overrides, dirs=dirs, watchdog=watchdog)
    deployment["plan_key"] = key
    return deployment


def _watchdog_files(name, config_dir, state_dir, textfile_dir):
    """Where the host-side watchdog of container ``name`` keeps its unit, configuration, state
    and node_exporter textfile metrics (None: no textfile directory)."""
    return {
        "service": "inferops-watchdog@%s.service" % name,
        "config_file": "%s/watchdog-%s.json" % (config_dir.rstrip("/"), name),
        "state_file": "%s/watchdog-%s.json" % (state_dir.rstrip("/"), name),
        "textfile": ("%s/inferops_watchdog_%s.prom" % (textfile_dir.rstrip("/"), re.sub(r"[^A-Za-z0-9_]", "_", name))
                     if textfile_dir else None),
    }


def server_files(deployment):
    """The server role's files on the host, as ``inferops.serving.host_files`` entries, in order:
    its directories (the secret env file's is private; the ones the role alone owns, config and
    scripts, get their mode and owner back; a model or engine cache that exists is left as found),
    the env file and the Hugging Face token file removed when this plan has none (secrets moved
    or gone), and the launch script. Not the serving unit (a template of the role, written only
    when the container starts with Docker) and never a secret: ``secret_files`` writes those."""
    options = deployment.get("options") or {}
    config_dir = (options.get("config_dir") or CONFIG_DIR).rstrip("/") or "/"
    name = deployment["container"]
    files = [{"path": options.get("config_dir") or CONFIG_DIR, "state": "directory", "mode": "0700",
              "keep_existing": False},
             {"path": options.get("model_cache_dir") or LAUNCH_DEFAULTS["model_cache_dir"], "state": "directory",
              "mode": "0755"},
             {"path": options.get("script_dir") or SCRIPT_DIR, "state": "directory", "mode": "0755",
              "keep_existing": False}]
    if options.get("engine_cache_dir"):
        files.append({"path": options["engine_cache_dir"], "state": "directory", "mode": "0755"})
    if deployment.get("env_file") is None:
        files.append({"path": "%s/%s.env" % (config_dir, name), "state": "absent"})
    if "HF_TOKEN" not in (deployment.get("secret_files") or {}):
        files.append({"path": "%s/%s.hf_token" % (config_dir, name), "state": "absent"})
    files.append({"path": deployment["script_path"], "content": deployment["script"], "mode": "0755"})
    return files


def secret_files(deployment, secrets):
    """The files that hold the plan's secrets, ``[{path, content, mode}]`` (0600): each secret the
    container reads from a file of its own (``secret_files``), then the Docker env file with the
    rest. ``secrets`` are the values (server_secrets with the Hugging Face token), checked as
    ``validate_secrets`` checks them (a message names the entry, never its value). Never part of
    the plan: the role writes these under no_log."""
    own = deployment.get("secret_files") or {}
    files = [{"path": path, "content": secret_file_text(secrets, name), "mode": "0600"}
             for name, path in own.items()]
    if deployment.get("env_file"):
        files.append({"path": deployment["env_file"], "content": env_file_text(secrets, exclude=list(own)),
                      "mode": "0600"})
    return files


def _watchdog_plan(deployment, settings):
    """The watchdog's part of the plan: its paths (service, configuration, state, textfile), and,
    with its ``settings`` (the watchdog role's variables; None: the watchdog is disabled), its
    configuration (as a dict and as the file's text), its unit's escaped values and sandbox, and
    the files the watchdog role installs (its directories, the host libraries the program imports
    and its configuration; the role adds its program and unit)."""
    options = deployment.get("options") or {}
    watchdog = dict(deployment["watchdog"], unit_file=WATCHDOG_UNIT_FILE, enabled=settings is not None,
                    config=None, config_text=None, unit=None, files=[], data_dirs=[])
    if settings is None:
        return watchdog
    settings = dict(settings)
    settings.setdefault("unified_memory", (deployment.get("memory") or {}).get("unified", False))
    config = watchdog_config(deployment, settings)
    script_dir = options.get("script_dir") or SCRIPT_DIR
    state_dir = options.get("state_dir") or STATE_DIR
    textfile_dir = options.get("textfile_dir") or ""
    unit = watchdog_unit({"script_dir": script_dir, "config_dir": options.get("config_dir") or CONFIG_DIR,
                          "state_dir": state_dir, "textfile_dir": textfile_dir},
                         config["docker_host"], config["drop_caches_file"] if config["drop_caches_before_start"] else None)
    text = json.dumps(config, indent=2, sort_keys=True, separators=(",", ": ")) + "\n"
    data_dirs = [state_dir] + ([textfile_dir] if textfile_dir else [])
    files = [{"path": path, "state": "directory", "mode": "0755"} for path in data_dirs]
    files += [{"path": "%s/inferops_%s.py" % (script_dir.rstrip("/"), name), "mode": "0644",
               "content": library_source(name)} for name in HOST_LIBRARIES]
    files.append({"path": watchdog["config_file"], "mode": "0644", "content": text})
    watchdog.update(config=config, config_text=text, unit=unit, files=files, data_dirs=data_dirs, state_dir=state_dir,
                    program="%s/%s" % (script_dir.rstrip("/"), WATCHDOG_PROGRAM))
    return watchdog


def host_view(deployment, watchdog=None):
    """``deployment`` with what its host gets: ``files`` (the server role's, ``server_files``),
    ``serving_unit`` (the start-with-Docker unit: its file, service and the Docker address
    escaped for it), ``watchdog`` (``_watchdog_plan``), ``undeploy`` (what removing it removes)
    and ``record`` (its state entry without the proof's evidence).
    A bad watchdog setting or a value no unit can carry raises ProfileError naming the variable."""
    options = deployment.get("options") or {}
    try:
        deployment["serving_unit"] = {
            "path": SERVING_UNIT_FILE, "service": "inferops-serving@%s.service" % deployment["container"],
            "docker_host": systemd_escape(options.get("docker_host") or DOCKER_HOST, "server_docker_host")}
        deployment["files"] = server_files(deployment)
        deployment["watchdog"] = _watchdog_plan(deployment, watchdog)
    except (SystemdValueError, WatchdogConfigError) as exc:
        raise ProfileError(str(exc)) from None
    deployment["undeploy"] = undeploy_parts(deployment)
    # The state entry of this deployment once proven, without its evidence (the role's state.yml
    # adds the proof's: the digest pulled, the engine version seen, the times, the backends).
    deployment["record"] = record(deployment)
    return deployment


def stale_failed_logs(paths, container, keep):
    """The failed-deployment logs of ``container`` to delete so that the ``keep`` newest remain.

    The rescue names them ``failed-<container>-<YYYYmmddTHHMMSSZ>.log`` (UTC), so their names sort
    by time; another container's logs (``<container>-next`` too) and other files are never chosen.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ProfileError("server_failed_logs_kept: got %s; expected a whole number >= 1"
                           % _validate.describe(keep))
    pattern = re.compile(r"failed-%s-\d{8}T\d{6}Z\.log" % re.escape(str(container)))
    mine = sorted(str(p) for p in paths or [] if pattern.fullmatch(str(p).rsplit("/", 1)[-1]))
    return mine[:-keep]


def from_record(record, options=None, watchdog=None):
    """The deployment a host recorded as validated, rebuilt with ``plan()`` (its host's files and
    watchdog from ``watchdog``, today's watchdog settings, as any plan).

    A record written by this version carries the plan's profile and options, so the same
    function rebuilds the same container. An older record (profile and spec only) is rebuilt
    from its profile with today's options, then given the recorded container spec.
    """
    if not isinstance(record, Mapping) or not isinstance(record.get("profile"), Mapping):
        raise ProfileError("the recorded deployment has no profile; it cannot be rebuilt")
    if isinstance(record.get("plan_input"), str):
        # The exact input, key order included (args are argv in order; a state file's JSON may
        # have been written with sorted keys).
        recorded = json.loads(record["plan_input"])
        deployment = _plan(recorded["profile"], recorded["options"])
    elif isinstance(record.get("options"), Mapping):
        deployment = _plan(record["profile"], record["options"])
    else:
        deployment = _plan(record["profile"], options)
    if record.get("spec_sha256") and record["spec_sha256"] != deployment["spec_sha256"]:
        if not isinstance(record.get("spec"), Mapping):
            raise ProfileError("the recorded deployment %s rebuilds to spec %s, not the recorded %s, and the record "
                               "holds no container spec: redeploy it with site.yml"
                               % (deployment["profile"].get("name"), deployment["spec_sha256"][:12],
                                  str(record["spec_sha256"])[:12]))
        # A record of an older version (no exact input): run the container spec it recorded.
        spec = plain(record["spec"])
        deployment.update(spec=spec, container=spec["name"], staged_container=spec["name"] + "-next",
                          script=launch_script(spec, deployment["profile"]),
                          spec_sha256=spec["labels"].get(SPEC_LABEL), argv_sha256=spec["labels"].get(ARGV_LABEL),
                          # The secrets as the recorded container reads them (an older one: all in its env file).
                          env_file=spec.get("env_file"),
                          secret_files={k: path for k, path in deployment["secret_files"].items()
                                        if any(str(v).startswith(path + ":") for v in spec.get("volumes") or [])})
        deployment["image"]["ref"] = spec["image"]
    return host_view(deployment, watchdog)


def record(deployment, observed=None, smoke_answer=None, speculative=None, digest=None, validated_at=None,
           started_at=None):
    """The state entry of a validated deployment: what rollback rebuilds, with its evidence.

    ``started_at`` is the proven container's ``State.StartedAt``: a later converge that finds the
    container running with another start (never proven) proves it again.
    """
    observed = dict(observed or {})
    return {
        "profile": deployment["profile"],
        "options": deployment["options"],
        "plan_input": json.dumps({"profile": deployment["profile"], "options": deployment["options"]}),
        "spec": deployment["spec"],
        "image": deployment["spec"]["image"],
        "digest": deployment["image"]["digest"] or digest,
        "argv_sha256": deployment["argv_sha256"],
        "spec_sha256": deployment["spec_sha256"],
        "engine_version": observed.get("engine_version") or deployment["image"]["engine_version"],
        "model_revision": (deployment.get("weights") or {}).get("revision"),
        "validated_at": validated_at,
        "started_at": started_at,
        "evidence": {"backends": observed, "smoke_answer": str(smoke_answer or "")[:120],
                     "speculative": speculative},
    }


def acceptance_per_position(metrics, before, after):
    """Speculative acceptance rate per draft position over a window, from two /metrics texts.

    vLLM: the accepted-token count at each position divided by the number of drafts, both as
    deltas between ``before`` and ``after`` (the GB10 field report read 0.67 / 0.36 / 0.16 at k=2..3 this
    way). ``metrics`` is the engine's METRICS entry. None when the engine does not export it
    (SGLang: only its mean accept length) or no draft was made in the window.
    """
    name = metrics.get("spec_accepted_per_pos")
    if not name:
        return None
    drafts = (metric_sum(after, metrics["spec_drafts"]) or 0.0) - (metric_sum(before, metrics["spec_drafts"]) or 0.0)
    if drafts <= 0:
        return None
    start, end = metric_by_label(before, name, "position"), metric_by_label(after, name, "position")
    positions = sorted(end, key=int)
    return [round((end[pos] - start.get(pos, 0.0)) / drafts, 4) for pos in positions]


def spec_decode_evidence(deployment, before, after, requests=0):
    """Whether a burst of speculative requests made drafts and accepted tokens, from /metrics.

    vLLM counts drafts and accepted tokens (deltas over the burst); SGLang exports the mean
    accept length (tokens per step, > 1 when drafts are accepted).
    """
    metrics = deployment["metrics"]
    evidence = {"engine": deployment["engine"], "requests": int(requests)}
    if metrics.get("spec_drafts"):
        drafts = (metric_sum(after, metrics["spec_drafts"]) or 0.0) - (metric_sum(before, metrics["spec_drafts"]) or 0.0)
        accepted = ((metric_sum(after, metrics["spec_accepted"]) or 0.0)
                    - (metric_sum(before, metrics["spec_accepted"]) or 0.0))
        evidence.update(drafts=int(drafts), accepted_tokens=int(accepted), ok=drafts > 0 and accepted > 0)
    else:
        length = metric_max(after, metrics.get("spec_accept_length")) or 0.0
        evidence.update(accept_length=length, ok=length > 1.0)
    return evidence
