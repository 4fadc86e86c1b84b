# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: unit_starts
author: inferops.serving contributors (@inferops)
short_description: The server role's systemd starts (container with Docker, watchdog), for one task
version_added: 0.1.0
description:
  - From what the role's C(host_files) tasks wrote, the units to start in order - the serving
    unit that starts the container whenever Docker starts, then the watchdog - each with its
    state, the first reloading systemd when a unit file changed.
  - A unit whose file was just written is left out in check mode (nothing to start yet); the
    watchdog is restarted when its program, configuration or unit changed.
options:
  _input:
    description:
      - C(container) and C(watchdog) - the registered result of the role's files and of the
        watchdog's files; each null (or a skipped result) when that unit is not wanted or its
        files were not written in this run (C(--tags)).
    type: dict
    required: true
  deployment:
    description: The deployment plan (C(server_deployment)); its container and watchdog service names.
    type: dict
    required: true
  data_dirs:
    description: The watchdog's state and textfile directories; a change there does not restart it.
    type: list
    elements: str
    default: []
  check_mode:
    description: Whether the run is in check mode (C(ansible_check_mode)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Start the container with Docker and the watchdog
  ansible.builtin.systemd_service:
    name: "{{ item.name }}"
    enabled: true
    state: "{{ item.state }}"
    daemon_reload: "{{ item.daemon_reload }}"
  loop: >-
    {{ {'container': __server_files, 'watchdog': __server_watchdog_files}
       | inferops.serving.unit_starts(server_deployment, [server_state_dir], ansible_check_mode) }}
"""

RETURN = r"""
_value:
  description: The starts, in order, each C(name), C(state) (V(started) or V(restarted)) and C(daemon_reload).
  type: list
  elements: dict
"""


def _unit_starts(*args, **kwargs):
    from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import unit_starts
    return unit_starts(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"unit_starts": _unit_starts}
