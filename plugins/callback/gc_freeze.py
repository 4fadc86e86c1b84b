# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
author: inferops.serving contributors (@inferops)
short_description: Spare the workers Ansible forks a copy of the controller's memory
version_added: 0.1.0
description:
  - Ansible runs each task of each host in a worker process forked from C(ansible-playbook). The
    worker shares the parent's memory until it writes to it. Python's full garbage collection
    writes to every object it tracks, so a worker that runs one makes the kernel copy the
    parent's whole heap (the playbook, the inventory, the loaded plugins) into it, page by page.
  - At the start of each play this callback collects the controller's garbage once and moves the
    objects that are left into Python's permanent generation (C(gc.freeze())), which a worker's
    collections skip. Nothing else changes. It prints nothing and alters no result.
  - Measured with the collection's lab fleet (C(benchmarks/noop_converge_bench.py)), a no-op
    C(site.yml) of four hosts took about a tenth less controller CPU (docs/dev/testing.md).
  - This repository's C(ansible.cfg) enables it. Another controller enables it in its own.
requirements:
  - enabled in C(ansible.cfg) (C(callbacks_enabled = inferops.serving.gc_freeze), section
    C([defaults])) or with C(ANSIBLE_CALLBACKS_ENABLED)
notes:
  - Objects frozen stay in memory for the rest of the run unless they are freed by reference
    counting; the collection before each freeze keeps garbage out of it.
"""

import gc

from ansible.plugins.callback import CallbackBase


def freeze():
    """Collect the garbage, then freeze every object left: the number frozen now in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inferops.serving.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        freeze()
