# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab simulator and the lint read one kernel table (plugins/plugin_utils/_kernel_support.py),
and the table agrees with the engine catalog generated from the releases' source."""
from __future__ import annotations

import pytest

from engine_sim import decide

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _kernel_support as kernels


def test_the_simulator_reads_the_collection_table():
    assert decide.kernels.NVFP4_MOE_SM12X == kernels.NVFP4_MOE_SM12X
    assert decide.kernels.__file__.endswith("plugins/plugin_utils/_kernel_support.py")


@pytest.mark.parametrize("value, backend_first", sorted(kernels.NVFP4_MOE_CLI.items()))
def test_every_moe_backend_value_of_the_table_exists_from_its_release(value, backend_first):
    _backend, first = backend_first
    present = catalog.value_releases("vllm", "moe-backend", value)
    assert present[0] == first, (value, present[:3])


@pytest.mark.parametrize("backend, version, supported", [
    ("MARLIN", "0.17.1", True), ("FLASHINFER_CUTLASS", "0.17.1", False), ("FLASHINFER_CUTLASS", "0.19.0", True),
    ("FLASHINFER_B12X", "0.22.0", True), ("B12X", "0.28.0", False), ("B12X", "0.29.0", True),
    ("FLASHINFER_TRTLLM", "0.33.0", False),
])
def test_sm12x_support_is_the_same_for_the_simulator_and_the_lint(backend, version, supported, gb10):
    assert decide.nvfp4_moe_supported(backend, version, gb10) is supported
    assert kernels.nvfp4_moe_supported(backend, 12, version, catalog.version_in) is supported
