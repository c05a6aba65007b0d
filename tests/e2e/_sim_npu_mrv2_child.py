# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of ``test_simulated_npu_mrv2.py``: vLLM 0.34's Model Runner V2 (our
``NPUModelRunnerV2``) on the simulated NPU, eager, stepped by hand so that each engine step's
host syncs can be read from the simulator's ledger.

Run as a script: ``python _sim_npu_mrv2_child.py SPEC_JSON OUT_JSON``. ``SPEC_JSON`` holds ``model``,
``prompts`` (token ids), ``max_tokens`` (one per prompt), ``engine`` (LLM keyword arguments
shared by every run) and ``runs``: ``[{"name", "engine": {...}}]``, built one after another in
this process (each closed before the next). ``OUT_JSON`` receives ``{name: {"tokens", "facts"}}``;
``facts``: the runner class, the op backends that ran, the simulated device memory held while
the engine lives (and what the runner says it holds), ``host_lengths``: how the attention
metadata builds got their host KV lengths (``exact``: vLLM's host copy; ``device_read``: a read
of the device ``seq_lens``, which the ledger does not see -- simulated device tensors are host
tensors, so ``.cpu()`` dispatches nothing), and ``steps``: per engine step, whether every
request the runner was given in it was decoding (``decode_only``) and the host syncs counted
under ``simulator.tracking()`` as ``[what, file, line, count]``.

Environment: ``_sim_npu_child.child_env()`` (simulated-NPU mode, engine in this process) plus
``VLLM_ASCEND_SKIP_VERSION_CHECK=1`` (the ranges still say < 0.34 on this branch).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _watch_steps(worker: Any, log: list[bool]) -> None:
    """Wrap the runner's ``execute_model``: append whether the step only decodes (no new request,
    each scheduled request gets one token plus its draft tokens)."""
    runner = worker.model_runner
    inner = runner.execute_model

    def execute_model(scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        n = scheduler_output.num_scheduled_tokens
        drafts = scheduler_output.scheduled_spec_decode_tokens
        log.append(bool(n) and not scheduler_output.scheduled_new_reqs
                   and all(v == 1 + len(drafts.get(r, ())) for r, v in n.items()))
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


def _count_host_lengths(counts: dict[str, int]) -> Any:
    """Wrap ``host_lengths.seq_lens_host`` (looked up on the module by the attention backends):
    count the builds that used vLLM's host copy and those that read the device; returns the
    original to restore."""
    from vllm_ascend_attention import host_lengths

    original = host_lengths.seq_lens_host

    def seq_lens_host(cm: Any, exact_upper_bound: bool) -> Any:
        key = "exact" if exact_upper_bound and cm.seq_lens_cpu_upper_bound is not None \
            else "device_read"
        counts[key] = counts.get(key, 0) + 1
        return original(cm, exact_upper_bound)

    host_lengths.seq_lens_host = seq_lens_host
    return original


def _run(spec: dict, run: dict) -> dict:
    import ascend_ops
    from ascend_ops import simulator
    from engine import close_llm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm_ascend_attention import host_lengths

    llm = LLM(model=spec["model"], seed=0, **{**spec["engine"], **run.get("engine", {})})
    lengths: dict[str, int] = {}
    original = _count_host_lengths(lengths)
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
            "async_scheduling": bool(llm.llm_engine.vllm_config.scheduler_config.async_scheduling),
            "host_lengths": lengths,
            "simulated": simulator.active(),
            "backends": sorted({b for (_, b) in ascend_ops.call_counts(per_backend=True)}),
            "steps": steps,
        }
    finally:
        host_lengths.seq_lens_host = original
        close_llm(llm)
    return {"tokens": [tokens[k] for k in sorted(tokens, key=int)], "facts": facts}


def main(argv: list[str]) -> None:
    if os.environ.get("VLLM_ASCEND_SIMULATE_NPU") != "1":
        raise SystemExit("start this script with child_env(): simulated-NPU mode only")
    spec = json.loads(open(argv[0]).read())
    results = {run["name"]: _run(spec, run) for run in spec["runs"]}
    with open(argv[1], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1:])
