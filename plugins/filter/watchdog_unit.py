# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: watchdog_unit
author: inferops.serving contributors (@inferops)
short_description: The values of the serving watchdog's systemd unit, escaped, and its sandbox
version_added: 0.1.0
description:
  - Builds the values the server role writes into C(inferops-watchdog@.service) from its
    directories and the watchdog's configuration; every path is written as one double-quoted word
    that systemd reads back as it is (a space, C(%), C($), a quote or a backslash in a directory
    name cannot change the unit).
  - Refuses a value with a control character (a newline would add a setting), naming the variable.
options:
  _input:
    description: The directories, keys C(script_dir), C(config_dir), C(state_dir), C(textfile_dir).
    type: dict
    required: true
  config:
    description: The watchdog's configuration (the C(watchdog_config) filter's result).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Render the watchdog unit
  ansible.builtin.debug:
    msg: "{{ dirs | inferops.serving.watchdog_unit(config) }}"
  vars:
    dirs:
      script_dir: /usr/local/lib/inferops-serving
      config_dir: /etc/inferops-serving
      state_dir: /var/lib/inferops-serving
      textfile_dir: /var/lib/node_exporter
    config: "{{ server_deployment | inferops.serving.watchdog_config(options) }}"
"""

RETURN = r"""
_value:
  description: C(exec_start), C(read_write_paths), C(capabilities), C(ip_address_allow) and C(protect_home), as the unit's lines take them.
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _watchdog_unit(dirs, config):
    from ansible_collections.inferops.serving.plugins.plugin_utils._systemd import SystemdValueError, watchdog_unit
    drop = config.get("drop_caches_file") if config.get("drop_caches_before_start") else None
    try:
        return watchdog_unit(dirs, config["docker_host"], drop)
    except SystemdValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"watchdog_unit": _watchdog_unit}
