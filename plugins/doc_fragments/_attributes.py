# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations


class ModuleDocFragment:
    """The C(attributes:) every module of the collection declares (after community.docker)."""

    # The standard attributes; combine with one of the fragments below for their support level.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
      - This assumes that the system controlled/queried by the module has not changed in a relevant way.
"""

    # For modules that only read state (C(*_info) modules and assertions).
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
    details:
      - This action does not modify state.
"""

    # For modules in the collection's C(serving) action group (meta/runtime.yml).
    ACTIONGROUP_SERVING = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/inferops.serving.serving) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - inferops.serving.serving
"""
