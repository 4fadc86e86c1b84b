# SPDX-License-Identifier: GPL-3.0-or-later
"""`python3 -m sglang.launch_server ...` -> the engine simulator's SGLang personality."""
import sys

from engine_sim.runner import main

if __name__ == "__main__":
    sys.exit(main("sglang", sys.argv[1:]))
