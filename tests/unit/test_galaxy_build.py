# SPDX-License-Identifier: GPL-3.0-or-later
"""The release tarball holds collection content only: no lab key, no lab state, no caches.

Builds the collection with ``ansible-galaxy collection build`` from a copy of the working tree's
files (tracked, or untracked but not git-ignored) into which the paths a test run and the lab
generate are planted: the lab apt repository's GnuPG home (a private key file and a live
gpg-agent socket, which made the build fail outright), lab logs, caches, build output.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import uuid

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Stands for a GnuPG private key as the lab's apt/build-repo.sh leaves it in .lab/apt/gnupg; its body
# is made at run time, so this file (which is shipped) does not contain it.
KEY_BODY = "test-only-not-a-key-" + uuid.uuid4().hex
FAKE_KEY = "-----BEGIN PGP %s KEY BLOCK-----\n\n%s\n-----END PGP %s KEY BLOCK-----\n" % ("PRIVATE", KEY_BODY, "PRIVATE")
PLANTED = {
    ".lab/apt/gnupg/private-keys-v1.d/0123456789ABCDEF.key": FAKE_KEY,
    ".lab/apt/gnupg/secring.asc": FAKE_KEY,
    ".lab/apt/www/dists/stable/Release": "Origin: inferops lab\n",
    ".lab/log/dockerd.log": "level=info msg=\"API listen on /var/run/docker.sock\"\n",
    ".lab/registry/storage/docker/registry/v2/blobs/sha256/ab/data": "blob",
    ".pytest_cache/v/cache/lastfailed": "{}\n",
    "tests/unit/.pytest_cache/v/cache/nodeids": "[]\n",
    ".hypothesis/examples/0a1b/2c3d": "x",
    "build/sanity/ansible_collections/inferops/serving/galaxy.yml": "name: copy\n",
    "tmp/scratch.txt": "x",
    "tests/output/junit/sanity.xml": "<testsuites/>",
    ".mutmut-cache": "sqlite",
    "mutants/plugins/plugin_utils/_profile.py": "# mutant\n",
    ".ansible/collections/ansible_collections/x/y/galaxy.yml": "name: y\n",
    ".venv/bin/python": "#!/bin/sh\n",
    ".venv-loadgen/bin/python": "#!/bin/sh\n",
    ".venv-loadgen/inferops-words-tokenizer/tokenizer.json": "{}\n",
    ".collections/ansible_collections/inferops/serving/README.md": "link target\n",
    "plugins/plugin_utils/__pycache__/_profile.cpython-312.pyc": "pyc",
    "inventories/lab/group_vars/all/image_lock.yml": "inferops_serving_image_lock: {}\n",
    "inventories/lab/group_vars/all/apt_signing_key.yml": "container_toolkit_repository_key_fingerprints: []\n",
    "ansible.log": "PLAY [all]\n",
    "inferops-serving-0.0.1.tar.gz": "old build",
    "roles/server/tasks/main.yml.swp": "swap",
}


def working_tree_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode("utf-8")
    return sorted(path for path in out.split("\0") if path and os.path.isfile(os.path.join(ROOT, path)))


def plant_socket(path):
    """A listening unix socket at ``path`` (bound by a relative name: socket paths are short)."""
    cwd = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(os.path.basename(path))
        sock.listen(1)
    finally:
        os.chdir(cwd)
    return sock


def test_the_built_collection_ships_no_key_no_lab_state_and_only_collection_content(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    files = working_tree_files()
    for path in files:
        os.makedirs(os.path.dirname(src / path), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), src / path)
    for path, text in PLANTED.items():
        os.makedirs(os.path.dirname(src / path), exist_ok=True)
        (src / path).write_text(text)
    sock = plant_socket(str(src / ".lab" / "apt" / "gnupg" / "S.gpg-agent.extra"))
    try:
        build = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection",
                                "build", "--output-path", str(out)], cwd=src, capture_output=True, text=True,
                               timeout=300, check=False)
    finally:
        sock.close()
    assert build.returncode == 0, build.stdout + build.stderr
    tarballs = os.listdir(out)
    assert tarballs == ["inferops-serving-0.1.0.tar.gz"]

    with tarfile.open(out / tarballs[0]) as tar:
        members = tar.getmembers()
        names = {m.name for m in members if m.isfile()}
        contents = b"".join(tar.extractfile(m).read() for m in members if m.isfile())
    assert KEY_BODY.encode() not in contents
    assert ("BEGIN PGP " + "PRIVATE").encode() not in contents  # (split so this file does not match)
    assert not any(m.name.startswith(".lab") for m in members)
    assert not any(not (m.isfile() or m.isdir()) for m in members), "only files and directories"

    # Nothing but the working tree's own files (plus the two the build writes) ...
    assert names - set(files) == {"MANIFEST.json", "FILES.json"}
    assert not any(name in names for name in PLANTED)
    # ... minus what galaxy.yml's build_ignore leaves out, ...
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        ignore = yaml.safe_load(handle)["build_ignore"]
    for name in names:
        parts = name.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        assert not any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes for pattern in ignore), name
    # ... and the collection's content is all there.
    expected = {f for f in files
                if f.split("/")[0] in ("plugins", "roles", "playbooks", "profiles", "data", "meta", "changelogs")
                and f != "changelogs/.plugin-cache.yaml"}  # antsibull-changelog's cache, build-ignored
    assert expected and expected <= names
    assert {"README.md", "COPYING"} <= names
