# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a bash launch script's ``docker run`` (the field reports' or ours) into comparable parts."""
from __future__ import annotations

import json
import re
import shlex

# docker run options the field reports and the collection use, with whether they take a value.
DOCKER_OPTIONS = {"-d": False, "--name": True, "--gpus": True, "--ipc": True, "-p": True, "-v": True,
                  "--env": True, "-e": True, "--restart": True, "--log-driver": True, "--log-opt": True,
                  "--label": True, "--network": True, "--env-file": True, "--stop-timeout": True}


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
    """``(env, argv)`` of a plain ``VAR=value cmd --flags`` command (the g7e field report's Repro)."""
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


# The profiles pin the model's commit (issue 24), which the field reports do not: the engine is told it
# through every revision flag, and the container runs offline (the weights are staged first).
MODEL_COMMIT = "b2b9a6150f0d1d450d68b40993e4699b0cfbbab0"
# The FP8 model's commit (profiles/g7e-fp8-sglang.yml names its source).
FP8_MODEL_COMMIT = "9f80cb76c26738e29c4d4d7a30fe882f938a25a6"


def without_weights_pin(run, commit=MODEL_COMMIT, flags=6):
    """The rendered run with the model pin taken out, after checking that it is exactly the pin
    (``flags``: the words the pin adds to the argv, flag and value)."""
    argv, kept, i = run["argv"], [], 0
    while i < len(argv):
        if argv[i] in ("--revision", "--tokenizer-revision", "--code-revision", "--speculative-draft-model-revision"):
            assert argv[i + 1] == commit
            i += 2
            continue
        if argv[i] == "--speculative_config":
            config = json.loads(argv[i + 1])
            assert config.pop("revision") == commit
            kept += [argv[i], json.dumps(config, separators=(",", ":"))]
            i += 2
            continue
        kept.append(argv[i])
        i += 1
    assert len(kept) == len(argv) - flags
    options = [o for o in run["options"] if o != ("-e", "HF_HUB_OFFLINE=1")]
    assert len(options) == len(run["options"]) - 1
    return dict(run, argv=kept, options=options)


def without_graceful_stop(run, timeout="60", stop_timeout="90"):
    """The rendered run without the graceful stop the plan adds (issue 22: vLLM >= 0.18
    ``--shutdown-timeout`` and Docker's longer ``--stop-timeout``), after checking it is exactly that."""
    argv = list(run["argv"])
    at = argv.index("--shutdown-timeout")
    assert argv[at + 1] == timeout
    del argv[at:at + 2]
    options = [o for o in run["options"] if o != ("--stop-timeout", stop_timeout)]
    assert len(options) == len(run["options"]) - 1
    return dict(run, argv=argv, options=options)
