# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the `sglang` package of the lmsysorg/sglang image: only `sglang.launch_server`,
which runs the engine simulator's SGLang personality."""
