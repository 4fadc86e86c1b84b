# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/model_cache across two lab hosts (issue 24): lab-spark stages a revision from the lab's Hub
stand-in, lab-g7e copies it from lab-spark with rsync over SSH (model_cache_source) and verifies it
itself, with the lock's manifest, making no request to the Hub stand-in (its request log, which
tests/lab/lab.sh writes to .lab/log/hub-requests.jsonl, does not grow).

The hosts' serving caches are not touched: both stage inferops-lab/tiny-chat into a directory of
this test (removed at the end). The SSH between them is a real sshd on lab-spark (openssh-server is
in the target image, its unit masked) listening on 127.0.0.1:8198 with a key made for this test:
the targets share the machine's network, so the port is one of the lab's (tests/lab/README.md).

Then lab-spark's own serving cache is damaged three ways (a flipped byte, a truncated file, an entry
linked to a copy outside the cache), one at a time: site.yml refuses each before the server role
runs, naming the file, and the running container stays; the damage is repaired and a converge
verifies the cache again.
"""
from __future__ import annotations

import json
import os
import urllib.request

import pytest
from ansible_collections.inferops.serving.plugins.module_utils._model_cache import manifest_from_info

import labkit

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab_fleet")]  # one pytest-xdist worker: inventories/lab's hosts

INVENTORY = os.path.join(labkit.ROOT, "inventories", "lab")
SOURCE, COPY = "lab-spark", "lab-g7e"
MODEL = "inferops-lab/tiny-chat"
COMMIT = "45291e135b1f7baf20b0369dffb1548912a0c868"  # its first commit (tests/lab/hub/hub_standin.py --list)
HUB = "http://127.0.0.1:5090"
HUB_LOG = os.path.join(os.environ.get("LAB_DIR", os.path.join(labkit.ROOT, ".lab")), "log", "hub-requests.jsonl")
WORK = "/var/tmp/inferops-peer-copy-test"
SSH_PORT = 8198
SSH_DIR = "/etc/inferops-peer-copy-test"  # the sshd's authorized key and pid file, on lab-spark
KEY = "/root/.ssh/inferops_peer_copy_test"
RSH = ("ssh -p %d -i %s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
       % (SSH_PORT, KEY))
FOLDER = "models--inferops-lab--tiny-chat"

PLAYBOOK = """---
- name: Stage or copy the toy model
  hosts: "{{ target }}"
  gather_facts: false
  roles:
    - role: inferops.serving.model_cache
      vars:
        model_cache_model: %(model)s
        model_cache_revision: "%(commit)s"
        model_cache_reserve_bytes: 0
        model_cache_progress_interval: 1
        model_cache_timeout: 300
"""


def hub_requests():
    """The stand-in's requests for this test's model. Other tests of other xdist groups stage other
    models from the same stand-in meanwhile (a request for this model's files names it first)."""
    with open(HUB_LOG, encoding="utf-8") as handle:
        return sum(1 for line in handle if MODEL in json.loads(line)["path"])


@pytest.fixture
def peers(tmp_path):
    labkit.playbook(INVENTORY, os.path.join(labkit.LAB, "fleet.yml"))
    pub = labkit.exec_on(COPY, "mkdir -p /root/.ssh && (test -e {0} || ssh-keygen -q -t ed25519 -N '' -f {0}) "
                               "&& cat {0}.pub".format(KEY)).stdout.strip()
    # The key in a root-only directory: sshd's StrictModes refuses one under /var/tmp (mode 1777).
    labkit.exec_on(SOURCE, "mkdir -p /run/sshd %s && install -d -m 700 %s && ssh-keygen -A && "
                           "echo '%s' >%s/authorized_keys && chmod 600 %s/authorized_keys && "
                           "/usr/sbin/sshd -p %d -o ListenAddress=127.0.0.1 -o PasswordAuthentication=no "
                           "-o AuthorizedKeysFile=%s/authorized_keys -o PidFile=%s/sshd.pid"
                   % (WORK, SSH_DIR, pub, SSH_DIR, SSH_DIR, SSH_PORT, SSH_DIR, SSH_DIR))
    try:
        yield tmp_path
    finally:
        labkit.exec_on(SOURCE, "test -e {1}/sshd.pid && kill $(cat {1}/sshd.pid); rm -rf {0} {1}".format(WORK, SSH_DIR),
                       check=False)
        labkit.exec_on(COPY, "rm -rf {0} {1} {1}.pub".format(WORK, KEY), check=False)


def converge(tmp_path, host, *extra):
    playbook = tmp_path / "model_cache.yml"
    playbook.write_text(PLAYBOOK % {"model": MODEL, "commit": COMMIT})
    return labkit.playbook(INVENTORY, str(playbook), "-e", "target=%s" % host, *extra)


def test_a_peer_copies_over_ssh_and_verifies_without_the_hub(peers):
    tmp_path = peers
    converge(tmp_path, SOURCE, "-e", "model_cache_dir=%s/source" % WORK)  # from the Hub stand-in
    with urllib.request.urlopen("%s/api/models/%s/revision/%s?blobs=true" % (HUB, MODEL, COMMIT), timeout=10) as answer:
        manifest = manifest_from_info(json.loads(answer.read()), COMMIT)
    # The lock's manifest, the copy's cache and its peer (a JSON file: the rsh has spaces).
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps({
        "inferops_serving_image_lock": {"models": {MODEL: {"revision": COMMIT, "manifest": manifest}}},
        "model_cache_dir": "%s/copy" % WORK, "model_cache_source": "root@127.0.0.1:%s/source/hub" % WORK,
        "model_cache_source_rsh": RSH}))
    before = hub_requests()
    copy_vars = ["-e", "@%s" % copy]
    result = converge(tmp_path, COPY, *copy_vars)
    assert labkit.recap(result.stdout)[COPY]["changed"] > 0, result.stdout[-3000:]
    assert hub_requests() == before  # the second host asked the Hub stand-in nothing
    folder = "%s/copy/hub/%s" % (WORK, FOLDER)
    marker = json.loads(labkit.exec_on(COPY, "cat %s/.inferops-verified.json" % folder).stdout)
    assert list(marker) == [COMMIT]  # verified on this host
    weights = labkit.exec_on(COPY, "readlink -f %s/snapshots/%s/model.safetensors" % (folder, COMMIT)).stdout.strip()
    assert weights.startswith(folder + "/blobs/")  # its own blob
    again = converge(tmp_path, COPY, *copy_vars)
    assert labkit.recap(again.stdout)[COPY]["changed"] == 0, again.stdout[-3000:]
    assert hub_requests() == before


# The weights lab-spark serves (inventories/lab/group_vars/spark.yml pins the revision), in the hub
# cache its container mounts (model_cache_dir: the role's default, /root/.cache/huggingface).
SERVED_MODEL = "RedHatAI/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
SERVED_COMMIT = "894b15f2f291691297cc850aa8371c89c18f33b5"
SERVED = "/root/.cache/huggingface/hub/models--RedHatAI--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
SNAPSHOT = "%s/snapshots/%s" % (SERVED, SERVED_COMMIT)
DAMAGE = "/var/tmp/inferops-damage-test"  # outside the cache: the originals, and the links' targets


def refused_unchanged(host, port, before, *expected):
    """site.yml on ``host`` fails naming the damage, and the serving container is the one from before."""
    result = labkit.playbook(INVENTORY, "site.yml", "-l", host, check=False)
    text = labkit.folded(result.stdout)
    assert result.returncode != 0, text[-3000:]
    for part in expected:
        assert part in text, (part, text[-3000:])
    # Refused by the model cache's verification, before the server role's tasks (preflight plans
    # with the server role's resolve entry point; nothing of the server role runs after the refusal).
    verify = "TASK [inferops.serving.model_cache : Verify the staged files against the revision's hashes]"
    assert verify in text, text[-3000:]
    assert "TASK [inferops.serving.server" not in text.split(verify, 1)[1], text[-3000:]
    assert labkit.container(host)["id"] == before
    assert labkit.serving(port, timeout=10)


def test_a_damaged_cache_on_a_serving_host_is_refused_naming_the_file_the_container_untouched():
    """Issue 24 on a serving lab host (the playbook tests of roles/model_cache do the same on this
    machine): one flipped byte, a truncated file and a snapshot entry linked to a copy outside the
    cache are each refused by site.yml before the server role runs, naming the file; the running
    container stays. Each damage is repaired by hand before the next; a converge verifies again."""
    host, port = SOURCE, 8101
    labkit.playbook(INVENTORY, os.path.join(labkit.LAB, "fleet.yml"))
    labkit.playbook(INVENTORY, "site.yml", "-l", host)  # serving, its weights staged and verified
    before = labkit.container(host)["id"]
    blob = labkit.exec_on(host, "readlink -f %s/model.safetensors" % SNAPSHOT).stdout.strip()
    readme_link = labkit.exec_on(host, "readlink %s/README.md" % SNAPSHOT).stdout.strip()
    size = int(labkit.exec_on(host, "stat -c %%s %s" % blob).stdout)
    where = "%s@%s is not the pinned revision in %s: " % (SERVED_MODEL, SERVED_COMMIT, SNAPSHOT)
    labkit.exec_on(host, "rm -rf {0} && mkdir -p {0} && cp -p {1} {0}/model.safetensors".format(DAMAGE, blob))
    try:
        # One flipped byte (the blob rewritten in place: its mtime moves, so the marker no longer vouches).
        labkit.exec_on(host, "python3 -c \"import sys; p = sys.argv[1]; d = bytearray(open(p, 'rb').read()); "
                             "d[200] ^= 1; open(p, 'wb').write(d)\" %s" % blob)
        refused_unchanged(host, port, before, where + "model.safetensors: sha256 ")
        labkit.exec_on(host, "cp %s/model.safetensors %s" % (DAMAGE, blob))
        # A truncated file (a copy or download cut short): both sizes named.
        labkit.exec_on(host, "truncate -s %d %s" % (size // 2, blob))
        refused_unchanged(host, port, before, where + "model.safetensors:", str(size // 2), str(size))
        labkit.exec_on(host, "cp %s/model.safetensors %s" % (DAMAGE, blob))
        # An entry linked to a copy outside the cache (what a copy of links to another tree leaves).
        labkit.exec_on(host, "cp -L {1}/README.md {0}/README.md && ln -sfn {0}/README.md {1}/README.md"
                       .format(DAMAGE, SNAPSHOT))
        refused_unchanged(host, port, before, where + "README.md: a symlink to %s/README.md, outside %s"
                          % (DAMAGE, SERVED))
    finally:
        labkit.exec_on(host, "ln -sfn {2} {1}/README.md; cp {0}/model.safetensors {3}; rm -rf {0}"
                       .format(DAMAGE, SNAPSHOT, readme_link, blob), check=False)
    repaired = labkit.playbook(INVENTORY, "site.yml", "-l", host)  # verified again, nothing else
    assert labkit.recap(repaired.stdout)[host]["failed"] == 0
    assert labkit.container(host)["id"] == before
