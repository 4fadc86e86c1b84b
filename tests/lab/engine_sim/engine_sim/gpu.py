# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulated GPU, read the way the lab's NVIDIA toolkit double exposes it: nvidia-smi."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

QUERY = [
    "nvidia-smi",
    "--query-gpu=index,name,compute_cap,memory.total",
    "--format=csv,noheader,nounits",
]

# GB10 is unified memory: nvidia-smi reports no memory, the engines see the system memory.
GB10_UNIFIED_MEMORY_MIB = 124610  # ~121.7 GiB


class NoGpuError(RuntimeError):
    """nvidia-smi is missing or failed: the container was started without GPUs."""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    compute_cap: str  # "12.1"
    memory_total_mib: int | None  # None when nvidia-smi prints [N/A] (GB10)

    @property
    def capability(self) -> tuple[int, int]:
        major, minor = (self.compute_cap.split(".", 1) + ["0"])[:2]
        return int(major), int(minor or 0)

    @property
    def sm(self) -> int:
        major, minor = self.capability
        return major * 10 + minor

    @property
    def unified_memory(self) -> bool:
        return self.memory_total_mib is None

    @property
    def total_gib(self) -> float:
        mib = GB10_UNIFIED_MEMORY_MIB if self.memory_total_mib is None else self.memory_total_mib
        return mib / 1024.0


def parse_query(text: str) -> list[Gpu]:
    """Parse ``--format=csv,noheader,nounits`` rows of index,name,compute_cap,memory.total."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 4:
            raise ValueError(f"unexpected nvidia-smi row: {line!r}")
        index, name, compute_cap, memory = fields
        memory_mib = None if memory.startswith("[") else int(float(memory))
        gpus.append(Gpu(int(index), name, compute_cap, memory_mib))
    return gpus


def query_gpus() -> list[Gpu]:
    """Ask nvidia-smi; raise NoGpuError when it is absent, fails or lists nothing."""
    if shutil.which("nvidia-smi") is None:
        raise NoGpuError("nvidia-smi not found")
    try:
        result = subprocess.run(QUERY, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NoGpuError(str(exc)) from exc
    if result.returncode != 0:
        raise NoGpuError(result.stderr.strip() or f"nvidia-smi exited {result.returncode}")
    gpus = parse_query(result.stdout)
    if not gpus:
        raise NoGpuError("nvidia-smi listed no GPU")
    return gpus
