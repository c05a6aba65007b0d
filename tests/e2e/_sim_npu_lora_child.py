# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of the simulated-NPU LoRA e2e test: engines with LoRA on the NPU code path.

Run as a script: ``python _sim_npu_lora_child.py SPEC_JSON OUT_JSON``. The spec is that of
``_sim_npu_child.py`` (``model``, ``engine``, ``runs``) with ``rounds`` instead of ``prompts``:
a list of ``{"prompts", "max_tokens", "loras"}`` generated one after another on each run's
engine (``loras``: per prompt ``[name, int_id, path]`` or null for the base model), so the
active adapters change between rounds and, as requests finish, between steps of a round.
``OUT_JSON`` receives ``{run name: {"tokens": [[[int]] per round], "facts"}}``.
"""

from __future__ import annotations

import gc
import json
import os
import sys


def _run(spec: dict, run: dict) -> dict:
    import ascend_ops
    from _sim_npu_child import _facts
    from engine import close_llm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    kwargs = dict(model=spec["model"], seed=0, **spec.get("engine", {}))
    kwargs.update(run.get("engine", {}))
    llm = LLM(**kwargs)
    try:
        ascend_ops.reset_call_counts()
        rounds = []
        for rnd in spec["rounds"]:
            prompts = [TokensPrompt(prompt_token_ids=p) for p in rnd["prompts"]]
            params = [SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)
                      for n in rnd["max_tokens"]]
            loras = [LoRARequest(*lr) if lr else None for lr in rnd["loras"]]
            outs = llm.generate(prompts, params, lora_request=loras, use_tqdm=False)
            rounds.append([list(o.outputs[0].token_ids) for o in outs])
        facts = _facts(llm)
    finally:
        close_llm(llm)
        gc.collect()
    return {"tokens": rounds, "facts": facts}


def main(argv: list[str]) -> None:
    if os.environ.get("VLLM_ASCEND_SIMULATE_NPU") != "1" or "VLLM_ASCEND_EMULATE" in os.environ:
        raise SystemExit("start this script with child_env(): simulated-NPU mode only")
    spec = json.loads(open(argv[0]).read())
    results = {run["name"]: _run(spec, run) for run in spec["runs"]}
    with open(argv[1], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
