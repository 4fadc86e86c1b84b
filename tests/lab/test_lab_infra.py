# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's own infrastructure: the toolkit test double (no Docker needed) and, marked ``lab``,
the whole GPU path on a throwaway systemd target container: signed apt repo -> pinned toolkit
packages -> ``nvidia-ctk runtime configure`` -> nested dockerd restart -> pull by digest from the
lab registry -> ``docker run --gpus all`` sees the simulated GPU."""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid

import pytest
import yaml

LAB = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(LAB))
TOOLKIT = os.path.join(LAB, "toolkit")
NVIDIA_SMI = os.path.join(TOOLKIT, "src", "nvidia-smi")
SET_HARDWARE = os.path.join(TOOLKIT, "set-hardware")
NVIDIA_CTK = os.path.join(TOOLKIT, "src", "nvidia-ctk")
REGISTRY = "127.0.0.1:5000"
APT_URL = f"http://127.0.0.1:{os.environ.get('LAB_APT_PORT', '5080')}/libnvidia-container"
DOCKER = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"
TOOLKIT_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base",
                    "libnvidia-container-tools", "libnvidia-container1")
# The lab's target options (tests/lab/README.md, the same as molecule's platforms): a systemd host with a
# nested Docker engine, unprivileged; privileged: true fails on these machines.
TARGET_OPTIONS = [
    "--network", "host", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN",
    "--security-opt", "apparmor=unconfined", "--security-opt", "seccomp=unconfined",
    "--cgroupns", "host", "--tmpfs", "/run", "--tmpfs", "/run/lock",
    "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
]


def run(args, check=True, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture()
def hardware(tmp_path, monkeypatch):
    """Simulated hardware under a temporary root; nvidia-smi and nvidia-ctk read it."""
    def choose(profile):
        run([SET_HARDWARE, profile, "--root", str(tmp_path)])
        return tmp_path / "etc" / "inferops-lab"
    monkeypatch.setenv("INFEROPS_LAB_GPU_JSON", str(tmp_path / "etc" / "inferops-lab" / "gpu.json"))
    return choose


# --- the doubles on their own ---------------------------------------------------------------

def test_nvidia_smi_gb10_reports_unified_memory_as_not_available(hardware):
    hardware("gb10")
    out = run([NVIDIA_SMI, "--query-gpu=name,compute_cap,memory.total", "--format=csv"]).stdout
    assert out == "name, compute_cap, memory.total [MiB]\nNVIDIA GB10, 12.1, [N/A]\n"
    table = run([NVIDIA_SMI]).stdout
    assert "| Not Supported          |" in table and "Driver Version: 580.95.05" in table


def test_nvidia_smi_rtx_pro_6000_x8_query_formats(hardware):
    hardware("rtx-pro-6000-x8")
    out = run([NVIDIA_SMI, "--query-gpu=index,name,compute_cap,memory.total,driver_version,count",
               "--format=csv,noheader,nounits"]).stdout.splitlines()
    assert len(out) == 8
    assert out[7] == "7, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887, 580.126.09, 8"
    listed = run([NVIDIA_SMI, "-L"]).stdout.splitlines()
    assert listed[0].startswith("GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-")
    bad = run([NVIDIA_SMI, "--query-gpu=bogus", "--format=csv"], check=False)
    assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout


def test_nvidia_smi_without_hardware_fails_like_no_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("INFEROPS_LAB_GPU_JSON", str(tmp_path / "absent.json"))
    result = run([NVIDIA_SMI], check=False)
    assert result.returncode == 9
    assert result.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate")


def test_set_hardware_writes_gb10_meminfo(hardware):
    etc = hardware("gb10")
    meminfo = dict(line.split(":", 1) for line in (etc / "meminfo").read_text().splitlines())
    total_gib = int(meminfo["MemTotal"].split()[0]) / 1024 / 1024
    assert 121.4 < total_gib < 121.8
    assert int(meminfo["MemAvailable"].split()[0]) < int(meminfo["MemTotal"].split()[0])
    again = run([SET_HARDWARE, "gb10", "--root", str(etc.parent.parent)]).stdout
    assert "(unchanged)" in again


def test_nvidia_ctk_runtime_configure_merges_daemon_json(tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text('{"storage-driver": "vfs", "log-opts": {"max-size": "10m"}}')
    run([NVIDIA_CTK, "runtime", "configure", "--runtime=docker", f"--config={daemon}"])
    config = json.loads(daemon.read_text())
    assert config == {"storage-driver": "vfs", "log-opts": {"max-size": "10m"},
                      "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}
    run([NVIDIA_CTK, "runtime", "configure", "--runtime=docker", f"--config={daemon}",
         "--set-as-default"])
    assert json.loads(daemon.read_text())["default-runtime"] == "nvidia"
    bad = run([NVIDIA_CTK, "runtime", "configure", "--no-such-flag"], check=False)
    assert bad.returncode == 1 and "flag provided but not defined: -no-such-flag" in bad.stderr


def test_nvidia_ctk_cdi_generate(hardware, tmp_path):
    hardware("rtx-pro-6000-x8")
    spec = tmp_path / "nvidia.yaml"
    run([NVIDIA_CTK, "cdi", "generate", f"--output={spec}"])
    text = spec.read_text()
    assert "kind: nvidia.com/gpu" in text and '- name: "7"' in text and "- name: all" in text


# --- the lab, for real ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab_up():
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root")
    result = subprocess.run([os.path.join(LAB, "lab.sh"), "up"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def registry_digest(ref):
    repo, tag = ref.rsplit(":", 1)
    request = urllib.request.Request(
        f"http://{REGISTRY}/v2/{repo}/manifests/{tag}", method="HEAD",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Docker-Content-Digest"]


@pytest.mark.lab
def test_lab_status_and_signed_repo(lab_up, tmp_path):
    assert run([os.path.join(LAB, "lab.sh"), "status"]).returncode == 0
    with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=10) as response:
        assert response.status == 200
    key = tmp_path / "key.gpg"
    with urllib.request.urlopen(f"{APT_URL}/gpgkey", timeout=10) as response:
        armoured = response.read()
    assert armoured.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    run(["gpg", "--dearmor", "-o", str(key)], input=armoured.decode())
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    with urllib.request.urlopen(f"{APT_URL}/stable/deb/{arch}/InRelease", timeout=10) as response:
        (tmp_path / "InRelease").write_bytes(response.read())
    verified = run(["gpgv", "--keyring", str(key), str(tmp_path / "InRelease")])
    assert "Good signature" in verified.stderr


class Target:
    def __init__(self, name):
        self.name = name

    def __call__(self, script, check=True):
        return run([DOCKER, "exec", self.name, "bash", "-euo", "pipefail", "-c", script], check=check)


@pytest.fixture(scope="module")
def target(lab_up):
    """A throwaway systemd target container, as molecule runs them."""
    name = f"inferops-lab-test-{uuid.uuid4().hex[:8]}"
    run([DOCKER, "run", "-d", "--name", name, "--label", "inferops-lab=test", *TARGET_OPTIONS,
         "inferops-lab/target:bookworm"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = run([DOCKER, "exec", name, "systemctl", "is-system-running"], check=False).stdout.strip()
            engine = run([DOCKER, "exec", name, "docker", "info"], check=False).returncode
            if state in ("running", "degraded") and engine == 0:
                break
            time.sleep(1)
        else:
            pytest.fail(f"target {name} did not boot: systemd {state!r}, nested docker rc {engine}")
        yield Target(name)
    finally:
        run([DOCKER, "rm", "-f", name], check=False)


@pytest.mark.lab
def test_gpu_reaches_a_container_on_a_target(target):
    version = "1.17.8-1"
    pins = " ".join(f"{pkg}={version}" for pkg in TOOLKIT_PACKAGES)
    target(f"""
        curl -fsSL {APT_URL}/gpgkey | gpg --dearmor --yes -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
        echo "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] {APT_URL}/stable/deb/\\$(ARCH) /" \
          > /etc/apt/sources.list.d/nvidia-container-toolkit.list
        apt-get update -o Dir::Etc::sourcelist=- -o Dir::Etc::sourceparts=/etc/apt/sources.list.d
        DEBIAN_FRONTEND=noninteractive apt-get install -y {pins}
    """)
    installed = target("dpkg-query -W -f='${Package} ${Version}\\n' " + " ".join(TOOLKIT_PACKAGES)).stdout
    assert sorted(installed.split("\n")[:-1]) == sorted(f"{p} {version}" for p in TOOLKIT_PACKAGES)
    # The newer version is in the repo: pinning really chose the older one.
    assert "1.18.0-1" in target("apt-cache policy nvidia-container-toolkit").stdout

    target("nvidia-ctk runtime configure --runtime=docker && systemctl restart docker")
    daemon = json.loads(target("cat /etc/docker/daemon.json").stdout)
    assert daemon["storage-driver"] == "vfs" and daemon["bridge"] == "none"
    assert daemon["runtimes"]["nvidia"] == {"args": [], "path": "nvidia-container-runtime"}
    assert "nvidia" in target("docker info --format '{{json .Runtimes}}'").stdout

    image = f"{REGISTRY}/inferops-lab/base@{registry_digest('inferops-lab/base:bookworm')}"
    lock = os.path.join(REPO, "inventories", "lab", "group_vars", "all", "image_lock.yml")
    if os.path.exists(lock):
        with open(lock, encoding="utf-8") as handle:
            images = yaml.safe_load(handle)["inferops_serving_image_lock"]["images"]
        if "vllm/vllm-openai:cu130-nightly" in images:
            image = f"{REGISTRY}/vllm/vllm-openai@" + images["vllm/vllm-openai:cu130-nightly"]["digest"]
    target(f"docker pull -q {image}")

    # No GPU "plugged in": --gpus fails in the hook as with no driver loaded.
    target("set-hardware none")
    failed = target(f"docker run --rm --gpus all --network host --entrypoint nvidia-smi {image}",
                    check=False)
    assert failed.returncode != 0 and "driver not loaded" in failed.stderr

    target("set-hardware gb10")
    query = "--query-gpu=name,compute_cap,memory.total --format=csv,noheader"
    out = target(f"docker run --rm --gpus all --network host --entrypoint nvidia-smi {image} {query}").stdout
    assert out == "NVIDIA GB10, 12.1, [N/A]\n"
    # Through the configured runtime too (--runtime=nvidia, as with default-runtime on a DGX).
    out = target(f"docker run --rm --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all --network host "
                 f"--entrypoint nvidia-smi {image} -L").stdout
    assert out.startswith("GPU 0: NVIDIA GB10 (UUID: GPU-")
    # Without --gpus the container sees no GPU.
    plain = target(f"docker run --rm --network host --entrypoint sh {image} -c "
                   "'command -v nvidia-smi || echo none'").stdout
    assert plain.strip() == "none"
