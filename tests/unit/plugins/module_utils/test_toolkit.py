# SPDX-License-Identifier: GPL-3.0-or-later
"""What the container_toolkit role still has to do, from what toolkit_info read on a host.

DPKG_QUERY and SOURCES are the real output of `dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`
and the .sources file ansible.builtin.deb822_repository wrote, on the lab's lab-spark (Debian
bookworm) after a converge (2026-11-30).
"""
from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._toolkit import (
    installed_key_sha256,
    parse_deb822,
    parse_dpkg_query,
    toolkit_steps,
)

DPKG_QUERY = ("docker-ce\t\tun \n"
              "docker.io\t20.10.24+dfsg1-1+deb12u1+b6\tii \n"
              "libnvidia-container-tools\t1.17.8-1\thi \n"
              "libnvidia-container1\t1.17.8-1\thi \n"
              "nvidia-container-toolkit\t1.17.8-1\thi \n"
              "nvidia-container-toolkit-base\t1.17.8-1\thi \n"
              "python3-debian\t0.1.49\tii \n"
              "python3-requests\t2.28.1+dfsg-1\tii \n")
SOURCES = ("Architectures: amd64\nX-Repolib-Name: nvidia-container-toolkit\n"
           "Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc\nSuites: /\nTypes: deb\n"
           "URIs: http://127.0.0.1:5080/libnvidia-container/stable/deb/amd64\n")
PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
PIN = "Package: %s\nPin: version 1.17.8-1\nPin-Priority: 1001\n" % " ".join(PACKAGES)
WANTED = {"packages": PACKAGES, "version": "1.17.8-1", "hold": True, "manage_repository": True,
          "repository": {"Types": "deb", "URIs": "http://127.0.0.1:5080/libnvidia-container/stable/deb/amd64",
                         "Suites": "/", "Architectures": "amd64",
                         "Signed-By": "/etc/apt/keyrings/nvidia-container-toolkit.asc"},
          "preferences": PIN, "prerequisites": ["python3-debian", "python3-requests"],
          "docker_packages": ["docker.io", "docker-ce"], "docker_package": "docker.io"}


def converged(**changes):
    observed = {"packages": parse_dpkg_query(DPKG_QUERY), "repository": parse_deb822(SOURCES), "signed_by_exists": True,
                "preferences": PIN, "daemon_json_changes": False, "docker_active": True, "docker_enabled": True,
                "apt_lists": 4}
    observed.update(changes)
    return observed


def test_parses_versions_and_holds_and_skips_unknown_packages():
    packages = parse_dpkg_query(DPKG_QUERY)
    assert "docker-ce" not in packages
    assert packages["nvidia-container-toolkit"] == {"version": "1.17.8-1", "selection": "hold", "status": "installed"}
    assert packages["docker.io"]["selection"] == "install"


def test_a_converged_host_has_nothing_left():
    assert toolkit_steps(converged(), WANTED) == {"steps": [], "reasons": {}}


def test_a_fresh_host_needs_every_step_in_order():
    fresh = {"packages": {}, "repository": None, "preferences": None, "daemon_json_changes": True,
             "docker_active": False, "docker_enabled": False, "apt_lists": 0}
    assert toolkit_steps(fresh, WANTED)["steps"] == ["prerequisites", "repository", "pin", "install", "hold",
                                                     "daemon_json", "docker_install", "docker_start"]


def test_a_new_version_needs_the_pin_the_install_and_the_hold_names_both_versions():
    wanted = dict(WANTED, version="1.18.0-1", preferences=PIN.replace("1.17.8-1", "1.18.0-1"))
    decided = toolkit_steps(converged(), wanted)
    assert decided["steps"] == ["pin", "install"]
    assert decided["reasons"]["install"].startswith("want 1.18.0-1, have nvidia-container-toolkit 1.17.8-1")


def test_an_unheld_package_a_changed_repository_and_a_missing_key_are_each_noticed():
    unheld = DPKG_QUERY.replace("libnvidia-container1\t1.17.8-1\thi", "libnvidia-container1\t1.17.8-1\tii")
    assert toolkit_steps(converged(packages=parse_dpkg_query(unheld)), WANTED)["reasons"] == {
        "hold": "not on hold: libnvidia-container1"}
    moved = parse_deb822(SOURCES.replace("127.0.0.1:5080", "mirror.example"))
    assert toolkit_steps(converged(repository=moved), WANTED)["reasons"] == {"repository": "differs in URIs"}
    assert toolkit_steps(converged(signed_by_exists=False), WANTED)["steps"] == ["repository"]


def test_the_key_step_is_left_only_when_the_downloaded_key_is_not_the_installed_one():
    assert toolkit_steps(converged(key_sha256="a" * 64, keyring_sha256="a" * 64), WANTED)["steps"] == []
    assert toolkit_steps(converged(key_sha256="b" * 64, keyring_sha256="a" * 64), WANTED)["reasons"] == {
        "key": "the repository serves another signing key than the installed one"}
    assert toolkit_steps(converged(key_sha256="b" * 64, keyring_sha256=None), WANTED)["reasons"] == {
        "key": "no signing key installed as root's, mode 0644"}
    # No key downloaded on this run (no key_url), or the repository is not managed: nothing to compare.
    assert toolkit_steps(converged(key_sha256=None, keyring_sha256=None), WANTED)["steps"] == []
    assert toolkit_steps(converged(key_sha256="b" * 64), dict(WANTED, manage_repository=False))["steps"] == []
    fresh = {"packages": {}, "repository": None, "preferences": None, "daemon_json_changes": True,
             "docker_active": False, "docker_enabled": False, "apt_lists": 0, "key_sha256": "b" * 64}
    assert toolkit_steps(fresh, WANTED)["steps"][:3] == ["prerequisites", "key", "repository"]


def test_unmanaged_repository_and_docker_are_not_checked():
    wanted = dict(WANTED, manage_repository=False, docker_package="")
    assert toolkit_steps(converged(repository=None, packages=parse_dpkg_query(DPKG_QUERY.replace("docker.io\t2", "x\t2"))),
                         wanted)["steps"] == []


def test_docker_stopped_or_disabled_and_daemon_json_lacking_the_runtime():
    decided = toolkit_steps(converged(docker_enabled=False, daemon_json_changes=True), WANTED)
    assert decided["steps"] == ["daemon_json", "docker_start"]
    assert decided["reasons"]["docker_start"] == "Docker is running and not enabled"


@pytest.mark.skipif(os.geteuid() != 0, reason="the key file is root's, as the role installs it")
def test_the_installed_key_has_a_digest_only_as_the_role_installs_it(tmp_path):
    key = tmp_path / "nvidia-container-toolkit.asc"
    assert installed_key_sha256(str(key)) is None
    assert installed_key_sha256("") is None and installed_key_sha256(None) is None
    key.write_bytes(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n...\n")
    key.chmod(0o644)
    assert installed_key_sha256(str(key)) == hashlib.sha256(key.read_bytes()).hexdigest()
    key.chmod(0o664)  # the install must put its mode back
    assert installed_key_sha256(str(key)) is None
    key.chmod(0o644)
    os.chown(str(key), 0, 1)
    assert installed_key_sha256(str(key)) is None
    os.chown(str(key), 0, 0)
    link = tmp_path / "link.asc"
    link.symlink_to(key)
    assert installed_key_sha256(str(link)) is None
    assert installed_key_sha256(str(tmp_path)) is None
