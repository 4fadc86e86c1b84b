# SPDX-License-Identifier: GPL-3.0-or-later
"""No input becomes a command: the launch script runs exactly one ``docker run`` whose argv is the spec.

Property test (Hypothesis): random strings (quotes, newlines, ``$()``, backticks, unicode, NUL)
go into every free-text field a launch script is written from; the script is either refused with
a ProfileError naming the field (a value that is not a single line) or, run by bash with a fake
``docker`` first on PATH, executes that one ``docker run`` and nothing else.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p

# Stands for the docker CLI: records each invocation's argv (what `docker run ...` receives) as
# one JSON line, so the test sees every docker call the script makes, and does nothing else.
FAKE_DOCKER = """#!%s
# Test double for the docker CLI (`docker run ...`): appends its argv as one JSON line to
# $FAKE_DOCKER_LOG and exits 0; it starts no container.
import json, os, sys
with open(os.environ["FAKE_DOCKER_LOG"], "a", encoding="utf-8") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
""" % sys.executable

CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
PAYLOADS = ["$(touch pwned)", "`touch pwned`", "'; touch pwned; '", '"; touch pwned; "', "\ntouch pwned #",
            "x\n", "\\", "$HOME", "${IFS}", "a b", "--help", "-e X=1", "é ü 中文 🚀", "\x00", "\r", "#", "*",
            "~", "!!", "\u2028", "$'\\n'", "<(touch pwned)", "> pwned", "|| touch pwned", "\t", "%s", "{a,b}"]
TEXT = st.one_of(
    st.sampled_from(PAYLOADS),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    st.lists(st.sampled_from(PAYLOADS + ["a", "/", ":", "="]), min_size=1, max_size=4).map("".join),
)
ENV_NAME = st.one_of(st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True), TEXT)
BASE = p.load_profile("gb10-nvfp4-mtp-latency")


# The same strings with control characters removed: every one of these must run, never be refused.
ONE_LINE = TEXT.map(lambda text: CONTROL.sub("", text))


# The examples per test come from the loaded Hypothesis profile: the default's 100, or 10 under
# benchmarks/mutation.sh (tests/conftest.py).
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fields(text, env_name):
    nonempty = text.filter(bool)  # launch_spec itself refuses an empty model or image repository
    return st.fixed_dictionaries({
        "profile_name": text, "description": text, "platform": text, "repository": nonempty, "tag": text,
        "engine_version": text, "measured": text, "model": nonempty, "served": text, "chat": text,
        "env": st.dictionaries(env_name, text, max_size=2),
        "container": text, "model_cache_dir": text, "extra_volumes": st.lists(text, max_size=2),
        "labels": st.dictionaries(text, text, max_size=2), "log_max_size": text, "env_file": text,
        "registry_prefix": text, "engine_cache_dir": text,
    })


def build(f):
    profile = p.overlay(BASE, {
        "name": f["profile_name"], "description": f["description"], "hardware": {"platform": f["platform"]},
        "image": {"repository": f["repository"], "tag": f["tag"], "engine_version": f["engine_version"]},
        "measured": {"source": f["measured"]}, "model": f["model"], "env": f["env"],
        "args": {"served-model-name": f["served"], "chat-template": f["chat"]},
    })
    options = {"name": f["container"], "model_cache_dir": f["model_cache_dir"],
               "extra_volumes": f["extra_volumes"], "labels": f["labels"], "log_max_size": f["log_max_size"],
               "env_file": f["env_file"], "registry_prefix": f["registry_prefix"],
               "engine_cache_dir": f["engine_cache_dir"]}
    return profile, options


def written_values(profile, spec):
    """Every free-text value the script is written from (the header's and the spec's)."""
    image = profile["image"]
    values = [profile["name"], profile["hardware"]["platform"], image["repository"], image["tag"],
              image["engine_version"], profile["measured"]["source"], spec["name"], spec["image"]]
    values += spec["volumes"] + spec["command"] + list(spec["labels"]) + list(spec["labels"].values())
    values += list(spec["env"]) + list(spec["env"].values()) + list(spec["log_options"].values())
    if spec["env_file"]:
        values.append(spec["env_file"])
    return values


def expected_argv(spec):
    """The docker CLI argv that creates the container of ``spec`` (docker run's own option names)."""
    argv = ["run", "-d", "--name", spec["name"], "--gpus", "all", "--ipc=" + spec["ipc_mode"]]
    if spec["network_mode"] == "host":
        argv += ["--network", "host"]
    for port in spec["published_ports"]:
        argv += ["-p", port]
    for volume in spec["volumes"]:
        argv += ["-v", volume]
    if spec["env_file"]:
        argv += ["--env-file", spec["env_file"]]
    for name, value in spec["env"].items():
        argv += ["-e", "%s=%s" % (name, value)]
    argv += ["--restart", "%s:%d" % (spec["restart_policy"], spec["restart_retries"]),
             "--log-driver", spec["log_driver"]]
    for kv in spec["log_options"].items():
        argv += ["--log-opt", "%s=%s" % kv]
    for kv in sorted(spec["labels"].items()):
        argv += ["--label", "%s=%s" % kv]
    return argv + [spec["image"]] + list(spec["command"])


def run_script(script):
    """Run ``script`` with bash in a sandbox; the docker calls it made and the files it left."""
    with tempfile.TemporaryDirectory() as sandbox:
        bindir, work = os.path.join(sandbox, "bin"), os.path.join(sandbox, "work")
        os.mkdir(bindir)
        os.mkdir(work)
        docker = os.path.join(bindir, "docker")
        with open(docker, "w", encoding="utf-8") as handle:
            handle.write(FAKE_DOCKER)
        os.chmod(docker, 0o755)
        path = os.path.join(sandbox, "launch.sh")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(script)
        log = os.path.join(sandbox, "docker.log")
        env = {"PATH": bindir + ":/usr/bin:/bin", "HOME": work, "FAKE_DOCKER_LOG": log, "LC_ALL": "C.UTF-8"}
        result = subprocess.run(["bash", path], cwd=work, env=env, capture_output=True, timeout=30, check=False)
        calls = []
        if os.path.exists(log):
            with open(log, encoding="utf-8") as handle:
                calls = [json.loads(line) for line in handle]
        left = sorted(os.listdir(work)) + sorted(set(os.listdir(sandbox)) - {"bin", "work", "launch.sh", "docker.log"})
        return result, calls, left


def check(fields):
    """Refused naming the field exactly when a written value is not one line, or the model when it
    starts with '-' (the engine would read it as a flag); else one docker run."""
    profile, options = build(fields)
    if str(profile["model"]).startswith("-"):
        with pytest.raises(p.ProfileError, match=r": model: got .*a name starting with '-' would be read"):
            p.launch_spec(profile, options)
        event("refused model")
        return
    spec = p.launch_spec(profile, options)
    values = written_values(profile, spec)
    bad_env_names = [n for n in spec["env"] if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", n)]
    must_refuse = any(CONTROL.search(str(v)) for v in values) or bad_env_names
    try:
        script = p.launch_script(spec, profile)
    except p.ProfileError as exc:
        message = str(exc)
        assert must_refuse, message
        assert message.startswith("launch script field "), message
        assert "control character" in message or "not an env var name" in message, message
        event("refused")
        return
    assert not must_refuse, "accepted a value that is not a single line: %r" % values
    assert "\x00" not in script
    event("ran")
    result, calls, left = run_script(script)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    assert calls == [expected_argv(spec)]
    assert left == [], "the script created %s" % left


@PROPERTY
@given(_fields(TEXT, ENV_NAME))
def test_any_string_in_any_field_runs_one_docker_run_with_the_spec_or_is_refused(fields):
    check(fields)


@PROPERTY
@given(_fields(ONE_LINE, st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)))
def test_single_line_strings_in_every_field_run_one_docker_run_with_the_spec(fields):
    check(fields)


def _spec(**options):
    return p.launch_spec(BASE, options)


def test_review_repro_newline_in_the_image_tag_is_refused_naming_the_field():
    profile = p.overlay(BASE, {"image": {"tag": "t\ntouch pwned #"}})
    with pytest.raises(p.ProfileError) as err:
        p.launch_script(p.launch_spec(profile), profile)
    assert str(err.value) == ("launch script field image.tag: the value contains a newline at character 2 of 15; "
                              "expected a single-line value without control characters (remove it; value not shown)")


def test_review_repro_secret_env_name_is_not_a_command():
    spec = _spec(secret_env=['X"; touch p; echo "'])
    with pytest.raises(p.ProfileError, match=r"secret_env\[0\]: .* is not an env var name"):
        p.launch_script(spec, BASE)


def test_secrets_reach_docker_only_through_the_env_file():
    spec = _spec(env_file="/etc/inferops-serving/srv.env", secret_env=["HF_TOKEN", "VLLM_API_KEY"])
    script = p.launch_script(spec, BASE)
    assert "--env-file /etc/inferops-serving/srv.env" in script
    assert "$" not in script.replace("$'", "")  # no shell expansion of any variable
    assert "HF_TOKEN" not in script and "VLLM_API_KEY" not in script
    assert "set -a" not in script and "\n. " not in script and "source " not in script
    result, calls, left = run_script(script)
    assert result.returncode == 0 and left == []
    assert calls == [expected_argv(spec)]
    assert calls[0][calls[0].index("--env-file") + 1] == "/etc/inferops-serving/srv.env"


def test_every_docker_option_word_is_quoted():
    spec = dict(_spec(), ipc_mode="host; touch pwned", published_ports=["1:2 $(touch pwned)"],
                restart_policy="on-failure`touch pwned`", log_driver="json-file|touch pwned")
    result, calls, left = run_script(p.launch_script(spec))
    assert result.returncode == 0 and left == []
    assert calls == [expected_argv(spec)]


@pytest.mark.parametrize("args, match", [
    ({"max-num-seqs 8 --enforce-eager": 1}, r"^args: 'max-num-seqs 8 --enforce-eager' is not a flag name"),
    ({"x;touch p": True}, r"^args: 'x;touch p' is not a flag name"),
    ("--x", r"^args: got a str; expected a mapping"),
])
def test_render_args_refuses_what_is_not_a_flag_name(args, match):
    with pytest.raises(p.ProfileError, match=match):
        p.render_args(args)


def test_render_value_keeps_structured_values_on_one_line():
    assert p.render_value({"a": "x\ny"}) == '{"a":"x\\ny"}'
    assert p.render_value(True) == "true"
    assert p.render_value(0.9) == "0.9"


@pytest.mark.parametrize("change, field", [
    ({"restart_retries": True}, "restart_retries"),
    ({"restart_retries": -1}, "restart_retries"),
    ({"volumes": "/a:/b"}, "volumes"),
    ({"env": ["A=1"]}, "env"),
    ({"env": {"A=B C": "1"}}, "env"),
    ({"labels": {"k": "a\nb"}}, "labels.k"),
    ({"name": "srv\n"}, r"name \(server_container_name\)"),
    ({"env_file": "/etc/x\n.env"}, "env_file"),
])
def test_validate_spec_text_names_the_field(change, field):
    with pytest.raises(p.ProfileError, match=r"^launch script field %s" % field):
        p.validate_spec_text(dict(_spec(), **change), BASE)


# The script's header comment is written from these profile fields; each is checked by its own name,
# whether the profile holds it as a mapping entry or (hand-written) as the bare value.
@pytest.mark.parametrize("delta, field", [
    ({"name": "p\nq"}, "profile name"),
    ({"engine": "vllm\nx"}, "engine"),
    ({"hardware": {"platform": "gb10\nx"}}, "hardware.platform"),
    ({"image": {"repository": "r\nx"}}, "image.repository"),
    ({"image": {"tag": "t\nx"}}, "image.tag"),
    ({"image": {"engine_version": "0.19\nx"}}, "image.engine_version"),
    ({"measured": {"source": "s\nx"}}, "measured.source"),
])
def test_header_fields_are_refused_by_their_name(delta, field):
    with pytest.raises(p.ProfileError, match=r"^launch script field %s: the value contains a newline at "
                                             % re.escape(field)):
        p.validate_spec_text(_spec(), p.overlay(BASE, delta))


@pytest.mark.parametrize("key, value, field", [
    ("hardware", "gb10\nx", "hardware.platform"),
    ("image", "vllm/vllm-openai\nx", "image.repository"),
    ("measured", "the GB10 field report\nx", "measured.source"),
])
def test_a_header_field_given_as_a_bare_value_is_checked_too(key, value, field):
    profile = dict(BASE, **{key: value})
    with pytest.raises(p.ProfileError, match=r"^launch script field %s: the value contains a newline at "
                                             % re.escape(field)):
        p.validate_spec_text(_spec(), profile)


def test_the_quoting_itself_refuses_a_nul_which_no_shell_word_can_carry():
    # launch_script refuses it earlier (a control character); _q is the last guard for any other caller
    with pytest.raises(p.ProfileError) as err:
        p._q("a\x00b")
    assert str(err.value) == "a launch script word contains a NUL character at character 2 of 3 (value not shown)"
    assert p._q("a b") == "'a b'" and p._q("ab") == "ab"
    with pytest.raises(p.ProfileError) as err:
        p._q("\x00" + "x" * 80)
    assert str(err.value) == "a launch script word contains a NUL character at character 1 of 81 (value not shown)"


def test_env_values_and_labels_reach_docker_as_one_word_each():
    spec = dict(_spec(), env={"A": "x y $(touch pwned) `touch pwned`", "B": "'quoted' \"both\""},
                labels={"team": "a b; touch pwned"})
    result, calls, left = run_script(p.launch_script(spec))
    assert result.returncode == 0 and left == []
    argv = calls[0]
    assert argv[argv.index("-e") + 1] == "A=x y $(touch pwned) `touch pwned`"
    assert "B='quoted' \"both\"" in argv and "team=a b; touch pwned" in argv
    assert calls == [expected_argv(spec)]


DEMO_PROFILE = {"name": "demo", "engine": "sglang", "hardware": {"platform": "g7e"},
                "image": {"repository": "lmsysorg/sglang", "tag": "v1", "engine_version": "0.5.13"},
                "measured": {"source": "the g7e field report"}}
DOCKER_RUN = (
    "docker run -d --name gb10-nvfp4-mtp-latency \\\n\t--gpus all \\\n\t--ipc=host \\\n\t-p 8000:8000 \\\n"
    "\t-v /root/.cache/huggingface:/root/.cache/huggingface \\\n\t-e 'A=x y' \\\n\t--restart on-failure:3 \\\n"
    "\t--log-driver json-file \\\n\t--log-opt max-size=100m \\\n\t--log-opt max-file=3 \\\n\t--label 'team=a b' \\\n"
    "\tvllm/vllm-openai@sha256:3dbe092ec5b2cef63b6104d33fa75d6ce53a7870962529ada69f78bbbc38e776 \\\n")
GENERATED = "# Generated by inferops.serving from the profile; edit the profile, not this file.\nset -e\n\n"


# The script is also what an operator reads (playbooks/show_launch.yml): a header naming the profile,
# then one docker option per line, the launcher (with its module) on one line, one flag and its value per line.
@pytest.mark.parametrize("command, profile, expected", [
    (["python3", "-m", "sglang.launch_server", "--model-path", "org/m", "--tp-size", "8", "--enable-metrics",
      "--json", '{"a": 1}'], DEMO_PROFILE,
     "#!/usr/bin/env bash\n#\n# inferops.serving profile demo (sglang on g7e)\n"
     "# image lmsysorg/sglang:v1, engine 0.5.13\n# measured: the g7e field report\n" + GENERATED + DOCKER_RUN
     + "\t\tpython3 -m sglang.launch_server \\\n\t\t--model-path org/m \\\n\t\t--tp-size 8 \\\n"
     "\t\t--enable-metrics \\\n\t\t--json '{\"a\": 1}'\n"),
    (["org/m", "--a", "1", "--b", "--c", "2"], None,
     "#!/usr/bin/env bash\n#\n" + GENERATED + DOCKER_RUN + "\t\torg/m \\\n\t\t--a 1 \\\n\t\t--b \\\n\t\t--c 2\n"),
    (["--model", "org/m", "--b"], dict(DEMO_PROFILE, measured={}),
     "#!/usr/bin/env bash\n#\n# inferops.serving profile demo (sglang on g7e)\n"
     "# image lmsysorg/sglang:v1, engine 0.5.13\n" + GENERATED + DOCKER_RUN + "\t\t--model org/m \\\n\t\t--b\n"),
    # a launcher with no flags; a launcher and a positional model; a stray word after a flag's value
    (["python3", "-m", "mod"], None, "#!/usr/bin/env bash\n#\n" + GENERATED + DOCKER_RUN + "\t\tpython3 -m mod\n"),
    (["python3", "-m", "vllm.serve", "org/m", "--a", "1"], None,
     "#!/usr/bin/env bash\n#\n" + GENERATED + DOCKER_RUN + "\t\tpython3 -m vllm.serve org/m \\\n\t\t--a 1\n"),
    (["vllm", "serve", "org/m"], None,
     "#!/usr/bin/env bash\n#\n" + GENERATED + DOCKER_RUN + "\t\tvllm serve org/m\n"),
    (["--model", "org/m", "extra", "--b"], None,
     "#!/usr/bin/env bash\n#\n" + GENERATED + DOCKER_RUN + "\t\t--model org/m \\\n\t\textra \\\n\t\t--b\n"),
])
def test_the_script_reads_one_option_per_line(command, profile, expected):
    spec = dict(_spec(), labels={"team": "a b"}, env={"A": "x y"}, command=command)
    assert p.launch_script(spec, profile) == expected


def _nl(value, position):
    return ("the value contains a newline at character %d of %d; expected a single-line value without control "
            "characters (remove it; value not shown)" % (position + 1, len(value)))


MODEL = BASE["model"]


# Each refusal names the field as the profile or the inventory names it, and says what is expected.
@pytest.mark.parametrize("change, profile, message", [
    ({"image": ["a"]}, None, "launch script field image: got a list; expected a single-line value"),
    ({"image": "a\nb"}, None, "launch script field image: " + _nl("a\nb", 1)),
    ({"command": "vllm serve"}, None, "launch script field command: got a str; expected a list of words"),
    ({"published_ports": ["1:2\n"]}, None, "launch script field published_ports[0]: " + _nl("1:2\n", 3)),
    ({"secret_env": ["A\n"]}, None, "launch script field secret_env[0]: " + _nl("A\n", 1)),
    ({"secret_env": ["A-B"]}, None, "launch script field secret_env[0]: 'A-B' is not an env var name"),
    ({"log_options": {"max-size": "1\n"}}, None, "launch script field log_options.max-size: " + _nl("1\n", 1)),
    ({"env": {"A B": "1"}}, None,
     "launch script field env: 'A B' is not an env var name; expected letters, digits and '_' (no '=', no spaces)"),
    ({"env": {"A": "1\n"}}, None, "launch script field env.A: " + _nl("1\n", 1)),
    ({"labels": {"k\n" + "x" * 50: "1"}}, None,
     "launch script field labels key 'k\\n" + "x" * 33 + "...: " + _nl("k\n" + "x" * 50, 1)),
    ({"restart_retries": "3"}, None, "launch script field restart_retries: got '3'; expected a whole number >= 0"),
    ({"command": ["vllm", "--max-num-seqs", "4\n"]}, None, "launch script field args.max-num-seqs: " + _nl("4\n", 1)),
    ({"command": ["vllm\n"]}, None, "launch script field command[0]: " + _nl("vllm\n", 4)),
    ({"command": ["vllm\n"]}, BASE, "launch script field command[0]: " + _nl("vllm\n", 4)),
    ({"command": ["vllm", "--x\n"]}, None, "launch script field args.x\\n (the flag name): " + _nl("--x\n", 3)),
    # without the profile the model is just a word of the command
    ({"command": [MODEL + "\n"]}, None, "launch script field command[0]: " + _nl(MODEL + "\n", len(MODEL))),
    ({"command": ["a", MODEL, "--enable-x", "b\n"]}, BASE, "launch script field args.enable-x: " + _nl("b\n", 1)),
    ({"command": ["a", "m\n"]}, dict(BASE, model="m\n"), "launch script field model: " + _nl("m\n", 1)),
])
def test_validate_spec_text_says_which_field_and_what_is_expected(change, profile, message):
    with pytest.raises(p.ProfileError) as err:
        p.validate_spec_text(dict(_spec(), **change), profile)
    assert str(err.value) == message


@pytest.mark.parametrize("spec, profile, message", [
    (["x"], None, "launch_script needs a launch spec mapping, not a list"),
    ({}, ["x"], "launch_script's profile must be a mapping, not a list"),
])
def test_launch_script_needs_mappings(spec, profile, message):
    with pytest.raises(p.ProfileError) as err:
        p.validate_spec_text(spec if spec != {} else _spec(), profile)
    assert str(err.value) == message


def test_edge_values_that_are_fine_pass():
    p.validate_spec_text(dict(_spec(), restart_retries=0, secret_env=["hf_token", "HF_TOKEN"]), BASE)


def test_render_args_and_values_at_their_edges():
    assert p.render_args({"a": None, "b": False, "--c": 1, "d": True, "--X-mode": "x"}) == [
        "--c", "1", "--d", "--X-mode", "x"]
    assert p.render_value(False) == "false"
    with pytest.raises(p.ProfileError) as err:
        p.render_args({"--a b": 1})
    assert str(err.value) == ("args: '--a b' is not a flag name; expected letters, digits, '-', '_' or '.' (e.g. "
                              "max-num-seqs), with the value as the entry's value")
