# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Child process of test_simulated_npu_sleep.py: sleep mode on the simulated NPU (graph mode on).

Run as ``python _sim_sleep_child.py MODEL OUT_JSON`` in ``_sim_npu_child.child_env()``. Writes the
greedy tokens of each phase and the simulated device's used bytes around each sleep.
"""

from __future__ import annotations

import json
import os
import sys

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Water boils at"]


#: --sleep-preserve-parameter-names: kept over level-2 sleep (vLLM's Worker keeps a host copy)
PRESERVED, OTHER = "model.norm.weight", "model.embed_tokens.weight"


def _snapshot(worker) -> dict:
    """Host copies of the preserved and one other parameter (run in the worker)."""
    params = dict(worker.model_runner.model.named_parameters())
    return {n: params[n].detach().to("cpu", copy=True) for n in (PRESERVED, OTHER)}


def main(model: str, out: str) -> None:
    import torch
    from ascend_ops import device
    from ascend_ops.device.tagged_memory import default_pool
    from engine import close_llm
    from vllm import LLM, SamplingParams
    from vllm_ascend_graph.wrapper import ACLGraphWrapper

    # 512 batched tokens: vLLM's profiling pass (run at that size on the simulated NPU) stays short
    llm = LLM(model=model, seed=0, dtype="float16", max_model_len=512, max_num_seqs=8,
              max_num_batched_tokens=512, gpu_memory_utilization=0.5, enable_sleep_mode=True,
              sleep_preserve_parameter_names=[PRESERVED],
              compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY",
                                  "cudagraph_capture_sizes": [1, 2, 4]})
    params = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)

    def greedy():
        outs = llm.generate(PROMPTS, params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    def used():
        free, total = device.mem_get_info()
        return total - free

    def replays():
        return sum(e.num_replays for w in list(ACLGraphWrapper._all_instances)
                   for e in w.entries.values())

    pool = default_pool()
    res = {"backend": llm.llm_engine.vllm_config.model_config.sleep_mode_backend,
           "weights_bytes": pool.nbytes("weights"), "kv_bytes": pool.nbytes("kv_cache"),
           "reference": greedy(), "level1": []}
    for _ in range(2):
        before = used()
        llm.sleep(level=1)
        asleep = used()
        llm.wake_up()
        r0 = replays()
        tokens = greedy()
        res["level1"].append({"freed": before - asleep, "restored": used() - asleep,
                              "tokens": tokens, "replays_after_wake": replays() - r0})
    kept = llm.collective_rpc(_snapshot)[0]
    before = used()
    llm.sleep(level=2)
    res["level2_freed"] = before - used()
    llm.wake_up(tags=["weights"])
    now = llm.collective_rpc(_snapshot)[0]  # before the reload: preserved back, the rest zeros
    res["preserved_kept"] = bool(torch.equal(now[PRESERVED], kept[PRESERVED]))
    res["preserved_nonzero"] = bool(kept[PRESERVED].abs().sum() > 0)
    res["others_zero"] = not bool(now[OTHER].any())
    llm.collective_rpc("reload_weights")
    llm.wake_up(tags=["kv_cache"])
    res["level2_tokens"] = greedy()
    close_llm(llm)
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(*sys.argv[1:])
