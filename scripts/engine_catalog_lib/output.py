# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The catalog document of one release and its committed text."""
from __future__ import annotations

import json

from .metrics import metrics
from .sglang_catalog import sglang_catalog
from .vllm_catalog import vllm_catalog


# 2: every closed choice evaluated (choices_unknown when not); 3: the Prometheus metrics of the release
GENERATOR = "scripts/engine-catalog 3"


def catalog(engine, version, root):
    build = {"vllm": vllm_catalog, "sglang": sglang_catalog}[engine]
    src, flags, spec_keys, env = build(root)
    return {"engine": engine, "version": version, "generator": GENERATOR, "complete": True,
            "flags": flags, "speculative_keys": spec_keys, "env": env, "metrics": metrics(src, engine),
            "files": sorted(src.read)}


def dumps(data):
    """The committed form: sorted keys, one flag per line (small diffs between releases)."""
    lines = ["{"]
    head = {k: v for k, v in data.items() if k != "flags"}
    for key in sorted(head):
        lines.append("  %s: %s," % (json.dumps(key), json.dumps(head[key], sort_keys=True)))
    lines.append('  "flags": {')
    items = sorted(data["flags"].items())
    for index, (name, entry) in enumerate(items):
        lines.append("    %s: %s%s" % (json.dumps(name), json.dumps(entry, sort_keys=True),
                                       "," if index < len(items) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
