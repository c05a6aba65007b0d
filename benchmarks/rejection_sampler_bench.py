# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rejection sampling (speculative-decoding verification) on the CPU: ascend_ops native kernel
vs its NPU branch's aten composition vs the float64 reference vs vLLM 0.32's Triton kernels, in
one run, with ratios to native.

One step = ``sample_recovered_tokens`` + ``rejection_sample`` for B requests with k drafts each,
vocab V, draft probabilities, every other request greedy, the same inputs for every backend.
vLLM's kernels (``rejection_sample`` in ``vllm/v1/sample/rejection_sampler.py``) have no CPU
backend: they run under Triton's interpreter (numpy), which is how they can be checked on a CPU,
not how fast they are on a GPU -- read that column as "the oracle's cost", not as a competitor.
That column needs a vLLM that still has those kernels (vLLM 0.32 / 0.33: an older vllm-ascend
checkout's venv, benchmarks/README.md "Model Runner V2 vs V1"); vLLM 0.34 deleted them with
Model Runner V1, and MRv2's ``rejection_sample`` (``vllm/v1/worker/gpu/spec_decode/
rejection_sampler_utils.py``) verifies from logits, not from these probability inputs, so on 0.34
the column is skipped with a note.
The aten column is the NPU branch (``ascend_ops.npu.spec_decode``) executed by CPU torch: it shows the
op count/memory traffic of the vectorised form, not NPU speed. Results are checked to be
identical across backends before timing.

    python benchmarks/rejection_sampler_bench.py [--batch 16] [--k 4] [--vocab 8192] [--iters 5]
        [--threads N] [--no-vllm] [--no-reference]

On a shared, loaded machine pass ``--threads 1``: torch's intra-op threads contend with other
processes and the aten column can slow down a hundredfold.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types


def _enable_triton_interpreter() -> None:
    # Before vLLM is imported: let vllm.triton_utils accept Triton with the interpreter (a driver
    # that reports itself active, so vLLM's HAS_TRITON check passes on a CPU).
    os.environ["TRITON_INTERPRET"] = "1"
    from triton.backends import backends

    class _Driver:
        @staticmethod
        def is_active() -> bool:
            return True

    backends.setdefault("cpu", types.SimpleNamespace(driver=_Driver))


def _problem(batch, k, vocab, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    n = batch * k
    tp = torch.softmax(torch.randn(n, vocab, generator=g) * 2, -1)
    dp = torch.softmax(torch.randn(n, vocab, generator=g) * 2, -1)
    # drafts near the target's argmax so that rows get past their first position
    draft = torch.where(torch.rand(n, generator=g) < 0.7, tp.argmax(-1),
                        torch.randint(0, vocab, (n,), generator=g)).to(torch.int32)
    return dict(
        draft=draft, cu=torch.full((batch,), k, dtype=torch.int32).cumsum(0).to(torch.int32),
        tp=tp, dp=dp, argmax=tp.argmax(-1), bonus=torch.randint(0, vocab, (batch, 1), generator=g),
        u=torch.rand(n, dtype=torch.float64, generator=g),
        inv_q=torch.empty(batch, vocab).exponential_(generator=g).reciprocal(),
        is_greedy=torch.arange(batch) % 2 == 0, k=k)


def _ascend_step(backend, p):
    import ascend_ops

    if backend == "aten":
        from ascend_ops.npu import spec_decode as mod

        rec = mod.sample_recovered_tokens(p["draft"], p["cu"], p["dp"], p["tp"], p["inv_q"])
        return mod.rejection_sample(p["draft"], p["cu"], p["argmax"], p["tp"], p["dp"],
                                    p["bonus"], rec, p["u"], p["is_greedy"], p["k"])
    with ascend_ops.use_backend(backend):
        rec = ascend_ops.sample_recovered_tokens(p["draft"], p["cu"], p["dp"], p["tp"],
                                                 p["inv_q"])
        return ascend_ops.rejection_sample(p["draft"], p["cu"], p["argmax"], p["tp"], p["dp"],
                                           p["bonus"], rec, p["u"], p["is_greedy"], p["k"])


def _vllm_step(p):
    import torch
    from vllm.v1.sample import rejection_sampler as rs

    batch = p["cu"].shape[0]
    rec = torch.empty_like(p["draft"])
    rs._sample_recovered_tokens(rec, p["cu"], p["draft"], p["dp"], p["tp"], p["inv_q"],
                                max_spec_len=p["k"])
    out = torch.full((batch, p["k"] + 1), -1, dtype=torch.int32)
    rs._rejection_greedy_sample(out, p["cu"], p["draft"], p["argmax"], p["bonus"],
                                p["is_greedy"], p["k"], None, None)
    rs._rejection_random_sample(out, p["cu"], p["draft"], p["dp"], p["tp"], p["bonus"], rec,
                                p["u"], p["is_greedy"], p["k"], None)
    return out


def _time(fn, iters):
    fn()  # warm-up (also the result used for the cross-check)
    best = float("inf")
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: default)")
    ap.add_argument("--no-vllm", action="store_true", help="skip vLLM's interpreted kernels")
    ap.add_argument("--no-reference", action="store_true", help="skip the float64 reference")
    args = ap.parse_args()
    if not args.no_vllm:
        import importlib.util

        if importlib.util.find_spec("vllm.v1.sample.rejection_sampler") is None:
            print("note: this vLLM has no V1 rejection-sampler kernels (vllm/v1/sample/"
                  "rejection_sampler.py, deleted in vLLM 0.34): vLLM column skipped")
            args.no_vllm = True
    if not args.no_vllm:
        _enable_triton_interpreter()
    import ascend_ops
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    p = _problem(args.batch, args.k, args.vocab)
    runs = {}
    if ascend_ops.native_available():
        runs["native"] = lambda: _ascend_step("native", p)
    runs["aten (NPU branch on CPU)"] = lambda: _ascend_step("aten", p)
    if not args.no_reference:
        runs["reference"] = lambda: _ascend_step("reference", p)
    if not args.no_vllm:
        runs["vLLM Triton (interpreter)"] = lambda: _vllm_step(p)
    outs = {name: fn() for name, fn in runs.items()}
    first = next(iter(outs.values()))
    for name, out in outs.items():
        if not torch.equal(out, first):
            print(f"MISMATCH: {name} differs from {next(iter(outs))}", file=sys.stderr)
            return 1
    accepted = ((first != -1).sum(1) - 1).float().mean().item()
    print(f"B={args.batch} k={args.k} V={args.vocab} threads={torch.get_num_threads()} "
          f"mean accepted drafts/request={accepted:.2f}; outputs identical across backends")
    times = {name: _time(fn, args.iters) for name, fn in runs.items()}
    base = times.get("native", next(iter(times.values())))
    print(f"{'backend':28s} {'ms/step':>10s} {'x native':>10s}")
    for name, t in times.items():
        print(f"{name:28s} {t * 1e3:10.3f} {t / base:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
