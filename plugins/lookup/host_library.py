# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: host_library
author: inferops.serving contributors (@inferops)
short_description: The source of a collection library that a host-side program imports
version_added: 0.1.0
description:
  - Returns the text of one of the collection's standard-library-only Python libraries, for the
    watchdog role to install beside the program that imports it on the host (the watchdog imports
    the unified-memory start-up rule, the same code the C(gpu_info) module runs before a start,
    the Docker Engine API client of the modules, the Prometheus text parser of the controller, an
    HTTP request bounded in time and size, and the atomic file write of the C(host_files) module).
  - One home for each. The host gets the collection's own file, never a copy kept in the role.
options:
  _terms:
    description: Library names.
    type: list
    elements: str
    required: true
    choices: [unified_memory, docker_api, prometheus, bounded_http, host_files]
"""

EXAMPLES = r"""
- name: Install the unified-memory rule beside the watchdog
  ansible.builtin.copy:
    dest: /usr/local/lib/inferops-serving/inferops_unified_memory.py
    mode: "0644"
    content: "{{ lookup('inferops.serving.host_library', 'unified_memory') }}"
"""

RETURN = r"""
_raw:
  description: The library's source text, one per term.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def library_source(name):
    """The source text of the host library ``name`` (plugin_utils/_watchdog.py HOST_LIBRARIES)."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._watchdog import library_source as source
    try:
        return source(name)
    except KeyError as exc:
        raise AnsibleLookupError(str(exc).strip("'\"")) from None


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [library_source(term) for term in terms]
