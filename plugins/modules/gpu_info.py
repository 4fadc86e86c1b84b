#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_info
short_description: NVIDIA GPU and host memory facts from nvidia-smi and meminfo
version_added: 0.1.0
author: inferops.serving contributors (@inferops)
description:
  - Runs C(nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version
    --format=csv,noheader,nounits) and reads C(MemTotal), C(MemFree), C(MemAvailable) and C(Cached)
    from O(meminfo_path).
  - On unified-memory devices such as the DGX Spark's GB10, C(nvidia-smi) reports no memory
    (C([N/A])); the module returns RV(memory_total_mib=null) and RV(unified_memory=true) there,
    and the host's memory facts are what the GPU can use.
  - With O(memory_fraction) on unified memory it judges whether the engine may claim its share
    now (RV(memory_action)), by the field the engine's start-up check reads (O(memory_reads)), and
    warns when the engine starts although only the page cache stands between the host and that
    share (C(MemFree) short, C(MemAvailable) enough).
  - Fails when C(nvidia-smi) is missing or exits with an error, with its output.
extends_documentation_fragment:
  - inferops.serving._attributes
  - inferops.serving._attributes.INFO_MODULE
  - inferops.serving._attributes.ACTIONGROUP_SERVING
  - inferops.serving._docker
options:
  nvidia_smi:
    description:
      - Name or absolute path of the C(nvidia-smi) executable. A name is looked up on E(PATH)
        and in the usual system directories.
    type: str
    default: nvidia-smi
  meminfo_path:
    description:
      - File in C(/proc/meminfo) format to read host memory from.
      - Tests point this at a simulated file.
    type: path
    default: /proc/meminfo
  memory_fraction:
    description:
      - The share of memory the engine claims at start (C(server_deployment.memory.fraction)).
        On unified memory the module then returns RV(memory_needed_kib) and RV(memory_short).
    type: float
  memory_reads:
    description:
      - The C(/proc/meminfo) field the engine's start-up check compares with its share on unified
        memory (C(server_deployment.memory.reads)). vLLM reads C(MemAvailable) on integrated GPUs;
        CUDA's own free memory (C(cudaMemGetInfo)) is C(MemFree) there, page cache counted as used.
      - The module judges RV(memory_short) by this field and reports both.
    type: str
    choices: [MemAvailable, MemFree]
    default: MemAvailable
  drop_caches:
    description:
      - Whether the page cache is dropped before the engine starts (the server role's
        C(server_drop_caches_before_start)). V(off); V(planned), still to come (check mode
        predicts it, and a host where only the page cache is in the way then starts); V(done), just
        before this reading.
    type: str
    choices: ["off", planned, done]
    default: "off"
  container:
    description:
      - The serving container's name; the module then returns RV(container_running) (from the
        Docker Engine API; false when Docker is not installed or not running).
    type: str
  cache_dir:
    description:
      - A model cache directory (it need not exist yet). The module returns RV(cache_disk), the
        free space of the file system that holds it (of its deepest existing directory).
    type: path
  model:
    description:
      - A Hugging Face model id; with O(cache_dir) the module returns RV(model_cached), whether
        C(<cache_dir>/hub/models--<org>--<name>) exists.
    type: str
notes:
  - The module runs on the target and needs the NVIDIA driver installed there, not the container toolkit.
seealso:
  - name: nvidia-smi documentation
    description: The query fields and their meaning.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Read the GPUs of the host
  inferops.serving.gpu_info:
  register: gpu

- name: Refuse a host without eight GPUs
  ansible.builtin.assert:
    that: gpu.count == 8
    fail_msg: "{{ inventory_hostname }} has {{ gpu.count }} GPUs, the profile needs 8"

- name: Read memory from a simulated meminfo file
  inferops.serving.gpu_info:
    meminfo_path: /opt/lab/meminfo
  register: gpu
"""

RETURN = r"""
gpus:
  description: One entry per GPU, in C(nvidia-smi) order.
  returned: success
  type: list
  elements: dict
  contains:
    index:
      description: GPU index.
      type: int
      sample: 0
    name:
      description: Product name.
      type: str
      sample: NVIDIA RTX PRO 6000 Blackwell Server Edition
    compute_capability:
      description: CUDA compute capability, C(major.minor).
      type: str
      sample: "12.0"
    memory_total_mib:
      description: Dedicated memory in MiB, V(null) when the device reports none (unified memory).
      type: int
      sample: 97887
    driver_version:
      description: NVIDIA driver version.
      type: str
      sample: 580.126.09
  sample:
    - index: 0
      name: NVIDIA GB10
      compute_capability: "12.1"
      memory_total_mib: null
      driver_version: 580.95.05
count:
  description: Number of GPUs.
  returned: success
  type: int
  sample: 8
name:
  description: Product name shared by all GPUs, V(null) when there are none or they differ.
  returned: success
  type: str
  sample: NVIDIA GB10
compute_capability:
  description: Compute capability shared by all GPUs, V(null) when there are none or they differ.
  returned: success
  type: str
  sample: "12.1"
memory_total_mib:
  description: Dedicated memory per GPU in MiB shared by all GPUs, V(null) on unified memory or when they differ.
  returned: success
  type: int
  sample: 97887
driver_version:
  description: Driver version shared by all GPUs.
  returned: success
  type: str
  sample: 580.126.09
unified_memory:
  description: V(true) when a GPU reports no dedicated memory (GB10); its memory is the host's.
  returned: success
  type: bool
  sample: true
mem_total_kib:
  description: C(MemTotal) of O(meminfo_path) in KiB.
  returned: success
  type: int
  sample: 127506252
mem_available_kib:
  description: C(MemAvailable) of O(meminfo_path) in KiB.
  returned: success
  type: int
  sample: 121334560
mem_free_kib:
  description:
    - C(MemFree) of O(meminfo_path) in KiB. On unified memory this is CUDA's free memory
      (C(cudaMemGetInfo)), the page cache counted as used.
  returned: success
  type: int
  sample: 43537940
cached_kib:
  description: C(Cached) (the page cache) of O(meminfo_path) in KiB, V(null) when the file has none.
  returned: success
  type: int
  sample: 76168724
memory_fraction:
  description: O(memory_fraction) as given.
  returned: success
  type: float
  sample: 0.9
memory_needed_kib:
  description:
    - O(memory_fraction) x C(MemTotal) on unified memory, what the engine claims at start; null
      on discrete GPUs or without O(memory_fraction).
  returned: success
  type: int
  sample: 114755626
memory_short:
  description:
    - V(true) when the engine must not start now on unified memory (RV(memory_action) V(wait) or
      V(refuse)).
  returned: success
  type: bool
  sample: false
memory_reads:
  description: O(memory_reads) as given.
  returned: success
  type: str
  sample: MemAvailable
memory_cache_bound:
  description:
    - V(true) when only the page cache stands between the host and the engine's share
      (C(MemFree) < RV(memory_needed_kib) <= C(MemAvailable)).
  returned: success
  type: bool
  sample: false
memory_action:
  description:
    - V(start); V(drop_caches) (cache-bound, the planned drop frees it); V(wait) (C(MemAvailable)
      lacks the share, so memory is held; stop what holds it and wait); V(refuse) (cache-bound, the
      engine reads C(MemFree) and no drop helps or is configured). Always V(start) on discrete GPUs.
  returned: success
  type: str
  sample: start
memory_message:
  description:
    - Both numbers, the engine's share and what to do, in words; V(null) on discrete GPUs or
      without O(memory_fraction). It names C(server_drop_caches_before_start) when only the page
      cache is in the way.
  returned: success
  type: str
  sample: "MemFree 103.2 GiB covers the engine's share 0.9 x MemTotal 121.7 GiB = 109.5 GiB (MemAvailable 115.8 GiB)"
cache_disk:
  description: The file system that holds O(cache_dir) (from C(statvfs) of its deepest existing directory).
  returned: when O(cache_dir) is given
  type: dict
  contains:
    path:
      description: The deepest existing directory of O(cache_dir).
      type: str
      sample: /root/.cache
    free_kib:
      description: Space available to unprivileged users there, in KiB.
      type: int
      sample: 523188224
container_running:
  description: Whether O(container) exists and runs (its memory is freed when it is replaced).
  returned: when O(container) is given
  type: bool
  sample: true
model_cached:
  description: Whether O(model) is in the Hugging Face cache under O(cache_dir).
  returned: when O(cache_dir) and O(model) are given
  type: bool
  sample: true
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.serving.plugins.module_utils._docker_api import DOCKER_COMMON_ARGS, DockerClient, DockerError

from ansible_collections.inferops.serving.plugins.module_utils._gpu import (
    NVIDIA_SMI_ARGS,
    GpuParseError,
    gpu_facts,
    existing_ancestor,
    memory_claim,
    model_cache_path,
    parse_meminfo,
    parse_nvidia_smi,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            meminfo_path=dict(type="path", default="/proc/meminfo"),
            memory_fraction=dict(type="float"),
            memory_reads=dict(type="str", default="MemAvailable", choices=["MemAvailable", "MemFree"]),
            drop_caches=dict(type="str", default="off", choices=["off", "planned", "done"]),
            cache_dir=dict(type="path"),
            model=dict(type="str"),
            container=dict(type="str"),
            **DOCKER_COMMON_ARGS
        ),
        supports_check_mode=True,
    )
    nvidia_smi = module.params["nvidia_smi"]
    if os.path.isabs(nvidia_smi):
        executable = nvidia_smi if os.access(nvidia_smi, os.X_OK) else None
    else:
        executable = module.get_bin_path(nvidia_smi)
    if not executable:
        module.fail_json(msg="%s not found on this host: install the NVIDIA driver (it ships nvidia-smi) "
                             "or give its path (this module's nvidia_smi option; preflight_nvidia_smi in the preflight "
                             "role)" % nvidia_smi)

    rc, out, err = module.run_command([executable] + NVIDIA_SMI_ARGS)
    if rc != 0:
        module.fail_json(msg="%s failed (rc %d): %s. Check that the NVIDIA driver is loaded "
                             "(a driver/library version mismatch needs a reboot)"
                             % (executable, rc, (err or out).strip() or "no output"),
                         rc=rc, stdout=out, stderr=err)
    try:
        gpus = parse_nvidia_smi(out)
    except GpuParseError as exc:
        module.fail_json(msg="cannot parse the output of %s: %s" % (executable, exc), stdout=out,
                         exception=traceback.format_exc())

    try:
        with open(module.params["meminfo_path"], encoding="utf-8") as handle:
            meminfo = parse_meminfo(handle.read())
    except (OSError, GpuParseError) as exc:
        module.fail_json(msg="cannot read host memory from %s: %s" % (module.params["meminfo_path"], exc),
                         exception=traceback.format_exc())

    facts = gpu_facts(gpus, meminfo)
    try:
        facts.update(memory_claim(facts, module.params["memory_fraction"], module.params["memory_reads"],
                                  module.params["drop_caches"]))
    except GpuParseError as exc:
        module.fail_json(msg="cannot judge unified memory from %s: %s" % (module.params["meminfo_path"], exc))
    if facts["memory_cache_bound"] and facts["memory_action"] == "start":
        # The engine starts, but only the page cache stands between the host and its share.
        module.warn(facts["memory_message"])
    cache_dir = module.params["cache_dir"]
    if cache_dir:
        where = existing_ancestor(cache_dir, os.path.isdir)
        try:
            stat = os.statvfs(where)
        except OSError as exc:
            module.fail_json(msg="cannot measure the free space of %s (holding %s): %s" % (where, cache_dir, exc))
        facts["cache_disk"] = {"path": where, "free_kib": stat.f_bavail * stat.f_frsize // 1024}
        if module.params["model"]:
            facts["model_cached"] = os.path.isdir(model_cache_path(cache_dir, module.params["model"]))
    if module.params["container"]:
        # Memory the serving container holds is freed when it is replaced; Docker not installed
        # or not running yet (a first converge) means nothing runs.
        try:
            state = (DockerClient(module.params["docker_host"], timeout=10.0).inspect(module.params["container"]) or {})
            facts["container_running"] = bool((state.get("State") or {}).get("Running"))
        except DockerError:
            facts["container_running"] = False
    module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
