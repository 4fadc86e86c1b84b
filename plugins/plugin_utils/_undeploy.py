# -*- coding: utf-8 -*-
# Copyright (c) 2026, inferops.serving contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this is not a public API of the collection; it may change without notice.
"""What removing a deployment removes (the server role's ``undeploy`` entry point).

Everything the role made for this container: the watchdog instance and the start-with-Docker
instance (stopped and disabled first, so neither starts the container again), the container and
its staged successor, the secret env file, the launch script, the watchdog's configuration,
state and textfile metrics, and the host's last known-good record. The files every deployment
on the host shares (the two template units, the watchdog program) go with the last deployment
only. Kept: the model cache and the engine's compile cache (data a re-converge would download or
compile again for minutes), the image, and the failure logs (evidence).
"""
from __future__ import annotations

import posixpath

# The template units (the server and watchdog roles' templates/etc/systemd/system/) and the
# watchdog's program files (the program and the host libraries it imports: the plan's
# watchdog.files and the watchdog role's program), which every deployment on a host shares.
# tests/unit/plugins/plugin_utils/test_undeploy.py keeps this list and the files installed the same.
SHARED_UNITS = ("/etc/systemd/system/inferops-serving@.service", "/etc/systemd/system/inferops-watchdog@.service")
SHARED_PROGRAMS = ("inferops_watchdog.py", "inferops_unified_memory.py", "inferops_docker_api.py",
                   "inferops_prometheus.py", "inferops_bounded_http.py", "inferops_host_files.py")


def undeploy_parts(deployment):
    """``{services, containers, files, shared_files}`` to remove ``deployment`` from its host: the
    plan's ``undeploy``. ``files`` and ``shared_files`` are ``{path, state: absent}`` entries for
    inferops.serving.host_files; the undeploy entry point removes the shared files too only when
    no launch script of another deployment is left in the script directory (the host's last
    deployment goes)."""
    name = deployment["container"]
    options = deployment.get("options") or {}
    watchdog = deployment.get("watchdog") or {}
    script_path = deployment["script_path"]
    script_dir = options.get("script_dir") or posixpath.dirname(script_path)
    env_file = deployment.get("env_file") or (
        "%s/%s.env" % (options["config_dir"].rstrip("/"), name) if options.get("config_dir") else None)
    paths = [env_file, script_path, watchdog.get("config_file"), watchdog.get("state_file"), watchdog.get("textfile"),
             deployment.get("state_file")]
    shared = list(SHARED_UNITS) + ["%s/%s" % (script_dir.rstrip("/"), program) for program in SHARED_PROGRAMS]
    return {
        "services": [service for service in (watchdog.get("service"), "inferops-serving@%s.service" % name) if service],
        "containers": [container for container in (name, deployment.get("staged_container")) if container],
        "files": [{"path": path, "state": "absent"} for path in paths if path],
        "shared_files": [{"path": path, "state": "absent"} for path in shared],
    }
