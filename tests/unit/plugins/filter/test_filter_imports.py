# SPDX-License-Identifier: GPL-3.0-or-later
"""What resolving one of the collection's filters costs a task's worker process.

To find ``inferops.serving.<name>``, ansible-core's filter loader (``Jinja2Loader.get_with_context``)
imports *every* file of ``plugins/filter/`` and asks each for its filters; it does so in each
forked worker that templates a collection filter (most tasks of a converge), and the collection
loader compiles ``plugin_utils`` and ``module_utils`` from source, without a bytecode cache. A
filter file therefore imports what it calls (``plugin_utils``, ``module_utils``) inside the function
that calls it: the worker compiles only what the task runs. These tests run the real loader in a
fresh interpreter, as a worker starts, and fail when a filter file imports collection code at
load time again.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(ROOT, ".collections")

RESOLVE = """
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
found = {}
called = None
for name in sys.argv[2:]:
    if name.startswith("call="):
        deployment = {"container": "llm", "spec": {"image": "x"}, "spec_label": "l", "spec_sha256": "s"}
        called = filter_loader.get(name[5:]).j2_function(deployment, {"exists": False} if "container" in name else {})
        continue
    found[name] = filter_loader.get_with_context(name).object is not None
loaded = sorted(m for m in sys.modules if m.startswith("ansible_collections.inferops.serving.plugins.")
                and m.split(".")[4] in ("plugin_utils", "module_utils") and m.count(".") > 4)
files = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("ansible_collections.inferops.serving.plugins.filter."))
print(json.dumps({"found": found, "loaded": loaded, "files": files, "called": called}))
"""


def resolve(*names, call=None):
    """Resolve ``names`` with ansible-core's filter loader in a fresh interpreter, then call the filter
    ``call`` on a plan whose container is missing; what it imported (and the call's result)."""
    args = list(names) + (["call=" + call] if call else [])
    result = subprocess.run([sys.executable, "-c", RESOLVE, COLLECTIONS, *args], capture_output=True, text=True,
                            check=True, timeout=120)
    return json.loads(result.stdout.splitlines()[-1])


def filter_files():
    return sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "filter"))
                  if name.endswith(".py") and name != "__init__.py")


def test_resolving_a_filter_loads_every_filter_file_and_no_plugin_or_module_utils():
    result = resolve("inferops.serving.profile_lint")
    assert result["found"] == {"inferops.serving.profile_lint": True}
    # The premise: the loader imported every filter file to find one filter.
    assert result["files"] == filter_files()
    assert result["loaded"] == [], "filter files import collection code when loaded: %s" % result["loaded"]


def test_the_container_action_a_server_task_templates_compiles_no_plan():
    # __server_action is templated in most of the server role's workers; the plan's modules
    # (_deployment, _profile, the engine catalog...) are compiled only by those that plan.
    result = resolve("inferops.serving.container_action", call="inferops.serving.container_action")
    assert result["loaded"] == ["ansible_collections.inferops.serving.plugins.plugin_utils._container_action"]
    assert result["called"]["differs"] is True and result["called"]["drift"] == ["no container llm"]


def test_a_filter_that_needs_plain_data_compiles_no_profile_code():
    result = resolve("inferops.serving.readiness_plan", call="inferops.serving.readiness_plan")
    assert "ansible_collections.inferops.serving.plugins.plugin_utils._profile" not in result["loaded"]
    assert set(result["called"]) >= {"first_deploy", "timeout", "budgets"}


def test_every_filter_still_resolves():
    names = ["inferops.serving." + name for name in filter_files()]
    result = resolve(*names)
    assert result["found"] == dict.fromkeys(names, True)
