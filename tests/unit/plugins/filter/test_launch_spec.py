# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch_spec filter renders one spec whatever ansible-core templated an unset option to."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.serving.plugins.filter.launch_spec import FilterModule
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import SPEC_LABEL, resolve_profile

launch_spec = FilterModule().filters()["launch_spec"]

# What the server role's __server_launch_options template to with no token and no engine cache:
# ansible-core >= 2.19 passes None, 2.18 passes '' (Jinja's none rendered as a string).
UNSET_2_19 = {"name": "inferops-serving", "port": 8000, "network_mode": "bridge", "registry_prefix": None,
              "engine_cache_dir": None, "env_file": None, "secret_env": []}
UNSET_2_18 = dict(UNSET_2_19, registry_prefix="", engine_cache_dir="", env_file="")


@pytest.mark.parametrize("profile", ["gb10-nvfp4-mtp-latency", "g7e-fp8-sglang"])
def test_empty_strings_render_the_spec_and_hash_of_none(profile):
    resolved = resolve_profile(profile)
    old, new = launch_spec(resolved, UNSET_2_18), launch_spec(resolved, UNSET_2_19)
    assert old == new
    assert old["env_file"] is None
    assert old["labels"][SPEC_LABEL] == new["labels"][SPEC_LABEL]


def test_show_launch_options_unset_on_2_18_keep_the_defaults():
    resolved = resolve_profile("gb10-nvfp4-mtp-latency")
    spec = launch_spec(resolved, {"name": "", "port": "", "network_mode": "", "registry_prefix": ""})
    assert (spec["name"], spec["network_mode"]) == ("gb10-nvfp4-mtp-latency", "bridge")
    assert spec == launch_spec(resolved, {})


def test_a_bad_network_mode_is_still_refused():
    with pytest.raises(AnsibleFilterError, match="network_mode must be bridge or host, not 'overlay'"):
        launch_spec(resolve_profile("gb10-nvfp4-mtp-latency"), {"network_mode": "overlay"})
