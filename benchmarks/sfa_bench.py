# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The attention part of one DeepSeek-V3.2 decode step at a given context length: sparse
(``ascend_ops.lightning_indexer`` + ``ascend_ops.sparse_flash_attention``, what ``ASCEND_SFA``
runs, docs/sparse-attention.md) vs dense MLA (``ascend_ops.mla_decode``, what ``ASCEND_MLA``
runs) over the same paged latent cache, in CPU emulation (the ops' CPU branches).

Shapes are one DeepSeek-V3.2 layer on one rank of TP 8: 16 query heads, latent 512 + rope 64,
64 indexer heads x 128, ``index_topk`` 2048, block size 128; ``--batch`` decode requests each at
``--context`` tokens. Both sides read caches and tables made from fixed seeds; the sparse side
also reads the indexer key cache (model dtype x 128 per token). Before timing, a context no
longer than ``index_topk`` is checked to give the dense result (every position selected).

Timing: ``--rounds`` interleaved rounds (dense, then sparse), ``--reps`` calls each, the best
call of all rounds kept (on a shared box preemption only adds time). Ratio = sparse / dense
(< 1: the sparse step is faster). The CPU branches are vectorised torch references, not tuned
kernels: the numbers show how the work scales with context on this path, not NPU speed.

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE VLLM_PLUGINS="" .venv034/bin/python \
        benchmarks/sfa_bench.py --context 2048 8192 32768
"""

from __future__ import annotations

import argparse
import time

import torch

N, L, R, IH, ID, TOPK, BS = 16, 512, 64, 64, 128, 2048, 128


def _case(batch: int, context: int, dtype: torch.dtype, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    blocks = -(-context // BS)
    nb = batch * blocks + 1

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(dtype)

    table = torch.randperm(nb - 1, generator=g)[: batch * blocks].view(batch, blocks).to(torch.int32)
    return {
        "q_nope": rnd(batch, N, L), "q_pe": rnd(batch, N, R),
        "nope": rnd(nb, BS, 1, L), "rope": rnd(nb, BS, 1, R), "index_k": rnd(nb, BS, 1, ID),
        "index_q": rnd(batch, IH, ID), "weights": torch.randn(batch, IH, generator=g),
        "table": table, "ends": torch.arange(1, batch + 1, dtype=torch.int32),
        "kv_lens": torch.full((batch,), context, dtype=torch.int32),
    }


def dense(c: dict) -> torch.Tensor:
    import ascend_ops

    b = c["q_nope"].shape[0]
    return ascend_ops.mla_decode(c["q_nope"], c["q_pe"], c["nope"], c["rope"], c["table"],
                                 list(range(1, b + 1)), c["kv_lens"].tolist(), L**-0.5)


def sparse(c: dict) -> torch.Tensor:
    import ascend_ops

    idx = ascend_ops.lightning_indexer(c["index_q"], c["index_k"], c["weights"], c["table"], c["ends"],
                                       c["kv_lens"], TOPK)
    return ascend_ops.sparse_flash_attention(c["q_nope"], c["q_pe"], c["nope"], c["rope"], idx, c["table"],
                                             c["ends"], c["kv_lens"], L**-0.5)


def _best(fn, c, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(c)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--context", type=int, nargs="+", default=[2048, 8192, 32768])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    check = _case(args.batch, TOPK, dtype, seed=1)
    torch.testing.assert_close(sparse(check).float(), dense(check).float(), atol=2e-3, rtol=2e-3)
    print(f"check: context {TOPK} (= index_topk) sparse == dense; {N} heads, L {L} + R {R}, "
          f"indexer {IH} x {ID}, top-k {TOPK}, block {BS}, batch {args.batch}, {args.dtype}, "
          f"{torch.get_num_threads()} thread(s)")
    print("| context | dense mla_decode ms | sparse indexer + SFA ms | sparse / dense |")
    print("|---|---|---|---|")
    for context in args.context:
        c = _case(args.batch, context, dtype)
        times = {"dense": float("inf"), "sparse": float("inf")}
        for _ in range(args.rounds):
            times["dense"] = min(times["dense"], _best(dense, c, args.reps))
            times["sparse"] = min(times["sparse"], _best(sparse, c, args.reps))
        print(f"| {context} | {times['dense'] * 1e3:.2f} | {times['sparse'] * 1e3:.2f} | "
              f"{times['sparse'] / times['dense']:.2f} |")


if __name__ == "__main__":
    main()
