# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine version strings (``0.19.2rc1.dev134``, ``0.17.1``, ``0.5.6.post2``) and comparisons.

A pre-release or nightly counts as its release number: ``0.19.2rc1.dev134`` is treated as
0.19.2 for every version boundary (the simulator's boundaries are all ``x.y.0`` releases).
"""
from __future__ import annotations

import re

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def release(version: str) -> tuple[int, int, int]:
    """Return the (major, minor, patch) release tuple of an engine version string."""
    match = _VERSION_RE.match(version.strip())
    if not match:
        raise ValueError(f"not an engine version: {version!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def at_least(version: str, floor: str) -> bool:
    """True when ``version`` is at or after release ``floor``."""
    return release(version) >= release(floor)


def before(version: str, ceiling: str) -> bool:
    """True when ``version`` is older than release ``ceiling``."""
    return release(version) < release(ceiling)


def full_version(engine: str, version: str) -> str:
    """The version string the engine prints (nightlies carry a local ``+g<sha>`` part)."""
    if engine == "vllm" and ".dev" in version and "+" not in version:
        return version + "+gfe9c3d6c5"
    return version
