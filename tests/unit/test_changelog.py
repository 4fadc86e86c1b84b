# SPDX-License-Identifier: GPL-3.0-or-later
"""The changelog and the plugins' version_added agree with galaxy.yml (issue 26): 30 plugins said
version_added 0.2.0/0.3.0 while galaxy.yml said 0.1.0, and the changelog left modules out.

Every plugin's ``version_added`` (the plugin's and any option's) is a release the changelog
records or galaxy.yml's version, never a later one; every module, filter and lookup in plugins/
is listed in changelogs/changelog.yaml (``scripts/release-changelog`` regenerates it:
antsibull-changelog ``--reload-plugins``)."""
from __future__ import annotations

import ast
import os

import pytest
import yaml
from ansible.module_utils.compat.version import LooseVersion

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN_TYPES = ("modules", "filter", "lookup", "callback")


def _load(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


GALAXY_VERSION = _load("galaxy.yml")["version"]
RELEASES = _load(os.path.join("changelogs", "changelog.yaml"))["releases"]


def _plugins():
    for plugin_type in PLUGIN_TYPES:
        directory = os.path.join(ROOT, "plugins", plugin_type)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py") and not name.startswith("_"):
                yield plugin_type, name[:-3], os.path.join(directory, name)


PLUGINS = list(_plugins())


def _documentation(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION"
                                                for t in node.targets):
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % path)


def _versions_added(doc):
    """Every version_added in a plugin's documentation (the plugin's and its options', at any depth)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "version_added":
                yield str(value)
            else:
                yield from _versions_added(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from _versions_added(item)


@pytest.mark.parametrize("plugin_type, name, path", PLUGINS, ids=["%s/%s" % p[:2] for p in PLUGINS])
def test_version_added_is_a_release_the_collection_knows(plugin_type, name, path):
    doc = _documentation(path)
    assert doc.get("version_added"), "%s/%s: no version_added" % (plugin_type, name)
    known = set(RELEASES) | {GALAXY_VERSION}
    for version in _versions_added(doc):
        assert version in known and LooseVersion(version) <= LooseVersion(GALAXY_VERSION), (
            "%s/%s: version_added %s, while galaxy.yml says %s and the changelog records %s"
            % (plugin_type, name, version, GALAXY_VERSION, ", ".join(sorted(RELEASES))))


def test_the_changelog_lists_every_module_and_plugin():
    listed = set()
    for release in RELEASES.values():
        listed |= {("modules", m["name"]) for m in release.get("modules") or []}
        for plugin_type, plugins in (release.get("plugins") or {}).items():
            listed |= {(plugin_type, p["name"]) for p in plugins}
    missing = sorted("%s/%s" % (t, n) for t, n, dummy in PLUGINS if (t, n) not in listed)
    assert missing == [], "not in changelogs/changelog.yaml (run scripts/release-changelog): %s" % missing


FRAGMENTS = os.path.join(ROOT, "changelogs", "fragments")
# A published release's fragments stay (keep_fragments) and are its record: only the others are
# the release being written.
PUBLISHED = {name for version, release in RELEASES.items()
             if LooseVersion(version) < LooseVersion(GALAXY_VERSION) for name in release.get("fragments") or []}
UNRELEASED = sorted(name for name in os.listdir(FRAGMENTS) if name.endswith((".yml", ".yaml")) and name not in PUBLISHED)
# What a public changelog must not cite: the tracker's numbers of a private project, the working
# sessions and files that are not in the repository.
PRIVATE = (r"\bissues? #?\d+", r"\(#\d+\)", r"\bsession ?\d+", r"\.\./shared", r"\bseed\d{3}\b", r"\breview\b")


@pytest.mark.parametrize("name", UNRELEASED)
def test_a_fragment_names_what_changed_and_cites_nothing_private(name):
    import re

    assert not re.search(r"session ?\d+|^\d{4}-?\d\d-?\d\d", name), (
        "changelogs/fragments/%s is named after when it was written; name it after what changed "
        "(e.g. controller-cpu-gc-freeze.yml)" % name)
    with open(os.path.join(FRAGMENTS, name), encoding="utf-8") as handle:
        text = handle.read()
    for pattern in PRIVATE:
        found = re.search(pattern, text, re.IGNORECASE)
        assert not found, "changelogs/fragments/%s cites %r: say what changed, without it" % (name, found.group(0))


@pytest.mark.parametrize("name", UNRELEASED)
def test_a_first_release_has_nothing_to_break_remove_or_deprecate(name):
    if PUBLISHED or any(LooseVersion(version) < LooseVersion(GALAXY_VERSION) for version in RELEASES):
        pytest.skip("a release was published before %s" % GALAXY_VERSION)
    fragment = _load(os.path.join("changelogs", "fragments", name)) or {}
    sections = sorted(set(fragment) & {"breaking_changes", "removed_features", "deprecated_features"})
    assert sections == [], (
        "changelogs/fragments/%s has %s, but %s is the first release: nothing published before it "
        "could break; say what the release has (minor_changes)" % (name, ", ".join(sections), GALAXY_VERSION))
