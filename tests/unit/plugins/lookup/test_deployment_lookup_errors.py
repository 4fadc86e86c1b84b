# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment lookup's refusal is scrubbed, and nothing unscrubbed rides along with it.

ansible-core (2.19 and later) appends the text of an exception's cause to the message of an
AnsibleError raised ``from`` it: a lookup that raised ``AnsibleLookupError(scrub(exc)) from exc``
showed the scrubbed text followed by the raw one, the secret in it. These tests run the real
lookup plugins."""
from __future__ import annotations

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleLookupError

from ansible_collections.inferops.serving.plugins.lookup import deployment, gateway_plan

TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyzABCD12"  # shaped like a Hugging Face token, not a real one


@pytest.mark.parametrize("plugin, variables", [(deployment, {}), (gateway_plan, {"hostvars": {}})],
                         ids=["deployment", "gateway_plan"])
def test_a_refusal_naming_a_token_shows_it_redacted_and_nowhere_else(plugin, variables):
    # What Ansible's plugin loader does for a lookup: its documented options become its configuration.
    name = "inferops.serving." + plugin.__name__.rsplit(".", 1)[-1]
    C.config.initialize_plugin_configuration_definitions("lookup", name, yaml.safe_load(plugin.DOCUMENTATION)["options"])
    lookup = plugin.LookupModule()
    lookup._load_name = name
    with pytest.raises(AnsibleLookupError) as raised:
        lookup.run([TOKEN], variables=variables)
    text = str(raised.value)
    assert "<redacted>" in text or "hf_" not in text, text
    assert TOKEN[3:] not in text
    assert raised.value.__cause__ is None
