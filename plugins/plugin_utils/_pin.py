# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What the pin role decides: the canaries, the candidate digest and what to do with it, the
failure and its known-bad entry, whether the candidate may be locked, the lock entry; and for a
model's new revision (``pin_model_revision``) the candidate commit and its lock entry.

Pure functions over what the role has in hand (the deployment plan, the pull's or the registry's
answer, the inventory's lock and known-bad list, the server role's public results); the lookup
inferops.serving.pin_plan calls them. Each decision carries a named ``state`` the role acts on:
the target's ``no_digest``, ``pinned``, ``known_bad``, ``check`` or ``prove``; the outcome's
``lock`` (only for a proven candidate that nothing refused), ``failed``, ``refused`` or
``unproven``. And where the fleet's lock and known-bad list live (fleet_file()).
"""
from __future__ import annotations

import os
import re

from ansible_collections.inferops.serving.plugins.plugin_utils._profile import KNOWN_BAD_FILE
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import (
    lint_profile,
    load_known_bad,
    validate_known_bad,
)
from ansible_collections.inferops.serving.plugins.plugin_utils._rollback import hardware_group
from ansible_collections.inferops.serving.plugins.plugin_utils._weights import revision_problem

# A failure of these server-role steps says nothing about the image that would run (a refused host,
# a registry that did not answer): the digest is not marked known-bad.
_NOT_THE_IMAGE = re.compile(r"(Pull|Load|Verify the image)")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}$")
SYMPTOM_LENGTH = 300


class PinError(ValueError):
    """Bad input to a pin decision; the message names the variable and the fix."""


# The files pin.yml writes, in group_vars/all/ of the fleet's inventory, and the variable each holds.
LOCK_NAME = "image_lock.yml"
KNOWN_BAD_NAME = "known_bad_images.yml"
FLEET_FILES = {LOCK_NAME: ("pin_lock_file", "inferops_serving_image_lock"),
               KNOWN_BAD_NAME: ("pin_known_bad_file", "inferops_known_bad_images")}


def source_dir(source, isdir=os.path.isdir):
    """The directory whose group_vars/ Ansible reads for an inventory source, as its vars loader
    does (ansible.vars.plugins.get_vars_from_inventory_sources): a directory source itself, a file
    source's directory (an aws_ec2 configuration's too); None for a host list (``a,b,``)."""
    if not source:
        return None
    source = str(source)
    if "," in source and not os.path.exists(source):
        return None
    return source if isdir(source) else os.path.dirname(source)


def fleet_file(name, sources, given="", isdir=os.path.isdir, exists=os.path.exists):
    """Where pin.yml writes the fleet's ``name`` (LOCK_NAME or KNOWN_BAD_NAME) for every canary alike.

    Ansible reads ``group_vars/all/`` beside EVERY inventory source (``sources``: the run's
    ``ansible_inventory_sources``, in the order given), and when two of those files set the same
    variable the later source's replaces the other's for every host: a second lock beside another
    source makes one hardware group's pins vanish. So the place never depends on which source
    defined the canary (its ``inventory_dir``): ``given`` (the operator's ``pin_lock_file`` /
    ``pin_known_bad_file``) when set; else the one ``group_vars/all/<name>`` that exists beside
    the sources; else the one beside the first source (a fleet's static inventory, given first as
    docs/lab-to-fleet.md runs it). Two that exist are refused: they already shadow each other.
    """
    variable, holds = FLEET_FILES[name]
    if given:
        return str(given)
    places = []
    for source in sources or []:
        directory = source_dir(source, isdir)
        if directory is not None:
            place = os.path.join(directory, "group_vars", "all", name)
            if place not in places:
                places.append(place)
    if not places:
        raise PinError("%s: none of the inventory sources (%s) is a file or directory whose group_vars/all/ "
                       "could hold %s; set %s to the file to write" % (variable, list(sources or []), name, variable))
    found = [place for place in places if exists(place)]
    if len(found) > 1:
        raise PinError("%s: %d files set %s and shadow each other: %s. Ansible reads group_vars/all/ beside every "
                       "inventory source and the later one replaces the other for every host, so the entries of "
                       "one are lost. Merge them into %s, delete the others, and run again (or set %s to the "
                       "one file to keep)" % (variable, len(found), holds, ", ".join(found), found[0], variable))
    return found[0] if found else places[0]


def hardware_group(groups, given=None, serving_group="serving"):
    """The host's hardware group: ``inferops_hardware_group`` when given, else its first group other
    than the serving group, else the serving group."""
    if given:
        return str(given)
    return next((group for group in groups or [] if group != serving_group), serving_group)


def canaries(hosts, image=None, serving_group="serving", pattern=None):
    """One canary per hardware group and image, in the hosts' order: the host marked
    ``canary: true``, else the group's first host with that image. ``hosts``: ``[{host, image,
    groups, hardware_group, canary}]`` (hardware_group may be None). ``image``: only hosts deploying
    it (``pin_image``); an image no host deploys is refused (``pattern``: the play's hosts, for the message)."""
    in_use = sorted({entry["image"] for entry in hosts})
    if image and image not in in_use:
        raise PinError("pin_image=%s is the image of no host in %s: nothing would be validated or pinned. The "
                       "fleet's profiles use %s; pin one of those, or give a host a profile that uses it."
                       % (image, pattern or serving_group, ", ".join(in_use) or "nothing"))
    chosen = {}
    for entry in hosts:
        if image and entry["image"] != image:
            continue
        key = (hardware_group(entry.get("groups"), entry.get("hardware_group"), serving_group), entry["image"])
        if key not in chosen or (entry.get("canary") and not chosen[key].get("canary")):
            chosen[key] = entry
    return [entry["host"] for entry in chosen.values()]


def registry_prefix(prefix):
    """``server_registry_prefix`` as the front of an image name (``host:port/``), or ''."""
    return (str(prefix).rstrip("/") + "/") if prefix else ""


def repo_digest(repo_digests, name):
    """The digest of ``name`` (``[registry/]repository``) among an image's RepoDigests, or ''."""
    for reference in repo_digests or []:
        if reference.startswith(name + "@"):
            return reference.split("@")[-1]
    return ""


def known_bad_messages(profile, digest, known_bad=None):
    """The profile lint's known-bad findings for the profile with ``digest`` laid over: the
    collection's data/known_bad_images.yml and the inventory's ``inferops_known_bad_images``."""
    extra = validate_known_bad(list(known_bad or []), "inferops_known_bad_images")
    findings = lint_profile(profile, overrides={"image": {"digest": digest}},
                            known_bad=load_known_bad(KNOWN_BAD_FILE) + extra)
    return [finding["message"] for finding in findings if finding["rule"] == "image-digest-known-bad"]


def archive_path(archive_dir, repository, tag, digest):
    """Where ``docker save`` writes the pinned image on the canary, or None without an archive directory."""
    if not archive_dir:
        return None
    return "%s/%s_%s_%s.tar" % (str(archive_dir).rstrip("/"), repository.replace("/", "_"), tag, digest[7:19])


def target(deployment, pull=None, remote=None, lock=None, known_bad=None, prefix="", archive_dir="",
           overrides=None, check_mode=False, host="the canary", lock_file="the lock"):
    """What this canary does with its tag's current digest.

    ``pull``: the registered community.docker.docker_image_pull result (a real run); ``remote``:
    inferops.serving.image_digest_info's (check mode). Returns ``{image, name, repository, tag, digest,
    image_id, platform, current, pinned, known_bad, archive, overrides}``: ``pinned`` when the lock
    already holds this digest (nothing new), ``known_bad`` the findings refusing it, ``overrides``
    the host's ``server_profile_overrides`` with the digest laid over (what the canary deploys),
    ``state`` what the canary does with it (state()) and ``message`` what it says."""
    image = deployment["image"]
    repository, tag = image["repository"], image["tag"]
    name = registry_prefix(prefix) + repository
    pulled = (pull or {}).get("image") or {}
    if check_mode:
        digest = (remote or {}).get("digest") or ""
    else:
        digest = repo_digest(pulled.get("RepoDigests"), name)
    full = "%s:%s" % (repository, tag)
    current = (((lock or {}).get("images") or {}).get(full)) or {}
    laid = dict(overrides or {})
    laid["image"] = dict(laid.get("image") or {}, digest=digest)
    found = {
        "image": full, "name": "%s:%s" % (name, tag), "repository": repository, "tag": tag, "digest": digest,
        "image_id": pulled.get("Id"),
        "platform": "%s/%s" % (pulled.get("Os", "linux"), pulled.get("Architecture", "unknown")),
        "current": current, "pinned": bool(digest) and current.get("digest") == digest,
        "known_bad": known_bad_messages(deployment["profile"], digest, known_bad) if digest else [],
        "archive": archive_path(archive_dir, repository, tag, digest),
        "overrides": laid,
    }
    found["state"], found["message"] = state(found, check_mode, host, lock_file, pulled.get("RepoDigests"), remote)
    return found


def state(target_, check_mode=False, host="the canary", lock_file="the lock", repo_digests=None, remote=None):
    """What the canary does with the target's digest, in this order, and what it says: ``no_digest``
    (the registry gave none: refused), ``pinned`` (the lock holds it: nothing new, the canary
    ends), ``known_bad`` (refused before anything is deployed), ``check`` (check mode: say what a
    real run would do, the canary ends), else ``prove``."""
    image, digest, current = target_["image"], target_["digest"], target_["current"] or {}
    if not _DIGEST.match(digest or ""):
        return "no_digest", ("%s on %s has no repository digest (%s): it was not pulled from a registry."
                             % (target_["name"], host, list(repo_digests or [])))
    if target_["pinned"]:
        return "pinned", "%s is still %s, pinned %s: nothing new." % (image, digest, current.get("pinned_at") or "earlier")
    if target_["known_bad"]:
        return "known_bad", ("%s now resolves to %s, which is on the known-bad list: %s. Nothing was deployed; "
                             "wait for a newer build of the tag." % (image, digest, "; ".join(target_["known_bad"])))
    if check_mode:
        remote = remote or {}
        return "check", ("%s now points to %s (%s, read from %s); the lock has %s%s. Without --check: deploy it on "
                         "canary %s, prove it, and record it in %s."
                         % (image, digest, remote.get("media_type"), remote.get("url"),
                            current.get("digest") or "no digest for it",
                            (", pinned %s" % current["pinned_at"]) if current.get("pinned_at") else "", host, lock_file))
    return "prove", "%s@%s: deploy it on canary %s and prove it." % (image, digest, host)


def failure(server_failure=None, soak=None, bench=None, bench_dir=None):
    """The canary's failure: the soak's, the benchmark's refusal, else the server role's
    ``server_failure`` (``{kind, failed_task, line, message, log}``; empty when it did not say)."""
    if (soak or {}).get("failed"):
        return {"kind": soak.get("kind"), "failed_task": "Soak", "line": None, "message": soak.get("msg"), "log": None}
    if bench and not bench.get("accepted", True):
        return {"kind": bench.get("signature"), "failed_task": "Benchmark", "line": None,
                "message": bench.get("message"), "log": "%s/results.json" % bench_dir, "log_on": "controller"}
    return dict(server_failure or {})


def marks_known_bad(failure_):
    """Whether the failure was the running image's (only that puts its digest on the known-bad list)."""
    return bool(failure_.get("kind")) and not _NOT_THE_IMAGE.match(failure_.get("failed_task") or "")


def _truncate(text, length=SYMPTOM_LENGTH):
    text = str(text)
    if len(text) <= length:
        return text
    return text[:length - 3].rsplit(" ", 1)[0] + "..."


def known_bad_entry(failure_, target_, host, now, message="unknown failure"):
    """The known-bad list's entry for the failing digest (the shape of data/known_bad_images.yml),
    or None when the failure says nothing about the image."""
    if not marks_known_bad(failure_):
        return None
    symptom = failure_.get("line") or failure_.get("message") or message
    return {
        "repository": target_["repository"], "digest": target_["digest"], "tag": target_["tag"],
        "platform": target_["platform"], "signature": failure_["kind"],
        "symptom": "%s: %s" % (failure_.get("failed_task") or "deployment", _truncate(symptom)),
        "source": "playbooks/pin.yml on canary %s, %s" % (host, now),
        # host:path of the evidence (a benchmark's results are on the controller, not the canary)
        "evidence_log": "%s:%s" % (failure_.get("log_on") or host, failure_.get("log") or "none"),
    }


def verdict(target_, failure_, host, known_bad_file, message="unknown failure"):
    """The message a failed canary ends with."""
    recorded = (" Recorded in %s as %s." % (known_bad_file, failure_["kind"])) if marks_known_bad(failure_) else ""
    return "%s@%s failed on canary %s: %s%s The lock is unchanged." % (
        target_["image"], target_["digest"], host, message, recorded)


def failed(target_, host, now, known_bad_file, message="unknown failure", server_failure=None, soak=None,
           bench=None, bench_dir=None, proven=False):
    """A failed canary (the rescue of the proof): ``{state: failed, failure, known_bad_entry,
    message, rollback}``. The failure is the soak's, else the benchmark's refusal, else the server
    role's; only a failure of the running image gives a known-bad entry; ``rollback`` when the
    candidate had passed its proof (``proven``: it is the canary's last known-good, return the
    canary to the deployment before it). The state is always ``failed``: the canary fails with the
    message and the lock is never written (outcome())."""
    found = failure(server_failure, soak, bench, bench_dir)
    message = message or "unknown failure"
    return {"state": "failed", "failure": found, "known_bad_entry": known_bad_entry(found, target_, host, now, message),
            "message": verdict(target_, found, host, known_bad_file, message), "rollback": bool(proven)}


def outcome(target_, proven=False, failed_=None, bench=None):
    """Whether the candidate is written to the lock (and mirrored, archived): ``{state, message}``.

    ``lock`` only when the candidate passed its proof (``proven``: the server role deployed and
    proved it), no failure was recorded (``failed_``: failed()'s result, set by the proof's rescue)
    and the benchmark, when one ran (``bench``: the gate's verdict), accepted it. Otherwise
    ``failed``, ``refused`` (the benchmark refused it) or ``unproven``: nothing is written.
    """
    name = "%s@%s" % (target_.get("image"), target_.get("digest"))
    if failed_:
        return {"state": "failed", "message": "%s failed on the canary: the lock is not written" % name}
    if bench is not None and not bench.get("accepted"):
        return {"state": "refused", "message": "%s: %s; the lock is not written" % (name, bench.get("message"))}
    if not proven:
        return {"state": "unproven", "message": "%s was not proven on the canary: the lock is not written" % name}
    return {"state": "lock", "message": "%s proven: recorded in the lock" % name}


def lock_update(target_, deployment, host, now, summary=None, version=None, spec_evidence=None, soak=None,
                soak_minutes=0, bench=None, bench_run=None, mirror=None, pushed=None):
    """lock_entry() from what the role has in hand: ``bench`` the gate's verdict (its figures become
    the entry's evidence.bench), ``bench_run`` ``{workload, runs, duration}``, ``mirror`` the
    fleet's registry and ``pushed`` the push's registered result."""
    run = bench_run or {}
    evidence = bench_evidence(bench, run.get("workload", "chat"), run.get("runs", 3), run.get("duration", 60), now) \
        if bench else None
    return lock_entry(target_, deployment, host, now, summary, version, spec_evidence, soak, soak_minutes, evidence,
                      mirror_reference(mirror, target_["repository"], target_["digest"], pushed))


def mirror_reference(mirror, repository, digest, pushed=None):
    """``<mirror>/<repository>@<digest>`` as the push reported it (the pushed manifest's digest), or None."""
    if not mirror:
        return None
    name = "%s/%s" % (str(mirror).rstrip("/"), repository)
    return "%s@%s" % (name, repo_digest(((pushed or {}).get("image") or {}).get("RepoDigests"), name) or digest)


def bench_evidence(gate, workload, runs, duration, now):
    """The lock's ``evidence.bench``: the benchmark's figures (the next pin's baseline) and verdict; a
    figure this run did not measure is null, not kept from the previous entry (the file is deep-merged)."""
    figures = {"acceptance_per_pos": None, "accept_length": None, "kv_cache_usage": None}
    figures.update(gate["figures"])
    figures.update({"workload": workload, "runs": int(runs), "duration_s": int(duration), "measured_at": now,
                    "verdict": gate["message"]})
    return figures


def lock_entry(target_, deployment, host, now, summary=None, version=None, spec_evidence=None, soak=None,
               soak_minutes=0, bench=None, mirror=None, archive_host=None):
    """The lock's entry for the proven digest. ``summary``: the server role's ``server_summary``;
    ``version``: the engine's /version answer; ``soak``: the soak module's result; ``bench``:
    bench_evidence() or None (the previous entry's figures are kept); ``mirror``: mirror_reference()."""
    old = target_["current"] or {}
    summary = summary or {}
    platforms = dict(old.get("platforms") or {})
    platforms[target_["platform"]] = {"digest": target_["digest"], "image_id": target_["image_id"],
                                      "validated_on": host, "validated_at": now}
    stats = (soak or {}).get("stats") or {}
    entry = {
        "digest": target_["digest"],
        "engine_version": summary.get("engine_version") or version or deployment["image"].get("engine_version"),
        "image_id": target_["image_id"],
        "pinned_at": now,
        "previous_digest": old.get("digest"),
        "platforms": platforms,
        "evidence": {
            "canary": host,
            "profile": deployment["profile"]["name"],
            "backends": summary.get("backends_observed") or {},
            "ready_seconds": summary.get("ready_seconds"),
            "smoke_answer": summary.get("smoke_answer"),
            "speculative": spec_evidence,
            "soak": {"minutes": float(soak_minutes), "stats": stats} if stats else None,
            "bench": bench if bench is not None else (old.get("evidence") or {}).get("bench"),
        },
        "mirror": mirror,
        "archive": "%s:%s" % (archive_host or host, target_["archive"]) if target_.get("archive") else None,
    }
    return {key: value for key, value in entry.items() if value is not None}


def model_target(deployment, revision, model=None, lock=None, overrides=None, check_mode=False, host="the canary",
                 lock_file="the lock"):
    """What this canary does with ``pin_model_revision``: the candidate commit of its model.

    ``model``: ``pin_model`` (only the canaries deploying it take part; others are ``skip``), else
    the canary's own model. Returns ``{model, revision, current, pinned, skip, overrides}``:
    ``current`` the lock's ``models`` entry ({} without one), ``pinned`` when the lock holds this
    commit already, ``overrides`` the host's ``server_profile_overrides`` with the revision laid
    over (what the canary stages, verifies and deploys), ``state`` (``skip``, ``pinned``, ``check``
    or ``prove``) and ``message``. A revision that is not a full commit is refused before anything
    changes: a branch moves, so a lock of it would pin nothing.
    """
    problem = revision_problem(revision)
    if problem is not None:
        raise PinError("pin_model_revision %s; give the 40-hex commit id of the model (the Hub's History "
                       "of the repository, or `hf api`), not a branch, tag or abbreviation" % problem[1])
    own = ((deployment or {}).get("weights") or {}).get("model")
    if not own:
        raise PinError("the canary's deployment names no model (server_deployment.weights.model): run the "
                       "canaries entry point (playbooks/pin.yml) first")
    current = dict((((lock or {}).get("models") or {}).get(own)) or {})
    laid = dict(overrides or {}, revision=revision)
    found = {"model": own, "revision": revision, "current": current,
             "pinned": current.get("revision") == revision, "skip": bool(model) and model != own,
             "overrides": laid}
    if found["skip"]:
        found["state"], why = "skip", "the canary deploys it, not %s" % model
    elif found["pinned"]:
        found["state"], why = "pinned", "the lock holds %s already: nothing new" % revision
    elif check_mode:
        found["state"], why = "check", ("the lock has %s. Without --check: stage %s on canary %s, verify it, deploy "
                                        "and prove it, and record it in %s"
                                        % (current.get("revision") or "no revision", revision, host, lock_file))
    else:
        found["state"], why = "prove", "stage %s on canary %s, verify it, deploy and prove it" % (revision, host)
    found["message"] = "%s: %s" % (own, why)
    return found


def model_failed(target_, host, message=None, server_failure=None):
    """A failed model canary's message: the server role's failure, else the failed task's."""
    said = (server_failure or {}).get("message") or message or "unknown failure"
    return {"state": "failed", "message": "%s@%s failed on canary %s: %s The lock is unchanged."
            % (target_["model"], target_["revision"], host, said)}


def model_lock_entry(target_, deployment, host, now, cache_info=None, summary=None):
    """The lock's ``models`` entry for a revision proven on the canary: the commit, its manifest
    (what an offline host verifies against) and the manifest's sha256 from the canary's staging
    (``cache_info``: model_cache_info's result), the commit before it, and the evidence.

    inventory_entry deep-merges the entry into the lock and a null removes a key: a file of the
    previous revision's manifest that this one lacks is null, so the lock holds exactly this one.
    """
    manifest = (cache_info or {}).get("manifest") or {}
    if manifest.get("revision") != target_["revision"]:
        raise PinError("the canary staged %s, not the candidate %s: nothing verified it, the lock is unchanged"
                       % (manifest.get("revision") or "nothing", target_["revision"]))
    current = target_.get("current") or {}
    files = {path: None for path in ((current.get("manifest") or {}).get("files") or {})}
    files.update(manifest["files"])
    summary, image = summary or {}, (deployment or {}).get("image") or {}
    return {
        "revision": target_["revision"],
        "manifest_sha256": cache_info.get("manifest_sha256"),
        "manifest": {"revision": target_["revision"], "files": files},
        "pinned_at": now,
        "previous_revision": current.get("revision"),
        "evidence": {
            "canary": host,
            "profile": ((deployment or {}).get("profile") or {}).get("name"),
            "image": "%s@%s" % (image.get("repository"), image.get("digest")) if image.get("digest") else None,
            "ready_seconds": summary.get("ready_seconds"),
            "smoke_answer": summary.get("smoke_answer"),
        },
    }
