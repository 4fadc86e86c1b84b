# SPDX-License-Identifier: GPL-3.0-or-later
"""What a converged serving host must be, whatever its profile (testinfra, run by molecule verify).

The expected values come from the inventory (the host's variables) and the collection's own
profile resolution, not from copies of them: the container runs the lock file's digest, its argv
is the launch script's, the toolkit packages are held at the one version, ``daemon.json`` gained
the nvidia runtime and kept the operator's key, and the engine answers a real completion.
"""
from __future__ import annotations

import json
import os
import shlex
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, ".collections"))

# pylint: disable-next=wrong-import-position
from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment  # noqa: E402
from ansible_collections.inferops.serving.plugins.plugin_utils import _profile  # noqa: E402
from ansible_collections.inferops.serving.plugins.plugin_utils import _weights  # noqa: E402

TOOLKIT_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base",
                    "libnvidia-container-tools", "libnvidia-container1")


@pytest.fixture(scope="module")
def hostvars(host):
    return host.ansible.get_variables()


@pytest.fixture(scope="module")
def profile(hostvars):
    """The profile the host must serve: the lock file's pin, then the inventory's overrides."""
    return _profile.resolve_profile(hostvars["server_profile"],
                                    lock=hostvars.get("inferops_serving_image_lock"),
                                    overrides=hostvars.get("server_profile_overrides"))


@pytest.fixture(scope="module")
def name(hostvars):
    return hostvars.get("server_container_name", "inferops-serving")


@pytest.fixture(scope="module")
def container(host, name):
    return json.loads(host.check_output("docker inspect %s", name))[0]


def test_toolkit_packages_held_at_one_version(host, hostvars):
    for package in TOOLKIT_PACKAGES:
        line = host.check_output("dpkg-query -W -f '${Version} ${Status}' %s", package)
        assert line == "%s hold ok installed" % hostvars["container_toolkit_version"], package


def test_daemon_json_has_the_nvidia_runtime_and_kept_other_keys(host):
    config = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert config["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "args": []}
    assert config["labels"] == ["inferops-lab=molecule"]  # the operator's key (prepare.yml)
    # The inventory's setting (container_toolkit_daemon_json_settings) over the image's vfs.
    assert config["storage-driver"] == "overlay2"
    assert "default-runtime" not in config
    # The engine read it: Docker was restarted after the change.
    runtimes = json.loads(host.check_output("docker info --format '{{json .Runtimes}}'"))
    assert "nvidia" in runtimes
    assert host.check_output("docker info --format '{{.Driver}}'") == "overlay2"


def test_container_runs_the_pinned_digest(host, hostvars, profile, container):
    digest = profile["image"]["digest"]
    assert _profile.DIGEST_RE.match(digest or "")
    assert container["State"]["Running"] and container["State"]["Restarting"] is False
    pinned = "%s/%s@%s" % (hostvars["server_registry_prefix"], profile["image"]["repository"], digest)
    assert container["Config"]["Image"] == pinned
    image = json.loads(host.check_output("docker image inspect %s", container["Image"]))[0]
    assert pinned in image["RepoDigests"]


def launch_script_run(host, hostvars, name):
    """The words of the launch script's single ``docker run`` command."""
    path = os.path.join(hostvars.get("server_script_dir", "/usr/local/lib/inferops-serving"), name + ".sh")
    script = host.file(path)
    assert script.mode == 0o755
    # Line continuations split to lone "\n" words; they are layout, not arguments.
    words = [word for word in shlex.split(script.content_string, comments=True) if word.strip()]
    return words[words.index("run") - 1:]


def test_container_argv_and_env_equal_the_launch_script(host, hostvars, name, profile, container):
    run = launch_script_run(host, hostvars, name)
    image_at = run.index(container["Config"]["Image"])
    assert run[image_at + 1:] == container["Config"]["Cmd"]
    # ... and equal to what the profile renders (the lab's overrides included), with the engine's
    # graceful shutdown where its release has one (server_shutdown_timeout: the inventory's, else
    # the role's default).
    # (the plan adds the flag to the profile's args; the port comes after them, as the plan's spec has it)
    with open(os.path.join(REPO, "roles", "server", "defaults", "main.yml"), encoding="utf-8") as handle:
        default_timeout = yaml.safe_load(handle)["server_shutdown_timeout"]
    shutdown = _deployment.shutdown_plan(profile["engine"], profile["image"].get("engine_version"), profile["args"],
                                         hostvars.get("server_shutdown_timeout", default_timeout))
    expected = profile
    if shutdown["add_flag"]:
        expected = _profile.overlay(expected, {"args": {shutdown["flag"]: shutdown["timeout"]}})
    expected = _profile.overlay(expected, {"args": {"port": hostvars["server_port"]}})
    assert container["Config"]["Cmd"] == _profile.container_argv(expected)
    script_env = [run[i + 1] for i, word in enumerate(run) if word == "-e"]
    for pair in script_env:
        assert pair in container["Config"]["Env"]
    # The profile's env, plus HF_HUB_OFFLINE=1 where its model is pinned to a commit (issue 24).
    expected = dict(profile["env"])
    if _weights.offline(profile, hostvars.get("server_hf_hub_offline")):
        expected[_weights.OFFLINE_ENV] = "1"
    assert sorted(script_env) == sorted("%s=%s" % kv for kv in expected.items())


def test_container_is_the_gpu_server_the_profile_needs(container):
    config = container["HostConfig"]
    [request] = config["DeviceRequests"]  # --gpus all
    assert (request["Driver"], request["Count"], request["Capabilities"]) == ("nvidia", -1, [["gpu"]])
    assert config["IpcMode"] == "host" and config["NetworkMode"] == "host"
    assert config["RestartPolicy"] == {"Name": "on-failure", "MaximumRetryCount": 3}
    assert config["AutoRemove"] is False
    assert config["LogConfig"]["Type"] == "json-file" and config["LogConfig"]["Config"]["max-size"] == "100m"
    assert any(m["Destination"] == "/root/.cache/huggingface" for m in container["Mounts"])


def test_engine_answers_a_real_completion(host, hostvars, profile):
    model = profile["args"].get("served-model-name", profile["model"])
    body = json.dumps({"model": model, "temperature": 0, "max_tokens": 1024,
                       "messages": [{"role": "user", "content": "What is 2+2? Answer with just the number."}]})
    answer = json.loads(host.check_output(
        "curl -fsS --noproxy '*' -H 'Content-Type: application/json' -d %s http://127.0.0.1:%s/v1/chat/completions",
        body, str(hostvars["server_port"])))
    assert answer["choices"][0]["message"]["content"].strip() == "4"


def test_the_pinned_revision_is_staged_and_verified_where_the_cache_is_on(host, hostvars, profile):
    """model_cache (issue 24): the snapshot of the pinned commit in the hub cache the container
    mounts, and the host's verification marker naming that commit."""
    if not hostvars.get("model_cache_enabled", True):
        pytest.skip("model_cache_enabled is false for this scenario")
    revision = _weights.weights(profile)["revision"]
    assert revision and len(revision) == 40, revision
    folder = os.path.join(hostvars.get("server_model_cache_dir", "/root/.cache/huggingface"), "hub",
                          "models--" + profile["model"].replace("/", "--"))
    assert host.file(os.path.join(folder, "snapshots", revision)).is_directory
    # model_verify's markers, one per verified revision (plugins/modules/model_verify.py)
    markers = json.loads(host.file(os.path.join(folder, ".inferops-verified.json")).content_string)
    assert markers[revision]["revision"] == revision and markers[revision]["fingerprint"]
