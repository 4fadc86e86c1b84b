# SPDX-License-Identifier: GPL-3.0-or-later
"""Secrets are refused outside server_secrets, and reach Docker only as a literal env file."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.serving.plugins.module_utils import _secret_shapes as shapes
from ansible_collections.inferops.serving.plugins.plugin_utils import _engine_catalog as catalog
from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p
from ansible_collections.inferops.serving.plugins.plugin_utils import _profile_lint as lint
from ansible_collections.inferops.serving.plugins.plugin_utils import _secrets as s

TOKEN = "hf_" + "aB3" * 12  # shaped like a Hugging Face user access token, not a real one


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY",
                                  "MY_SECRET", "DB_PASSWORD", "PASSWORD", "AWS_SECRET_ACCESS_KEY", "x_token",
                                  "TOKEN", "SSH_PRIVATE_KEY_DATA"])
def test_secret_env_names(name):
    assert s.is_secret_env(name)


@pytest.mark.parametrize("name", ["HF_TOKEN_PATH", "VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", "HF_HUB_OFFLINE",
                                  "TOKENIZERS_PARALLELISM", "VLLM_USE_FLASHINFER_MOE_FP4", "KEYBOARD"])
def test_not_secret_env_names(name):
    assert not s.is_secret_env(name)


def test_only_the_secret_entries_of_the_engine_catalog_are_secrets():
    """Every env var and flag the catalog knows, classified: exactly the engines' secret inputs."""
    stored = [(engine, rel) for engine in ("vllm", "sglang") for rel in catalog.all_releases(engine)]
    env = {(engine, name) for engine, rel in stored for name in rel.env if s.is_secret_env(name)}
    assert env == {("vllm", "VLLM_API_KEY"), ("vllm", "S3_SECRET_ACCESS_KEY"), ("sglang", "SGLANG_S3_SECRET_ACCESS_KEY"),
                   ("sglang", "SGLANG_PRECISION_HF_TOKEN"), ("sglang", "SGLANG_DIFFUSION_SLACK_TOKEN")}
    flags = {(engine, flag) for engine, rel in stored for flag in rel.flags if s.is_secret_flag(engine, flag)}
    assert flags == {("vllm", "api-key"), ("vllm", "hf-token"), ("sglang", "api-key"), ("sglang", "admin-api-key"),
                     ("sglang", "ssl-keyfile-password")}


@pytest.mark.parametrize("engine, flag", [("vllm", "--api-key"), ("vllm", "api_key"), ("vllm", "hf-token"),
                                          ("sglang", "admin-api-key"), ("sglang", "api-key"),
                                          ("vllm", "some-password"), ("sglang", "client-secret")])
def test_secret_flags(engine, flag):
    assert s.is_secret_flag(engine, flag)


def test_channel_of_each_secret_flag():
    assert s.secret_channel("vllm", "--api-key")["env"] == "VLLM_API_KEY"
    assert s.secret_channel("vllm", "hf_token")["env"] == "HF_TOKEN"
    assert s.secret_channel("sglang", "hf-token")["env"] == "HF_TOKEN"
    for flag in ("api-key", "admin-api-key"):
        channel = s.secret_channel("sglang", flag)
        assert channel["env"] is None
        assert "SGLang reads --%s only from its command line" % flag in channel["how"]


def _vllm(**extra):
    profile = p.load_profile("gb10-nvfp4-mtp-latency")
    return p.overlay(profile, extra)


def test_api_key_in_overrides_is_refused_naming_the_channel():
    findings = s.secret_findings(_vllm(), {"args": {"api-key": "sk-x"}})
    assert [f["rule"] for f in findings] == ["secret-in-args"]
    message = findings[0]["message"]
    assert message == ("args.api-key (set by the inventory override args.api-key) is a secret on the engine's "
                       "command line; remove it and set server_secrets: {VLLM_API_KEY: <value>} (vLLM reads "
                       "VLLM_API_KEY when --api-key is absent)")
    assert "sk-x" not in message
    assert set(findings[0]) == {"rule", "severity", "message", "reason", "source"}
    assert findings[0]["severity"] == "error"


def test_underscore_spelling_and_hf_token_flag():
    findings = s.secret_findings(_vllm(args={"hf_token": TOKEN}))
    assert [f["rule"] for f in findings] == ["secret-in-args"]
    assert "server_secrets: {HF_TOKEN: <value>}" in findings[0]["message"]
    assert TOKEN not in findings[0]["message"]


def test_bare_hf_token_flag_holds_no_secret():
    assert s.secret_findings(_vllm(args={"hf-token": True})) == []


def test_secret_env_in_profile_and_override():
    findings = s.secret_findings(_vllm(env={"HF_TOKEN": "x"}), {"env": {"VLLM_API_KEY": "k"}})
    assert [f["message"] for f in findings] == [
        "env.HF_TOKEN is a secret in the profile's env; remove it and set server_secrets: {HF_TOKEN: <value>}",
        "env.VLLM_API_KEY (set by the inventory override env.VLLM_API_KEY) is a secret in the profile's env; "
        "remove it and set server_secrets: {VLLM_API_KEY: <value>}"]


def test_override_null_removes_the_finding():
    profile = _vllm(env={"HF_TOKEN": "x"})
    assert s.secret_findings(profile, {"env": {"HF_TOKEN": None}}) == []


def test_sglang_api_key_says_there_is_no_env_channel():
    profile = p.load_profile("g7e-fp8-sglang")
    findings = s.secret_findings(profile, {"args": {"admin-api-key": "adm"}})
    assert len(findings) == 1
    assert "SGLang reads --admin-api-key only from its command line" in findings[0]["message"]


def test_a_token_value_under_any_name_is_refused():
    findings = s.secret_findings(_vllm(args={"served-model-name": "x %s" % TOKEN}))
    assert [f["rule"] for f in findings] == ["secret-value"]
    assert findings[0]["message"].startswith("args.served-model-name holds what looks like a Hugging Face token")
    assert TOKEN not in findings[0]["message"]


@pytest.mark.parametrize("name", p.profile_names())
def test_shipped_profiles_hold_no_secrets(name):
    assert s.secret_findings(name) == []
    # And the lint's own findings are shaped the same way, so the lint can append these.
    assert all(set(f) == {"rule", "severity", "message", "reason", "source"} for f in lint.lint_profile(name))


def test_env_file_is_literal_docker_format():
    text = s.env_file_text({"VLLM_API_KEY": "a'b\"c $(x) `y` #z", "HF_TOKEN": TOKEN, "EMPTY": ""})
    assert text == "HF_TOKEN=%s\nVLLM_API_KEY=a'b\"c $(x) `y` #z\n" % TOKEN


@pytest.mark.parametrize("secrets, match", [
    ("HF_TOKEN=x", r"^server_secrets: got a str; expected a mapping"),
    ({"A-B": "x"}, r"^server_secrets: key 'A-B' is not an env var name"),
    ({"1A": "x"}, r"not an env var name"),
    ({"HF_TOKEN": "a\nb"}, r"^server_secrets\.HF_TOKEN: the value contains a newline"),
    ({"HF_TOKEN": ["x"]}, r"^server_secrets\.HF_TOKEN: got a list; expected a string"),
    ({"HF_TOKEN": "\udcff"}, r"not valid UTF-8"),
])
def test_bad_secrets_are_refused_without_showing_the_value(secrets, match):
    with pytest.raises(p.ProfileError, match=match) as exc:
        s.env_file_text(secrets)
    assert "a\nb" not in str(exc.value)


def test_redact():
    data = {"evidence": ["non-default args: {'api_key': 'sk-long-key'}"], "n": 3, "k": "sk-long-key"}
    assert s.redact(data, ["sk-long-key", "", None]) == {
        "evidence": ["non-default args: {'api_key': '<redacted>'}"], "n": 3, "k": "<redacted>"}


# Issue 25, finding 5: a misplaced secret with a newline was quoted by the launch script's refusal
# (default verbosity), and without one it was planned into the launch script (printed at -v).
SECRET = "sk-misplaced-Secret0987"


@pytest.mark.parametrize("overrides, named", [
    ({"args": {"api-key": SECRET + "\nmore"}}, "args.api-key"),
    ({"args": {"api-key": SECRET}}, "args.api-key"),
    ({"env": {"VLLM_API_KEY": SECRET + "\n"}}, "env.VLLM_API_KEY"),
    ({"args": {"served-model-name": "x\n" + TOKEN}}, "args.served-model-name"),
])
def test_the_plan_refuses_a_misplaced_secret_before_quoting_it(overrides, named):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {}, overrides=overrides)
    message = str(exc.value)
    assert message.startswith("profile gb10-nvfp4-mtp-latency: %s" % named)
    assert "values not shown" in message and "server_secrets" in message
    for leaked in (SECRET, SECRET[:12], TOKEN, TOKEN[:12]):
        assert leaked not in message


NOT_SHOWN = "expected a single-line value without control characters (remove it; value not shown)"


def test_a_refusal_of_a_value_in_no_secret_place_does_not_quote_it():
    """image.tag is no secret's place: the launch script refused its newline quoting the value (the
    deployment lookup's scrub masked the token); it now says where the newline is, and the lookup
    still scrubs every refusal it raises."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {}, overrides={"image": {"tag": "v1\n" + TOKEN}})
    assert str(exc.value) == ("launch script field image.tag: the value contains a newline at character 3 of 42; "
                              + NOT_SHOWN)
    with open(plan.__code__.co_filename.replace("plugin_utils/_deployment.py", "lookup/deployment.py"),
              encoding="utf-8") as handle:
        assert "raise AnsibleLookupError(scrub(exc))" in handle.read()


# Issue 25, finding 5 (audit): a secret of another shape than a Hugging Face token, under a name
# that is no secret's, was quoted whole by the launch script's refusal of its newline; without a
# newline it was accepted, written into the launch script and the host's files, and shown in the
# plan at -v. The plan now refuses it by its shape, first, naming the field and the kind of secret.
SK_LIVE = "sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc"  # shaped like an API key, not a real one
DB_URL = "postgres://u:p4ss@db/x"
URL_KIND = "a password in a URL (its user:password@ part)"


def _refusal(named, kind, env="NAME"):
    return ("profile gb10-nvfp4-mtp-latency: %s holds what looks like %s; remove it and set server_secrets: "
            "{%s: <value>} in the vault (values not shown). %s" % (named, kind, env, s.REASON))


@pytest.mark.parametrize("overrides, secret, message", [
    ({"args": {"served-model-name": SK_LIVE + "\nx"}}, SK_LIVE,
     _refusal("args.served-model-name", "an OpenAI or Anthropic API key (sk-...)")),
    ({"env": {"MY_DB_URL": DB_URL + "\n"}}, DB_URL,
     _refusal("env.MY_DB_URL", URL_KIND, "MY_DB_URL")),
    ({"args": {"served-model-name": SK_LIVE}}, SK_LIVE,
     _refusal("args.served-model-name", "an OpenAI or Anthropic API key (sk-...)")),
    ({"env": {"MY_DB_URL": DB_URL}}, DB_URL,
     _refusal("env.MY_DB_URL", URL_KIND, "MY_DB_URL")),
    ({"args": {"kv-transfer-config": {"url": "redis://:p4ss@cache:6379/0"}}}, "redis://:p4ss@cache",
     _refusal("args.kv-transfer-config", URL_KIND)),
])
def test_a_secret_of_any_shape_under_an_innocent_name_is_refused_first_and_appears_nowhere(overrides, secret, message):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {}, overrides=overrides)
    assert str(exc.value) == message
    for leaked in (secret, secret[:12], secret[-8:], "p4ss", "4f9Qw2"):
        assert leaked not in str(exc.value)
    assert shapes.scrub(message) == message  # as the deployment lookup shows it


def test_a_secret_in_a_container_label_is_refused_first():
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    token = "ghp_" + "A1b2" * 9
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {"labels": {"team": "ml", "owner": "bot " + token}})
    assert str(exc.value).startswith("profile gb10-nvfp4-mtp-latency: server_labels.owner holds what looks like a "
                                     "GitHub token (ghp_..., github_pat_...); remove it and set server_secrets: "
                                     "{NAME: <value>} in the vault (values not shown).")
    assert "A1b2" not in str(exc.value)
    assert plan("gb10-nvfp4-mtp-latency", {"labels": {"team": "ml", "owner": "bot ghp_short"}})["spec"]


def test_the_lint_reports_a_secret_value_with_the_kind_and_the_env_name():
    findings = s.secret_findings(_vllm(), {"env": {"MY_DB_URL": DB_URL}, "args": {"served-model-name": SK_LIVE}})
    assert [(f["rule"], f["message"]) for f in findings] == [
        ("secret-value", "args.served-model-name holds what looks like an OpenAI or Anthropic API key (sk-...); "
                         "remove it and set server_secrets: {NAME: <value>} in the vault"),
        ("secret-value", "env.MY_DB_URL holds what looks like a password in a URL (its user:password@ part); "
                         "remove it and set server_secrets: {MY_DB_URL: <value>} in the vault")]


# Each shape, whole and at its real length (invented values, none a real credential), and the part
# a message must not show (the token's last 8 characters unless named).
SHAPED = [
    (TOKEN, "a Hugging Face token (hf_...)"),
    ("x\n" + TOKEN, "a Hugging Face token (hf_...)"),
    (SK_LIVE, "an OpenAI or Anthropic API key (sk-...)"),
    ("sk-" + "A1b2C3d4" * 6, "an OpenAI or Anthropic API key (sk-...)"),
    ("sk-proj-Ab12Cd34Ef56Gh78Ij90_Kl12-Mn34Op56Qr78", "an OpenAI or Anthropic API key (sk-...)"),
    ("sk-ant-api03-Xy9Zw8Vu7Ts6Rq5Po4Nm3Lk2Jh1-AA", "an OpenAI or Anthropic API key (sk-...)"),
    ("--api-key=sk-svcacct-Ab12Cd34Ef56Gh78Ij90", "an OpenAI or Anthropic API key (sk-...)"),
    ("ghp_" + "A1b2" * 9, "a GitHub token (ghp_..., github_pat_...)"),
    ("gho_" + "A1b2" * 9, "a GitHub token (ghp_..., github_pat_...)"),
    ("ghs_" + "A1b2" * 9, "a GitHub token (ghp_..., github_pat_...)"),
    ("github_pat_11ABCDEFG0_" + "a1B2" * 15, "a GitHub token (ghp_..., github_pat_...)"),
    ("glpat-Ab12Cd34Ef56Gh78Ij90", "a GitLab access token (glpat-...)"),
    ("xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "a Slack token (xox?-...)"),
    ("xoxp-12-34-5678901234-abcdef12", "a Slack token (xox?-...)"),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "a Stripe API key (sk_live_..., rk_live_...)"),
    ("STRIPE_KEY=rk_test_" + "51H8xYzAbCdEfGhIjKlMnOpQrStUv", "a Stripe API key (sk_live_..., rk_live_...)"),
    ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id (AKIA..., ASIA...)"),
    ("key=ASIAY34FZKBOKMUTVV7A;", "an AWS access key id (AKIA..., ASIA...)"),
    ("Authorization: Bearer 9f8e7d6c5b4a3210fedcba98", "a bearer token (Bearer ...)"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVP", "a JSON Web Token (eyJ...)"),
    (DB_URL, URL_KIND, "p4ss"),
    ("https://bot:ghp_A1b2@git.example/r.git", URL_KIND, "ghp_A1b2"),
    ('{"url": "redis://:hunter22@cache:6379/0"}', URL_KIND, "hunter22"),
]


@pytest.mark.parametrize("value, kind, secret", [shape if len(shape) == 3 else shape + (shape[0].rstrip(";")[-8:],)
                                                 for shape in SHAPED])
def test_secret_kind_names_each_shape_and_scrub_masks_what_it_finds(value, kind, secret):
    assert shapes.secret_kind(value) == kind
    # Everything secret_kind finds, a message's scrub masks (the token's end, a URL's password).
    assert shapes.MASK in shapes.scrub(value) and secret not in shapes.scrub(value)


def test_each_kind_survives_the_scrub_of_the_message_that_names_it():
    """The deployment lookup scrubs every refusal it raises: the kind it names must read the same."""
    kinds = {kind for _value, kind, *_secret in SHAPED}
    assert len(kinds) == 10
    assert all(shapes.scrub(kind) == kind for kind in kinds)


@pytest.mark.parametrize("value", [
    "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "nvidia/Llama-3.3-70B-Instruct-FP4",
    "sk-model", "--served-model-name sk-model", "sk-Meta-Llama-3-70B-Instruct-AWQ-INT4-v2", "task-runner-12345678",
    "/root/.cache/huggingface/hub/models--RedHatAI--x/snapshots/0123456789abcdef0123456789abcdef01234567",
    "http://host:8000/v1", "http://127.0.0.1:8101/v1/chat/completions", "http://host:8000/v1/a@b",
    "git+ssh://git@github.com/org/repo.git", "https://huggingface.co/org/model@main", "user@host:/srv/models",
    '{"method": "mtp", "num_speculative_tokens": 2}', '{"hf_overrides": {"architectures": ["X"]}}',
    "hf_config_path", "hf_" + "ab" * 20, "ghp_short", "glpat-short", "xoxo-abc", "xoxb-12345",
    "AKIA1", "AKIAIOSFODNN7EXAMPLE99", "ASIAPACIFICNORTHEASTREGION", "Bearer", "bearer-auth", "Bearer short-1",
    "eyJhbGciOiJIUzI1NiJ9", "sha256:" + "0123456789abcdef" * 4, "123e4567-e89b-12d3-a456-426614174000",
    "ask-" + "A1b2C3d4" * 6, "xghp_" + "A1b2" * 9, "sk_live_short", "task_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "",
])
def test_ordinary_values_are_no_secrets(value):
    """A secret's prefix is not enough: the whole token at its real length, not inside a word."""
    assert shapes.secret_kind(value) is None
    if value:
        assert s.secret_findings(_vllm(), {"args": {"served-model-name": value}, "env": {"NOTE": value}}) == []


def test_the_shipped_profiles_plan_with_their_values():
    """No shipped profile's args or env looks like a secret (model names, JSON configs, paths)."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    for name in p.profile_names():
        assert plan(name, {})["script"]


def test_a_secret_pasted_where_a_name_or_a_revision_goes_is_masked_in_the_refusal():
    from ansible_collections.inferops.serving.plugins.plugin_utils import _weights as weights
    with pytest.raises(p.ProfileError) as err:
        s.validate_secrets({"sk-proj-Ab12Cd34Ef56Gh78": "x"})
    assert str(err.value) == ("server_secrets: key 'sk-proj-<redacted>' is not an env var name; expected letters, "
                              "digits and '_', not starting with a digit")
    assert weights.revision_problem("https://u:p4ss@hf.example/x") == (
        "error", "'https://u:<redacted>@hf.example/x' is neither a commit id nor a valid branch or tag name")
    assert weights.revision_problem("glpat-Ab12Cd34Ef56") == (
        "warning", "'glpat-<redacted>' is a branch or tag name: it moves when the repository gets a new commit, so "
                   "two hosts deployed a week apart may load different weights")


@pytest.mark.parametrize("text, shown", [
    ("got 'hf_aB3aB3aB3aB3...'", "got 'hf_<redacted>...'"),
    ("token %s here" % TOKEN, "token hf_<redacted> here"),
    ("args.hf_overrides and hf_config_path", "args.hf_overrides and hf_config_path"),
    ("key sk-live-4f9Qw2Lx8Zp1Rt6Yb3Nc, sk-proj-Ab_12-Cd34Ef56", "key sk-<redacted>, sk-proj-<redacted>"),
    ("sk-ant-api03-Xy9_Zw8-Vu7Ts6Rq5", "sk-ant-<redacted>"),
    ("ghp_%s gho_%s ghs_%s github_pat_11AB_%s" % (("A1b2" * 9,) * 4),
     "ghp_<redacted> gho_<redacted> ghs_<redacted> github_pat_<redacted>"),
    ("glpat-Ab12Cd34Ef56Gh78Ij90 xoxb-1234567890-abcDEF123456 xoxp-12-34-56-78abcdef",
     "glpat-<redacted> xoxb-<redacted> xoxp-<redacted>"),
    ("AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A", "AKIA<redacted> and ASIA<redacted>"),
    ("sk_live_4eC39HqLyjWD... and rk_test_51H8xYzAbCdE", "sk_live_<redacted>... and rk_test_<redacted>"),
    ("Authorization: Bearer abc.DEF-123_xyz/+=", "Authorization: Bearer <redacted>"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVP", "eyJ<redacted>"),
    ("postgres://u:p4ss@db/x, https://bot:ghp_A1b2A1b2A1b2@git.example/r.git",
     "postgres://u:<redacted>@db/x, https://bot:<redacted>@git.example/r.git"),
    # a repr'd newline right before a token; a cut token (8 characters past its prefix) is one too
    ("got 'x\\nsk-live-4f9Qw2Lx8Z...'", "got 'x\\nsk-<redacted>...'"),
    # not secrets: words, flags, a URL without a password, a short id
    ("task-runner-12345678 disk-cache-size args.sk-x --ghp-mode xoxo-abc http://host:8000/v1 AKIA1",
     "task-runner-12345678 disk-cache-size args.sk-x --ghp-mode xoxo-abc http://host:8000/v1 AKIA1"),
])
def test_scrub(text, shown):
    assert s.scrub(text) == shown


@pytest.mark.parametrize("result, task, expected", [
    ({"msg": "pull failed: unauthorized"}, {"no_log": False}, "pull failed: unauthorized"),
    ({"msg": "", "stderr": "docker: no such image"}, None, "docker: no such image"),
    ({"msg": "bad %s" % TOKEN}, {}, "bad hf_<redacted>"),
    ({"msg": "x" * 3000}, {}, "x" * 1997 + "..."),
    ({"msg": "Authorization: Bearer %s" % SECRET}, {"no_log": True},
     "the failed task's output is hidden (no_log); rerun it with no_log off on a test host to see it"),
    ({"msg": SECRET}, {"no_log": "yes"},
     "the failed task's output is hidden (no_log); rerun it with no_log off on a test host to see it"),
    (None, None, ""),
])
def test_failure_message_keeps_nothing_of_a_no_log_result(result, task, expected):
    assert s.failure_message(result, task) == expected


def test_the_rescue_keeps_the_failed_message_through_the_filter():
    """rescue.yml copied ``ansible_failed_result.msg`` (uncensored for a no_log task) into a fact
    and its fail message; every read of it now goes through failure_message."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(root, "roles", "server", "tasks", "rescue.yml"), encoding="utf-8") as handle:
        text = handle.read()
    assert "ansible_failed_result.msg" not in text
    assert text.count("ansible_failed_result | inferops.serving.failure_message(task=ansible_failed_task)") == 2


def test_a_launch_over_the_total_limit_is_refused_before_any_host_naming_the_largest():
    """Issue 25, finding 9 (audit): each value was bounded (64 KiB), their total was not: ten values
    under the bound made a 600 KB docker run, which Linux refuses ('argument list too long')."""
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    args = {"served-model-name": "a" * 60000, "chat-template": "b" * 60001}
    args.update(("override-%d" % i, "c" * (59990 - i)) for i in range(8))
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {}, overrides={"args": args, "env": {"NOTE": "d" * 1000}})
    message = str(exc.value)
    total = int(message.split(" the values total ", 1)[1].split(" ", 1)[0])
    assert 600000 + 1000 < total < 600000 + 1000 + 2000  # the values, and the rest of a real launch
    assert message == (
        "launch script docker run (the engine's argv and env): the values total %d bytes; expected at most 524288 "
        "bytes in all (Linux refuses an exec whose arguments and environment pass ARG_MAX, 2 MiB by default, with "
        "'argument list too long'); the largest: args.chat-template (60002 bytes), args.served-model-name (60001 "
        "bytes), args.override-0 (59991 bytes): shorten them, or put them in files and mount them "
        "(server_extra_volumes)" % total)
    args = {"served-model-name": "a" * 60000, "chat-template": "b" * 60000}
    assert plan("gb10-nvfp4-mtp-latency", {}, overrides={"args": args})["script"]


def test_a_secret_over_the_env_file_line_limit_is_refused_without_showing_it():
    """Issue 25, finding 9: docker run --env-file fails on a line over 64 KiB ('token too long')."""
    longest = "k" * (s.ENV_FILE_LINE_MAX - len("HF_TOKEN="))
    assert s.env_file_text({"HF_TOKEN": longest}) == "HF_TOKEN=%s\n" % longest
    with pytest.raises(p.ProfileError, match=r"^server_secrets\.HF_TOKEN: NAME=value is 65536 bytes; Docker reads "
                                             r"an env file line of at most 65535 bytes") as exc:
        s.env_file_text({"HF_TOKEN": longest + "k"})
    assert "kkkk" not in str(exc.value) and "value not shown" in str(exc.value)


# Issue 25, finding 10: the Hugging Face token was in the container's Config.Env (docker inspect).
@pytest.mark.parametrize("engine, version, as_file", [
    ("vllm", "0.17.0", True), ("vllm", "0.19.2rc1.dev134", True), ("vllm", "0.33.0", True),
    ("vllm", "0.10.1", False), ("sglang", "0.5.1", True), ("sglang", "0.5.6.post2 (built from main, post PR #20407)", True),
    ("sglang", "0.4.9", False), ("vllm", None, False), ("vllm", "nightly", False), ("tgi", "3.0.0", False),
])
def test_which_images_read_the_token_from_a_file(engine, version, as_file):
    assert s.hf_token_as_file(engine, version) is as_file


def _planned(overrides=None, secret_env=("HF_TOKEN", "VLLM_API_KEY")):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    return plan("gb10-nvfp4-mtp-latency", {"name": "srv", "secret_env": list(secret_env)}, overrides=overrides)


def test_the_token_reaches_the_container_as_a_read_only_file_named_by_hf_token_path():
    deployment = _planned()
    spec = deployment["spec"]
    assert deployment["secret_files"] == {"HF_TOKEN": "/etc/inferops-serving/srv.hf_token"}
    assert "/etc/inferops-serving/srv.hf_token:/run/secrets/hf_token:ro" in spec["volumes"]
    assert spec["env"]["HF_TOKEN_PATH"] == "/run/secrets/hf_token"
    assert spec["secret_env"] == ["VLLM_API_KEY"]
    assert deployment["env_file"] == spec["env_file"] == "/etc/inferops-serving/srv.env"
    assert "-v /etc/inferops-serving/srv.hf_token:/run/secrets/hf_token:ro" in deployment["script"]
    assert "-e HF_TOKEN_PATH=/run/secrets/hf_token" in deployment["script"]
    assert "HF_TOKEN_PATH" not in (deployment["profile"].get("env") or {})  # the plan's profile is the profile
    # The token alone: no env file at all.
    alone = _planned(secret_env=["HF_TOKEN"])
    assert alone["env_file"] is None and alone["spec"]["secret_env"] == [] and alone["secret_files"]


def test_an_image_too_old_for_the_file_keeps_the_token_in_the_env_file():
    deployment = _planned({"image": {"engine_version": "0.10.1"}})
    assert deployment["secret_files"] == {}
    assert deployment["spec"]["secret_env"] == ["HF_TOKEN", "VLLM_API_KEY"]
    assert "HF_TOKEN_PATH" not in deployment["spec"]["env"]
    assert not any("hf_token" in v for v in deployment["spec"]["volumes"])


def test_a_record_of_a_container_with_the_token_in_its_env_file_is_rebuilt_as_recorded():
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import from_record
    old = _planned({"image": {"engine_version": "0.10.1"}})
    record = {"profile": dict(old["profile"], image=dict(old["profile"]["image"], engine_version="0.19.0")),
              "options": old["options"], "spec": old["spec"], "spec_sha256": old["spec_sha256"]}
    rebuilt = from_record(record)
    assert rebuilt["spec"] == old["spec"] and rebuilt["secret_files"] == {}
    assert rebuilt["env_file"] == old["env_file"]


def test_the_env_file_leaves_out_the_file_secrets_and_the_token_file_holds_the_token():
    secrets = {"HF_TOKEN": TOKEN, "VLLM_API_KEY": "sk-1"}
    assert s.env_file_text(secrets, exclude=("HF_TOKEN",)) == "VLLM_API_KEY=sk-1\n"
    assert s.secret_file_text(secrets, "HF_TOKEN") == TOKEN
    with pytest.raises(p.ProfileError, match=r"^server_secrets\.HF_TOKEN: the value contains a newline"):
        s.env_file_text({"HF_TOKEN": "a\nb"}, exclude=("HF_TOKEN",))
    with pytest.raises(p.ProfileError, match=r"^server_secrets\.HF_TOKEN: no value to write to its file"):
        s.secret_file_text({"HF_TOKEN": ""}, "HF_TOKEN")
