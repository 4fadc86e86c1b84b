# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: deployment
author: inferops.serving contributors (@inferops)
short_description: The deployment plan of a serving profile on a host
version_added: 0.1.0
description:
  - Resolves a profile (its C(extends) chain, the inventory's image lock and overrides) and
    computes, once, everything a host runs and proves - the image, the container spec, the
    launch script, the memory the engine claims, its URLs and metric names, and the
    expectations its startup log must prove, derived from the final flags.
  - The server role publishes the result as the fact C(server_deployment); preflight, the
    playbooks and the summaries read it.
  - An explicit expectation that contradicts the flag it follows from (for example
    C(expect.max_num_seqs=32) with an override C(args.max-num-seqs=16)) fails, naming both values
    and where each came from.
  - The plan also says what the host gets - C(files) (the server role's directories, launch
    script and the secret files it removes), C(serving_unit), C(watchdog) (its files, and with
    O(watchdog) its configuration and unit), C(undeploy) and C(record) - and never a secret.
  - With O(record), rebuilds the deployment a host recorded as validated (rollback).
  - With O(secrets) and O(plan), returns instead the files that hold a plan's secrets, for a task
    under C(no_log) to write; nothing else, and they never enter a plan.
options:
  _terms:
    description: One profile name. Not used with O(record).
    type: list
    elements: str
    required: false
  overrides:
    description: The inventory's overrides (C(server_profile_overrides)).
    type: dict
    default: {}
  lock:
    description: The image lock (C(inferops_serving_image_lock)), as written by C(playbooks/pin.yml).
    type: dict
    default: {}
  dirs:
    description: Extra directories searched for C(<name>.yml) before the collection's profiles.
    type: list
    elements: path
    default: []
  options:
    description:
      - Launch options, from the server role's variables - C(name), C(port), C(network_mode),
        C(registry_prefix), C(model_cache_dir), C(extra_volumes), C(engine_cache_dir),
        C(secret_env) (names only), C(restart_retries), C(log_max_size), C(log_max_file),
        C(labels), C(config_dir), C(script_dir), C(smoke), C(image_by_id), C(docker_host)
        (refused with a newline or another control character).
    type: dict
    default: {}
  previous:
    description:
      - A plan this run already computed (C(server_deployment)). Returned unchanged when it was
        planned from the very same inputs - the profile, O(options), O(lock), O(overrides),
        O(dirs) and the profile files there - so a run plans each host once; planned anew when
        any input differs (a pin canary's digest, a tune candidate's overrides).
      - Not used with O(record).
    type: dict
  watchdog:
    description:
      - The host-side watchdog's settings (the watchdog role's C(watchdog_*) variables without
        their prefix, and the server role's C(docker_host), C(meminfo_path),
        C(drop_caches_before_start), C(drop_caches_file), C(memory_wait_timeout) and the smoke
        prompt as C(probe_prompt)). The plan's C(watchdog.config) and C(watchdog.unit) are built
        and checked from them; a bad one fails, naming the variable. V(null) (the watchdog
        disabled) leaves them out.
    type: dict
  plan:
    description:
      - A plan (C(server_deployment)) whose secret files to return, with O(secrets).
    type: dict
  secrets:
    description:
      - The secret values (C(server_secrets), with C(server_hf_token) as C(HF_TOKEN)). With
        O(plan), returns the entries C(path), C(content), C(mode) (V(0600)) of the files that
        hold them - each secret the container reads from a file, then the Docker env file - for a
        task under C(no_log). A value a Docker env file cannot carry fails, naming the entry and
        never its value.
    type: dict
  record:
    description:
      - A recorded deployment (the C(last_known_good) entry of the host's state file) to rebuild
        instead of resolving a profile.
    type: dict
notes:
  - Runs on the controller. The result holds no secret value, only the names of secret variables.
"""

EXAMPLES = r"""
- name: Plan the GB10 throughput profile with a smaller batch
  ansible.builtin.set_fact:
    deployment: >-
      {{ lookup('inferops.serving.deployment', 'gb10-nvfp4-mtp-throughput',
                overrides={'args': {'max-num-seqs': 16}}, options={'name': 'llm', 'port': 8000}) }}

- name: Plan once a run - the plan of the same inputs is kept
  ansible.builtin.set_fact:
    deployment: >-
      {{ lookup('inferops.serving.deployment', 'gb10-nvfp4-mtp-throughput', options={'name': 'llm'},
                previous=deployment | default(none)) }}

- name: Write the secrets the container reads
  ansible.builtin.copy:
    dest: "{{ item.path }}"
    content: "{{ item.content }}"
    mode: "{{ item.mode }}"
  loop: "{{ query('inferops.serving.deployment', plan=deployment, secrets={'HF_TOKEN': hf_token}) }}"
  no_log: true

- name: Show what its log must prove
  ansible.builtin.debug:
    msg: "{{ deployment.expect }} ({{ deployment.expect_sources }})"
"""

RETURN = r"""
_raw:
  description:
    - One deployment - C(profile), C(overrides), C(options), C(engine), C(container),
      C(staged_container), C(spec), C(script), C(script_path), C(env_file), C(image) (C(ref),
      C(repository), C(tag), C(digest), C(engine_version), C(image_id), C(by_id)), C(model),
      C(served_model_name), C(port), C(urls) (C(base), C(chat), C(completions), C(metrics),
      C(health), C(version), C(models)), C(memory) (C(fraction), C(unified)), C(metrics) (metric
      names), C(expect), C(expect_sources), C(smoke), C(spec_sha256), C(argv_sha256), C(files)
      (host_files entries), C(serving_unit) (C(path), C(service), C(docker_host) escaped for the
      unit), C(watchdog) (C(service), C(config_file), C(state_file), C(textfile), C(unit_file),
      C(enabled), C(config), C(config_text), C(unit), C(files), C(data_dirs), C(program)),
      C(state_file), C(undeploy) (C(services), C(containers), C(files), C(shared_files)),
      C(record), and C(plan_key) (the digest of its inputs; not with O(record)).
    - With O(secrets), the entries of the secret files instead, one element each (use C(query)).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import from_record, plan_once, secret_files
from ansible_collections.inferops.serving.plugins.plugin_utils._plain import plain
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError
from ansible_collections.inferops.serving.plugins.plugin_utils._secrets import scrub


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        options = plain(self.get_option("options") or {})
        record = self.get_option("record")
        watchdog = plain(self.get_option("watchdog"))
        try:
            if self.get_option("secrets") is not None:
                if not self.get_option("plan"):
                    raise ProfileError("secrets: give the plan (server_deployment) whose secret files to write as plan=")
                return secret_files(plain(self.get_option("plan")), plain(self.get_option("secrets")))
            if record:
                return [from_record(plain(record), options, watchdog=watchdog)]
            if len(terms) != 1:
                raise ProfileError("name exactly one profile (server_profile), got %d" % len(terms))
            return [plan_once(str(terms[0]), options, lock=plain(self.get_option("lock")),
                              overrides=plain(self.get_option("overrides")), dirs=self.get_option("dirs"),
                              previous=self.get_option("previous"), watchdog=watchdog)]
        except ProfileError as exc:
            raise AnsibleLookupError(scrub(exc)) from None
