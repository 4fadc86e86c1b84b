# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a module's main() with arguments and catch what it returns (exit_json / fail_json)."""
from __future__ import annotations

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    """main() called exit_json or fail_json; ``result`` holds what it returned."""

    def __init__(self, result, failed):
        super().__init__(result)
        self.result = result
        self.failed = failed


def _exit_json(self, **kwargs):
    raise ModuleExit(dict(kwargs, changed=kwargs.get("changed", False)), failed=False)


def _fail_json(self, msg, **kwargs):
    raise ModuleExit(dict(kwargs, msg=msg, failed=True), failed=True)


@pytest.fixture
def run_module(monkeypatch):
    """``run_module(module, args, check_mode=False, diff=False) -> (failed, result)``."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)

    def run(module, args, check_mode=False, diff=False):
        args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
        with patch_module_args(args), pytest.raises(ModuleExit) as caught:
            module.main()
        return caught.value.failed, caught.value.result

    return run
