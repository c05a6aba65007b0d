# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""n-gram speculative decoding vs none, same run, on a repetitive workload (CPU emulation).

Builds two engines one after the other on SmolLM2-135M-Instruct (float32, eager unless
``--graph``): without speculation and with ``ngram`` (k tokens, lookup 2-3). Each generates
greedily for the same prompts (text that repeats itself, so n-gram drafts are accepted) and
reports:

* output tokens per second (wall time of ``LLM.generate``, after one warm-up request);
* engine steps per output token of one request (``LLMEngine.step`` calls x requests / output
  tokens, all requests running together; about 1.0 without speculation, the prefill step
  included, below 1 when drafts are accepted);
* milliseconds per engine step (a verification step runs ``1 + k`` tokens per request);
* vLLM's spec-decode counters (drafts, draft tokens, accepted tokens -> acceptance rate and
  mean accepted length per draft).

Usage::

    python benchmarks/spec_decode_bench.py [--k 3] [--max-tokens 64] [--prompts 8] [--graph]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("VLLM_ASCEND_EMULATE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

BASE = [
    "one two three four five six seven eight. one two three four five six seven eight. one",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2,",
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef",
]


def run(model: str, prompts: list[str], max_tokens: int, spec: dict | None, graph: bool) -> dict:
    from vllm import LLM, SamplingParams
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    kwargs = dict(model=model, dtype="float32", max_model_len=1024, seed=0,
                  gpu_memory_utilization=0.5, disable_log_stats=False, enforce_eager=not graph)
    if graph:
        k1 = 1 + (spec["num_speculative_tokens"] if spec else 0)
        kwargs["compilation_config"] = {"cudagraph_mode": "FULL_DECODE_ONLY",
                                        "cudagraph_capture_sizes": [k1 * b for b in (1, 2, 4, 8)]}
    if spec:
        kwargs["speculative_config"] = spec
    llm = LLM(**kwargs)
    params = SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True)
    llm.generate(prompts[:1], SamplingParams(max_tokens=4), use_tqdm=False)  # warm-up
    engine = llm.llm_engine
    steps = 0
    step = engine.step

    def counted_step():
        nonlocal steps
        steps += 1
        return step()

    engine.step = counted_step
    before = _counters(llm)
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - t0
    engine.step = step
    after = _counters(llm)
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    engine.engine_core.shutdown()
    del llm
    cleanup_dist_env_and_memory()
    return {"tokens": tokens, "seconds": seconds, "steps": steps, **delta,
            "ids": [list(o.outputs[0].token_ids) for o in outs]}


def _counters(llm) -> dict[str, float]:
    return {m.name[len("vllm:spec_decode_num_"):]: m.value for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode_num_") and hasattr(m, "value")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=3, help="num_speculative_tokens")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=8, help="requests (the 4 texts repeated)")
    ap.add_argument("--graph", action="store_true", help="FULL_DECODE_ONLY graphs")
    ap.add_argument("--model", default=None, help="default: the converted demo model")
    args = ap.parse_args()
    if args.model is None:
        from vllm_ascend import demo_model

        args.model = str(demo_model.prepare())
    prompts = [BASE[i % len(BASE)] for i in range(args.prompts)]
    spec = {"method": "ngram", "num_speculative_tokens": args.k, "prompt_lookup_max": 3,
            "prompt_lookup_min": 2}
    base = run(args.model, prompts, args.max_tokens, None, args.graph)
    ngram = run(args.model, prompts, args.max_tokens, spec, args.graph)
    print(f"\nworkload: {len(prompts)} repetitive prompts x {args.max_tokens} greedy tokens, "
          f"{'graphs' if args.graph else 'eager'}")
    print(f"{'':9} {'tokens/s':>9} {'steps/token':>12} {'ms/step':>8} {'acceptance':>11} "
          f"{'mean accepted':>14}")
    for name, r in (("none", base), (f"ngram k={args.k}", ngram)):
        drafted = r.get("draft_tokens", 0)
        acc = f"{r.get('accepted_tokens', 0) / drafted:.2f}" if drafted else "-"
        mean = f"{r.get('accepted_tokens', 0) / r['drafts']:.2f}" if r.get("drafts") else "-"
        print(f"{name:9} {r['tokens'] / r['seconds']:9.1f} {r['steps'] * len(prompts) / r['tokens']:12.3f} "
              f"{1000 * r['seconds'] / r['steps']:8.0f} {acc:>11} {mean:>14}")
    print(f"speed-up {base['seconds'] / ngram['seconds']:.2f}x; greedy output identical: "
          f"{base['ids'] == ngram['ids']}")


if __name__ == "__main__":
    main()
