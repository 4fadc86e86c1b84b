# SPDX-License-Identifier: GPL-3.0-or-later
"""Merging one entry into an inventory variables file: everything else is kept."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.inferops.serving.plugins.module_utils import _inventory_file as inv

LOCK = {"inferops_serving_image_lock": {"images": {"lmsysorg/sglang:v0.5.13": {"digest": "sha256:" + "a" * 64}}},
        "other_var": 1}


def test_mapping_entry_is_added_beside_the_others():
    new, entry = inv.merge(LOCK, "inferops_serving_image_lock", {"digest": "sha256:" + "b" * 64},
                           key="vllm/vllm-openai:cu130-nightly", section="images")
    assert set(new["inferops_serving_image_lock"]["images"]) == {"lmsysorg/sglang:v0.5.13",
                                                                 "vllm/vllm-openai:cu130-nightly"}
    assert new["other_var"] == 1 and entry == {"digest": "sha256:" + "b" * 64}
    assert "vllm/vllm-openai:cu130-nightly" not in LOCK["inferops_serving_image_lock"]["images"]


def test_mapping_entry_merges_nested_platforms_and_null_removes():
    data = {"v": {"images": {"x": {"digest": "d1", "mirror": "m", "platforms": {"gb10": {"digest": "d1"}}}}}}
    _data, entry = inv.merge(data, "v", {"digest": "d2", "mirror": None, "platforms": {"sm120": {"digest": "d2"}}},
                             key="x", section="images")
    assert entry == {"digest": "d2", "platforms": {"gb10": {"digest": "d1"}, "sm120": {"digest": "d2"}}}


def test_list_entry_replaces_the_matching_item_or_appends():
    data = {"inferops_known_bad_images": [{"digest": "d1", "signature": "old"}, {"digest_prefix": "sha256:ab"}]}
    new, _entry = inv.merge(data, "inferops_known_bad_images", {"digest": "d1", "signature": "new"}, match="digest")
    assert new["inferops_known_bad_images"] == [{"digest_prefix": "sha256:ab"}, {"digest": "d1", "signature": "new"}]
    new, _entry = inv.merge(new, "inferops_known_bad_images", {"digest": "d2"}, match="digest")
    assert [i.get("digest") for i in new["inferops_known_bad_images"]] == [None, "d1", "d2"]


def test_empty_file_starts_the_variable():
    new, _entry = inv.merge(None, "inferops_known_bad_images", {"digest": "d1"}, match="digest")
    assert new == {"inferops_known_bad_images": [{"digest": "d1"}]}
    new, _entry = inv.merge(None, "lock", {"digest": "d1"}, key="k", section="images")
    assert new == {"lock": {"images": {"k": {"digest": "d1"}}}}


@pytest.mark.parametrize("data, kwargs, match", [
    ([1], {"key": "k"}, "the file holds a list at the top level"),
    ({"v": [1]}, {"key": "k"}, r"^v is a list; expected a mapping$"),
    ({"v": {"images": "x"}}, {"key": "k", "section": "images"}, r"^v\.images is a string; expected a mapping$"),
    ({"v": {"k": "x"}}, {"key": "k"}, r"^v\['k'\] is a string; expected a mapping$"),
    ({"v": {"a": 1}}, {"match": "digest"}, r"^v is a mapping; expected a list$"),
    ({}, {"match": "sig"}, r"^entry has no 'sig' field"),
    ({}, {}, "exactly one of key"),
])
def test_shapes_that_do_not_fit_are_refused_naming_the_variable(data, kwargs, match):
    with pytest.raises(inv.InventoryFileError, match=match):
        inv.merge(data, "v", {"digest": "d"}, **kwargs)


def test_header_is_kept_and_rendered():
    text = "---\n# Written by pin.yml\n# second line\nv: 1\n"
    assert inv.header_of(text) == "# Written by pin.yml\n# second line"
    out = inv.render({"v": 1}, inv.header_of(text), yaml.safe_dump)
    assert out == text
    assert inv.render({"v": 1}, "Line one\n\nLine three", yaml.safe_dump) == "---\n# Line one\n#\n# Line three\nv: 1\n"
