# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment plan: one object, expectations derived from the final flags."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils import _engines as e
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError, launch_script

OPTIONS = {"name": "inferops-serving", "port": 8101, "network_mode": "host", "secret_env": [],
           "engine_cache_dir": "/var/cache/inferops-serving/inferops-serving",
           "smoke": {"prompt": "What is 2+2?", "expect": "4", "max_tokens": 1024}}

# What the shipped profiles stated in `expect` before the plan derived it (the field reports' facts, as
# committed at e531bb9): the derived expectations must prove exactly the same.
SEED_EXPECT = {
    "gb10-nvfp4-mtp-latency": {
        "engine": "vllm", "moe_backend": "MARLIN", "draft_moe_backend": "TRITON", "linear_backend": "MARLIN",
        "attention_backend": "TRITON_ATTN", "speculative_method": "mtp", "num_speculative_tokens": 2,
        "kv_cache_dtype": "fp8", "chunked_prefill": True, "prefix_caching": False, "max_num_seqs": 4,
        "tensor_parallel_size": 1},
    "gb10-nvfp4-fallback": {
        "engine": "vllm", "moe_backend": "MARLIN", "linear_backend": "MARLIN", "attention_backend": "TRITON_ATTN",
        "speculative_method": "none", "kv_cache_dtype": "fp8", "chunked_prefill": True, "prefix_caching": False,
        "max_num_seqs": 4, "tensor_parallel_size": 1},
    "g7e-fp8-sglang": {
        "engine": "sglang", "moe_backend": "TRITON", "linear_backend": "TRITON", "attention_backend": "FLASHINFER",
        "speculative_method": "none", "kv_cache_dtype": "fp8_e4m3", "prefix_caching": True,
        "tensor_parallel_size": 8},
}
SEED_EXPECT["gb10-nvfp4-mtp-throughput"] = dict(SEED_EXPECT["gb10-nvfp4-mtp-latency"], max_num_seqs=32)
# The EAGLE profile now states the running-request cap SGLang applied silently in the g7e field report's run
# (issue 13): its flag is proven too.
SEED_EXPECT["g7e-fp8-sglang-eagle"] = dict(SEED_EXPECT["g7e-fp8-sglang"], draft_moe_backend="TRITON",
                                           speculative_method="eagle", num_speculative_tokens=3, prefix_caching=False,
                                           max_num_seqs=48)


@pytest.mark.parametrize("name", sorted(SEED_EXPECT))
def test_shipped_profiles_expect_what_their_seeds_proved(name):
    assert d.plan(name, OPTIONS)["expect"] == SEED_EXPECT[name]


def test_readme_override_example_derives_its_expectations():
    deployment = d.plan("gb10-nvfp4-mtp-throughput", OPTIONS, overrides={
        "args": {"host": "127.0.0.1", "max-num-seqs": 16, "speculative_config.num_speculative_tokens": 1}})
    assert deployment["expect"]["max_num_seqs"] == 16
    assert deployment["expect"]["num_speculative_tokens"] == 1
    # The dotted sub-key keeps the rest of the speculative config (vLLM merges it into the JSON).
    assert deployment["expect"]["speculative_method"] == "mtp"
    assert deployment["expect"]["draft_moe_backend"] == "TRITON"
    assert deployment["expect_sources"]["max_num_seqs"] == "args.max-num-seqs"
    assert "--max-num-seqs\t16" not in deployment["script"] and "--max-num-seqs 16" in deployment["script"]


def test_override_of_a_nested_speculative_config_replaces_it_whole():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS, overrides={
        "args": {"speculative_config": {"method": "mtp", "num_speculative_tokens": 1}}})
    assert deployment["expect"]["num_speculative_tokens"] == 1
    assert "draft_moe_backend" not in deployment["expect"]


def test_removing_speculation_expects_none():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS, overrides={"args": {"speculative_config": None}})
    assert deployment["expect"]["speculative_method"] == "none"
    assert "num_speculative_tokens" not in deployment["expect"]


def test_an_explicit_expectation_that_contradicts_its_flag_is_refused_naming_both():
    with pytest.raises(ProfileError) as err:
        d.plan("gb10-nvfp4-mtp-throughput", OPTIONS,
               overrides={"args": {"max-num-seqs": 16}, "expect": {"max_num_seqs": 32}})
    message = str(err.value)
    assert "expect.max_num_seqs: 32 contradicts args.max-num-seqs = 16" in message
    assert "remove expect.max_num_seqs" in message


def test_an_overridden_flag_supersedes_the_profiles_own_expectation():
    # g7e-fp8-sglang expects FLASHINFER attention because SGLang picks it with no flag; the
    # inventory forcing the flag decides, and a rollback rebuilds the same plan from the record.
    deployment = d.plan("g7e-fp8-sglang", OPTIONS, overrides={"args": {"attention-backend": "triton"}})
    assert deployment["expect"]["attention_backend"] == "TRITON"
    assert "the profile expected 'FLASHINFER'" in deployment["expect_sources"]["attention_backend"]
    assert "attention_backend" not in deployment["profile"]["expect"]
    assert d.from_record(d.record(deployment))["spec_sha256"] == deployment["spec_sha256"]


def test_a_profile_whose_own_flag_contradicts_its_expect_is_refused():
    with pytest.raises(ProfileError, match="expect.attention_backend: 'FLASHINFER' contradicts args.attention-backend"):
        d.plan(dict(d.plan("g7e-fp8-sglang", OPTIONS)["profile"], args={"attention-backend": "triton"},
                    expect={"attention_backend": "FLASHINFER"}), OPTIONS)


def test_an_explicit_expectation_that_agrees_with_its_flag_is_kept():
    deployment = d.plan("gb10-nvfp4-mtp-throughput", OPTIONS, overrides={"expect": {"max_num_seqs": "32"}})
    assert deployment["expect"]["max_num_seqs"] == 32


def test_auto_leaves_the_choice_to_the_engine_and_the_profile():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS,
                        overrides={"args": {"moe-backend": "auto"}, "expect": {"moe_backend": "FLASHINFER_CUTLASS"}})
    assert deployment["expect"]["moe_backend"] == "FLASHINFER_CUTLASS"
    assert deployment["expect_sources"]["moe_backend"] == "profile expect"


@pytest.mark.parametrize("engine,args,key,value", [
    ("vllm", {"no-enable-prefix-caching": True}, "prefix_caching", False),
    ("vllm", {"enable-prefix-caching": True}, "prefix_caching", True),
    ("vllm", {"disable-chunked-prefill": True}, "chunked_prefill", False),
    ("vllm", {"enable_chunked_prefill": "false"}, "chunked_prefill", False),
    ("vllm", {"tp": 2}, "tensor_parallel_size", 2),
    ("vllm", {}, "tensor_parallel_size", 1),
    ("vllm", {"kv-cache-dtype": "auto"}, "kv_cache_dtype", None),
    ("sglang", {"disable-radix-cache": True}, "prefix_caching", False),
    ("sglang", {}, "prefix_caching", True),
    ("sglang", {"max-running-requests": 64}, "max_num_seqs", 64),
    ("sglang", {"speculative-algorithm": "EAGLE", "speculative-num-steps": 3}, "num_speculative_tokens", 3),
    ("sglang", {"speculative-moe-runner-backend": "triton"}, "draft_moe_backend", "TRITON"),
])
def test_flags_determine_expectations(engine, args, key, value):
    derived = e.derive_expect(engine, args)
    assert derived.get(key, (None,))[0] == value


def test_a_false_flag_is_absent():
    assert "max_num_seqs" not in e.derive_expect("vllm", {"max-num-seqs": False})


@pytest.mark.parametrize("name,fraction", [
    ("gb10-nvfp4-mtp-latency", 0.9), ("gb10-nvfp4-fallback", 0.82), ("g7e-fp8-sglang", 0.85),
    ("g7e-fp8-sglang-eagle", 0.80)])
def test_memory_claim_comes_from_the_engines_flag(name, fraction):
    assert d.plan(name, OPTIONS)["memory"]["fraction"] == pytest.approx(fraction)


def test_memory_claim_defaults_to_vllms_default_without_the_flag():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS, overrides={"args": {"gpu-memory-utilization": None}})
    assert deployment["memory"] == {"fraction": 0.9, "unified": True, "reads": "MemAvailable"}


def test_served_model_name_and_urls():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS, overrides={"args": {"served-model-name": "nemo"}})
    assert deployment["served_model_name"] == "nemo"
    assert deployment["urls"]["chat"] == "http://127.0.0.1:8101/v1/chat/completions"
    assert deployment["urls"]["metrics"] == "http://127.0.0.1:8101/metrics"
    sglang = d.plan("g7e-fp8-sglang", dict(OPTIONS, port=8102))
    assert sglang["served_model_name"] == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
    assert sglang["urls"]["version"] == "http://127.0.0.1:8102/get_server_info"


def test_the_smoke_request_asks_the_served_name_at_temperature_zero():
    deployment = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, smoke=dict(OPTIONS["smoke"], max_tokens="256")),
                        overrides={"args": {"served-model-name": "nemo"}})
    assert deployment["smoke"]["request"] == {"model": "nemo", "temperature": 0, "max_tokens": 256,
                                              "messages": [{"role": "user", "content": "What is 2+2?"}]}
    assert "request" not in d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, smoke={}))["smoke"]


def test_the_plan_holds_the_script_of_its_spec():
    deployment = d.plan("g7e-fp8-sglang-eagle", OPTIONS)
    assert deployment["script"] == launch_script(deployment["spec"], deployment["profile"])
    assert deployment["script_path"] == "/usr/local/lib/inferops-serving/inferops-serving.sh"
    assert deployment["spec_sha256"] == deployment["spec"]["labels"]["inferops.serving.spec-sha256"]
    assert deployment["env_file"] is None
    with_key = d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, secret_env=["HF_TOKEN", "SGLANG_X_KEY"],
                                                   config_dir="/etc/x"))
    assert with_key["env_file"] == "/etc/x/inferops-serving.env"
    # The token alone is a file of its own (HF_TOKEN_PATH): no env file.
    with_token = d.plan("g7e-fp8-sglang-eagle", dict(OPTIONS, secret_env=["HF_TOKEN"], config_dir="/etc/x"))
    assert with_token["env_file"] is None
    assert with_token["secret_files"] == {"HF_TOKEN": "/etc/x/inferops-serving.hf_token"}


def test_the_plan_is_the_same_for_the_same_input():
    assert d.plan("gb10-nvfp4-mtp-throughput", OPTIONS) == d.plan("gb10-nvfp4-mtp-throughput", OPTIONS)


def test_image_by_id_runs_the_locks_image_id():
    lock = {"images": {"vllm/vllm-openai:cu130-nightly": {"digest": "sha256:" + "a" * 64,
                                                          "image_id": "sha256:" + "b" * 64}}}
    by_ref = d.plan("gb10-nvfp4-mtp-latency", OPTIONS, lock=lock)
    by_id = d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, image_by_id=True), lock=lock)
    assert by_ref["image"]["ref"] == "vllm/vllm-openai@sha256:" + "a" * 64
    assert by_id["image"]["ref"] == "sha256:" + "b" * 64 and by_id["image"]["by_id"]
    assert by_id["spec_sha256"] != by_ref["spec_sha256"]
    with pytest.raises(ProfileError, match="image_id"):
        d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, image_by_id=True))


def test_a_record_rebuilds_the_same_deployment():
    deployment = d.plan("gb10-nvfp4-mtp-throughput", OPTIONS, overrides={"args": {"max-num-seqs": 16}})
    entry = d.record(deployment, observed={"engine_version": "0.19.2"}, smoke_answer="4", validated_at="now")
    # Today's inventory says something else: the record decides.
    rebuilt = d.from_record(entry, dict(OPTIONS, port=9999))
    assert rebuilt["spec"] == deployment["spec"] and rebuilt["script"] == deployment["script"]
    assert rebuilt["expect"]["max_num_seqs"] == 16
    assert entry["engine_version"] == "0.19.2"


def test_a_record_written_with_sorted_keys_rebuilds_the_same_argv():
    deployment = d.plan("gb10-nvfp4-mtp-throughput", OPTIONS)
    # deployment_state (and any JSON tool) may write the file with sorted keys: the args' order is lost.
    entry = json.loads(json.dumps(d.record(deployment), sort_keys=True))
    assert list(entry["profile"]["args"]) != list(deployment["profile"]["args"])
    rebuilt = d.from_record(entry)
    assert rebuilt["spec"]["command"] == deployment["spec"]["command"]
    assert rebuilt["spec_sha256"] == deployment["spec_sha256"] and rebuilt["script"] == deployment["script"]


def test_an_older_record_without_options_keeps_its_recorded_spec():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS)
    old = {"profile": deployment["profile"], "spec": deployment["spec"], "spec_sha256": deployment["spec_sha256"]}
    rebuilt = d.from_record(old, dict(OPTIONS, port=9999))
    assert rebuilt["spec"] == deployment["spec"] and rebuilt["container"] == "inferops-serving"


def test_a_record_that_rebuilds_differently_runs_its_recorded_spec():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS)
    spec = dict(deployment["spec"], command=deployment["spec"]["command"][:-2])
    spec["labels"] = dict(spec["labels"], **{"inferops.serving.spec-sha256": "0" * 64})
    entry = dict(d.record(deployment), spec=spec, spec_sha256="0" * 64)
    del entry["plan_input"]
    rebuilt = d.from_record(entry)
    assert rebuilt["spec"] == spec and rebuilt["spec_sha256"] == "0" * 64
    assert rebuilt["script"].count("\n") < deployment["script"].count("\n")
    with pytest.raises(ProfileError, match="holds no container spec"):
        d.from_record(dict(entry, spec=None))


@pytest.mark.parametrize("options,message", [
    ({"name": "../../x"}, "server_container_name: got the string '../../x'; expected a Docker container name"),
    ({"port": 0}, "server_port: got the integer 0; expected a port number from 1 to 65535"),
    ({"port": 70000}, "server_port: got the integer 70000; expected a port number"),
    ({"port": True}, "server_port: got the boolean True; expected a port number"),
    ({"port": "-1"}, "server_port: got the string '-1'; expected a port number"),
    ({"network_mode": ""}, "server_network_mode: got the string ''; expected bridge or host"),
    ({"extra_volumes": "/data:/data"}, "server_extra_volumes: got the string '/data:/data'; expected a list of strings"),
    ({"extra_volumes": ["/a:/a\ntouch x"]}, "server_extra_volumes[0]: the value contains a newline at character 6 of 13;"),
    ({"labels": ["a"]}, "server_labels: got"),
    ({"model_cache_dir": "cache"}, "server_model_cache_dir: got the string 'cache'; expected an absolute path"),
    ({"engine_cache_dir": "/var/../etc"}, "server_engine_cache_dir: got the string '/var/../etc'; expected an absolute path without '..'"),
    ({"registry_prefix": "r\n"}, "server_registry_prefix: the value contains a newline at character 2 of 2;"),
    ({"colour": "blue"}, "unknown deployment options colour"),
])
def test_bad_options_name_the_variable(options, message):
    with pytest.raises(ProfileError) as err:
        d.plan("gb10-nvfp4-mtp-latency", dict(OPTIONS, **options))
    assert message in str(err.value)


# Prometheus text in the format vLLM's /metrics serves (prometheus_client exposition: one sample
# per label set), as the lab's engine simulator and vLLM 0.19 print it.
VLLM_BEFORE = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 12.0
"""
VLLM_AFTER = """vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 110.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 152.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 90.0
"""


def test_speculative_evidence_from_vllm_counters():
    deployment = d.plan("gb10-nvfp4-mtp-latency", OPTIONS)
    evidence = d.spec_decode_evidence(deployment, VLLM_BEFORE, VLLM_AFTER, 8)
    assert evidence == {"engine": "vllm", "requests": 8, "drafts": 105, "accepted_tokens": 140, "ok": True}
    assert d.spec_decode_evidence(deployment, VLLM_AFTER, VLLM_AFTER)["ok"] is False


def test_speculative_evidence_from_sglang_accept_length():
    deployment = d.plan("g7e-fp8-sglang-eagle", OPTIONS)
    after = 'sglang:spec_accept_length{model_name="m",tp_rank="0"} 3.2\n'
    assert d.spec_decode_evidence(deployment, "", after, 8) == {
        "engine": "sglang", "requests": 8, "accept_length": 3.2, "ok": True}
    assert d.spec_decode_evidence(deployment, "", 'sglang:spec_accept_length{x="0"} 1.0\n')["ok"] is False
    assert d.spec_decode_evidence(deployment, "", "")["ok"] is False


def test_acceptance_per_position_over_a_window():
    metrics = e.METRICS["vllm"]
    per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    before = ('vllm:spec_decode_num_drafts_total 100\n%s{position="0"} 60\n%s{position="1"} 30\n' % (per_pos, per_pos))
    after = ('vllm:spec_decode_num_drafts_total 300\n%s{position="0"} 194\n%s{position="1"} 102\n'
             '%s{position="2"} 32\n' % (per_pos, per_pos, per_pos))
    # Seed 000's 0.67 / 0.36 / 0.16 at k=3: accepted at a position over the drafts of the window.
    assert d.acceptance_per_position(metrics, before, after) == [0.67, 0.36, 0.16]
    assert d.acceptance_per_position(e.METRICS["sglang"], before, after) is None
