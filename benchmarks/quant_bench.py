# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""int8 W8A8_DYNAMIC vs float32: one linear, the whole decode step, and weight memory.

* linear: SmolLM2-135M's projection shapes (qkv 576->960, o 576->576, gate_up 576->3072,
  down 1536->576) at decode batch sizes; ours = ``ascend_ops.dynamic_quant`` + ``quant_matmul``
  (the W8A8_DYNAMIC path of ``quantization="ascend"``, int32 accumulation) on the active CPU
  backend, against ``torch.nn.functional.linear`` in float32. Median of ``--iters`` calls.
* memory: bytes of every linear weight (and its scales) int8 vs float32 for those shapes x 30
  layers, i.e. what the KV cache gains.
* decode step (``--engine``): our plugin in CPU emulation serving the msModelSlim W8A8_DYNAMIC
  SmolLM2 checkpoint (made by tests/e2e/quant_checkpoints.py) vs the float32 model, a batch of 8
  greedy requests x 64 new tokens, generated tokens per second after a warm-up; each engine in
  its own subprocess.

Not measured here: an int8 compressed-tensors checkpoint. That path is built
(``quantization/compressed_int8.py``, tests/e2e/test_quant_compressed_int8.py); its dynamic
scheme runs the same ``dynamic_quant`` + ``quant_matmul`` the linear rows time (its static
scheme's ``quantize`` is not timed), but ``--engine`` serves the msModelSlim checkpoint only.
vLLM's own CPU backend on it is not compared either: its int8 GEMM takes bfloat16/float16
activations only and the engines here run float32 (README, "Quantized models").

    python benchmarks/quant_bench.py [--iters 50] [--threads N] [--engine]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHAPES = {"qkv": (576, 960), "o": (576, 576), "gate_up": (576, 3072), "down": (1536, 576)}
LAYERS = 30
BATCHES = (1, 8, 32)


def _median_s(fn, iters: int) -> float:
    fn()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_linear(iters: int) -> list[dict]:
    import ascend_ops
    import torch

    g = torch.Generator().manual_seed(0)
    rows = []
    for name, (k, n) in SHAPES.items():
        w = torch.randn(n, k, generator=g) * 0.05
        scale = w.abs().amax(1) / 127
        w8 = torch.round(w / scale[:, None]).to(torch.int8).t().contiguous()  # [k, n]
        for m in BATCHES:
            x = torch.randn(m, k, generator=g)

            def ours(x=x, w8=w8, scale=scale):
                xq, ts = ascend_ops.dynamic_quant(x)
                return ascend_ops.quant_matmul(xq, w8, scale, ts, None, torch.float32)

            t_f = _median_s(lambda x=x, w=w: torch.nn.functional.linear(x, w), iters)
            t_q = _median_s(ours, iters)
            rows.append({"layer": name, "m": m, "k": k, "n": n, "float32_us": t_f * 1e6,
                         "int8_us": t_q * 1e6, "speedup": t_f / t_q})
    return rows


def weight_memory() -> dict:
    params = sum(k * n for k, n in SHAPES.values()) * LAYERS
    scales = sum(n for _, n in SHAPES.values()) * LAYERS
    return {"linear_params": params, "float32_bytes": 4 * params,
            "int8_bytes": params + 4 * scales, "saved_bytes": 3 * params - 4 * scales}


ENGINE_CHILD = r"""
import json, sys, time
if __name__ == "__main__":
    from vllm import LLM, SamplingParams
    llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=512, enforce_eager=True,
              gpu_memory_utilization=0.5, seed=0)
    prompts = ["The capital of France is", "Write a short poem about the sea."] * 4
    p = SamplingParams(temperature=0.0, max_tokens=64, ignore_eos=True)
    llm.generate(prompts, p, use_tqdm=False)
    t = time.perf_counter()
    outs = llm.generate(prompts, p, use_tqdm=False)
    dt = time.perf_counter() - t
    n = sum(len(o.outputs[0].token_ids) for o in outs)
    print("RESULT " + json.dumps({"tokens": n, "seconds": dt, "tok_per_s": n / dt,
          "quantization": llm.llm_engine.vllm_config.model_config.quantization}))
"""


def bench_engine(model: str, threads: int) -> dict:
    env = dict(os.environ, VLLM_ASCEND_EMULATE="1", HF_HUB_OFFLINE="1",
               OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    env.pop("VLLM_TARGET_DEVICE", None)
    out = subprocess.run([sys.executable, "-c", ENGINE_CHILD, model], env=env,
                         capture_output=True, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"engine run failed:\n{out.stderr[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--engine", action="store_true", help="also time the decode step (slow)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    result = {"linear": bench_linear(args.iters), "memory": weight_memory()}
    for r in result["linear"]:
        print(f"{r['layer']:8s} m={r['m']:3d} float32 {r['float32_us']:9.1f} us  "
              f"int8 {r['int8_us']:9.1f} us  x{r['speedup']:.2f}")
    mem = result["memory"]
    print(f"linear weights: float32 {mem['float32_bytes'] / 2**20:.1f} MiB, int8 "
          f"{mem['int8_bytes'] / 2**20:.1f} MiB (saved {mem['saved_bytes'] / 2**20:.1f} MiB)")
    if args.engine:
        sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
        from quant_checkpoints import quantized

        from vllm_ascend import demo_model

        result["decode"] = {"float32": bench_engine(str(demo_model.prepare()), args.threads),
                            "w8a8_dynamic": bench_engine(quantized("w8a8-dynamic"), args.threads)}
        for k, v in result["decode"].items():
            print(f"decode {k:13s} {v['tok_per_s']:.1f} tok/s ({v['quantization']})")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
