# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: launch_spec
author: inferops.serving contributors (@inferops)
short_description: The container a profile runs, as one mapping
version_added: 0.1.0
description:
  - Renders a resolved profile (see P(inferops.serving.profile#lookup)) to the image reference,
    command, environment and Docker options of its serving container.
  - The keys follow M(community.docker.docker_container)'s option names; the same mapping feeds
    P(inferops.serving.launch_script#filter), so the script and the container cannot differ.
options:
  _input:
    description: A resolved profile.
    type: dict
    required: true
  options:
    description:
      - Launch options. C(name) container name (default the profile name); C(port) serving port
        on the host; C(network_mode) V(bridge) (publish the port, as the field reports do) or V(host);
        C(registry_prefix) registry in front of the image repository; C(model_cache_dir) host
        directory mounted at C(/root/.cache/huggingface); C(engine_cache_dir) host directory
        persisting the engine's compile and JIT caches (one subdirectory per cache, none when
        unset); C(extra_volumes); C(secret_env) names of the secret variables the env file
        holds (recorded in the spec; the launch script does not render them); C(env_file) the
        0600 Docker env file that carries every secret (C(--env-file));
        C(restart_retries) bound of the on-failure restart policy; C(log_max_size);
        C(log_max_file); C(labels).
      - An option that is V(null) or an empty string keeps its default. ansible-core before 2.19
        templates an unset value (C({{ x | default(none) }})) as an empty string, and no option
        means anything by one, so both render the same container and spec hash.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: The container of the GB10 latency profile on the host network
  ansible.builtin.set_fact:
    spec: >-
      {{ lookup('inferops.serving.profile', 'gb10-nvfp4-mtp-latency')
         | inferops.serving.launch_spec({'network_mode': 'host', 'port': 8001}) }}
"""

RETURN = r"""
_value:
  description:
    - C(name), C(image), C(command), C(env), C(secret_env), C(env_file), C(device_requests),
      C(ipc_mode), C(network_mode), C(published_ports), C(port), C(volumes), C(restart_policy),
      C(restart_retries), C(log_driver), C(log_options), C(labels).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def unset_empty(options):
    """Launch options with '' read as unset (None), as ansible-core >= 2.19 passes an unset value.

    Before 2.19, Jinja templates ``none`` to ''. Left as is, '' fails the network_mode check
    and lands in the spec (env_file), changing its hash: a controller upgrade would then replace
    every container.
    """
    return {key: None if value == "" else value for key, value in (options or {}).items()}


def _launch_spec(profile, options=None):
    from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError, launch_spec
    try:
        return launch_spec(profile, unset_empty(options))
    except ProfileError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"launch_spec": _launch_spec}
