# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""Secrets have one channel: the role option ``server_secrets`` (env var name -> value).

A secret written into a profile's ``args`` or ``env`` (or an inventory override of them) ends up
in the launch script, the host's state file, container labels, ``docker inspect`` Args and the
engine's own "non-default args" log line. ``secret_findings`` refuses it and names the channel;
``secret_channel`` says which env var the engine reads instead of a secret flag (vLLM reads
``VLLM_API_KEY`` when ``--api-key`` is absent), or that it has none. ``env_file_text`` renders
the secrets as a Docker ``--env-file``: ``NAME=value`` lines read literally (no quoting, no
``export``), so the file must never be sourced by a shell; ``hf_token_as_file`` says when the
engine's image reads the Hugging Face token from a file instead (``HF_TOKEN_PATH``), out of the
container's ``Config.Env``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

# A value holding a secret's shape (a Hugging Face, OpenAI, GitHub... token, a URL's password) is a
# leaked secret whatever its name; scrub masks every such shape in a message (the shapes live in
# _secret_shapes, which modules can use).
from ansible_collections.inferops.serving.plugins.module_utils._secret_shapes import (
    HF_TOKEN_KIND,
    quoted,
    scrub,
    secret_kind,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._engine_catalog import CatalogError, version_in
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import (
    ProfileError,
    apply_overrides,
    flag_key,
    load_profile,
)

CHANNEL = "server_secrets"
# docker run --env-file reads lines with Go's bufio.Scanner (docker/cli opts/envfile.go), whose
# default buffer (bufio.MaxScanTokenSize, 64 KiB) must hold a line and its newline.
ENV_FILE_LINE_MAX = 64 * 1024 - 1
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Env var names that are secrets whatever the pattern says.
SECRET_ENV = frozenset((
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY", "WANDB_API_KEY",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "NGC_API_KEY", "HF_API_TOKEN",
))
# *_TOKEN, *_KEY, *_SECRET, *PASSWORD*, *PASSWD*, *CREDENTIAL_VALUE... by name.
_SECRET_ENV_RE = re.compile(r"(?:^|_)(?:TOKEN|KEY|SECRET|APIKEY)$|PASSWORD|PASSWD|_SECRET_|PRIVATE_KEY")
# Names matching the pattern that are not secrets: they hold a path or a number.
# Checked against every env var the engines' releases read (the generated catalog): a count per
# token or a cache key is not a secret.
NOT_SECRET_ENV = frozenset(("HF_TOKEN_PATH", "SGLANG_LOG_DECODE_GRAPH_KEY"))
_NOT_SECRET_ENV_RE = re.compile(r"_PER_TOKEN$")
# Flags whose value is a secret, by engine; the env var the engine reads instead, or None.
SECRET_FLAGS = {
    # vllm/entrypoints/openai/api_server.py: `args.api_key or envs.VLLM_API_KEY`; the Hub client
    # (huggingface_hub) reads HF_TOKEN when --hf-token is not given.
    "vllm": {"api-key": "VLLM_API_KEY", "hf-token": "HF_TOKEN"},
    # SGLang's ServerArgs.api_key / admin_api_key come from the command line only; downloads go
    # through huggingface_hub, which reads HF_TOKEN.
    "sglang": {"api-key": None, "admin-api-key": None, "hf-token": "HF_TOKEN"},
}
# Flag names (hyphenated, no leading --) that are secrets by their last word.
_SECRET_FLAG_RE = re.compile(r"(?:^|-)(?:key|token|secret|password|passwd|apikey)$|password|passwd|secret")
# Flags matching the pattern whose value is not a secret.
NOT_SECRET_FLAGS = frozenset(("bucket-time-to-first-token", "ssl-keyfile", "speculative-token-map"))
REASON = ("A value in args, env or a container label lands in the 0755 launch script, the host's state file, container labels, "
          "docker inspect and the engine's logged arguments; secrets must only travel in the 0600 env file "
          "written from %s (no_log)." % CHANNEL)
SOURCE = "issue 10 (review 2026-11-30, D6 and D14)"
_OVERRIDE_NOTE = " (set by the inventory override %s)"


# The Hugging Face token as a file: huggingface_hub (>= 0.21) reads the token from the file
# HF_TOKEN_PATH names when HF_TOKEN is unset, so the token stays out of the container's Config.Env
# (docker inspect). The first release of each engine whose image has such a huggingface_hub: the
# oldest releases in the engine catalog (vLLM 0.17.0, SGLang 0.5.1) need transformers >= 4.55,
# which needs huggingface_hub >= 0.34. An older or unparseable version keeps HF_TOKEN in the env file.
HF_TOKEN_PATH_SINCE = {"vllm": "0.17.0", "sglang": "0.5.1"}
HF_TOKEN_MOUNT = "/run/secrets/hf_token"


def hf_token_as_file(engine, engine_version):
    """Whether the engine's image reads the Hub token from a file (``HF_TOKEN_PATH``)."""
    first = HF_TOKEN_PATH_SINCE.get(engine)
    if first is None or not engine_version:
        return False
    try:
        return version_in(str(engine_version).split(" ", 1)[0], first=first)
    except CatalogError:
        return False


def is_secret_env(name):
    """Whether an env var name holds a secret (``HF_TOKEN``, ``*_TOKEN``, ``*_KEY``, ``*PASSWORD*`` ...)."""
    upper = str(name).upper()
    if upper in NOT_SECRET_ENV or _NOT_SECRET_ENV_RE.search(upper):
        return False
    return upper in SECRET_ENV or bool(_SECRET_ENV_RE.search(upper))


def is_secret_flag(engine, flag):
    """Whether a CLI flag's value is a secret (``--api-key``, ``--hf-token``, ``--admin-api-key`` ...)."""
    key = str(flag).lstrip("-").split(".", 1)[0].replace("_", "-").lower()
    if key in NOT_SECRET_FLAGS or key.endswith("-per-token"):
        return False
    return key in SECRET_FLAGS.get(engine, {}) or bool(_SECRET_FLAG_RE.search(key))


def secret_channel(engine, flag):
    """How a secret flag's value reaches the engine without being on its command line.

    ``{"flag": "api-key", "env": "VLLM_API_KEY" | None, "how": "<sentence for a message>"}``;
    ``env`` None means the engine reads that value only from its command line.
    """
    key = str(flag).lstrip("-").split(".", 1)[0].replace("_", "-").lower()
    known = SECRET_FLAGS.get(engine, {})
    label = {"vllm": "vLLM", "sglang": "SGLang"}.get(engine, str(engine))
    if key in known and known[key]:
        env = known[key]
        return {"flag": key, "env": env,
                "how": "remove it and set %s: {%s: <value>} (%s reads %s when --%s is absent)"
                       % (CHANNEL, env, label, env, key)}
    return {"flag": key, "env": None,
            "how": ("%s reads --%s only from its command line, where any value is visible in docker inspect, "
                    "ps and the engine's logged arguments; the collection does not pass it: remove it and "
                    "protect the endpoint outside the container (e.g. an authenticating proxy)" % (label, key))}


def _where(name, from_override):
    return _OVERRIDE_NOTE % name if from_override else ""


def _finding(rule, message):
    return {"rule": rule, "severity": "error", "message": message, "reason": REASON, "source": SOURCE}


def secret_findings(profile, overrides=None, profile_dirs=None):
    """Lint findings (``{rule, severity, message, reason, source}``) for secrets outside their channel.

    ``profile`` is a loaded profile or a name; ``overrides`` the inventory overrides, applied as the
    lint applies them. Rules: ``secret-in-args`` (a secret flag with a value), ``secret-in-env``
    (a secret-named env var with a value) and ``secret-value`` (a value shaped like a secret, under
    any name: ``value_findings``). Each message names where the value is and the channel to use instead.
    """
    if isinstance(profile, str):
        profile = load_profile(profile, profile_dirs)
    if not isinstance(profile, Mapping):
        raise ProfileError("secret_findings needs a profile mapping or a profile name, not %r"
                           % type(profile).__name__)
    overrides = overrides or {}
    resolved = apply_overrides(dict(profile), overrides) if overrides else dict(profile)
    engine = resolved.get("engine")
    override_args = {flag_key(engine, k) for k in (overrides.get("args") or {})}
    override_env = set((overrides.get("env") or {}))
    findings = []
    args = resolved.get("args") or {}
    env = resolved.get("env") or {}
    for flag, value in args.items():
        if value is None or value is False or not is_secret_flag(engine, flag):
            continue
        name = "args." + str(flag).lstrip("-")
        where = _where(name, flag_key(engine, flag) in override_args)
        if value is True:
            continue  # a bare flag (vLLM --hf-token alone uses the stored login), no value to leak
        findings.append(_finding("secret-in-args", "%s%s is a secret on the engine's command line; %s"
                                 % (name, where, secret_channel(engine, flag)["how"])))
    for name, value in env.items():
        if value is None or not is_secret_env(name):
            continue
        findings.append(_finding("secret-in-env", "env.%s%s is a secret in the profile's env; remove it and set "
                                 "%s: {%s: <value>}" % (name, _where("env." + str(name), name in override_env),
                                                        CHANNEL, name)))
    reported = {f["message"].split(" ", 1)[0] for f in findings}
    for kind, items in (("args", args), ("env", env)):
        findings += value_findings(kind, items, skip=reported)
    return findings


def value_findings(kind, items, skip=()):
    """``secret-value`` findings for the entries of ``items`` (args, env or container labels, as
    ``kind`` says) whose value holds a secret's shape (``secret_kind``: a Hugging Face, OpenAI,
    Anthropic, GitHub, GitLab, Slack or AWS token, a bearer token, a JWT, a URL's password),
    whatever the entry's name. Each names the entry, the kind of secret and its channel; the
    entries named in ``skip`` (already refused by name) are left out."""
    findings = []
    for name, value in (items or {}).items():
        label = "%s.%s" % (kind, str(name).lstrip("-") if kind == "args" else name)
        if label in skip or value is None:
            continue
        shape = secret_kind(_text(value))
        if shape is None:
            continue
        env = "HF_TOKEN" if shape == HF_TOKEN_KIND else (scrub(name) if kind == "env" else "NAME")
        findings.append(_finding("secret-value", "%s holds what looks like %s; remove it and set %s: {%s: <value>} "
                                 "in the vault" % (scrub(label), shape, CHANNEL, env)))
    return findings


def refuse_secrets(profile, overrides=None, labels=None):
    """Raise ProfileError, naming each place and its channel (never a value), when ``profile`` (with
    ``overrides``) or the container ``labels`` (``server_labels``) hold a secret outside ``server_secrets``.

    The deployment plan calls it first: a later check (a newline refused in the launch script) would
    quote the value, and the plan itself (the launch script, the spec) would carry it into ``-v`` output.
    """
    findings = secret_findings(profile, overrides) + value_findings("server_labels", labels)
    if findings:
        raise ProfileError("profile %s: %s (values not shown). %s"
                           % (profile.get("name"), "; ".join(f["message"] for f in findings), REASON))


def failure_message(result, task=None, limit=2000):
    """What a rescue may keep of a failed task's result: its ``msg`` (else ``stderr``), scrubbed and
    cut to ``limit`` characters; for a ``no_log`` task (``task`` is ``ansible_failed_task``) a fixed
    text, since Ansible hands the rescue the uncensored result."""
    if isinstance(task, Mapping) and _truthy(task.get("no_log")):
        return "the failed task's output is hidden (no_log); rerun it with no_log off on a test host to see it"
    result = result if isinstance(result, Mapping) else {}
    message = result.get("msg")
    if message in (None, ""):
        message = result.get("stderr") or ""
    text = scrub(message)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def _text(value):
    if isinstance(value, Mapping):
        return " ".join("%s %s" % (k, _text(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_text(v) for v in value)
    return str(value)


def validate_secrets(secrets, var=CHANNEL):
    """``server_secrets`` checked: env var names to single-line string values; empty values dropped.

    Raises ProfileError naming the entry (never its value).
    """
    if secrets is None:
        return {}
    if not isinstance(secrets, Mapping):
        raise ProfileError("%s: got a %s; expected a mapping of env var names to secret values, e.g. "
                           "{HF_TOKEN: ..., VLLM_API_KEY: ...}" % (var, type(secrets).__name__))
    clean = {}
    for name, value in secrets.items():
        if not isinstance(name, str) or not ENV_NAME_RE.fullmatch(name):
            raise ProfileError("%s: key %s is not an env var name; expected letters, digits and '_', not "
                               "starting with a digit" % (var, quoted(name)))
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ProfileError("%s.%s: got a %s; expected a string" % (var, name, type(value).__name__))
        text = str(value)
        if re.search(r"[\x00-\x1f\x7f]", text):
            raise ProfileError("%s.%s: the value contains a newline or another control character, which a "
                               "Docker env file cannot carry; remove it (value not shown)" % (var, name))
        try:
            line = len(("%s=%s" % (name, text)).encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ProfileError("%s.%s: the value is not valid UTF-8, which a Docker env file refuses (value "
                               "not shown)" % (var, name)) from exc
        if line > ENV_FILE_LINE_MAX:
            raise ProfileError("%s.%s: NAME=value is %d bytes; Docker reads an env file line of at most %d bytes "
                               "(docker run --env-file fails with 'token too long'); shorten it or mount the secret "
                               "as a file (value not shown)" % (var, name, line, ENV_FILE_LINE_MAX))
        clean[name] = text
    return clean


def secret_file_text(secrets, name, var=CHANNEL):
    """The text of a file holding one secret (``secrets[name]``), checked as ``validate_secrets``
    checks it (the message names the entry, never the value); no trailing newline."""
    clean = validate_secrets(secrets, var)
    if name not in clean:
        raise ProfileError("%s.%s: no value to write to its file" % (var, name))
    return clean[name]


def env_file_text(secrets, var=CHANNEL, exclude=()):
    """The Docker ``--env-file`` text for ``secrets``: one literal ``NAME=value`` line each, sorted;
    the ``exclude`` names (secrets the container gets as files) are checked but left out.

    Docker reads each line literally (no quotes, no ``$`` expansion, no ``export``), so the file is
    for ``docker run --env-file`` only; a shell must never source it.
    """
    clean = validate_secrets(secrets, var)
    return "".join("%s=%s\n" % (name, clean[name]) for name in sorted(clean) if name not in exclude)


def redact(data, values, mask="<redacted>"):
    """``data`` (strings, mappings, lists) with every occurrence of each secret value replaced."""
    values = sorted({str(v) for v in values if v not in (None, "") and len(str(v)) >= 4}, key=len, reverse=True)
    if not values:
        return data

    def walk(item):
        if isinstance(item, str):
            for value in values:
                item = item.replace(value, mask)
            return item
        if isinstance(item, Mapping):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v) for v in item]
        return item

    return walk(data)
