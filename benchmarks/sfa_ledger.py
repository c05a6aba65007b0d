# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated-NPU ledger of one DeepSeek-V3.2 sparse-attention (``ASCEND_SFA``) layer step.

Runs the step-dependent part of one DSA layer through the ops' NPU branches on the simulated
torch_npu (``ascend_ops.simulator``, what ``VLLM_ASCEND_SIMULATE_NPU=1`` installs; the op tests'
``simulated_npu`` fixture does the same), with the plugin's own code:

1. the latent / rope cache write: ``AscendSFAImpl.do_kv_cache_update`` (the dense MLA
   backend's, ``backends/mla.py``);
2. the indexer: ``sparse_indexer_op.ascend_sparse_indexer`` (the body of
   ``torch.ops.vllm.ascend_sparse_indexer``): indexer key cache write, ``lightning_indexer``
   (top-k inside the operator, ``sparse_count = index_topk``) and the copy into the model's
   ``topk_indices_buffer``;
3. ``AscendSFAImpl.forward_mqa``: ``sparse_flash_attention`` over the selected rows.

The projections, rope and norms before these (traced by ``torch.compile`` in the model) are not
part of the step measured here. vLLM's forward context is replaced by a stand-in holding this
layer's metadata and indexer cache (``sparse_indexer_op`` reads only ``attn_metadata`` and
``no_compile_layers`` from it). Counting is ``simulator.tracking()`` (docs/simulated-npu.md):
every torch_npu / ATB operator and every aten op, bytes written by device-to-device copies,
host syncs with their call sites, and the source lines of our packages that called torch_npu.

Cases (shapes of one DeepSeek-V3.2 layer on one TP-8 rank: 16 query heads, latent 512 + rope
64, 64 indexer heads x 128, ``index_topk`` 2048, block size 128, bfloat16):

* ``decode``: ``--batch`` requests, one new token each, at ``--context`` tokens;
* ``prefill``: one request's prefill chunk of ``--chunk`` tokens ending at ``--context``
  (chunked prefill: the earlier tokens are already cached).

    OMP_NUM_THREADS=1 VLLM_PLUGINS="" .venv034/bin/python benchmarks/sfa_ledger.py
"""

from __future__ import annotations

import argparse
import types
from collections import Counter

import torch

N, L, R, IH, ID, TOPK, BS = 16, 512, 64, 64, 128, 2048, 128
DTYPE = torch.bfloat16
PREFIX = "model.layers.0.self_attn.indexer.k_cache"
#: aten ops that return a view of their input (no device kernel); ``aten::to`` is listed by the
#: ledger only when it returns its input (a real cast shows up as ``_to_copy`` with d2d bytes)
VIEWS = {"aten::alias", "aten::slice", "aten::select", "aten::transpose", "aten::unsqueeze", "aten::squeeze",
         "aten::view", "aten::expand", "aten::permute", "aten::as_strided", "aten::to"}


def _impl(topk_buffer: torch.Tensor):
    """An ``AscendSFAImpl`` with only what the cache write and ``forward_mqa`` read (the
    constructor wants a whole MLA layer's projections, which this step does not use)."""
    from vllm_ascend_attention.backends.sfa import AscendSFAImpl

    impl = object.__new__(AscendSFAImpl)
    impl.kv_lora_rank, impl.qk_rope_head_dim, impl.scale = L, R, 192**-0.5  # (qk_nope 128 + rope 64)**-0.5
    impl.topk_indices_buffer = topk_buffer
    impl.record_logical_topk_ready()
    return impl


def _case(q_lens: list[int], kv_lens: list[int], seed: int = 0) -> dict:
    """Random step inputs; caches hold random (already written) rows for the earlier tokens."""
    from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadata

    g = torch.Generator().manual_seed(seed)
    blocks = [-(-kv // BS) for kv in kv_lens]
    nb = sum(blocks) + 1
    perm = torch.randperm(nb, generator=g).to(torch.int32)
    table = torch.zeros(len(kv_lens), max(blocks), dtype=torch.int32)
    slots, used = [], 0
    for b, (q, kv) in enumerate(zip(q_lens, kv_lens, strict=True)):
        table[b, : blocks[b]] = perm[used : used + blocks[b]]
        used += blocks[b]
        slots += [int(table[b, p // BS]) * BS + p % BS for p in range(kv - q, kv)]
    t = sum(q_lens)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(DTYPE)

    md = AscendSFAMetadata(
        num_actual_tokens=t, num_reqs=len(q_lens),
        ends=torch.tensor(q_lens).cumsum(0).to(torch.int32), kv_lens=torch.tensor(kv_lens, dtype=torch.int32),
        block_table=table, slot_mapping=torch.tensor(slots, dtype=torch.int64),
        max_query_len=max(q_lens), max_seq_len=max(kv_lens), num_decodes=len(q_lens), num_decode_tokens=t)
    return {
        "md": md, "kv_cache": rnd(nb, BS, L + R), "index_cache": rnd(nb, BS, 1, ID),
        "kv_c": rnd(t, L), "k_pe": rnd(t, 1, R), "q_nope": rnd(t, N, L), "q_pe": rnd(t, N, R),
        "index_q": rnd(t, IH, ID), "index_k": rnd(t, ID),
        "weights": torch.randn(t, IH, generator=g) * (ID**-0.5 * IH**-0.5),
        "topk": torch.full((t, TOPK), -1, dtype=torch.int32),
    }


def step(c: dict) -> torch.Tensor:
    """One DSA layer step (module docstring): latent write, indexer, sparse attention."""
    from vllm_ascend_attention import sparse_indexer_op

    md = c["md"]
    impl = _impl(c["topk"])
    impl.do_kv_cache_update(c["kv_c"], c["k_pe"], c["kv_cache"], md.slot_mapping, "auto", None)
    context = types.SimpleNamespace(attn_metadata={PREFIX: md},
                                    no_compile_layers={PREFIX: types.SimpleNamespace(kv_cache=c["index_cache"])})
    real = sparse_indexer_op.get_forward_context
    sparse_indexer_op.get_forward_context = lambda: context
    try:
        sparse_indexer_op.ascend_sparse_indexer(c["index_q"], c["index_k"], c["weights"], c["topk"], PREFIX, TOPK)
    finally:
        sparse_indexer_op.get_forward_context = real
    out, _ = impl.forward_mqa((c["q_nope"], c["q_pe"]), c["kv_cache"], md, layer=None)
    return out


def _ledger(name: str, c: dict) -> None:
    from ascend_ops import simulator

    simulator.ledger().reset()
    with simulator.tracking():
        out = step(c)
    snap = simulator.ledger().snapshot()
    md = c["md"]
    assert out.shape == (md.num_actual_tokens, N, L) and torch.isfinite(out.float()).all()
    valid = (c["topk"] >= 0).sum(-1)
    print(f"\n### {name}: {md.num_reqs} request(s), {md.num_actual_tokens} query row(s), key lengths "
          f"{md.kv_lens.tolist()}; selected positions per row {int(valid.min())}..{int(valid.max())}\n")
    launches = Counter(snap["launches"])
    npu = {k: v for k, v in launches.items() if not k.startswith(("aten::", "prims::"))}
    kinds = {k: "torch_npu / ATB operator" if k in npu else "view (no kernel)" if k in VIEWS else "aten kernel"
             for k in launches}
    print("| operator | kind | launches |")
    print("|---|---|---|")
    for k in sorted(launches, key=lambda k: (k not in npu, k in VIEWS, k)):
        print(f"| `{k}` | {kinds[k]} | {launches[k]} |")
    kernels = sum(v for k, v in launches.items() if k not in VIEWS)
    print(f"| **total** | | **{sum(launches.values())}**: {kernels} kernels ({sum(npu.values())} NPU operators) |")
    print(f"\ndevice-to-device copy bytes: {snap['d2d_bytes']}; host syncs: {snap['host_syncs']}"
          + "".join(f"\n- `{w}` at {f}:{ln} x{n}" for (w, f, ln), n in sorted(snap["host_sync_sites"].items())))
    print("\ntorch_npu call sites in packages/*/src:")
    for (f, ln), n in sorted(snap["call_sites"].items()):
        print(f"- {f}:{ln} x{n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=64)
    args = ap.parse_args()
    # vLLM / transformers first: transformers probes torch_npu at import and would find the
    # simulated module (its flash-attention integration then fails to import)
    import vllm_ascend_attention.backends.sfa  # noqa: F401
    import vllm_ascend_attention.sparse_indexer_op  # noqa: F401
    from ascend_ops import simulator

    simulator.install(capacity_bytes=8 << 30)
    try:
        print(f"one ASCEND_SFA layer step on the simulated NPU: {N} heads, L {L} + R {R}, indexer "
              f"{IH} x {ID}, top-k {TOPK}, block {BS}, bfloat16")
        _ledger("decode", _case([1] * args.batch, [args.context] * args.batch))
        _ledger("prefill chunk", _case([args.chunk], [args.context], seed=1))
    finally:
        simulator.uninstall()


if __name__ == "__main__":
    main()
