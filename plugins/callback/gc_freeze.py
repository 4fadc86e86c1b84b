# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
author: inferops.serving contributors (@inferops)
short_description: Spare the workers Ansible forks a copy of the controller's memory and its imports
version_added: 0.1.0
description:
  - Ansible runs each task of each host in a worker process forked from C(ansible-playbook). The
    worker shares the parent's memory until it writes to it. Python's full garbage collection
    writes to every object it tracks, so a worker that runs one makes the kernel copy the
    parent's whole heap (the playbook, the inventory, the loaded plugins) into it, page by page.
  - At the start of each play this callback collects the controller's garbage once and moves the
    objects that are left into Python's permanent generation (C(gc.freeze())), which a worker's
    collections skip.
  - Before the first play it imports this collection's controller code in C(ansible-playbook)
    itself. That is its filter, lookup and action plugins, C(plugin_utils) and C(module_utils),
    which the filters import only when first called. A worker finds them imported and frozen
    instead of importing them again for every task of every host that uses one. A plugin that
    fails to import here is left to be imported where it is used, as without this callback (its
    error shows there), and C(-vvv) names it.
  - Nothing else changes. It prints nothing and alters no result.
  - Measured with the collection's lab fleet (C(benchmarks/noop_converge_bench.py)), a no-op
    C(site.yml) of four hosts took about a tenth less controller CPU with the freeze, and about
    7% less again with the imports (docs/dev/testing.md).
  - This repository's C(ansible.cfg) enables it. Another controller enables it in its own.
requirements:
  - enabled in C(ansible.cfg) (C(callbacks_enabled = inferops.serving.gc_freeze), section
    C([defaults])) or with C(ANSIBLE_CALLBACKS_ENABLED)
notes:
  - Objects frozen stay in memory for the rest of the run unless they are freed by reference
    counting; the collection before each freeze keeps garbage out of it.
"""

import gc
import importlib
import pkgutil

from ansible.plugins.callback import CallbackBase
from ansible.utils.display import Display

display = Display()

# The collection's plugin packages a worker imports from: what ansible-playbook imports once.
PRELOADED = ("module_utils", "plugin_utils", "filter", "lookup", "action")
PLUGINS = __name__.rpartition(".callback.")[0]


def freeze():
    """Collect the garbage, then freeze every object left: the number frozen now in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def preload(plugins=PLUGINS, kinds=PRELOADED):
    """Import every module of the collection's ``kinds`` of plugins: the names imported, and
    {name: error} for any that failed (left to be imported where used, as before)."""
    imported, failed = [], {}
    for kind in kinds:
        try:
            package = importlib.import_module("%s.%s" % (plugins, kind))
        except ImportError as error:
            failed["%s.%s" % (plugins, kind)] = str(error)
            continue
        for info in pkgutil.iter_modules(package.__path__):
            name = "%s.%s" % (package.__name__, info.name)
            try:
                importlib.import_module(name)
            except Exception as error:  # a plugin may raise anything at import; it is only named here
                failed[name] = "%s: %s" % (type(error).__name__, error)
            else:
                imported.append(name)
    return imported, failed


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inferops.serving.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        imported, failed = preload()
        display.vvv("gc_freeze: %d of the collection's plugin modules imported before the workers fork" % len(imported))
        for name, error in sorted(failed.items()):
            display.vvv("gc_freeze: %s not imported before the workers fork (%s)" % (name, error))

    def v2_playbook_on_play_start(self, play):
        freeze()
