# SPDX-License-Identifier: GPL-3.0-or-later
"""Input validators: bad inputs from the review (issue 10) fail with one line naming the variable."""
from __future__ import annotations

import os
import re

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _profile as p
from ansible_collections.inferops.serving.plugins.plugin_utils import _validate as v


@pytest.mark.parametrize("name", ["inferops-serving", "a1", "srv_2.b-c", "X9"])
def test_container_names_docker_accepts(name):
    assert v.container_name(name) == name


@pytest.mark.parametrize("name", ["", "a", "../../x", "my server", "-x", ".x", "a/b", "srv; touch p",
                                  "a\nb", "a..b", None, 5, ["a"]])
def test_container_names_docker_refuses(name):
    with pytest.raises(v.ValidationError) as exc:
        v.container_name(name)
    message = str(exc.value)
    assert message.startswith("server_container_name: got ")
    assert "expected a" in message
    assert "\n" not in message


@pytest.mark.parametrize("value, expected", [(1, 1), (8000, 8000), ("8000", 8000), (65535, 65535)])
def test_ports(value, expected):
    assert v.port(value) == expected


@pytest.mark.parametrize("value", [0, -1, 70000, 10 ** 30, True, False, "abc", "80.0", 80.5, None, "",
                                   "\u0668\u0660"])
def test_bad_ports_name_the_variable_and_the_range(value):
    with pytest.raises(v.ValidationError, match=r"^server_port: got .*; expected a port number from 1 to 65535$"):
        v.port(value)


def test_bool_port_says_boolean():
    with pytest.raises(v.ValidationError, match="got the boolean True"):
        v.port(True, "server_port")


def test_absolute_path_normalises_and_refuses_relative_and_multiline():
    assert v.absolute_path("/var/lib/x/./y/", "server_state_dir") == "/var/lib/x/y"
    for bad in ("var/lib", "", 5, None):
        with pytest.raises(v.ValidationError, match="^server_state_dir: got "):
            v.absolute_path(bad, "server_state_dir")
    with pytest.raises(v.ValidationError, match="^server_state_dir: the value contains a newline at character 3 of 5;"):
        v.absolute_path("/a\n/b", "server_state_dir")


def test_volume_host_path_refuses_colon_and_comma():
    with pytest.raises(v.ValidationError, match="without ':' or ','"):
        v.absolute_path("/:/host:rw,", "server_model_cache_dir", volume=True)


@pytest.mark.parametrize("value, expected", [
    ("inferops.env", "/etc/inferops-serving/inferops.env"),
    ("sub/x.sh", "/etc/inferops-serving/sub/x.sh"),
    ("/etc/inferops-serving/a", "/etc/inferops-serving/a"),
    ("a/../b", "/etc/inferops-serving/b"),
])
def test_path_inside_keeps_paths_in_their_directory(value, expected):
    assert v.path_inside(value, "/etc/inferops-serving", "env file") == expected


@pytest.mark.parametrize("value", ["../../x.env", "/etc/passwd", "..", ".", "a/../../x",
                                   "/etc/inferops-serving-other/x", "", None])
def test_path_inside_refuses_escapes(value):
    with pytest.raises(v.ValidationError, match=r"^env file: got .*expected a path inside /etc/inferops-serving"):
        v.path_inside(value, "/etc/inferops-serving", "env file")


def test_a_string_where_a_list_is_expected_is_one_clear_error_not_eleven_volumes():
    with pytest.raises(v.ValidationError) as exc:
        v.str_list("/data:/data", "server_extra_volumes")
    assert str(exc.value) == ("server_extra_volumes: got the string '/data:/data'; expected a list of "
                              "strings, e.g. ['/data:/data'] (a plain string would be read one character "
                              "per item)")


def test_str_list():
    assert v.str_list(None, "x") == []
    assert v.str_list(("/a:/a", "/b:/b"), "x") == ["/a:/a", "/b:/b"]
    with pytest.raises(v.ValidationError, match=r"^x\[1\]: got the integer 5; expected a string$"):
        v.str_list(["/a:/a", 5], "x")
    with pytest.raises(v.ValidationError, match=r"^x: got a mapping .*expected a list of strings$"):
        v.str_list({"a": 1}, "x")


def test_mapping():
    assert v.mapping(None, "labels") == {}
    assert v.mapping({"a": "b"}, "labels") == {"a": "b"}
    with pytest.raises(v.ValidationError, match=r"^overrides\.args: got the string '--x'; expected a mapping"):
        v.mapping("--x", "overrides.args")
    with pytest.raises(v.ValidationError, match=r"^labels: got a list \['a'\]; expected a mapping"):
        v.mapping(["a"], "labels")
    with pytest.raises(v.ValidationError, match=r"^env: key the integer 1 is not a string"):
        v.mapping({1: "x"}, "env")


@pytest.mark.parametrize("value, problem", [
    ("t\ntouch pwned #", "a newline at character 2 of 15"),
    ("a\rb", "a carriage return at character 2 of 3"),
    ("a\x00b", "a NUL character at character 2 of 3"),
    ("ab\u2028", "a line separator (U+2028) at character 3 of 3"),
    ("\tb", "a tab at character 1 of 2"),
    ("a\x1b[31m", "the control character U+001B at character 2 of 6"),
])
def test_single_line_refuses_control_characters_and_says_where_without_the_value(value, problem):
    """Issue 25, finding 5: the refusal said which control character, where, and quoted the value
    (a secret put under this name by mistake was printed); it now says which and where only."""
    assert v.single_line("cu130 nightly ünïcode", "image.tag") == "cu130 nightly ünïcode"
    with pytest.raises(v.ValidationError) as err:
        v.single_line(value, "image.tag")
    assert str(err.value) == ("image.tag: the value contains %s; expected a single-line value without control "
                              "characters (remove it; value not shown)" % problem)


@pytest.mark.parametrize("value, shown", [
    ("sk-proj-Ab12Cd34Ef56Gh78", "the string 'sk-proj-<redacted>'"),
    ("postgres://app:p4ss-w0rd@db:5432/x", "the string 'postgres://app:<redacted>@db:5432/x'"),
    (["ok", "ghp_" + "A1b2" * 9], "a list ['ok', 'ghp_<redacted>']"),
    ({"k": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}, "a mapping {'k': 'Bearer <redacted>'}"),
])
def test_describe_masks_secret_shapes(value, shown):
    """describe quotes a refused value (a wrong type, a wrong choice): through the scrub."""
    assert v.describe(value) == shown


def test_a_secret_is_masked_before_describe_cuts_it_short():
    secret = "AKIA" + "Z9" * 8
    text = v.describe("x" * 50 + " " + secret)
    assert text == "the string '%s..." % ("x" * 50 + " AKIA<")
    assert "Z9" not in text


def test_total_size_names_the_total_the_limit_and_the_three_largest():
    fields = [("a", "x" * 99), ("b", "x" * 299), ("c", "x" * 199), ("d", "x" * 9), ("b", "x" * 9)]
    assert v.total_size(fields, "launch", max_bytes=620) == 620
    with pytest.raises(v.ValidationError) as err:
        v.total_size(fields, "launch", max_bytes=619)
    assert str(err.value) == (
        "launch: the values total 620 bytes; expected at most 619 bytes in all (Linux refuses an exec whose "
        "arguments and environment pass ARG_MAX, 2 MiB by default, with 'argument list too long'); the largest: "
        "b (310 bytes), c (200 bytes), a (100 bytes): shorten them, or put them in files and mount them "
        "(server_extra_volumes)")


def test_describe_is_short():
    assert len(v.describe("x" * 1000)) < 80


@pytest.mark.parametrize("name", ["gb10-nvfp4-mtp-latency", "a", "x_1.2"])
def test_plain_profile_names(name):
    assert v.profile_name(name) == name


@pytest.mark.parametrize("name", ["../galaxy", "/abs/any", "a/b", "..", "a..b", "", ".hidden", None, ["x"], 5,
                                  "x\n"])
def test_profile_names_that_are_paths_are_refused(name):
    with pytest.raises(v.ValidationError, match="^profile: got .*expected a plain profile name"):
        v.profile_name(name)


def test_load_profile_refuses_a_path_as_a_name(tmp_path):
    outside = tmp_path / "outside.yml"
    outside.write_text("engine: vllm\n")
    for name in ("../galaxy", str(tmp_path / "outside"), "../../../../%s/outside" % tmp_path):
        with pytest.raises(p.ProfileError, match="^profile: got the string .*expected a plain profile name"):
            p.load_profile(name)


def test_extends_that_is_a_path_is_refused_naming_the_profile(tmp_path):
    (tmp_path / "outside.yml").write_text("engine: vllm\nmodel: x\n")
    (tmp_path / "child.yml").write_text("extends: %s\n" % os.path.join(str(tmp_path), "outside"))
    with pytest.raises(p.ProfileError, match="^profile child: extends: got the string '/"):
        p.load_profile("child", [str(tmp_path)])
    (tmp_path / "child2.yml").write_text("extends: [gb10-nvfp4-mtp-latency]\n")
    with pytest.raises(p.ProfileError, match=r"^profile child2: extends: got a list"):
        p.load_profile("child2", [str(tmp_path)])


def test_plain_extends_still_work(tmp_path):
    (tmp_path / "child.yml").write_text("extends: gb10-nvfp4-mtp-latency\ndescription: mine\n")
    profile = p.load_profile("child", [str(tmp_path)])
    assert profile["name"] == "child" and profile["engine"] == "vllm"


# Issue 25, finding 9: values that passed validation and broke later.
@pytest.mark.parametrize("model", ["--trust-remote-code", "-x", "--model=/etc"])
def test_a_model_name_starting_with_a_dash_is_refused(model):
    profile = p.apply_overrides(p.load_profile("gb10-nvfp4-mtp-latency"), {"model": model})
    with pytest.raises(p.ProfileError, match=r"^profile gb10-nvfp4-mtp-latency: model: got the string '%s'; "
                                             r"expected a Hugging Face repo id" % re.escape(model)):
        p.container_argv(profile)


@pytest.mark.parametrize("overrides, var", [
    ({"args": {"served-model-name": "x" * (1 << 20)}}, "launch script field args.served-model-name"),
    ({"env": {"VLLM_LOGGING_LEVEL": "y" * (v.MAX_VALUE_BYTES + 1)}}, "launch script field env.VLLM_LOGGING_LEVEL"),
    ({"args": {"chat-template": "\u00e9" * (v.MAX_VALUE_BYTES // 2 + 1)}}, "launch script field args.chat-template"),
])
def test_a_value_over_the_argument_limit_is_refused_naming_it_and_the_limit(overrides, var):
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    with pytest.raises(p.ProfileError) as exc:
        plan("gb10-nvfp4-mtp-latency", {}, overrides=overrides)
    message = str(exc.value)
    assert message.startswith("%s: got a value of " % var)
    assert "expected at most 65536 bytes" in message and "argument list too long" in message
    assert len(message) < 400  # the value itself is not quoted


def test_a_long_value_under_the_limit_passes():
    from ansible_collections.inferops.serving.plugins.plugin_utils._deployment import plan
    template = "x" * v.MAX_VALUE_BYTES
    assert template in plan("gb10-nvfp4-mtp-latency", {}, overrides={"args": {"chat-template": template}})["script"]
    assert v.single_line("abc", "v", max_bytes=3) == "abc"
    with pytest.raises(v.ValidationError, match="^v: got a value of 4 bytes; expected at most 3 bytes"):
        v.single_line("abcd", "v", max_bytes=3)
