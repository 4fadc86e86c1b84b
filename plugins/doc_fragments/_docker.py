# -*- coding: utf-8 -*-
# Copyright: inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
from __future__ import annotations


class ModuleDocFragment:
    """The Docker options of the modules that ask the Docker Engine API through
    ``module_utils._docker_api`` (their argument specs: ``DOCKER_COMMON_ARGS`` and
    ``DOCKER_TIMEOUT_ARGS`` there). docs/dev/docker.md says which path a Docker task takes."""

    # Every module that talks to the Docker daemon.
    DOCUMENTATION = r"""
options:
  docker_host:
    description:
      - The Docker daemon to ask, C(unix://<socket path>) or C(tcp://<host>:<port>) without TLS.
      - The server role passes C(server_docker_host).
    type: str
    default: unix:///var/run/docker.sock
notes:
  - Needs only Python on the target, no Docker SDK; the module speaks the Docker Engine API itself (over its socket).
"""

    # The modules whose calls to the daemon are bounded by one timeout.
    TIMEOUT = r"""
options:
  docker_timeout:
    description:
      - Seconds each call to the Docker daemon may take.
      - Creating or removing a container copies or deletes its files, which takes minutes on some
        storage drivers (vfs) and a busy disk. The server role passes C(server_docker_timeout).
    type: int
    default: 60
"""
