# SPDX-License-Identifier: GPL-3.0-or-later
"""What README.md and the operator docs (docs/*.md, not docs/dev) say that a command can check is
checked here against the tree: every repository path they name exists (a `<placeholder>` matches
any name), every link to a file resolves, every role variable they name is an option of a role's
argument spec (or, for a fact, a host variable or a play keyword, a name the roles, playbooks or
plugins use), every `inferops.serving.<name>` is a role, playbook, module, lookup, filter or
callback of the collection, every `make <target>` is a target of the Makefile, every default they
quote beside a variable (`server_port`, 8000; `gateway_port` (4000)) is the role's default, and the
serving hosts' probes run where the docs say (on the host, against 127.0.0.1). ALLOWED lists the
few names that are deliberately not in the tree, each with its reason."""
from __future__ import annotations

import functools
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md"] + sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
TOP_DIRS = ("roles", "playbooks", "plugins", "scripts", "tests", "inventories", "profiles", "data", "benchmarks",
            "docs", "changelogs", "meta", "molecule")
PREFIXES = ("server", "gateway", "monitoring", "model_cache", "pin", "benchmark", "watchdog", "preflight",
            "container_toolkit", "routing", "inferops")
# Names the docs use on purpose that are no variable, path or target of the tree: (kind, name) -> why.
ALLOWED = {
    ("variable", "inferops_watchdog_"): "the prefix of the watchdog's node_exporter metrics, not a variable",
    ("path", "inventories/<fleet>/host_vars/spark-01.example.internal.yml"): "an operator's file, shown as an example",
    ("path", "inventories/<fleet>/host_vars/spark-02.example.internal.yml"): "an operator's file, shown as an example",
    ("path", "inventories/<fleet>/host_vars/spark-01/tuned.yml"): "the overlay playbooks/tune.yml writes",
    ("path", "inventories/lab/group_vars/all/image_lock.yml"):
        "the lab's lock, written by the lab's setup and playbooks/pin.yml, not kept in git",
    ("path", "inventories/lab/group_vars/all/known_bad_images.yml"):
        "written by playbooks/pin.yml when a canary fails, as the doc's transcript shows",
    ("path", "profiles/gb10-nvfp4-mtp-batch16.yml"): "the profile docs/write-your-own-profile.md has the reader write",
    ("path", "inventories/<fleet>/group_vars/all/known_bad_images.yml"):
        "the known-bad record playbooks/pin.yml and playbooks/rollback.yml write in an operator's inventory",
}
# A quoted value beside a variable that is not its default: (doc, variable, value) -> why.
NOT_DEFAULTS = {
    ("docs/lab-to-fleet.md", "server_config_dir", "0700"): "the directory's mode, not its default path",
}


def read(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as handle:
        return handle.read()


def code_spans(text):
    """The text of every `code span` and every line of a fenced code block."""
    spans = []
    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
    for block in fenced.findall(text):
        spans.extend(block.split("\n"))
    spans.extend(re.findall(r"`([^`\n]+)`", fenced.sub("", text)))
    return spans


def _spec_files():
    return sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


@functools.lru_cache(maxsize=None)
def role_defaults():
    """Every option of every role's argument spec -> its default (defaults/main.yml, else the spec's)."""
    found = {}
    for spec_file in _spec_files():
        role_dir = os.path.dirname(os.path.dirname(spec_file))
        with open(spec_file, encoding="utf-8") as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        defaults_file = os.path.join(role_dir, "defaults", "main.yml")
        defaults = {}
        if os.path.exists(defaults_file):
            with open(defaults_file, encoding="utf-8") as handle:
                defaults = yaml.safe_load(handle) or {}
        for spec in specs.values():
            for name, option in (spec.get("options") or {}).items():
                found.setdefault(name, defaults.get(name, option.get("default")))
    return found


@functools.lru_cache(maxsize=None)
def tree_words():
    """Every identifier used by the roles, playbooks and plugins (facts, play keywords, host variables)."""
    words = set()
    for pattern in ("roles/**/*.yml", "roles/**/*.py", "roles/**/*.j2", "playbooks/*.yml", "site.yml",
                    "plugins/**/*.py"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path, encoding="utf-8") as handle:
                words.update(re.findall(r"[a-z][a-z0-9_]+", handle.read()))
    return words


@functools.lru_cache(maxsize=None)
def collection_names():
    """The names `inferops.serving.<name>` may take: roles, playbooks, modules, lookups, filters, callbacks."""
    names = {os.path.basename(os.path.dirname(os.path.dirname(path))) for path in _spec_files()}
    names.update(os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "roles", "*")))
    names.update(os.path.splitext(os.path.basename(path))[0]
                 for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    for kind in ("modules", "lookup", "callback", "action"):
        names.update(os.path.splitext(os.path.basename(path))[0]
                     for path in glob.glob(os.path.join(ROOT, "plugins", kind, "*.py")))
    return names | filter_names()


def filter_names():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        body = source.split("def filters(self):", 1)[1] if "def filters(self):" in source else ""
        names.update(re.findall(r"[\"']([a-z_]+)[\"']\s*:", body))
    return names


def make_targets():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        return set(re.findall(r"^([a-zA-Z][\w-]*)\s*:(?!=)", handle.read(), re.M))


def path_claims(doc, text):
    """Repository paths the doc names (in code, prose or a link), with `<x>` placeholders."""
    claims = set()
    pattern = re.compile(r"(?<![\w./:<>-])((?:%s)/[\w./*<>{}-]*[\w*>])" % "|".join(TOP_DIRS))
    for match in pattern.finditer(text):
        claims.add(match.group(1))
    for match in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        target = match.group(1)
        if not re.match(r"[a-z]+:", target):
            claims.add(os.path.normpath(os.path.join(os.path.dirname(doc), target)))
    return claims


def exists(claim):
    pattern = re.sub(r"<[^>]+>", "*", claim)
    if pattern.endswith(".md#"):
        pattern = pattern[:-1]
    return bool(glob.glob(os.path.join(ROOT, pattern)))


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_it_names_exists(doc):
    wrong = sorted(claim for claim in path_claims(doc, read(doc))
                   if not exists(claim) and ("path", claim) not in ALLOWED)
    assert wrong == [], "%s names paths that are not in the tree: %s" % (doc, wrong)


def variable_claims(text):
    names = set()
    word = re.compile(r"(?<![\w.$/-])((?:%s)_[a-z0-9_]+)(?![\w./-])" % "|".join(PREFIXES))
    for span in code_spans(text):
        names.update(word.findall(span))
    return names


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from _tasks(node.get(key))


@functools.lru_cache(maxsize=None)
def facts():
    """The facts the roles and playbooks set (set_fact keys, register names)."""
    names = set()
    for pattern in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml"):
        for path in glob.glob(os.path.join(ROOT, pattern)):
            with open(path, encoding="utf-8") as handle:
                plays = yaml.safe_load(handle) or []
            for task in _tasks([play.get("tasks", play) if isinstance(play, dict) and "hosts" in play else play
                                for play in plays]):
                if isinstance(task.get("register"), str):
                    names.add(task["register"])
                for module in ("ansible.builtin.set_fact", "set_fact", "ansible.builtin.set_stats"):
                    if isinstance(task.get(module), dict):
                        names.update(task[module])
                        names.update((task[module].get("data") or {}) if module.endswith("set_stats") else ())
    return names


@functools.lru_cache(maxsize=None)
def plugin_strings():
    """Every quoted identifier of the plugins: the host variables they read, the keys they write."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            names.update(re.findall(r"[\"'(]([a-z][a-z0-9_]+)[\"')]", handle.read()))
    return names


@pytest.mark.parametrize("doc", DOCS)
def test_every_variable_it_names_is_an_option_or_used(doc):
    """A role-prefixed name is an argument spec option, a plugin, a fact the roles set or a name the
    plugins read (a host variable such as gateway_backend_address); an inferops_* name (a play
    keyword, an inventory variable) is one the roles, playbooks or plugins use."""
    role_known = set(role_defaults()) | collection_names() | facts() | plugin_strings()
    inventory_known = tree_words()
    wrong = sorted(name for name in variable_claims(read(doc))
                   if name not in (inventory_known if name.startswith("inferops_") else role_known)
                   and ("variable", name) not in ALLOWED)
    assert wrong == [], "%s names variables no role spec, plugin or play has: %s" % (doc, wrong)


@pytest.mark.parametrize("doc", DOCS)
def test_every_collection_name_exists(doc):
    names = collection_names()
    # A name followed by '-' is a container label (inferops.serving.secrets-hmac), not content.
    wrong = sorted(set(name for name in re.findall(r"inferops\.serving\.(\w+)\b(?!-)", read(doc)) if name not in names))
    assert wrong == [], "%s names inferops.serving content that does not exist: %s" % (doc, wrong)


@pytest.mark.parametrize("doc", DOCS)
def test_every_make_target_exists(doc):
    targets = make_targets()
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    claimed, settings = set(), set()
    for span in code_spans(read(doc)):
        for target, rest in re.findall(r"(?:^|[;&|(]\s*)make\s+([a-z][\w-]*)((?:\s+[A-Z_]+=\S*)*)", span.strip()):
            claimed.add(target)
            settings.update(re.findall(r"([A-Z_]+)=", rest))
    assert claimed - targets == set(), "%s names make targets the Makefile lacks: %s" % (doc, claimed - targets)
    unknown = {name for name in settings if "$(%s)" % name not in makefile}
    assert unknown == set(), "%s sets make variables the Makefile does not read: %s" % (doc, unknown)


DEFAULT_CLAIM = re.compile(
    r"`(?P<name>[a-z][a-z0-9_]+)`(?:"
    r"\s*\((?P<paren>`[^`]+`|-?\d[\d.]*)"              # `name` (4000) / `name` (`127.0.0.1`)
    r"|,\s*by default\s+(?P<bydefault>`[^`]+`|-?\d[\d.]*)"  # `name`, by default `/root/...`
    r"|,\s*(?P<comma>-?\d[\d.]*)(?=\s*(?:s\b|GiB|by default|\)))"  # `name`, 60 s / `name`, 8000)
    r"|\s+is\s+(?P<is>`[^`]+`)\s+by default"           # `name` is `127.0.0.1` by default
    r")")


def matches_default(quoted, default):
    quoted = quoted.strip("`")
    if isinstance(default, bool) or default is None:
        return quoted.lower() == str(default).lower()
    if isinstance(default, (int, float)):
        try:
            return float(quoted) == float(default)
        except ValueError:
            return False
    # A Jinja expression in the default is shown as a <placeholder> in the docs.
    pattern = "".join(r"<[^>]+>" if part.startswith("{{") else re.escape(part)
                      for part in re.split(r"(\{\{.*?\}\})", str(default)))
    return re.fullmatch(pattern, quoted) is not None


def default_claims(text):
    for match in DEFAULT_CLAIM.finditer(text):
        yield match.group("name"), (match.group("paren") or match.group("bydefault") or match.group("comma")
                                    or match.group("is"))


@pytest.mark.parametrize("doc", DOCS)
def test_every_default_it_quotes_is_the_roles(doc):
    defaults = role_defaults()
    wrong = []
    for name, quoted in default_claims(read(doc)):
        if name in defaults and (doc, name, quoted.strip("`")) not in NOT_DEFAULTS \
                and not matches_default(quoted, defaults[name]):
            wrong.append("%s: the docs say %s, the role's default is %r" % (name, quoted, defaults[name]))
    assert wrong == [], "%s: %s" % (doc, wrong)


def test_the_claim_extractors_find_what_they_must():
    text = ("Set `server_port` (8000), `gateway_port`, 4000 s; `gateway_listen_address` is `0.0.0.0` by default.\n"
            "See `roles/nothing/README.md` and [x](docs/missing.md); `make nosuchtarget`; `server_nosuch_var`.\n")
    assert dict(default_claims(text)) == {"server_port": "8000", "gateway_port": "4000",
                                          "gateway_listen_address": "`0.0.0.0`"}
    defaults = role_defaults()
    assert not matches_default("4000", defaults["server_port"]) and matches_default("8000", defaults["server_port"])
    assert not matches_default("`0.0.0.0`", defaults["gateway_listen_address"])
    assert matches_default("`/var/cache/inferops-serving/<container>`", defaults["server_engine_cache_dir"])
    assert {claim for claim in path_claims("README.md", text) if not exists(claim)} == \
        {"roles/nothing/README.md", "docs/missing.md"}
    assert "server_nosuch_var" in variable_claims(text) and "server_nosuch_var" not in tree_words()
    assert {"server_deployment", "server_summary"} <= facts() and "server_nosuch_var" not in facts()
    assert {"gateway_backend_address", "monitoring_scrape_address"} <= plugin_strings()
    assert "server_nosuch_var" not in plugin_strings()
    assert "nosuchtarget" not in make_targets() and {"site", "test", "lint", "bench"} <= make_targets()
    assert {"deployment", "backend_assert", "launch_spec", "server", "site", "gc_freeze"} <= collection_names()


def test_the_allow_list_is_still_needed():
    """An allowed name that the tree now has, or that no doc names any more, is taken off the list."""
    texts = {doc: read(doc) for doc in DOCS}
    for (kind, name), _reason in ALLOWED.items():
        assert any(name in text for text in texts.values()), "%s %s: no doc names it, remove it" % (kind, name)
        # The lab's are made by its runs; a <placeholder> stands for an operator's tree (its glob
        # would match what the lab's runs write in inventories/lab).
        if kind == "path" and not name.startswith("inventories/lab/") and "<" not in name:
            assert not exists(name), "%s exists now: remove it from ALLOWED" % name
    for (doc, name, value), _reason in NOT_DEFAULTS.items():
        assert (name, "`%s`" % value) in set(default_claims(texts[doc])), (doc, name, value)


def test_the_serving_probes_run_on_the_host_not_the_controller():
    """docs/lab-to-fleet.md: the warm-up and the smoke test run on the serving host against
    127.0.0.1, so the controller needs SSH only (no task of the server role's waits and requests
    is delegated, and the plan's URLs are the host's loopback)."""
    with open(os.path.join(ROOT, "plugins", "plugin_utils", "_deployment.py"), encoding="utf-8") as handle:
        assert 'base = "http://127.0.0.1:%d"' in handle.read()
    for task_file in ("verify.yml", "validate_speculative.yml", "status.yml"):
        with open(os.path.join(ROOT, "roles", "server", "tasks", task_file), encoding="utf-8") as handle:
            tasks = handle.read()
        assert "ansible.builtin.uri" in tasks, task_file
        assert "delegate_to" not in tasks and "connection: local" not in tasks, task_file
    guide = read("docs/lab-to-fleet.md")
    assert "for a converge the controller needs SSH only" in " ".join(guide.split())
    for doc in DOCS:
        assert not re.search(r"controller reaches each host's serving\s+port", read(doc)), doc


def test_the_readme_names_every_role_plugin_and_playbook():
    """README's Included content is complete: every role, module, lookup, filter, callback and
    playbook of the tree is named in it (as `inferops.serving.<name>`, `<name>` or its path)."""
    readme = read("README.md")
    named = set(re.findall(r"inferops\.serving\.(\w+)", readme)) | set(re.findall(r"`(\w+)`", readme))
    named |= {name.strip() for row in re.findall(r"`inferops\.serving\.[\w]+`((?:,\s*`\w+`)+)", readme)
              for name in re.findall(r"`(\w+)`", row)}
    content = {("role", os.path.basename(path)) for path in glob.glob(os.path.join(ROOT, "roles", "*"))}
    for kind, folder in (("module", "modules"), ("lookup", "lookup"), ("callback", "callback")):
        content |= {(kind, os.path.splitext(os.path.basename(path))[0])
                    for path in glob.glob(os.path.join(ROOT, "plugins", folder, "*.py"))}
    content |= {("filter", name) for name in filter_names()}
    missing = sorted((kind, name) for kind, name in content if name not in named)
    playbooks = sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    missing += [("playbook", path) for path in playbooks
                if "`%s`" % path not in readme and os.path.splitext(os.path.basename(path))[0] not in named]
    assert missing == [], "README.md's Included content lacks %s" % missing


def test_the_collections_site_playbook_is_what_the_guide_says():
    """docs/lab-to-fleet.md: `inferops.serving.site` (playbooks/site.yml) is the whole fleet: the
    serving hosts, then the gateway and monitoring playbooks; the repository's site.yml is the same."""
    with open(os.path.join(ROOT, "site.yml"), encoding="utf-8") as handle:
        imported = [play["ansible.builtin.import_playbook"] for play in yaml.safe_load(handle)]
    assert imported == ["playbooks/site.yml"]
    with open(os.path.join(ROOT, "playbooks", "site.yml"), encoding="utf-8") as handle:
        imported = [play["ansible.builtin.import_playbook"] for play in yaml.safe_load(handle)]
    assert imported == ["serving.yml", "gateway.yml", "monitoring.yml"]
    guide = " ".join(read("docs/lab-to-fleet.md").split())
    assert "inferops.serving.site` converges the whole fleet" in guide


@pytest.mark.parametrize("doc", DOCS)
def test_every_pytest_marker_it_names_is_declared(doc):
    with open(os.path.join(ROOT, "pytest.ini"), encoding="utf-8") as handle:
        declared = set(re.findall(r"^\s+(\w+):", handle.read().split("markers =", 1)[1], re.M))
    claimed = set(re.findall(r"pytest -m (\w+)", read(doc)))
    assert claimed - declared == set(), "%s names pytest markers pytest.ini lacks: %s" % (doc, claimed - declared)


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_option_it_passes_exists(doc):
    """`ansible ... -m inferops.serving.<module> -a '{"option": ...}'`: each option is the module's."""
    text = re.sub(r"\\\n\s*", " ", read(doc))
    for module, args in re.findall(r"-m inferops\.serving\.(\w+)\s+-a\s+'(\{[^']*\})'", text):
        with open(os.path.join(ROOT, "plugins", "modules", module + ".py"), encoding="utf-8") as handle:
            source = handle.read()
        documentation = yaml.safe_load(re.search(r'DOCUMENTATION = r?"""(.*?)"""', source, re.S).group(1))
        assert set(yaml.safe_load(args)) <= set(documentation["options"]), (doc, module, args)


def test_the_counts_it_quotes_are_the_trees():
    """docs/operations.md counts the engine catalog's releases and the real-log corpus."""
    text = " ".join(read("docs/operations.md").split())
    releases = glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "engine_catalog", "*.json.gz"))
    size = sum(os.path.getsize(path) for path in releases) / 1e6
    quoted = re.search(r"\(post releases included\), (\d+) releases, ([\d.]+) MB", text)
    assert quoted and int(quoted.group(1)) == len(releases) and round(size, 1) == float(quoted.group(2)), \
        (quoted and quoted.groups(), len(releases), size)
    logs = [os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "tests", "unit", "fixtures", "real_logs",
                                                                      "*.log"))]
    quoted = re.search(r"holds (\d+) verbatim excerpts of real engine logs .*? \((\d+) vLLM, (\d+) SGLang;", text)
    assert quoted, "docs/operations.md no longer counts the real-log corpus"
    assert tuple(int(count) for count in quoted.groups()) == (
        len(logs), sum(name.startswith("vllm") for name in logs), sum(name.startswith("sglang") for name in logs))


def test_the_benchmark_workloads_and_load_generator_are_the_trees():
    """docs/benchmarking.md's workload table and README's AIPerf version, against _loadgen.WORKLOADS
    and requirements-loadgen.txt."""
    from ansible_collections.inferops.serving.plugins.plugin_utils import _loadgen
    rows = re.findall(r"^\| `(\w+)` \| (\d+) / ~?(\d+)[^|]*\| ([^|]+)\| ([\d, ]+) \|",
                      read("docs/benchmarking.md"), re.M)
    assert sorted(row[0] for row in rows) == sorted(_loadgen.WORKLOADS)
    for name, isl, osl, level, levels in rows:
        shape = _loadgen.WORKLOADS[name]
        assert int(isl) == shape["isl"], name
        assert int(osl) == shape["osl"] or shape["osl_stddev"], name  # the burst's output is a mean
        assert [int(value) for value in levels.split(",")] == shape["levels"], name
        if shape["duration_s"]:
            assert level.strip().startswith("%d s" % shape["duration_s"]), name
        else:
            assert level.strip().startswith("%d requests" % shape["requests"]), name
    with open(os.path.join(ROOT, "requirements-loadgen.txt"), encoding="utf-8") as handle:
        version = re.search(r"^aiperf==([\d.]+)$", handle.read(), re.M).group(1)
    for doc in ("README.md", "docs/benchmarking.md"):
        quoted = set(re.findall(r"AIPerf ([\d.]+\d)", read(doc)))
        assert quoted == {version}, (doc, quoted, version)


def test_the_profile_keys_it_lists_are_the_trees():
    """docs/write-your-own-profile.md: the profile keys ("any key outside this list is refused"),
    the keys of server_profile_overrides, and the `expect` keys, against _profile and _log_patterns."""
    from ansible_collections.inferops.serving.plugins.module_utils import _log_patterns
    from ansible_collections.inferops.serving.plugins.plugin_utils import _profile
    text = read("docs/write-your-own-profile.md")
    table = text.split("## The keys", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(_profile.PROFILE_KEYS)
    flat = " ".join(text.split())
    overrides = re.search(r"`server_profile_overrides` \(keys among ([^)]*)\)", flat).group(1)
    assert set(re.findall(r"`(\w+)`", overrides)) == set(_profile.OVERLAY_KEYS) | {
        "model", "revision", "draft_revision", "description"}
    expect = re.search(r"unless the log proves each expected key with the line that shows it\. The keys: ([^.]*)\.",
                       flat).group(1)
    # What backend_assert reports beside the start-up choices: running measurements, readiness, warnings.
    reported_only = set(_log_patterns.LATEST_KEYS) | {"allreduce_backend", "ready", "warnings"}
    assert re.findall(r"`(\w+)`", expect) == [key for key in _log_patterns.OBSERVED_KEYS if key not in reported_only]


def _version(text):
    return tuple(int(part) for part in re.findall(r"\d+", text))


def test_the_versions_and_profiles_it_quotes_are_the_trees():
    """The engine releases the lint data covers, the profiles shipped, the pinned tools and the
    lowest ansible-core, as README.md and the docs quote them."""
    releases = {}
    for path in glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "engine_catalog", "*.json.gz")):
        engine, release = os.path.basename(path)[:-len(".json.gz")].split("-", 1)
        if not re.search(r"[a-z]", release.split(".", 3)[-1] if release.count(".") > 2 else ""):
            releases.setdefault(engine, []).append(release)
    span = {engine: (min(found, key=_version), max(found, key=_version)) for engine, found in releases.items()}
    for doc in ("README.md", "docs/operations.md", "docs/write-your-own-profile.md"):
        flat = " ".join(read(doc).split())
        for low, high in re.findall(r"vLLM \(?(0\.\d+(?:\.\d+)?)-(0\.\d+(?:\.\d+)?)", flat):
            assert _version(low) == _version(span["vllm"][0])[:len(_version(low))], (doc, low, span["vllm"])
            assert _version(high) == _version(span["vllm"][1])[:len(_version(high))], (doc, high, span["vllm"])
        for low, high in re.findall(r"SGLang \(?(0\.5\.\d+)-(0\.5\.\d+)", flat):
            assert (low, high) == span["sglang"], (doc, low, high, span["sglang"])
    readme = " ".join(read("README.md").split())
    row = re.search(r"\| profiles \| `profiles/\*\.yml` \| the (\w+) tuned configurations: ([^|]*)\|", readme)
    shipped = sorted(os.path.basename(path)[:-4] for path in glob.glob(os.path.join(ROOT, "profiles", "*.yml")))
    assert sorted(re.findall(r"`([\w-]+)`", row.group(2))) == shipped
    assert row.group(1) == ["one", "two", "three", "four", "five", "six", "seven"][len(shipped) - 1]
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as handle:
        pins = dict(re.findall(r"^([\w-]+)==([\d.]+)", handle.read(), re.M))
    tested = readme.split("## Tested with", 1)[1]
    assert "ansible-core %s" % pins["ansible-core"] in tested and "ansible %s package" % pins["ansible"] in tested
    assert "ansible-lint %s" % pins["ansible-lint"] in tested
    assert "molecule %s" % ".".join(pins["molecule"].split(".")[:2]) in tested
    with open(os.path.join(ROOT, "meta", "runtime.yml"), encoding="utf-8") as handle:
        lowest = ".".join(yaml.safe_load(handle)["requires_ansible"].lstrip(">=").split(".")[:2])
    assert "ansible-core >= %s" % lowest in readme
    guide = read("docs/lab-to-fleet.md")
    assert "pip install ansible-core==%s" % pins["ansible-core"] in guide
    assert "any ansible-core from %s (meta/runtime.yml)" % lowest in guide


def test_every_loopback_port_it_quotes_is_the_trees():
    """`127.0.0.1:<port>` in README.md and the docs: the gateway's default port, Prometheus' default
    listen address, the lab's registry (tests/lab/lab.sh). A port no file of the tree sets is wrong."""
    defaults = role_defaults()
    with open(os.path.join(ROOT, "tests", "lab", "lab.sh"), encoding="utf-8") as handle:
        registry = re.search(r'^REGISTRY="127\.0\.0\.1:(\d+)"', handle.read(), re.M).group(1)
    prometheus = re.search(r":(\d+)'?\)", defaults["monitoring_prometheus_listen_address"]).group(1)
    sources = {str(defaults["gateway_port"]): "gateway_port", prometheus: "monitoring_prometheus_listen_address",
               registry: "the lab's registry"}
    for doc in DOCS:
        quoted = set(re.findall(r"127\.0\.0\.1:(\d+)", read(doc)))
        assert quoted <= set(sources), "%s quotes loopback ports no file sets: %s" % (doc, quoted - set(sources))


def test_the_refusals_it_quotes_are_the_validators():
    """README's examples of bad input refused (`server_port: got the integer 70000; ...`) are the
    messages plugin_utils/_validate.py gives for that input."""
    from ansible_collections.inferops.serving.plugins.plugin_utils import _validate
    checks = {"server_container_name": _validate.container_name, "server_port": _validate.port,
              "server_extra_volumes": _validate.str_list}
    quoted = re.findall(r"`((server_\w+): got the (string|integer) ([^;]+); expected [^`]*)`", read("README.md"))
    assert len(quoted) == len(checks)
    for message, var, kind, value in quoted:
        value = int(value) if kind == "integer" else value.strip("'")
        with pytest.raises(_validate.ValidationError) as refused:
            checks[var](value, var=var)
        assert str(refused.value).startswith(message.rstrip(". ").rstrip(".")), (message, str(refused.value))
