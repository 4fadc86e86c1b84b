# SPDX-License-Identifier: GPL-3.0-or-later
"""The release tarball holds what a user runs, and installed it is the whole product.

Builds the collection with ``ansible-galaxy collection build`` from a copy of the working tree's
files (tracked, or untracked but not git-ignored) into which the paths a test run and the lab
generate are planted: the lab apt repository's GnuPG home (a private key file and a live
gpg-agent socket, which made the build fail outright), lab logs, caches, build output. Then:

* the tarball holds no key, no lab state, no lab inventory and none of the repository's tooling
  (ansible.cfg, Makefile, scripts other than the benchmark role's two, tests, dev requirements);
* installed offline into an empty collections path (``ansible-galaxy collection install
  <tarball> -p``, no repository ansible.cfg, run from an empty directory),
  ``ansible-playbook inferops.serving.site`` is the whole fleet converge (the serving hosts',
  the gateway's and the monitoring roles' tasks), every playbook the README names runs by its
  FQCN, and ``inferops.serving.show_launch`` renders a profile's launch script from the installed
  copy alone (its profiles, engine catalog and known-bad data). community.docker, a dependency,
  comes from the venv's ansible package (``--no-deps``: no Galaxy here).
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import uuid

import pytest
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
    "dist/inferops-serving-0.1.0.tar.gz": "the execution environment's build",
    "dist/README": "x",
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


# The tarball's top level: what a user runs and reads (MANIFEST.json and FILES.json the build writes).
SHIPPED_TOP = {"MANIFEST.json", "FILES.json", "README.md", "COPYING", "CHANGELOG.rst", "meta", "plugins", "roles",
               "playbooks", "profiles", "data", "docs", "inventories", "changelogs", "scripts",
               "requirements-loadgen.txt", "requirements-hub.txt"}
# The scripts the benchmark role runs on the controller (roles/benchmark/vars/main.yml: __benchmark_scripts;
# loadgen-env reads requirements-loadgen.txt beside it). Every other script is the repository's tooling.
RUNTIME_SCRIPTS = {"scripts/loadgen-env", "scripts/run-loadgen"}
# The repository's tooling: never in the tarball (a directory: nothing under it).
TOOLING_FILES = {"ansible.cfg", "Makefile", "site.yml", "requirements.yml", "requirements-dev.txt", "pytest.ini",
                 "requirements-bench.txt", "requirements-compat.txt", "requirements-publish.txt", ".ansible-lint"}
TOOLING_DIRS = ("inventories/lab/", "tests/", "molecule/", "benchmarks/", "docs/dev/", ".ci/", ".config/",
                "changelogs/fragments/", "scripts/engine_catalog_lib/")
# Every playbook the README and docs run by name from the installed collection.
PLAYBOOKS = ("site", "serving", "gateway", "monitoring", "status", "pin", "rollback", "show_launch", "undeploy",
             "benchmark", "tune")
# The lab's gateway master key (inventories/lab/group_vars/gateway.yml): in no shipped file.
with open(os.path.join(ROOT, "inventories", "lab", "group_vars", "gateway.yml"), encoding="utf-8") as _handle:
    LAB_MASTER_KEY = yaml.safe_load(_handle)["gateway_master_key"]
BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tarball built from a copy of the working tree with the lab's and the tools' state planted in it."""
    tmp_path = tmp_path_factory.mktemp("galaxy-build")
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
        build = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out)],
                               cwd=src, capture_output=True, text=True, timeout=300, check=False)
    finally:
        sock.close()
    assert build.returncode == 0, build.stdout + build.stderr
    tarballs = os.listdir(out)
    assert tarballs == ["inferops-serving-0.1.0.tar.gz"]
    return {"files": files, "tarball": out / tarballs[0]}


def test_the_built_collection_ships_no_key_no_lab_state_and_only_collection_content(built):
    files = built["files"]
    with tarfile.open(built["tarball"]) as tar:
        members = tar.getmembers()
        names = {m.name for m in members if m.isfile()}
        contents = b"".join(tar.extractfile(m).read() for m in members if m.isfile())
    assert KEY_BODY.encode() not in contents
    assert ("BEGIN PGP " + "PRIVATE").encode() not in contents  # (split so this file does not match)
    assert LAB_MASTER_KEY.encode() not in contents
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
    # ... which leaves what a user runs and reads: no lab inventory, no tooling, ...
    assert {name.split("/")[0] for name in names} <= SHIPPED_TOP, sorted({n.split("/")[0] for n in names} - SHIPPED_TOP)
    assert not names & TOOLING_FILES, sorted(names & TOOLING_FILES)
    assert not [name for name in names if name.startswith(TOOLING_DIRS)]
    assert {name for name in names if name.startswith("scripts/")} == RUNTIME_SCRIPTS
    # ... and the collection's content is all there.
    expected = {f for f in files
                if f.split("/")[0] in ("plugins", "roles", "playbooks", "profiles", "data", "meta")
                or f.startswith(("inventories/example/", "inventories/example-aws/"))
                or (f.startswith("docs/") and not f.startswith("docs/dev/"))}
    assert expected and expected <= names, sorted(expected - names)
    assert {"README.md", "COPYING", "CHANGELOG.rst", "changelogs/changelog.yaml", "requirements-loadgen.txt",
            "plugins/plugin_utils/engine_catalog/vllm-0.17.0.json.gz"} | RUNTIME_SCRIPTS <= names


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """The tarball installed offline into an empty collections path, and how to run ansible there: from an
    empty directory, with no ansible.cfg of the repository (ANSIBLE_CONFIG an empty file), the
    collections path holding only it (community.docker from the venv's ansible package)."""
    where = tmp_path_factory.mktemp("galaxy-install")
    config = where / "ansible.cfg"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    # Where the caller's core finds community.docker when its venv does not ship it (the lowest-core
    # check passes the pinned ansible package's collections), never the repository's own link.
    bundled = [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(":")
               if p and os.path.realpath(p) != os.path.realpath(os.path.join(ROOT, ".collections"))]
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=":".join([str(where / "collections")] + bundled),
               ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", HOME=str(where))
    install = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps",
                              "-p", str(where / "collections"), str(built["tarball"])], cwd=where, env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    root = where / "collections" / "ansible_collections" / "inferops" / "serving"
    assert (root / "MANIFEST.json").is_file()
    inventory = where / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "children": {"serving": {"children": {"spark": {"hosts": {"spark-01": {}}}, "g7e": {"hosts": {"g7e-01": {}}}}},
                     "gateway": {"hosts": {"gw-01": {}}}, "monitoring": {"hosts": {"mon-01": {}}}}}}))

    def playbook(*args):
        return subprocess.run([os.path.join(BIN, "ansible-playbook")] + list(args), cwd=where, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    return {"root": root, "inventory": str(inventory), "playbook": playbook}


def plays_and_roles(listing):
    """``--list-tasks`` output as {play name: the roles whose tasks it lists}, in play order."""
    plays, current = {}, None
    for line in listing.splitlines():
        play = re.match(r"\s+play #\d+ \(([^)]*)\): (.*?)\tTAGS", line)
        if play:
            current = plays.setdefault(play.group(2), {"hosts": play.group(1), "roles": set()})
            continue
        task = re.match(r"\s+inferops\.serving\.(\w+) : ", line)
        if task and current is not None:
            current["roles"].add(task.group(1))
    return plays


def test_the_installed_site_playbook_is_the_whole_fleet(installed):
    """inferops.serving.site from the installed copy: the serving hosts, then the gateway (which puts the
    hosts the run proved back in routing), then monitoring, each play on its own group."""
    result = installed["playbook"]("-i", installed["inventory"], "inferops.serving.site", "--list-tasks")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "playbook: %s" % (installed["root"] / "playbooks" / "site.yml") in result.stdout
    plays = plays_and_roles(result.stdout)
    assert list(plays) == ["Serve the tuned profiles", "Summarise the fleet", "Plan the deployments the gateway fronts",
                           "Run the gateway in front of the serving fleet", "Summarise the gateway",
                           "Plan the serving hosts and run node_exporter on them", "Run Prometheus and Alertmanager"]
    serving = plays["Serve the tuned profiles"]
    assert serving["hosts"] == "serving"
    assert {"preflight", "container_toolkit", "model_cache", "server", "watchdog"} <= serving["roles"]
    gateway = plays["Run the gateway in front of the serving fleet"]
    assert gateway["hosts"] == "gw-01" and "gateway" in gateway["roles"]
    assert "Put the serving hosts this run proved back in routing" in result.stdout
    assert plays["Plan the serving hosts and run node_exporter on them"]["roles"] == {"monitoring"}
    monitoring = plays["Run Prometheus and Alertmanager"]
    assert monitoring["hosts"] == "monitoring" and "monitoring" in monitoring["roles"]


def test_the_repository_site_yml_is_the_same_converge():
    """The repository's site.yml imports the installed collection's site playbook and nothing else, and
    that imports the serving, gateway and monitoring playbooks."""
    with open(os.path.join(ROOT, "site.yml"), encoding="utf-8") as handle:
        root_site = yaml.safe_load(handle)
    assert [play.get("ansible.builtin.import_playbook") for play in root_site] == ["playbooks/site.yml"]
    with open(os.path.join(ROOT, "playbooks", "site.yml"), encoding="utf-8") as handle:
        site = yaml.safe_load(handle)
    assert [play.get("ansible.builtin.import_playbook") for play in site] == ["serving.yml", "gateway.yml",
                                                                              "monitoring.yml"]


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_every_documented_playbook_runs_by_its_fqcn_from_the_installed_copy(installed, name):
    result = installed["playbook"]("-i", installed["inventory"], "inferops.serving." + name, "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "playbook: %s" % (installed["root"] / "playbooks" / (name + ".yml")) in result.stdout


def test_show_launch_renders_a_profile_from_the_installed_copy_alone(installed):
    """No host, no inventory: the installed copy's profiles, engine catalog (the lint) and known-bad data."""
    result = installed["playbook"]("inferops.serving.show_launch", "-e", "profile=gb10-nvfp4-mtp-latency")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "--moe-backend marlin" in result.stdout and "docker run" in result.stdout


def test_the_benchmark_roles_scripts_run_from_the_installed_copy(installed):
    """roles/benchmark runs <collection>/scripts/run-loadgen (with loadgen-env's python): it imports the
    collection from the installed copy's collections path, not a working tree's .collections link."""
    result = subprocess.run([sys.executable, str(installed["root"] / "scripts" / "run-loadgen"), "plot", "--help"],
                            cwd=installed["root"].parents[2], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--summary" in result.stdout
    assert os.access(installed["root"] / "scripts" / "loadgen-env", os.X_OK)
    assert (installed["root"] / "requirements-loadgen.txt").is_file()


def galaxy_version():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        meta = yaml.safe_load(handle)
    return meta["version"], meta["dependencies"]


def install_local(requirements, cwd, dest):
    """``ansible-galaxy collection install -r`` of the entries of ``requirements`` that name a path (a
    directory or a tarball), offline and from ``cwd`` as a user or the EE's galaxy stage runs it."""
    local = os.path.join(dest, "local-requirements.yml")
    os.makedirs(dest, exist_ok=True)
    with open(local, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"collections": [c for c in requirements if c.get("type") in ("dir", "file")]}, handle)
    config = os.path.join(dest, "ansible.cfg")
    open(config, "w").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=config, HOME=dest)
    result = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps",
                             "-r", local, "-p", os.path.join(dest, "collections")], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return os.path.join(dest, "collections", "ansible_collections", "inferops", "serving")


def test_requirements_yml_installs_this_checkout_and_its_dependencies(tmp_path):
    """The README's ``ansible-galaxy collection install -r requirements.yml`` (from the repository's root):
    inferops.serving from the checkout, built as the tarball is (no lab inventory, no tooling), and
    the dependencies galaxy.yml declares, at the same versions."""
    with open(os.path.join(ROOT, "requirements.yml"), encoding="utf-8") as handle:
        requirements = yaml.safe_load(handle)["collections"]
    version, dependencies = galaxy_version()
    assert {c["name"]: c.get("version") for c in requirements if c.get("type") is None} == dependencies
    root = install_local(requirements, ROOT, str(tmp_path))
    with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as handle:
        assert json.load(handle)["collection_info"]["version"] == version
    assert os.path.isfile(os.path.join(root, "playbooks", "site.yml"))
    for path in ("inventories/lab", "tests", "ansible.cfg", "Makefile", "scripts/check-publish"):
        assert not os.path.exists(os.path.join(root, path)), path


def test_the_execution_environment_installs_the_built_tarball_and_the_aws_inventory_needs(built, tmp_path):
    """docs/execution-environment.yml: ansible-builder copies ``additional_build_files`` into its context's
    _build/ (the galaxy stage's /build, its working directory), so the tarball's requirement must name
    that copy; it is the tarball of galaxy.yml's version, and installs from there. amazon.aws and
    boto3/botocore are in for inventories/example-aws (its plugin: amazon.aws.aws_ec2)."""
    with open(os.path.join(ROOT, "docs", "execution-environment.yml"), encoding="utf-8") as handle:
        ee = yaml.safe_load(handle)
    version, dependencies = galaxy_version()
    tarball = "inferops-serving-%s.tar.gz" % version
    (copied,) = ee["additional_build_files"]
    assert os.path.basename(copied["src"]) == tarball
    # src is relative to the definition: the repository's dist/ (collection build --output-path dist).
    assert os.path.normpath(os.path.join(ROOT, "docs", copied["src"])) == os.path.join(ROOT, "dist", tarball)
    collections = ee["dependencies"]["galaxy"]["collections"]
    assert [c["name"] for c in collections if c.get("type") == "file"] == [copied["dest"] + "/" + tarball]
    named = {c["name"]: c.get("version") for c in collections if c.get("type") is None}
    assert dependencies.items() <= named.items() and "amazon.aws" in named
    with open(os.path.join(ROOT, "inventories", "example-aws", "g7e.aws_ec2.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["plugin"].startswith("amazon.aws.")
    assert {re.split(r"[<>=!~ ]", p)[0] for p in ee["dependencies"]["python"]} >= {"boto3", "botocore"}
    # The galaxy stage, offline: /build holds <dest>/<tarball>.
    build = tmp_path / "build"
    os.makedirs(build / copied["dest"])
    shutil.copy(built["tarball"], build / copied["dest"] / tarball)
    root = install_local(collections, str(build), str(tmp_path / "installed"))
    assert os.path.isfile(os.path.join(root, "playbooks", "site.yml"))
