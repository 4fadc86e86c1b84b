# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a bash launch script's ``docker run`` (the seeds' or ours) into comparable parts."""
from __future__ import annotations

import re
import shlex

# docker run options the seeds and the collection use, with whether they take a value.
DOCKER_OPTIONS = {"-d": False, "--name": True, "--gpus": True, "--ipc": True, "-p": True, "-v": True,
                  "--env": True, "-e": True, "--restart": True, "--log-driver": True, "--log-opt": True,
                  "--label": True, "--network": True, "--env-file": True}


def parse_docker_run(text):
    """``{"options": [(opt, value)], "image": str, "argv": [...]}`` of the script's docker run.

    ``export NAME=value`` lines are substituted into ``${NAME}``; other variables (HF_TOKEN)
    stay as written.
    """
    text = text.replace("\\\n", " ")
    exports = {}
    for name, value in re.findall(r'^export (\w+)="?([^"\s]*)"?', text, re.M):
        exports[name] = re.sub(r"\$\{(\w+)\}", lambda m: exports.get(m.group(1), m.group(0)), value)
    line = next(l for l in text.splitlines() if l.strip().startswith("docker run"))
    for name, value in exports.items():
        line = line.replace("${%s}" % name, value)
    words = shlex.split(line)[2:]
    options = []
    i = 0
    while i < len(words) and words[i].startswith("-"):
        opt, inline = (words[i].split("=", 1) + [""])[:2]
        if opt not in DOCKER_OPTIONS:
            raise ValueError("unexpected docker run option %s" % words[i])
        if DOCKER_OPTIONS[opt] and not inline:
            options.append((opt, words[i + 1]))
            i += 2
        else:
            options.append((opt, inline or None))
            i += 1
    return {"options": options, "image": words[i], "argv": words[i + 1:]}


def parse_command(text):
    """``(env, argv)`` of a plain ``VAR=value cmd --flags`` command (seed 002's Repro)."""
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    env = {}
    while words and re.match(r"^\w+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def flag_pairs(argv):
    """argv after the positionals as ``{flag: value or True}``, order kept."""
    pairs = {}
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                pairs[argv[i]] = argv[i + 1]
                i += 2
            else:
                pairs[argv[i]] = True
                i += 1
        else:
            i += 1
    return pairs
