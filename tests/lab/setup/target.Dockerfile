# SPDX-License-Identifier: GPL-3.0-or-later
# The molecule target host image: the debootstrapped OS (systemd, python3, docker.io as DGX OS and
# the AWS DLAMI ship it) plus the NVIDIA driver's user-space as the lab simulates it.
# Build context: tests/lab/toolkit.
ARG OS_IMAGE=inferops-lab/target-os:bookworm
FROM ${OS_IMAGE}
# Driver double: the real driver ships nvidia-smi in /usr/bin; the container toolkit hook
# double injects this same file into --gpus containers.
COPY src/nvidia-smi /usr/bin/nvidia-smi
# Which GPUs are "plugged in": `set-hardware gb10|rtx-pro-6000-x8|none` (none by default, so a
# target without it behaves as a host whose driver cannot reach a GPU).
COPY set-hardware /usr/local/sbin/set-hardware
# Debian has no `python`: point the doubles' `#!/usr/bin/env python` at python3.
RUN sed -i '1s|^#!/usr/bin/env python$|#!/usr/bin/python3|' /usr/bin/nvidia-smi /usr/local/sbin/set-hardware
# The lab's speed-up of every task on a target (not on a real host): Ansible's module code
# compiled once per source, not once per task (inferops_lab_pyc.py says how and why), loaded by
# a .pth file of the interpreter's site-packages.
COPY inferops_lab_pyc.py /usr/local/lib/python3.11/dist-packages/inferops_lab_pyc.py
RUN echo 'import inferops_lab_pyc' > /usr/local/lib/python3.11/dist-packages/inferops_lab_pyc.pth \
    && python3 -c 'import zipimport, inferops_lab_pyc; assert zipimport._compile_source is inferops_lab_pyc.cached_compile'
STOPSIGNAL SIGRTMIN+3
CMD ["/lib/systemd/systemd"]
