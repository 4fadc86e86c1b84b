# SPDX-License-Identifier: GPL-3.0-or-later
"""For the releases the issue names, the lint refuses no flag, value or speculative key the release's
parser accepts, and accepts none it lacks (over the stored data, every option string and choice)."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as c
from ansible_collections.inferops.serving.plugins.plugin_utils._profile_lint import lint_profile

DONE_WHEN = [("vllm", "0.19.0"), ("vllm", "0.24.0"), ("vllm", "0.33.0"), ("sglang", "0.5.13"), ("sglang", "0.5.23")]
FLAG_RULES = ("flag-unknown", "flag-version", "flag-value", "flag-abbreviation", "sglang-flag-underscore",
              "vllm-speculative-config-key")


def _profile(engine, version, args):
    """A bare profile of ``engine`` at ``version``: no hardware or model facts, so only flag rules speak."""
    return {"name": "catalog-check", "engine": engine, "model": "some/model",
            "image": {"repository": "x/y", "tag": "t", "digest": None, "engine_version": version},
            "hardware": {}, "args": args}


def _findings(engine, version, args):
    return lint_profile(_profile(engine, version, args), known_bad=[], rules=FLAG_RULES)


def _value_for(entry, round_index):
    """A value the option accepts: ``true`` for on/off flags, else the round's choice (or ``1``)."""
    if entry["value"] == "none":
        return True
    if entry.get("json"):
        return {}  # a config option: a JSON object
    allowed = c.choices(entry)
    if allowed:
        return allowed[round_index % len(allowed)]
    return "1"


def _writable(option):
    return option.startswith("--")  # a profile renders --<key>: single-dash short options are not writable


@pytest.mark.parametrize("engine, version", DONE_WHEN)
def test_every_option_string_and_choice_lints_clean(engine, version):
    rel = c.release(engine, version)
    rounds = max([len(c.choices(e) or []) for e in rel.flags.values()] + [1])
    for round_index in range(rounds):
        args = {}
        for name, entry in rel.flags.items():
            for option in ["--" + name] + entry["aliases"] + entry["negations"]:
                if not _writable(option):
                    continue
                value = True if option in entry["negations"] else _value_for(entry, round_index)
                args[option[2:]] = value
        findings = _findings(engine, version, args)
        assert [f for f in findings if f["severity"] == "error"] == [], findings[:5]
        assert [f for f in findings if f["rule"] != "flag-abbreviation"] == [], findings[:5]


@pytest.mark.parametrize("version", [v for e, v in DONE_WHEN if e == "vllm"])
def test_every_speculative_key_lints_clean(version):
    rel = c.release("vllm", version)
    config = {key: 1 for key in rel.speculative_keys}
    assert _findings("vllm", version, {"speculative-config": config}) == []


@pytest.mark.parametrize("engine, version", DONE_WHEN)
def test_options_of_other_releases_that_this_one_lacks_are_refused(engine, version):
    rel = c.release(engine, version)
    absent = sorted({option for other in c.all_releases(engine) for option in other.strings
                     if option.startswith("--") and option not in rel.strings})
    assert absent, "no other release has an option %s lacks" % rel.label
    for option in absent:
        resolved = c.resolve(rel, option)
        findings = _findings(engine, version, {option[2:]: "1"})
        if resolved["form"] == "abbreviation":  # argparse accepts a unique prefix (a warning)
            findings = _findings(engine, version, {option[2:]: _value_for(resolved["entry"], 0)})
            assert [f["rule"] for f in findings] == ["flag-abbreviation"], (option, findings)
            continue
        assert any(f["severity"] == "error" and f["rule"] in ("flag-version", "flag-unknown") for f in findings), \
            (option, findings)


@pytest.mark.parametrize("engine, version", DONE_WHEN)
def test_values_the_release_lacks_are_refused(engine, version):
    rel = c.release(engine, version)
    checked = 0
    for name, entry in rel.flags.items():
        allowed = c.choices(entry)
        if not allowed or entry["value"] == "none":
            continue
        elsewhere = {choice for other in c.all_releases(engine)
                     for choice in (c.choices(other.flags.get(name)) or [])} - set(allowed)
        for value in sorted(elsewhere | {"not-a-choice"}):
            if c.normalise_value(entry, value) in allowed:
                continue
            findings = _findings(engine, version, {name: value})
            assert [f["rule"] for f in findings if f["severity"] == "error"] == ["flag-value"], (name, value, findings)
            checked += 1
    assert checked


@pytest.mark.parametrize("version", [v for e, v in DONE_WHEN if e == "vllm"])
def test_speculative_keys_the_release_lacks_are_refused(version):
    rel = c.release("vllm", version)
    absent = sorted({key for other in c.all_releases("vllm") for key in other.speculative_keys} - rel.speculative_keys)
    for key in absent + ["disable_by_batch_size"]:
        findings = _findings("vllm", version, {"speculative-config": {"method": "mtp", key: 1}})
        assert [f["severity"] for f in findings] == ["error"], (key, findings)


@pytest.mark.parametrize("engine, version, flag", [
    ("vllm", "0.19.0", "no-headless"), ("vllm", "0.19.0", "no-disable-log-stats"),
    ("vllm", "0.33.0", "calculate-kv-scales"), ("vllm", "0.19.0", "swap-space"),
    ("sglang", "0.5.23", "cuda-graph-max-bs"), ("sglang", "0.5.23", "mamba-scheduler-strategy"),
    ("sglang", "0.5.13", "no-enable-metrics"), ("sglang", "0.5.13", "moe_runner_backend"),
])
def test_known_absent_flags_are_refused(engine, version, flag):
    findings = _findings(engine, version, {flag: True})
    assert any(f["severity"] == "error" for f in findings), findings


# --attention-backend auto: vLLM's AttentionConfig validator maps "auto" (any case) to automatic
# selection before it looks the name up in AttentionBackendEnum, whose names are the data's
# choices (issue 26). Checked against the released source kept in tests/unit/fixtures/engine_src.
@pytest.mark.parametrize("version", [v for v in c.releases("vllm") if c.version_in(v, "0.19.0")])
@pytest.mark.parametrize("value", ["auto", "AUTO", "Auto"])
def test_attention_backend_auto_is_accepted(version, value):
    assert _findings("vllm", version, {"attention-backend": value}) == []


def test_attention_backend_auto_matches_the_released_source(tmp_path):
    import os
    import tarfile
    archive = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "engine_src", "vllm-0.19.0.tar.xz")
    with tarfile.open(archive) as tar:
        source = tar.extractfile("vllm/config/attention.py").read().decode("utf-8")
    assert 'if value.lower() == "auto":\n                return None' in source
    assert "AUTO" in c.choices(c.release("vllm", "0.19.0").flags["attention-backend"])


def test_attention_backend_still_refuses_a_name_it_lacks():
    [finding] = _findings("vllm", "0.19.0", {"attention-backend": "automatic"})
    assert finding["rule"] == "flag-value" and "is not a choice of vLLM 0.19.0" in finding["message"]
