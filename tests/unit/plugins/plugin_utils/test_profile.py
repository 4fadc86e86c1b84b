# SPDX-License-Identifier: GPL-3.0-or-later
"""Profiles render to the field reports' launch commands, flag for flag; overrides and pins behave."""
from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p
from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
from ansible_collections.inferops.serving.tests.unit.launch_scripts import (
    FP8_MODEL_COMMIT,
    MODEL_COMMIT,
    flag_pairs,
    parse_command,
    parse_docker_run,
    without_weights_pin,
)

SEEDS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "fixtures", "seed_scripts")
SEED_DIGEST = "sha256:3dbe092ec5b2cef63b6104d33fa75d6ce53a7870962529ada69f78bbbc38e776"
# What the collection adds to the field reports' docker run: a bounded restart policy, rotated logs,
# identifying labels. Everything else must be the seed's.
OPERATIONAL_OPTIONS = {"--restart", "--log-driver", "--log-opt", "--label"}
# The field reports pass the token as --env "HF_TOKEN=$HF_TOKEN" (its value on docker's command line); the
# collection passes secrets only in a 0600 Docker env file. Both are "the secret channel" here.
SECRET_ENV_FILE = "/etc/inferops-serving/inferops-serving.env"
SECRET_CHANNEL = {("--env", "HF_TOKEN=$HF_TOKEN"): ("secrets", "HF_TOKEN"),
                  ("--env-file", SECRET_ENV_FILE): ("secrets", "HF_TOKEN")}


def seed(name):
    with open(os.path.join(SEEDS, name), encoding="utf-8") as handle:
        return handle.read()


def rendered(profile_name, **options):
    options.setdefault("env_file", SECRET_ENV_FILE)
    profile = p.load_profile(profile_name)
    return parse_docker_run(p.launch_script(p.launch_spec(profile, options), profile))


def docker_options(run, drop=("--name", "-p")):
    """The options that must match, as a sorted list; volumes by container path."""
    kept = []
    for opt, value in run["options"]:
        if opt in drop or opt in OPERATIONAL_OPTIONS:
            continue
        if opt == "-v":
            value = value.split(":", 1)[1]
        kept.append(SECRET_CHANNEL.get((opt, value), (opt, value)))
    return sorted(kept, key=str)


@pytest.mark.parametrize("profile,script", [
    ("gb10-nvfp4-mtp-latency", "docker-vllm-nemotron-3-super-120b-nvfp4-mtp.sh.txt"),
    ("gb10-nvfp4-mtp-throughput", "docker-vllm-nemotron-3-super-120b-nvfp4-mtp-throughput.sh.txt"),
])
def test_gb10_profiles_match_seed_scripts_flag_for_flag(profile, script):
    ours, theirs = without_weights_pin(rendered(profile)), parse_docker_run(seed(script))
    assert ours["argv"][0] == theirs["argv"][0]  # the model, positional
    assert flag_pairs(ours["argv"]) == flag_pairs(theirs["argv"])
    assert sorted(ours["argv"]) == sorted(theirs["argv"])
    assert docker_options(ours) == docker_options(theirs)
    # -d detached, no --rm (crash logs survive), the same GPU request and IPC mode.
    assert ("-d", None) in ours["options"] and "--rm" not in dict(ours["options"])
    # The seed runs the rolling tag; the profile pins the digest the seed names as tested-good.
    assert theirs["image"] == "vllm/vllm-openai:cu130-nightly"
    assert ours["image"] == "vllm/vllm-openai@" + SEED_DIGEST
    assert SEED_DIGEST in seed(script)
    extra = set(dict(ours["options"])) - set(dict(theirs["options"]))
    assert extra == OPERATIONAL_OPTIONS | {"--env-file"}
    assert "HF_TOKEN" not in str(ours)


def test_gb10_fallback_is_the_mtp_script_with_the_seeds_deltas():
    ours = rendered("gb10-nvfp4-fallback")
    assert [ours["argv"][i + 1] for i, w in enumerate(ours["argv"]) if w.endswith("revision")] == [MODEL_COMMIT] * 3
    ours = dict(ours, argv=[w for i, w in enumerate(ours["argv"]) if not w.endswith("revision")
                            and not ours["argv"][i - 1].endswith("revision")],
                options=[o for o in ours["options"] if o != ("-e", "HF_HUB_OFFLINE=1")])
    theirs = parse_docker_run(seed("docker-vllm-nemotron-3-super-120b-nvfp4-mtp.sh.txt"))
    expected = flag_pairs(theirs["argv"])
    del expected["--speculative_config"]
    expected["--gpu-memory-utilization"] = "0.82"
    assert flag_pairs(ours["argv"]) == expected
    expected_options = [o for o in docker_options(theirs) if o != ("-e", "VLLM_USE_FLASHINFER_MOE_FP4=0")]
    assert docker_options(ours) == expected_options
    assert ours["image"] == "vllm/vllm-openai:v0.17.1-cu130"


def test_g7e_profile_is_the_seed_repro_command():
    env, argv = parse_command(seed("sglang-repro.sh.txt"))
    ours = without_weights_pin(rendered("g7e-fp8-sglang"), FP8_MODEL_COMMIT, flags=2)
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert ours["argv"][:3] == ["python3", "-m", "sglang.launch_server"]  # the image's python
    assert flag_pairs(ours["argv"]) == flag_pairs(argv)
    assert [("-e", "%s=%s" % kv) for kv in env.items()] == [o for o in ours["options"] if o[0] == "-e"]


def test_g7e_eagle_profile_is_the_baseline_plus_the_seed_mtp_flags():
    baseline = parse_command(seed("sglang-repro.sh.txt"))[1]
    added = parse_command("x " + seed("sglang-eagle-flags.txt"))[1]
    expected = flag_pairs(baseline)
    expected.update(flag_pairs(added))
    # The one delta: the cap SGLang applied implicitly in the seed's run ("Max running requests is
    # reset to 48 for speculative decoding"), stated (lint rule sglang-spec-max-running-requests).
    expected["--max-running-requests"] = "48"
    eagle = without_weights_pin(rendered("g7e-fp8-sglang-eagle"), FP8_MODEL_COMMIT, flags=4)
    assert flag_pairs(eagle["argv"]) == expected
    assert expected["--mem-fraction-static"] == "0.80"


def test_host_network_moves_the_engine_to_the_serving_port():
    run = rendered("gb10-nvfp4-mtp-latency", network_mode="host", port=8001, name="lab")
    assert ("--network", "host") in run["options"]
    assert not [o for o in run["options"] if o[0] == "-p"]
    assert flag_pairs(run["argv"])["--port"] == "8001"
    sglang = p.launch_spec(p.load_profile("g7e-fp8-sglang"), {"network_mode": "host", "port": 8002})
    assert sglang["command"].count("--port") == 1
    assert sglang["command"][sglang["command"].index("--port") + 1] == "8002"


def test_bridge_network_publishes_the_serving_port_to_the_engine_port():
    spec = p.launch_spec(p.load_profile("g7e-fp8-sglang"), {"port": 9000})
    assert spec["published_ports"] == ["9000:8000"]


def test_every_profile_renders_and_its_fallback_exists():
    names = p.profile_names()
    assert len(names) == 5
    for name in names:
        profile = p.load_profile(name)
        assert plan(name)["expect"]["engine"] == profile["engine"]
        assert "field report" in profile["measured"]["source"]
        if profile.get("fallback"):
            assert profile["fallback"] in names
        spec = p.launch_spec(profile)
        assert spec["restart_policy"] == "on-failure" and 0 < spec["restart_retries"] <= 5
        assert re.fullmatch(r"[0-9a-f]{64}", spec["labels"]["inferops.serving.argv-sha256"])


def test_vllm_override_with_underscores_replaces_the_flag_in_place():
    profile = p.apply_overrides(p.load_profile("gb10-nvfp4-mtp-latency"), {"args": {"max_num_seqs": 8}})
    assert "max_num_seqs" not in profile["args"] and profile["args"]["max-num-seqs"] == 8
    assert list(profile["args"]).index("max-num-seqs") == list(p.load_profile("gb10-nvfp4-mtp-latency")["args"]).index("max-num-seqs")


def test_sglang_override_with_underscores_is_a_different_flag():
    profile = p.apply_overrides(p.load_profile("g7e-fp8-sglang"), {"args": {"tp_size": 4}})
    assert profile["args"]["tp-size"] == 8 and profile["args"]["tp_size"] == 4


def test_null_override_removes_flag_and_env():
    profile = p.apply_overrides(p.load_profile("gb10-nvfp4-mtp-latency"),
                                {"args": {"speculative_config": None}, "env": {"VLLM_USE_FLASHINFER_MOE_FP4": None}})
    argv = p.container_argv(profile)
    assert "--speculative_config" not in argv and "VLLM_USE_FLASHINFER_MOE_FP4" not in profile["env"]


def test_false_leaves_a_boolean_flag_out():
    profile = p.apply_overrides(p.load_profile("gb10-nvfp4-mtp-latency"), {"args": {"async-scheduling": False}})
    assert "--async-scheduling" not in p.container_argv(profile)


@pytest.mark.parametrize("overrides,message", [
    ({"argz": {}}, "unknown keys argz"),
    (["args"], "must be a mapping"),
])
def test_bad_overrides_are_refused_with_the_fix(overrides, message):
    with pytest.raises(p.ProfileError, match=message):
        p.apply_overrides(p.load_profile("gb10-nvfp4-mtp-latency"), overrides)


def test_unknown_profile_lists_the_available_ones():
    with pytest.raises(p.ProfileError) as err:
        p.load_profile("gb10-nvfp4-mtp-latencyy")
    assert "available profiles: g7e-fp8-sglang, g7e-fp8-sglang-eagle, gb10-nvfp4-fallback" in str(err.value)


def test_extends_cycle_is_refused(tmp_path):
    (tmp_path / "a.yml").write_text("name: a\nextends: b\n")
    (tmp_path / "b.yml").write_text("name: b\nextends: a\n")
    with pytest.raises(p.ProfileError, match="extends itself through a -> b -> a"):
        p.load_profile("a", dirs=[str(tmp_path)])


def test_profile_with_unknown_key_is_refused(tmp_path):
    (tmp_path / "x.yml").write_text("name: x\nengine: vllm\nargz: {}\n")
    with pytest.raises(p.ProfileError, match="unknown keys argz"):
        p.load_profile("x", dirs=[str(tmp_path)])


def test_inventory_profile_dir_extends_a_shipped_profile(tmp_path):
    (tmp_path / "site-gb10.yml").write_text(
        "name: site-gb10\nextends: gb10-nvfp4-mtp-throughput\nargs:\n  max-num-seqs: 16\n")
    profile = p.load_profile("site-gb10", dirs=[str(tmp_path)])
    assert profile["args"]["max-num-seqs"] == 16 and profile["args"]["max-num-batched-tokens"] == 8192
    assert "site-gb10" in p.profile_names([str(tmp_path)])


def test_lock_file_pins_the_digest_and_engine_version():
    digest = "sha256:" + "a" * 64
    lock = {"images": {"vllm/vllm-openai:v0.17.1-cu130": {"digest": digest, "engine_version": "0.17.1"}}}
    profile = p.resolve_profile("gb10-nvfp4-fallback", lock=lock)
    assert p.image_ref(profile, "127.0.0.1:5000") == "127.0.0.1:5000/vllm/vllm-openai@" + digest
    # an entry for another tag leaves the profile alone
    assert p.resolve_profile("gb10-nvfp4-mtp-latency", lock=lock)["image"]["digest"] == SEED_DIGEST


def test_explicit_override_beats_the_lock_file():
    lock = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "b" * 64}}}
    chosen = "sha256:" + "c" * 64
    profile = p.resolve_profile("gb10-nvfp4-mtp-latency", lock=lock, overrides={"image": {"digest": chosen}})
    assert profile["image"]["digest"] == chosen


def test_argv_digest_changes_with_argv_env_and_image():
    base = p.load_profile("gb10-nvfp4-mtp-latency")
    same = p.load_profile("gb10-nvfp4-mtp-latency")
    assert p.argv_digest(base) == p.argv_digest(same)
    for change in ({"args": {"max-num-seqs": 5}}, {"env": {"X": "1"}}, {"image": {"digest": "sha256:" + "d" * 64}}):
        assert p.argv_digest(p.apply_overrides(base, change)) != p.argv_digest(base)


def test_unknown_launch_option_is_refused():
    with pytest.raises(p.ProfileError, match="unknown launch options netwrok_mode"):
        p.launch_spec(p.load_profile("gb10-nvfp4-mtp-latency"), {"netwrok_mode": "host"})


@pytest.mark.parametrize("profile, caches", [
    ("gb10-nvfp4-mtp-latency", {"/root/.cache/vllm", "/root/.triton", "/root/.cache/flashinfer",
                                "/tmp/torchinductor_root"}),
    ("g7e-fp8-sglang-eagle", {"/root/.triton", "/root/.cache/flashinfer", "/tmp/torchinductor_root",
                              "/root/.deep_gemm"}),
])
def test_engine_cache_dir_persists_the_engines_compile_caches(profile, caches):
    spec = p.launch_spec(p.load_profile(profile), {"engine_cache_dir": "/var/cache/inferops/"})
    mounted = dict(reversed(v.split(":")[:2]) for v in spec["volumes"])
    assert caches <= set(mounted)
    assert all(mounted[path].startswith("/var/cache/inferops/") for path in caches)
    assert len(set(mounted[path] for path in caches)) == len(caches)
    script = p.launch_script(spec)
    assert "-v /var/cache/inferops/triton:/root/.triton" in script


def test_no_engine_cache_dir_mounts_only_the_model_cache():
    spec = p.launch_spec(p.load_profile("gb10-nvfp4-mtp-latency"))
    assert spec["volumes"] == ["/root/.cache/huggingface:/root/.cache/huggingface"]


def test_spec_label_changes_with_anything_the_container_is_created_from():
    profile = p.load_profile("gb10-nvfp4-mtp-latency")
    base = p.launch_spec(profile, {"port": 8001})
    assert base["labels"][p.SPEC_LABEL] == p.spec_digest(base)
    assert p.launch_spec(profile, {"port": 8001})["labels"][p.SPEC_LABEL] == base["labels"][p.SPEC_LABEL]
    for options in ({"port": 8002}, {"restart_retries": 5}, {"engine_cache_dir": "/var/cache/x"},
                    {"labels": {"team": "a"}}, {"log_max_size": "1g"}):
        assert p.launch_spec(profile, dict(options, port=options.get("port", 8001)))["labels"][p.SPEC_LABEL] \
            != base["labels"][p.SPEC_LABEL]


def test_lock_entry_carries_the_image_id_of_a_saved_archive():
    entry = {"digest": "sha256:" + "b" * 64, "image_id": "sha256:" + "e" * 64}
    lock = {"images": {"vllm/vllm-openai:cu130-nightly": entry}}
    profile = p.resolve_profile("gb10-nvfp4-mtp-latency", lock=lock)
    assert profile["image"]["image_id"] == "sha256:" + "e" * 64


PLAIN_NAME = ("expected a plain profile name (letters, digits, '_', '.', '-'; no '/', no '..', not a path), the "
              "file name of profiles/<name>.yml without .yml")
FALLBACK_LOCK_KEY = "vllm/vllm-openai:v0.17.1-cu130"


@pytest.mark.parametrize("files, call, message", [
    ({"list.yml": "- a\n"}, lambda d: p.load_profile("list", d), "profile file {d}/list.yml is not a mapping"),
    ({"named.yml": "name: other\nengine: vllm\n"}, lambda d: p.load_profile("named", d),
     "profile file {d}/named.yml declares name 'other'; rename the file or the name"),
    ({"x.yml": "name: x\nargz: {}\nenv_vars: {}\n"}, lambda d: p.load_profile("x", d),
     "profile {d}/x.yml has unknown keys argz, env_vars; allowed keys: name, extends, description, engine, hardware, "
     "image, model, revision, draft_revision, env, args, expect, measured, fallback"),
    # the inventory's profile directory is listed too
    ({"site-a.yml": "name: site-a\n"}, lambda d: p.load_profile("nope", d),
     "unknown profile 'nope'; available profiles: g7e-fp8-sglang, g7e-fp8-sglang-eagle, gb10-nvfp4-fallback, "
     "gb10-nvfp4-mtp-latency, gb10-nvfp4-mtp-throughput, site-a"),
    ({}, lambda d: p.load_profile("a/b", d), "profile: got the string 'a/b'; " + PLAIN_NAME),
    ({"badext.yml": "name: badext\nextends: ../x\n"}, lambda d: p.load_profile("badext", d),
     "profile badext: extends: got the string '../x'; " + PLAIN_NAME),
    ({}, lambda d: p.apply_overrides(p.load_profile("gb10-nvfp4-fallback"), ["args"]),
     "profile overrides must be a mapping with keys among hardware, image, env, args, expect"),
    ({}, lambda d: p.apply_overrides(p.load_profile("gb10-nvfp4-fallback"), {"argz": 1, "bz": 2}),
     "profile overrides have unknown keys argz, bz; allowed: hardware, image, env, args, expect, model, revision, "
     "draft_revision"),
    ({}, lambda d: p.apply_lock(p.load_profile("gb10-nvfp4-fallback"), {"images": {FALLBACK_LOCK_KEY: "sha256:" + "a" * 64}}),
     "lock entry for vllm/vllm-openai:v0.17.1-cu130 needs a digest"),
    ({}, lambda d: p.apply_lock(p.load_profile("gb10-nvfp4-fallback"),
                                {"images": {FALLBACK_LOCK_KEY: {"engine_version": "0.17.1"}}}),
     "lock entry for vllm/vllm-openai:v0.17.1-cu130 needs a digest"),
])
def test_profile_errors_name_the_file_or_key_and_the_fix(tmp_path, files, call, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(p.ProfileError) as err:
        call([str(tmp_path)])
    assert str(err.value) == message.format(d=tmp_path)


def test_model_and_description_are_overridable():
    profile = p.apply_overrides(p.load_profile("gb10-nvfp4-fallback"), {"model": "org/other", "description": "Site."})
    assert (profile["model"], profile["description"]) == ("org/other", "Site.")


def test_lock_entry_pins_the_engine_version_the_canary_printed():
    lock = {"images": {FALLBACK_LOCK_KEY: {"digest": "sha256:" + "a" * 64, "engine_version": "0.17.1+cu130"}}}
    assert p.resolve_profile("gb10-nvfp4-fallback", lock=lock)["image"]["engine_version"] == "0.17.1+cu130"


def test_resolve_profile_reads_the_inventory_profile_dir(tmp_path):
    (tmp_path / "site-a.yml").write_text("name: site-a\nextends: gb10-nvfp4-fallback\nmodel: org/site\n",
                                         encoding="utf-8")
    assert p.resolve_profile("site-a", dirs=[str(tmp_path)])["model"] == "org/site"


def test_a_loaded_profile_carries_its_name_not_its_parent(tmp_path):
    (tmp_path / "site-b.yml").write_text("name: site-b\nextends: gb10-nvfp4-fallback\n", encoding="utf-8")
    profile = p.load_profile("site-b", dirs=[str(tmp_path)])
    assert profile["name"] == "site-b" and "extends" not in profile


def test_extends_cycle_message_names_the_whole_chain(tmp_path):
    (tmp_path / "a.yml").write_text("name: a\nextends: b\n")
    (tmp_path / "b.yml").write_text("name: b\nextends: a\n")
    with pytest.raises(p.ProfileError) as err:
        p.load_profile("a", dirs=[str(tmp_path)])
    assert str(err.value) == "profile 'a' extends itself through a -> b -> a"


SPEC_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "launch_spec_gb10-nvfp4-fallback.json")


def test_launch_spec_is_exactly_the_reviewed_one():
    # Running containers carry this spec's digests as labels: any change to the spec (or to how the
    # digests are computed) replaces every container on the next converge, so it changes only on purpose.
    # Rewrite the fixture from launch_spec with the options below after such a change and read the diff.
    spec = p.launch_spec(p.load_profile("gb10-nvfp4-fallback"), {
        "name": "srv", "registry_prefix": "127.0.0.1:5000", "engine_cache_dir": "/var/cache/inferops",
        "env_file": "/etc/inferops-serving/srv.env", "labels": {"team": "a"}, "log_max_file": 5})
    with open(SPEC_FIXTURE, encoding="utf-8") as handle:
        assert spec == json.load(handle)
    assert p.argv_digest(p.load_profile("gb10-nvfp4-fallback")) == \
        "ba9b01080b1f0839a57924508b9b22d80a1318205c9dc4204370d21cb65a1f2b"


@pytest.mark.parametrize("call, message", [
    (lambda pr: p.container_argv(dict(pr, engine="tgi")),
     "profile gb10-nvfp4-fallback: engine 'tgi' is not one of sglang, vllm"),
    (lambda pr: p.container_argv(dict(pr, model=None)), "profile gb10-nvfp4-fallback has no model"),
    (lambda pr: p.image_ref(dict(pr, image={"tag": "x"})), "profile gb10-nvfp4-fallback has no image.repository"),
    (lambda pr: p.launch_spec(pr, {"network_mode": "none"}), "network_mode must be bridge or host, not 'none'"),
    (lambda pr: p.launch_spec(pr, {"netwrok_mode": "host", "zz": 1}),
     "unknown launch options netwrok_mode, zz; allowed: engine_cache_dir, env_file, extra_volumes, hf_hub_offline, "
     "labels, log_max_file, log_max_size, model_cache_dir, name, network_mode, port, registry_prefix, restart_retries, "
     "secret_env, stop_timeout"),
])
def test_launch_errors_name_the_profile_and_the_fix(call, message):
    with pytest.raises(p.ProfileError) as err:
        call(p.load_profile("gb10-nvfp4-fallback"))
    assert str(err.value) == message


def test_image_ref_adds_one_slash_after_the_registry_and_defaults_the_tag():
    profile = p.overlay(p.load_profile("gb10-nvfp4-fallback"), {"image": {"tag": None}})
    assert p.image_ref(profile, "reg:5000/") == "reg:5000/vllm/vllm-openai:latest"
    assert p.image_ref(profile) == "vllm/vllm-openai:latest"


def test_extends_merges_args_by_flag_identity_and_replaces_other_mappings(tmp_path):
    (tmp_path / "site-c.yml").write_text(
        "name: site-c\nextends: gb10-nvfp4-mtp-latency\ndescription: null\nfallback: null\n"
        "measured: {by: site}\nargs:\n  max_num_seqs: 16\n", encoding="utf-8")
    profile = p.load_profile("site-c", dirs=[str(tmp_path)])
    assert profile["args"]["max-num-seqs"] == 16 and "max_num_seqs" not in profile["args"]
    assert list(profile["args"]).index("max-num-seqs") == list(p.load_profile("gb10-nvfp4-mtp-latency")["args"]).index(
        "max-num-seqs")
    assert profile["measured"] == {"by": "site"}  # not an overlay key: replaced whole
    assert "description" not in profile  # a null deletes the key
    assert "fallback" in profile and profile["fallback"] is None  # except fallback: null means "none"


def test_overlay_matches_flags_by_the_engine_of_the_profile_being_built():
    # the base's own spelling is matched too (a hand-written profile may use underscores)
    assert p.overlay({"engine": "vllm", "args": {"max_num_seqs": 1}}, {"args": {"max-num-seqs": 2}}) == \
        {"engine": "vllm", "args": {"max_num_seqs": 2}}
    # a child that switches to SGLang: '_' and '-' are different flags there
    changed = p.overlay({"engine": "vllm", "args": {"max-num-seqs": 1}}, {"engine": "sglang", "args": {"max_num_seqs": 2}})
    assert changed["args"] == {"max-num-seqs": 1, "max_num_seqs": 2}


def test_engine_cache_dir_keeps_its_own_name():
    spec = p.launch_spec(p.load_profile("gb10-nvfp4-mtp-latency"), {"engine_cache_dir": "/srv/cacheX/"})
    assert all(v.startswith("/srv/cacheX/") for v in spec["volumes"][1:]) and len(spec["volumes"]) > 1
