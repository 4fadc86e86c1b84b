# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine simulator takes the revision flags every shipped profile renders once it pins its model
(issue 24): the real parsers have them (the engine catalog), so the simulator's must too."""
from __future__ import annotations

import pytest

from engine_sim import sglang_cli, vllm_cli

from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p

COMMIT = "45291e135b1f7baf20b0369dffb1548912a0c868"


@pytest.mark.parametrize("name", p.profile_names())
def test_every_profile_pinned_parses(name):
    profile = p.overlay(p.load_profile(name), {"revision": COMMIT})
    argv = p.container_argv(profile)
    version = profile["image"]["engine_version"]
    if profile["engine"] == "vllm":
        args, _extra = vllm_cli.parse(["serve"] + argv, version)
        assert (args.revision, args.tokenizer_revision, args.code_revision) == (COMMIT,) * 3
        if args.speculative_config:
            assert args.speculative_config["revision"] == COMMIT
    else:
        args = sglang_cli.parse(argv[3:], version)
        assert args.revision == COMMIT
        if args.speculative_algorithm:
            assert args.speculative_draft_model_revision == COMMIT
