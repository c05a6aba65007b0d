# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``read_kv_blocks`` / ``write_kv_blocks`` (block-level KV access for KV connectors and
offloading) over the Ascend paged layout: one layer's slab reinterpreted as consecutive
contiguous key and value caches [num_blocks, block_size, Hk, D] (packages/ascend-attention
``vllm_ascend_attention/kv_layout.py``, rebuilt here from vLLM's logical view so this package's
tests stay torch-only), MLA latent / rope caches too. Round trips for block sizes 16 and 128,
the buffer rows against the pages read directly, untouched blocks unchanged, every backend and
the simulated NPU branch, bad input refused by name."""

from __future__ import annotations

import ascend_ops
import pytest
import torch

#: (name, num_kv_heads, key width, value width): Llama-like GQA layers, a 256-wide head, a
#: layer whose value head differs from its key head, MLA's latent (512) + rope (64) with one head
LAYERS = [
    ("gqa_h2_d64", 2, 64, 64),
    ("gqa_h8_d128", 8, 128, 128),
    ("h1_d256", 1, 256, 256),
    ("dk192_dv128", 4, 192, 128),
    ("mla_512_64", 1, 512, 64),
]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def slab_caches(num_blocks, block_size, heads, widths, dtype, seed=0):
    """A layer's KV slab as the Ascend backends see it: vLLM's logical view [num_blocks, heads,
    block_size, sum(widths)] of a token-major (LBNHC) allocation, reinterpreted as consecutive
    contiguous part caches [num_blocks, block_size, heads, w] (kv_layout.split_cache)."""
    g = torch.Generator().manual_seed(seed)
    c = sum(widths)
    pages = torch.randn(num_blocks, block_size, heads, c, generator=g).to(dtype)
    flat = pages.reshape(-1)
    parts, start = [], 0
    for w in widths:
        size = num_blocks * block_size * heads * w
        parts.append(flat[start:start + size].view(num_blocks, block_size, heads, w))
        start += size
    return parts


def every_backend():
    backends = ["reference"] + (["native"] if ascend_ops.native_available() else [])
    return backends


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("name,heads,dk,dv", LAYERS)
def test_read_rows_are_the_pages_and_write_restores_them(backend, name, heads, dk, dv, block_size,
                                                         dtype):
    nb = 9
    kc, vc = slab_caches(nb, block_size, heads, (dk, dv), dtype, seed=dk + dv)
    ids = torch.tensor([7, 2, 5], dtype=torch.int32)
    blocks = ascend_ops.read_kv_blocks(kc, vc, ids)
    assert blocks.shape == (3, block_size * heads * (dk + dv)) and blocks.dtype == dtype
    assert blocks.is_contiguous()
    kw = block_size * heads * dk
    for i, b in enumerate(ids.tolist()):
        assert torch.equal(blocks[i, :kw], kc[b].reshape(-1))
        assert torch.equal(blocks[i, kw:], vc[b].reshape(-1))
    # write them into other blocks of a fresh layer, then read those back: the same bits
    kc2, vc2 = slab_caches(nb, block_size, heads, (dk, dv), dtype, seed=1)
    before_k, before_v = kc2.clone(), vc2.clone()
    dst = torch.tensor([0, 8, 3], dtype=torch.int64)
    ascend_ops.write_kv_blocks(blocks, kc2, vc2, dst)
    assert torch.equal(ascend_ops.read_kv_blocks(kc2, vc2, dst), blocks)
    for i, (s, d) in enumerate(zip(ids.tolist(), dst.tolist(), strict=True)):
        assert torch.equal(kc2[d], kc[s]) and torch.equal(vc2[d], vc[s]), i
    untouched = [b for b in range(nb) if b not in dst.tolist()]
    assert torch.equal(kc2[untouched], before_k[untouched])
    assert torch.equal(vc2[untouched], before_v[untouched])


@pytest.mark.parametrize("block_size", [16, 128])
def test_backends_agree_and_round_trip_several_layers(block_size):
    """Offload then restore every layer of a small model (dense and MLA shapes), each backend
    against the reference oracle."""
    layers = [slab_caches(6, block_size, h, (dk, dv), torch.bfloat16, seed=i)
              for i, (_, h, dk, dv) in enumerate(LAYERS)]
    ids = torch.tensor([4, 1])
    want = [ascend_ops.reference.read_kv_blocks(kc, vc, ids) for kc, vc in layers]
    for name in every_backend():
        with ascend_ops.use_backend(name):
            saved = [ascend_ops.read_kv_blocks(kc, vc, ids) for kc, vc in layers]
            for got, exp in zip(saved, want, strict=True):
                assert torch.equal(got, exp), name
            blank = [(torch.zeros_like(kc), torch.zeros_like(vc)) for kc, vc in layers]
            for buf, (kc, vc) in zip(saved, blank, strict=True):
                ascend_ops.write_kv_blocks(buf, kc, vc, ids)
            for (kc, vc), (ok, ov) in zip(blank, layers, strict=True):
                assert torch.equal(kc[ids], ok[ids]) and torch.equal(vc[ids], ov[ids]), name
                assert not kc[[0, 2, 3, 5]].any() and not vc[[0, 2, 3, 5]].any(), name


def test_float8_caches_round_trip_bitwise(backend):
    """fp8 caches (CPU: --kv-cache-dtype fp8) are copied as stored."""
    kc, vc = slab_caches(5, 16, 2, (64, 64), torch.float32)
    kc8, vc8 = kc.to(torch.float8_e4m3fn), vc.to(torch.float8_e4m3fn)
    ids = torch.tensor([3, 0])
    blocks = ascend_ops.read_kv_blocks(kc8, vc8, ids)
    assert blocks.dtype == torch.float8_e4m3fn
    k2, v2 = torch.zeros_like(kc8), torch.zeros_like(vc8)
    ascend_ops.write_kv_blocks(blocks, k2, v2, ids)
    assert torch.equal(k2[ids].view(torch.uint8), kc8[ids].view(torch.uint8))
    assert torch.equal(v2[ids].view(torch.uint8), vc8[ids].view(torch.uint8))


def test_empty_block_list(backend):
    kc, vc = slab_caches(4, 16, 2, (64, 64), torch.float32)
    ids = torch.tensor([], dtype=torch.int64)
    blocks = ascend_ops.read_kv_blocks(kc, vc, ids)
    assert blocks.shape == (0, 16 * 2 * 128)
    ascend_ops.write_kv_blocks(blocks, kc, vc, ids)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("name,heads,dk,dv", [LAYERS[1], LAYERS[4]])
def test_npu_branch_round_trip_matches_cpu(simulated_npu, name, heads, dk, dv, block_size, dtype):
    kc, vc = slab_caches(7, block_size, heads, (dk, dv), dtype, seed=3)
    ids = torch.tensor([6, 0, 3], dtype=torch.int32)
    ascend_ops.reset_call_counts()
    blocks = ascend_ops.read_kv_blocks(kc, vc, ids)
    assert torch.equal(blocks, ascend_ops.reference.read_kv_blocks(kc, vc, ids))
    k2, v2 = torch.zeros_like(kc), torch.zeros_like(vc)
    ascend_ops.write_kv_blocks(blocks, k2, v2, ids)
    assert torch.equal(k2[ids.long()], kc[ids.long()]) and torch.equal(v2[ids.long()], vc[ids.long()])
    assert not k2[[1, 2, 4, 5]].any()
    counts = ascend_ops.call_counts(per_backend=True)
    assert counts.get(("read_kv_blocks", "npu")) == 1 and counts.get(("write_kv_blocks", "npu")) == 1


@pytest.mark.sim_only
def test_npu_branch_makes_no_host_sync(simulated_npu):
    """The NPU branch never reads the block ids back (no sync; graph-capturable)."""
    from ascend_ops import simulator

    kc, vc = slab_caches(4, 16, 2, (64, 64), torch.float16)
    ids = torch.tensor([1, 2])
    simulator.ledger().reset()
    blocks = ascend_ops.read_kv_blocks(kc, vc, ids)
    ascend_ops.write_kv_blocks(blocks, kc, vc, ids)
    assert simulator.ledger().snapshot()["host_syncs"] == 0


def _bad_cases():
    kc, vc = slab_caches(4, 16, 2, (64, 64), torch.float32)
    ids = torch.tensor([1, 2])
    buf = torch.zeros(2, 16 * 2 * 128)
    return [
        ("read", (kc[0], vc, ids), ValueError, "key_cache"),
        ("read", (kc, vc.half(), ids), TypeError, "value_cache"),
        ("read", (kc, vc[:, :8], ids), ValueError, "value_cache"),
        ("read", (kc, vc, ids.float()), TypeError, "block_ids"),
        ("read", (kc, vc, ids[:, None]), ValueError, "block_ids"),
        ("read", (kc.int(), vc.int(), ids), TypeError, "key_cache"),
        ("read", (kc, vc, torch.tensor([1, 4])), ValueError, "block_ids"),
        ("read", (kc, vc, torch.tensor([-1])), ValueError, "block_ids"),
        ("write", (buf[:, :-1], kc, vc, ids), ValueError, "blocks"),
        ("write", (buf[:1], kc, vc, ids), ValueError, "blocks"),
        ("write", (buf.half(), kc, vc, ids), TypeError, "blocks"),
        ("write", (buf, kc, vc, torch.tensor([2, 2])), ValueError, "distinct"),
        ("write", (buf, kc, vc, torch.tensor([0, 9])), ValueError, "block_ids"),
    ]


@pytest.mark.parametrize("case", range(13))
def test_bad_input_is_refused_by_name_and_writes_nothing(backend, case):
    op, args, exc, name = _bad_cases()[case]
    caches = [a.clone() for a in args if isinstance(a, torch.Tensor) and a.dim() == 4]
    fn = ascend_ops.read_kv_blocks if op == "read" else ascend_ops.write_kv_blocks
    with pytest.raises(exc, match=name):
        fn(*args)
    after = [a for a in args if isinstance(a, torch.Tensor) and a.dim() == 4]
    assert all(torch.equal(a, b) for a, b in zip(after, caches, strict=True))


def test_registered_ops_pass_opcheck():
    kc, vc = slab_caches(4, 16, 2, (64, 32), torch.float32)
    ids = torch.tensor([3, 1])
    torch.library.opcheck(torch.ops.ascend.read_kv_blocks.default, (kc, vc, ids))
    buf = ascend_ops.read_kv_blocks(kc, vc, ids)
    torch.library.opcheck(torch.ops.ascend.write_kv_blocks.default,
                          (buf, kc.clone(), vc.clone(), torch.tensor([0, 2])))


@pytest.mark.sim_only
def test_npu_branch_is_graph_capturable(simulated_npu):
    """Read then write captured in an NPU graph replay on the current cache contents and ids
    (offloading can run inside a captured step)."""
    kc, vc = slab_caches(6, 16, 2, (64, 64), torch.bfloat16, seed=4)
    ids = torch.tensor([1, 4])
    dst = torch.tensor([0, 5])
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        blocks = ascend_ops.read_kv_blocks(kc, vc, ids)
        ascend_ops.write_kv_blocks(blocks, kc, vc, dst)
    kc.copy_(torch.randn(kc.shape))
    vc.copy_(torch.randn(vc.shape))
    ids.copy_(torch.tensor([2, 3]))
    g.replay()
    assert torch.equal(kc[[0, 5]], kc[[2, 3]]) and torch.equal(vc[[0, 5]], vc[[2, 3]])
