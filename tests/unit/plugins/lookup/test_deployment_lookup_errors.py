# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment lookup's refusal is scrubbed, and nothing unscrubbed rides along with it.

ansible-core (2.19 and later) appends the text of an exception's cause to the message of an
AnsibleError raised ``from`` it: a lookup that raised ``AnsibleLookupError(scrub(exc)) from exc``
showed the scrubbed text followed by the raw one, the secret in it. These tests run the real
lookup through ansible-core's plugin loader."""
from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleLookupError
from ansible.plugins.loader import init_plugin_loader, lookup_loader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyzABCD12"  # shaped like a Hugging Face token, not a real one


@pytest.fixture(scope="module")
def loader():
    init_plugin_loader([os.path.join(ROOT, ".collections")])
    return lookup_loader


@pytest.mark.parametrize("name", ["inferops.serving.deployment", "inferops.serving.gateway_plan"])
def test_a_refusal_naming_a_token_shows_it_redacted_and_nowhere_else(loader, name):
    lookup = loader.get(name)
    with pytest.raises(AnsibleLookupError) as raised:
        if name.endswith("deployment"):
            lookup.run([TOKEN], variables={})
        else:
            lookup.run([TOKEN], variables={"hostvars": {}})
    text = str(raised.value)
    assert "<redacted>" in text or "hf_" not in text, text
    assert TOKEN[3:] not in text
    assert raised.value.__cause__ is None
