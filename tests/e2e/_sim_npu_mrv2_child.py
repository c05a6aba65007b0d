# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of ``test_simulated_npu_mrv2.py``: vLLM 0.34's Model Runner V2 (our
``NPUModelRunnerV2``) on the simulated NPU, eager, stepped by hand so that each engine step's
host syncs can be read from the simulator's ledger.

Run as a script: ``python _sim_npu_mrv2_child.py SPEC_JSON OUT_JSON``. ``SPEC_JSON`` holds ``model``,
``prompts`` (token ids), ``max_tokens`` (one per prompt) and ``engine`` (LLM keyword arguments).
``OUT_JSON`` receives ``tokens`` and ``facts``: the runner class, the op backends that ran, the
simulated device memory held while the engine lives (and what the runner says it holds), and
``steps``: per engine step, whether every request the runner was given in it was decoding
(``decode_only``) and the host syncs counted under ``simulator.tracking()`` as ``[what, file,
line, count]``.

Environment: ``_sim_npu_child.child_env()`` (simulated-NPU mode, engine in this process) plus
``VLLM_ASCEND_SKIP_VERSION_CHECK=1`` (the ranges still say < 0.34 on this branch).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _watch_steps(worker: Any, log: list[bool]) -> None:
    """Wrap the runner's ``execute_model``: append whether the step only decodes (each scheduled
    request gets one token and has been prefilled)."""
    runner = worker.model_runner
    inner = runner.execute_model

    def execute_model(scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        n = scheduler_output.num_scheduled_tokens
        log.append(bool(n) and not scheduler_output.scheduled_new_reqs
                   and all(v == 1 for v in n.values()))
        return inner(scheduler_output, *args, **kwargs)

    runner.execute_model = execute_model


def _holding(worker: Any) -> dict:
    import torch

    runner = worker.model_runner
    held = getattr(runner, "_device_holding", None)
    return {
        "runner": f"{type(runner).__module__}.{type(runner).__qualname__}",
        "held": dict(held._held) if held is not None else None,
        "allocated": int(torch.npu.memory_allocated()),
    }


def main(argv: list[str]) -> None:
    if os.environ.get("VLLM_ASCEND_SIMULATE_NPU") != "1":
        raise SystemExit("start this script with child_env(): simulated-NPU mode only")
    import ascend_ops
    from ascend_ops import simulator
    from engine import close_llm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    spec = json.loads(open(argv[0]).read())
    llm = LLM(model=spec["model"], seed=0, **spec["engine"])
    try:
        decode_log: list[bool] = []
        llm.collective_rpc(_watch_steps, args=(decode_log,))
        holding = llm.collective_rpc(_holding)[0]
        ascend_ops.reset_call_counts()
        engine = llm.llm_engine
        for i, (prompt, n) in enumerate(zip(spec["prompts"], spec["max_tokens"], strict=True)):
            engine.add_request(str(i), TokensPrompt(prompt_token_ids=prompt),
                               SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True))
        tokens: dict[str, list[int]] = {str(i): [] for i in range(len(spec["prompts"]))}
        steps = []
        while engine.has_unfinished_requests():
            seen = len(decode_log)
            simulator.ledger().reset()
            with simulator.tracking():
                outputs = engine.step()
            ledger = simulator.ledger().snapshot()
            ran = decode_log[seen:]
            steps.append({
                "decode_only": bool(ran) and all(ran),
                "syncs": [[what, file, line, count]
                          for (what, file, line), count in ledger["host_sync_sites"].items()],
            })
            for out in outputs:
                tokens[out.request_id] = list(out.outputs[0].token_ids)
        facts = {
            **holding,
            "simulated": simulator.active(),
            "backends": sorted({b for (_, b) in ascend_ops.call_counts(per_backend=True)}),
            "steps": steps,
        }
    finally:
        close_llm(llm)
    with open(argv[1], "w") as f:
        json.dump({"tokens": [tokens[k] for k in sorted(tokens, key=int)], "facts": facts}, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
