# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: pin_plan
author: inferops.serving contributors (@inferops)
short_description: What the pin role decides, each decision with the state the role acts on
version_added: 0.1.0
description:
  - Computes, once per step of C(playbooks/pin.yml), what the C(inferops.serving.pin) role decides;
    the role's tasks only act on the named C(state) of the answer.
  - V(canaries) - one canary per hardware group and image (the host marked C(inferops_canary), else
    the group's first); an O(image) no host deploys is refused.
  - V(target) - what the canary does with the digest its tag resolves to now, from O(pull) (the
    registered pull) or O(remote) (the registry's answer in check mode); C(state) is C(no_digest),
    C(pinned) (nothing new), C(known_bad) (refused before anything is deployed), C(check) or C(prove).
  - V(failed) - a failed canary (the proof's rescue) - its failure, the known-bad entry (only for a
    failure of the running image), the message, and whether the canary returns to the deployment
    before the candidate; C(state) is always C(failed), the lock is not written.
  - V(outcome) - whether the candidate is mirrored, archived and written to the lock - C(state)
    C(lock) only when it was proven, nothing failed and the benchmark (when one ran) accepted it;
    else C(failed), C(refused) or C(unproven).
  - V(lock_entry) - the lock's entry for the proven digest.
  - V(rolled_back) - what C(playbooks/rollback.yml) records of the deployment it leaves (O(current),
    the container read before it acts) on returning to O(deployment) - C(state) C(record) (C(entry),
    the known-bad entry for the host's hardware group), C(none) (nothing is rolled back from) or
    C(unrecordable) (a container that names neither an image digest nor a spec).
  - V(files) - where the run writes the fleet's lock and known-bad list, the same for every canary
    whichever inventory source defined it - O(lock_path) and O(known_bad_path) when set, else the one
    C(group_vars/all/image_lock.yml) (C(known_bad_images.yml)) that exists beside the O(sources), else
    the one beside the first source. Two that exist already shadow each other and are refused.
  - V(model_target), V(model_failed), V(model_lock_entry) - the same for a model's new revision
    (C(pin_model_revision)).
options:
  _terms:
    description: What to decide - one of V(canaries), V(target), V(failed), V(outcome), V(lock_entry),
      V(model_target), V(model_failed), V(model_lock_entry), V(rolled_back), V(files).
    type: list
    elements: str
    required: true
  hosts:
    description: For V(canaries), each host's C({host, image, groups, hardware_group, canary}).
    type: list
    elements: dict
    default: []
  image:
    description: For V(canaries), only the hosts deploying this image (C(pin_image)).
    type: str
    default: ""
  pattern:
    description: For V(canaries), the play's hosts, named in the refusal of an O(image) no host deploys.
    type: str
    default: serving
  deployment:
    description: The canary's deployment plan (C(server_deployment)).
    type: raw
    default: {}
  target:
    description: The canary's target (what V(target) or V(model_target) returned).
    type: raw
    default: {}
  pull:
    description: The registered result of C(community.docker.docker_image_pull).
    type: raw
    default: {}
  remote:
    description: The registered result of M(inferops.serving.image_digest_info) (check mode).
    type: raw
    default: {}
  lock:
    description: The image lock (C(inferops_serving_image_lock)).
    type: raw
    default: {}
  known_bad:
    description: The inventory's known-bad list (C(inferops_known_bad_images)).
    type: list
    elements: dict
    default: []
  prefix:
    description: The registry prefix (C(server_registry_prefix)).
    type: str
    default: ""
  archive_dir:
    description: Where the canary saves the pinned image (C(pin_archive_dir)); empty for no archive.
    type: str
    default: ""
  overrides:
    description: The canary's C(server_profile_overrides).
    type: raw
    default: {}
  check_mode:
    description: Whether the run is in check mode.
    type: bool
    default: false
  host:
    description: The canary's inventory name.
    type: str
    default: the canary
  now:
    description: The run's UTC time stamp.
    type: str
    default: ""
  lock_file:
    description: The lock's file, named in the messages.
    type: str
    default: the lock
  known_bad_file:
    description: The known-bad list's file, named in the failure's message.
    type: str
    default: the known-bad list
  message:
    description: For V(failed) and V(model_failed), the failed task's message.
    type: str
    default: unknown failure
  server_failure:
    description: The server role's C(server_failure).
    type: raw
    default: {}
  soak:
    description: The registered result of M(inferops.serving.soak).
    type: raw
    default: {}
  bench:
    description: The benchmark's verdict (P(inferops.serving.bench_plan#lookup) V(gate)), or none.
    type: raw
  bench_dir:
    description: The benchmark's results directory.
    type: str
  proven:
    description: Whether the candidate passed its proof (the server role deployed and proved it).
    type: bool
    default: false
  failed:
    description: For V(outcome), what V(failed) returned when the proof failed, else none.
    type: raw
  summary:
    description: For the lock entries, the server role's C(server_summary).
    type: raw
    default: {}
  version:
    description: For V(lock_entry), the engine version its /version endpoint reported.
    type: str
  spec_evidence:
    description: For V(lock_entry), the server role's C(server_spec_evidence).
    type: raw
  soak_minutes:
    description: For V(lock_entry), the soak's length (C(pin_soak_minutes)).
    type: float
    default: 0
  bench_run:
    description: For V(lock_entry), the benchmark's C({workload, runs, duration}).
    type: raw
    default: {}
  mirror:
    description: For V(lock_entry), the fleet's registry (C(pin_mirror)); empty for none.
    type: str
    default: ""
  pushed:
    description: For V(lock_entry), the registered result of the push to O(mirror).
    type: raw
    default: {}
  revision:
    description: For V(model_target), the candidate commit (C(pin_model_revision)).
    type: str
    default: ""
  model:
    description: For V(model_target), only canaries deploying this model take part (C(pin_model)).
    type: str
    default: ""
  cache_info:
    description: For V(model_lock_entry), the model_cache role's C(model_cache_info).
    type: raw
    default: {}
  current:
    description: For V(rolled_back), the registered read of the container (M(inferops.serving.deployment_state)).
    type: raw
    default: {}
  reason:
    description: For V(rolled_back), why the host is rolled back (C(server_rollback_reason)).
    type: str
    default: ""
  groups:
    description: For V(rolled_back), the host's C(group_names) (its hardware group, as the canaries').
    type: list
    elements: str
    default: []
  hardware_group:
    description: For V(rolled_back), the host's C(inferops_hardware_group), if set.
    type: str
  sources:
    description: For V(files), the run's inventory sources (C(ansible_inventory_sources)), in the order given.
    type: list
    elements: str
    default: []
  lock_path:
    description: For V(files), the lock file the operator chose (C(pin_lock_file)); empty for the default.
    type: str
    default: ""
  known_bad_path:
    description: For V(files), the known-bad list the operator chose (C(pin_known_bad_file)); empty for the default.
    type: str
    default: ""
notes:
  - Runs on the controller. Pure decisions (plugins/plugin_utils/_pin.py); nothing is written, and only
    V(files) reads anything (whether the files exist beside the inventory sources).
"""

EXAMPLES = r"""
- name: Decide what to do with the digest the tag resolves to now
  ansible.builtin.set_fact:
    pin_target: >-
      {{ lookup('inferops.serving.pin_plan', 'target', deployment=server_deployment, pull=pull,
                lock=inferops_serving_image_lock | default({}), host=inventory_hostname) }}

- name: Refuse a known-bad digest
  ansible.builtin.fail:
    msg: "{{ pin_target.message }}"
  when: pin_target.state == 'known_bad'
"""

RETURN = r"""
_raw:
  description:
    - V(canaries) - the canaries' names (a list).
    - V(target) - C(image), C(name), C(repository), C(tag), C(digest), C(image_id), C(platform),
      C(current) (the lock's entry), C(pinned), C(known_bad), C(archive), C(overrides), C(state), C(message).
    - V(failed) - C(state), C(failure), C(known_bad_entry) (or none), C(message), C(rollback).
    - V(outcome) - C(state), C(message).
    - V(lock_entry), V(model_lock_entry) - the lock's entry.
    - V(model_target) - C(model), C(revision), C(current), C(pinned), C(skip), C(overrides), C(state), C(message).
    - V(model_failed) - C(state), C(message).
    - V(rolled_back) - C(state), C(entry) (or none), C(message).
    - V(files) - C(lock_file), C(known_bad_file) (paths on the controller).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils import _pin, _rollback
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import scrub

# The options that take a mapping (documented as raw: see _option).
MAPPINGS = frozenset(["bench", "bench_run", "cache_info", "current", "deployment", "failed", "lock", "overrides", "pull",
                      "pushed", "remote", "server_failure", "soak", "spec_evidence", "target"])
STEPS = ("canaries", "target", "failed", "outcome", "lock_entry", "model_target", "model_failed", "model_lock_entry",
         "rolled_back", "files")


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or terms[0] not in STEPS:
            raise AnsibleLookupError("pin_plan: name one of %s, got %s" % (", ".join(STEPS), list(terms)))
        option = self._option
        try:
            return [getattr(self, "_" + terms[0])(option)]
        except (_pin.PinError, ProfileError) as exc:
            raise AnsibleLookupError(scrub("pin_plan %s: %s" % (terms[0], exc))) from exc

    def _option(self, name):
        value = plain(self.get_option(name))
        # A registered result a task did not set reaches a lookup as '' on some ansible-core
        # releases (2.18): a mapping option (type raw, so that it is accepted) then means "none".
        return {} if name in MAPPINGS and value == "" else value

    @staticmethod
    def _canaries(option):
        return _pin.canaries(option("hosts"), option("image") or None, pattern=option("pattern"))

    @staticmethod
    def _target(option):
        return _pin.target(option("deployment"), option("pull"), option("remote"), option("lock"), option("known_bad"),
                           option("prefix"), option("archive_dir"), option("overrides"), option("check_mode"),
                           option("host"), option("lock_file"))

    @staticmethod
    def _failed(option):
        return _pin.failed(option("target"), option("host"), option("now"), option("known_bad_file"),
                           option("message"), option("server_failure"), option("soak"), option("bench"),
                           option("bench_dir"), option("proven"))

    @staticmethod
    def _outcome(option):
        return _pin.outcome(option("target"), option("proven"), option("failed"), option("bench"))

    @staticmethod
    def _lock_entry(option):
        return _pin.lock_update(option("target"), option("deployment"), option("host"), option("now"),
                                option("summary"), option("version"), option("spec_evidence"), option("soak"),
                                option("soak_minutes"), option("bench"), option("bench_run"), option("mirror"),
                                option("pushed"))

    @staticmethod
    def _model_target(option):
        return _pin.model_target(option("deployment"), option("revision"), option("model"), option("lock"),
                                 option("overrides"), option("check_mode"), option("host"), option("lock_file"))

    @staticmethod
    def _model_failed(option):
        return _pin.model_failed(option("target"), option("host"), option("message"), option("server_failure"))

    @staticmethod
    def _model_lock_entry(option):
        return _pin.model_lock_entry(option("target"), option("deployment"), option("host"), option("now"),
                                     option("cache_info"), option("summary"))

    @staticmethod
    def _rolled_back(option):
        group = _rollback.hardware_group(option("groups"), option("hardware_group"))
        return _rollback.record(option("current"), option("deployment"), option("host"), group, option("now"),
                                option("reason"), option("known_bad_file"))

    @staticmethod
    def _files(option):
        sources = option("sources")
        return {"lock_file": _pin.fleet_file(_pin.LOCK_NAME, sources, option("lock_path")),
                "known_bad_file": _pin.fleet_file(_pin.KNOWN_BAD_NAME, sources, option("known_bad_path"))}
