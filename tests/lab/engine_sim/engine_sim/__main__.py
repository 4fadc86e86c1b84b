# SPDX-License-Identifier: GPL-3.0-or-later
"""``python3 -m engine_sim vllm serve <model> ...`` or ``python3 -m engine_sim sglang --model-path ...``."""
import sys

from .runner import main

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.stderr.write("usage: python3 -m engine_sim {vllm serve <model> ...|sglang --model-path <model> ...}\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
