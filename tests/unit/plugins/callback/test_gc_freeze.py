# SPDX-License-Identifier: GPL-3.0-or-later
"""The gc_freeze callback: it imports the collection's controller code before the first play and
freezes the controller's heap at each play start, and this repository's ansible.cfg enables it, so
the workers ansible-playbook forks inherit a frozen heap with those modules in it.

The end-to-end test reads the freeze count in a worker (a filter runs in the worker forked for
its task, which inherits the parent's permanent generation) with a probe filter written for the
test into a temporary folder."""
from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import weakref

from ansible_collections.inferops.serving.plugins.callback import gc_freeze

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PROBE = '''
import gc
import sys


class FilterModule:
    def filters(self):
        return {"freeze_count": lambda _value: gc.get_freeze_count(),
                "preloaded": lambda _value: "ansible_collections.inferops.serving.plugins.module_utils._readiness"
                in sys.modules}
'''
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The freeze count a worker inherited
      ansible.builtin.debug:
        msg: "frozen={{ none | freeze_count }} preloaded={{ none | preloaded }}"
"""


class Node:
    """An object that can be part of a reference cycle."""


def test_the_play_start_collects_and_freezes():
    gc.unfreeze()
    try:
        cycle = Node()
        cycle.self = cycle  # a reference cycle: only a collection frees it
        collected = weakref.ref(cycle)
        del cycle
        gc_freeze.CallbackModule().v2_playbook_on_play_start(None)
        assert gc.get_freeze_count() > 10000, "the test process's objects are frozen"
        assert collected() is None, "the garbage is collected before the freeze, not frozen with it"
    finally:
        gc.unfreeze()


def frozen_in_a_worker(tmp_path, config):
    (tmp_path / "filter").mkdir()
    (tmp_path / "filter" / "probe.py").write_text(PROBE)
    (tmp_path / "play.yml").write_text(PLAY)
    environ = dict(os.environ, ANSIBLE_CONFIG=config, ANSIBLE_NOCOLOR="1",
                   ANSIBLE_FILTER_PLUGINS=str(tmp_path / "filter"))
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                             "-c", "local", str(tmp_path / "play.yml")], cwd=ROOT, env=environ, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    found = re.search(r"frozen=(\d+) preloaded=(True|False)", result.stdout)
    return int(found.group(1)), found.group(2) == "True"


def test_the_repository_s_ansible_cfg_enables_it_for_every_worker(tmp_path):
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    config = os.path.join(ROOT, "ansible.cfg")
    with open(config, encoding="utf-8") as handle:
        text = handle.read()
    assert "\ncallbacks_enabled = inferops.serving.gc_freeze\n" in text
    # What the interpreter freezes itself at its start (a few hundred objects on Python 3.12).
    own = int(subprocess.run([sys.executable, "-c", "import gc; print(gc.get_freeze_count())"], capture_output=True,
                             text=True, check=True).stdout)
    frozen, preloaded = frozen_in_a_worker(tmp_path / "on", config)
    assert frozen > own + 10000
    # The play uses none of the collection's plugins: the worker has them because the parent
    # imported them before it forked.
    assert preloaded
    # The same configuration without the callback: nothing more frozen (the probe can tell).
    without = tmp_path / "off" / "ansible.cfg"
    without.write_text(text.replace("\ncallbacks_enabled = inferops.serving.gc_freeze\n", "\n")
                       .replace("collections_path = ./.collections", "collections_path = %s/.collections" % ROOT))
    assert frozen_in_a_worker(tmp_path / "off", str(without)) == (own, False)


def test_every_plugin_of_the_collection_is_imported_before_the_workers_fork():
    imported, failed = gc_freeze.preload()
    assert failed == {}
    names = set(imported)
    for expected in ("plugin_utils._deployment", "filter.container_action", "filter.readiness_plan",
                     "lookup.deployment", "action.backend_assert"):
        assert "ansible_collections.inferops.serving.plugins." + expected in names
    assert all(name in sys.modules for name in names)
    # What they import comes with them (readiness_plan's module_utils).
    assert "ansible_collections.inferops.serving.plugins.module_utils._readiness" in sys.modules


def test_a_plugin_that_fails_to_import_is_named_and_the_others_are_imported(tmp_path, monkeypatch):
    package = tmp_path / "preload_probe" / "filter"
    package.mkdir(parents=True)
    (tmp_path / "preload_probe" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text("VALUE = 1\n")
    (package / "broken.py").write_text("raise RuntimeError('needs a library this controller lacks')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    imported, failed = gc_freeze.preload("preload_probe", ("filter", "absent"))
    assert imported == ["preload_probe.filter.good"]
    assert failed == {"preload_probe.filter.broken": "RuntimeError: needs a library this controller lacks",
                      "preload_probe.absent": "No module named 'preload_probe.absent'"}
    assert "preload_probe.filter.broken" not in sys.modules
