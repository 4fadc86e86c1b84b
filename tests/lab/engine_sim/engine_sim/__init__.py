# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine simulator: a TEST DOUBLE of the GPU inference servers the collection deploys.

What it stands for
    * vLLM's OpenAI-compatible server (``vllm serve <model> ...``, the ENTRYPOINT of the
      ``vllm/vllm-openai`` images) and
    * SGLang's ``python3 -m sglang.launch_server --model-path <model> ...`` (``lmsysorg/sglang``),
    both running on NVIDIA GPUs (DGX Spark / GB10, sm_121; RTX PRO 6000 Blackwell, sm_120).

It follows their command-line interfaces, their log formats and their HTTP interfaces, for the
engine version the image claims (env ``ENGINE_SIM_VERSION``), so that the collection can be
proven end to end in the lab, where there is no GPU:

    * CLI: the flags are parsed the way the real parsers do (vLLM's FlexibleArgumentParser with
      underscore normalisation and dotted JSON keys; SGLang's plain argparse).  The flag set is
      the SUBSET the collection uses (every flag in the seed launch commands and in
      the released wheels' source), each present only in the versions that have it; any
      other flag is an unrecognized argument, as it would be for a flag the real engine lacks.
    * GPU: read from ``nvidia-smi --query-gpu=...`` (injected by the lab's NVIDIA toolkit double
      when the container runs with ``--gpus all``); without it the engine fails as the real one
      does on a host without a GPU.
    * Backends: which MoE / GEMM / attention / speculative backends the real engine would select
      for the flags, environment, version and GPU, decided by pure functions (``decide``), and
      printed in the real log formats (``vllm_log``, ``sglang_log``).
    * Failure modes: the ones the field reports hit -- see ``decide``.
    * HTTP: /health, /v1/models, /v1/chat/completions, /v1/completions, /metrics (Prometheus
      text with the real metric names), SGLang's /get_server_info and /server_info.

Nothing here runs a model: answers are deterministic ("2+2" answers 4), timings are simulated.
Standard library only (the lab image is a minimal Debian bookworm with python3 3.11).
"""
