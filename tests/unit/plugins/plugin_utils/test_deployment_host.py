# SPDX-License-Identifier: GPL-3.0-or-later
"""What the plan says its host gets (server_deployment.files, serving_unit, watchdog, record), what
the server and watchdog roles write from it, and that no secret value ever enters it: the secret
files come from the deployment lookup's plan/secrets mode, for a task under no_log."""
from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.serving.plugins.plugin_utils import _deployment as d
from ansible_collections.inferops.serving.plugins.plugin_utils._profile import ProfileError

PROFILE = "gb10-nvfp4-mtp-throughput"
OPTIONS = {"name": "inferops-serving", "port": 8101, "config_dir": "/etc/inferops-serving",
           "script_dir": "/usr/local/lib/inferops-serving", "state_dir": "/var/lib/inferops-serving",
           "model_cache_dir": "/root/.cache/huggingface", "textfile_dir": "/var/lib/node_exporter",
           "docker_host": "unix:///var/run/docker.sock"}
WATCHDOG = {"interval": 30, "probe_deadline": 20, "probe_max_tokens": 4, "probe_prompt": "What is 2+2?",
            "restart_budget": 3, "startup_grace": 1800, "crash_loop_restarts": 2, "crash_loop_window": 600,
            "meminfo_path": "/proc/meminfo", "drop_caches_before_start": True,
            "drop_caches_file": "/proc/sys/vm/drop_caches", "memory_wait_timeout": 300, "slow_floor": None,
            "slow_fraction": 0.3, "slow_window": None, "docker_host": "unix:///var/run/docker.sock", "log_lines": 50}
TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0" * 2
KEY = "sk-inferops-0123456789abcdef"


def LookupModule():  # noqa: N802 - the plugin as Ansible loads it (its options from DOCUMENTATION)
    import yaml
    from ansible import constants as C
    from ansible_collections.inferops.serving.plugins.lookup import deployment
    C.config.initialize_plugin_configuration_definitions("lookup", "inferops.serving.deployment",
                                                         yaml.safe_load(deployment.DOCUMENTATION)["options"])
    plugin = deployment.LookupModule()
    plugin._load_name = "inferops.serving.deployment"
    return plugin


def paths(entries):
    return [entry["path"] for entry in entries]


def test_the_server_roles_files_in_order_with_no_secret_file_left_behind():
    plain = d.plan(PROFILE, dict(OPTIONS, engine_cache_dir="/var/cache/inferops-serving/inferops-serving"))
    assert plain["files"][:4] == [
        {"path": "/etc/inferops-serving", "state": "directory", "mode": "0700", "keep_existing": False},
        {"path": "/root/.cache/huggingface", "state": "directory", "mode": "0755"},
        {"path": "/usr/local/lib/inferops-serving", "state": "directory", "mode": "0755", "keep_existing": False},
        {"path": "/var/cache/inferops-serving/inferops-serving", "state": "directory", "mode": "0755"}]
    # No secrets: a former env file and token file go; the script last, as the plan renders it.
    assert plain["files"][4:6] == [{"path": "/etc/inferops-serving/inferops-serving.env", "state": "absent"},
                                   {"path": "/etc/inferops-serving/inferops-serving.hf_token", "state": "absent"}]
    assert plain["files"][6] == {"path": "/usr/local/lib/inferops-serving/inferops-serving.sh",
                                 "content": plain["script"], "mode": "0755"}
    secret = d.plan(PROFILE, dict(OPTIONS, secret_env=["HF_TOKEN", "VLLM_API_KEY"]))
    assert "/etc/inferops-serving/inferops-serving.env" not in paths(secret["files"])
    assert "/var/cache" not in " ".join(paths(secret["files"]))  # no engine cache: no directory


def test_no_secret_value_is_in_the_plan_and_the_lookup_writes_the_secret_files():
    deployment = d.plan(PROFILE, dict(OPTIONS, secret_env=["HF_TOKEN", "VLLM_API_KEY"]), watchdog=WATCHDOG)
    text = json.dumps(deployment)
    assert TOKEN not in text and KEY not in text
    files = LookupModule().run([], variables={}, plan=deployment, secrets={"HF_TOKEN": TOKEN, "VLLM_API_KEY": KEY})
    if deployment["secret_files"]:  # this image reads the token from a file of its own
        assert files[0] == {"path": deployment["secret_files"]["HF_TOKEN"], "content": TOKEN, "mode": "0600"}
        assert files[-1] == {"path": deployment["env_file"], "content": "VLLM_API_KEY=%s\n" % KEY, "mode": "0600"}
    else:
        assert files == [{"path": deployment["env_file"], "content": "HF_TOKEN=%s\nVLLM_API_KEY=%s\n" % (TOKEN, KEY),
                          "mode": "0600"}]
    assert LookupModule().run([], variables={}, plan=d.plan(PROFILE, OPTIONS), secrets={}) == []


def test_a_secret_docker_cannot_read_is_refused_naming_the_entry_never_the_value():
    from ansible.errors import AnsibleLookupError
    deployment = d.plan(PROFILE, dict(OPTIONS, secret_env=["VLLM_API_KEY"]))
    with pytest.raises(AnsibleLookupError, match=r"^server_secrets\.VLLM_API_KEY: the value contains a newline") as raised:
        LookupModule().run([], variables={}, plan=deployment, secrets={"VLLM_API_KEY": KEY + "\nX=1"})
    assert KEY not in str(raised.value)
    with pytest.raises(AnsibleLookupError, match="give the plan"):
        LookupModule().run([], variables={}, secrets={"VLLM_API_KEY": KEY})


def test_the_watchdog_part_is_its_configuration_unit_and_files():
    watchdog = d.plan(PROFILE, OPTIONS, watchdog=WATCHDOG)["watchdog"]
    assert watchdog["enabled"] and watchdog["config"]["interval"] == 30
    assert watchdog["config_text"] == json.dumps(watchdog["config"], indent=2, sort_keys=True, separators=(",", ": ")) + "\n"
    # GB10 is unified memory: the plan's memory kind turns the page-cache drop on.
    assert watchdog["config"]["unified_memory"] is True and watchdog["config"]["drop_caches_before_start"] is True
    assert watchdog["unit"]["capabilities"] == "CAP_SYS_ADMIN"
    assert watchdog["unit"]["exec_start"] == ('/usr/bin/python3 "/usr/local/lib/inferops-serving/inferops_watchdog.py" '
                                              '--config "/etc/inferops-serving/watchdog-%i.json"')
    assert watchdog["program"] == "/usr/local/lib/inferops-serving/inferops_watchdog.py"
    assert watchdog["data_dirs"] == ["/var/lib/inferops-serving", "/var/lib/node_exporter"]
    assert paths(watchdog["files"])[:2] == watchdog["data_dirs"]
    assert watchdog["files"][-1] == {"path": "/etc/inferops-serving/watchdog-inferops-serving.json", "mode": "0644",
                                     "content": watchdog["config_text"]}
    off = d.plan(PROFILE, OPTIONS)["watchdog"]
    assert off["enabled"] is False and off["config"] is None and off["files"] == []
    assert off["service"] == "inferops-watchdog@inferops-serving.service"


@pytest.mark.parametrize("changes, message", [
    ({"interval": 0}, "watchdog_interval must be > 0 (seconds), got 0"),
    ({"restart_budget": -1}, "watchdog_restart_budget must be >= 0 (restarts per hour), got -1"),
])
def test_a_bad_watchdog_setting_fails_the_plan_naming_the_variable(changes, message):
    with pytest.raises(ProfileError, match="^the watchdog cannot be configured: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        d.plan(PROFILE, OPTIONS, watchdog=dict(WATCHDOG, **changes))


def test_a_directory_no_unit_can_carry_fails_the_plan_naming_the_variable():
    with pytest.raises(ProfileError, match="watchdog_textfile_dir"):
        d.plan(PROFILE, dict(OPTIONS, textfile_dir="/var/lib/node\texporter"), watchdog=WATCHDOG)


def test_the_record_is_the_state_entry_without_the_proofs_evidence():
    deployment = d.plan(PROFILE, OPTIONS)
    assert deployment["record"] == d.record(deployment)
    assert deployment["state_file"] == "/var/lib/inferops-serving/inferops-serving.json"
    rebuilt = d.from_record(deployment["record"], watchdog=WATCHDOG)
    assert rebuilt["spec_sha256"] == deployment["spec_sha256"] and rebuilt["watchdog"]["config"]["interval"] == 30
