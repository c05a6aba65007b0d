# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Run inside a release venv: greedy generation with vLLM's offline ``LLM`` through our plugin.

Reads one JSON object from argv[2]: ``{"prompt_ids": [...], "max_tokens": n}``; prints one JSON
line ``{"tokens": [...], "platform": "<module>.<class>", "layers": {...}}``. The engine runs in
CPU emulation (the caller sets ``VLLM_ASCEND_EMULATE=1``), float32, eager, ``ignore_eos`` so
the token count is fixed (vllm/entrypoints/llm.py, vllm/sampling_params.py of vLLM 0.32).

Usage: ``python generate_probe.py <model-folder> '<json>'``
"""

import json
import sys

from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
from vllm.platforms import current_platform

request = json.loads(sys.argv[2])
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256, enforce_eager=True,
          gpu_memory_utilization=0.5, seed=0, max_num_seqs=4)
params = SamplingParams(temperature=0.0, max_tokens=request["max_tokens"], ignore_eos=True)
out = llm.generate([TokensPrompt(prompt_token_ids=request["prompt_ids"])], params, use_tqdm=False)

from vllm_ascend_platform.startup import plugin  # noqa: E402

platform = type(current_platform)
print(json.dumps({"tokens": list(out[0].outputs[0].token_ids),
                  "platform": f"{platform.__module__}.{platform.__qualname__}",
                  "layers": plugin.layers_registered()}))
