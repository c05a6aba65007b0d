# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendMLAImpl against a naive MLA oracle written from the DeepSeek-V2 definition: per head,
k = [W_UK c | k_pe], v = W_UV c, softmax(q k^T * scale) v, with c the compressed latent.
Decode uses absorbed weights (q_nope W_UK against the latent rows) and must give the same
attention as the up-projected form; prefill with cached context (prefix hit / earlier chunk) must
equal full causal attention over context + new tokens."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm_ascend_attention.host_lengths import HostLengths

N, L, R, NOPE, V, BS = 2, 8, 4, 6, 5, 4  # heads, kv_lora_rank, rope dim, nope dim, v dim, block size
SCALE = 0.3


@pytest.fixture
def impl():
    from vllm.v1.attention.backend import AttentionType
    from vllm_ascend_attention.backends.mla import AscendMLAImpl

    g = torch.Generator().manual_seed(0)
    w = torch.randn(N * (NOPE + V), L, generator=g) / L**0.5

    def kv_b_proj(x):
        return (x @ w.t(), None)

    obj = AscendMLAImpl(N, L + R, SCALE, 1, None, None, "auto", None, AttentionType.DECODER, None,
                        q_lora_rank=None, kv_lora_rank=L, qk_nope_head_dim=NOPE, qk_rope_head_dim=R,
                        qk_head_dim=NOPE + R, v_head_dim=V, kv_b_proj=kv_b_proj)
    obj.w = w.view(N, NOPE + V, L)
    return obj


def _naive(q, latent, w, causal_offset):
    """q [n, N, NOPE+R]; latent [S, L+R]; query i sees keys 0..causal_offset+i -> [n, N, V]."""
    c, k_pe = latent[:, :L].double(), latent[:, L:].double()
    out = torch.zeros(q.shape[0], N, V, dtype=torch.float64)
    for h in range(N):
        k = torch.cat([c @ w[h, :NOPE].double().t(), k_pe], dim=-1)
        v = c @ w[h, NOPE:].double().t()
        for i in range(q.shape[0]):
            vis = causal_offset + i + 1
            p = torch.softmax(k[:vis] @ q[i, h].double() * SCALE, dim=0)
            out[i, h] = p @ v[:vis]
    return out


def _cache_with(latent, blocks):
    """vLLM's logical MLA layer view [num_blocks, 1, block_size, L + R] of a dense slab."""
    cache = torch.zeros(6, 1, BS, L + R)
    slots = torch.tensor([blocks[p // BS] * BS + p % BS for p in range(latent.shape[0])])
    return cache, slots


def test_cache_write_then_absorbed_decode_matches_naive(impl):
    g = torch.Generator().manual_seed(1)
    latent = torch.randn(7, L + R, generator=g)
    blocks = [4, 1]
    cache, slots = _cache_with(latent, blocks)
    impl.do_kv_cache_update(latent[:, :L], latent[:, L:].unsqueeze(1), cache, slots, "auto", None)
    # the slab holds a contiguous latent cache, then a contiguous rope cache
    flat = cache.view(-1)
    nope, rope = flat[: 6 * BS * L].view(-1, L), flat[6 * BS * L :].view(-1, R)
    assert torch.equal(nope[slots], latent[:, :L]) and torch.equal(rope[slots], latent[:, L:])
    q = torch.randn(1, N, NOPE + R, generator=g)
    # absorbed query: q_nope @ W_UK per head -> latent space
    q_abs = torch.einsum("bnd,ndl->bnl", q[..., :NOPE], impl.w[:, :NOPE])
    meta = SimpleNamespace(decode=SimpleNamespace(seq_lens=torch.tensor([7]),
                                                  block_table=torch.tensor([blocks + [0]])),
                           ascend_decode=HostLengths([1], [7]))
    o_lat, _ = impl.forward_mqa((q_abs, q[..., NOPE:]), cache, meta, None)
    out = torch.einsum("bnl,nvl->bnv", o_lat, impl.w[:, NOPE:])  # W_UV up-projection
    torch.testing.assert_close(out.double(), _naive(q, latent, impl.w, 6), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("context", [0, 5])
def test_prefill_with_cached_context_matches_naive(impl, context):
    g = torch.Generator().manual_seed(2)
    new = 3
    latent = torch.randn(context + new, L + R, generator=g)
    blocks = [2, 5]
    cache, slots = _cache_with(latent, blocks)
    # only the context is cached
    impl.do_kv_cache_update(latent[:context, :L], latent[:context, L:].unsqueeze(1), cache,
                            slots[:context], "auto", None)
    q = torch.randn(new, N, NOPE + R, generator=g)
    ctx = None if context == 0 else SimpleNamespace(context_lens_list=[context])
    meta = SimpleNamespace(prefill=SimpleNamespace(query_start_loc=torch.tensor([0, new]),
                                                   chunked_context=ctx,
                                                   block_table=torch.tensor([blocks])),
                           ascend_prefill=HostLengths([new], [context + new]))
    output = torch.zeros(new, N * V)
    impl.forward_mha(q, latent[context:, :L], latent[context:, L:].unsqueeze(1), cache, meta, None, output)
    torch.testing.assert_close(output.view(new, N, V).double(), _naive(q, latent, impl.w, context),
                               atol=1e-5, rtol=1e-5)


def test_select_backend():
    import vllm_ascend_attention as va

    assert va.select_backend(SimpleNamespace(use_mla=True, use_sparse=False)).endswith("AscendMLABackend")
    assert va.select_backend(SimpleNamespace(use_mla=False, use_sparse=False)).endswith("AscendAttentionBackend")
    # sparse MLA (DeepSeek-V3.2 DSA) has its backend; compressed-KV models stay refused, sparse or not
    assert va.select_backend(SimpleNamespace(use_mla=True, use_sparse=True)).endswith("AscendSFABackend")
    for sparse in (False, True):
        with pytest.raises(NotImplementedError, match="compress_ratios"):
            va.select_backend(SimpleNamespace(use_mla=True, use_sparse=sparse), SimpleNamespace(compress_ratios=[4]))


def test_prefill_batch_of_two_requests_plus_padding_rows(impl):
    """Two prefill requests in one step (one with 5 cached context rows, one fresh) and two
    padding rows after them: each request equals its own naive causal attention."""
    g = torch.Generator().manual_seed(3)
    ctx, new = [5, 0], [3, 4]
    lat = [torch.randn(c + n, L + R, generator=g) for c, n in zip(ctx, new, strict=True)]
    blocks = [[2, 5], [1, 3]]
    cache = torch.zeros(6, 1, BS, L + R)
    for b in range(2):
        slots = torch.tensor([blocks[b][p // BS] * BS + p % BS for p in range(ctx[b])], dtype=torch.long)
        if ctx[b]:
            impl.do_kv_cache_update(lat[b][: ctx[b], :L], lat[b][: ctx[b], L:].unsqueeze(1), cache,
                                    slots, "auto", None)
    q = torch.randn(sum(new) + 2, N, NOPE + R, generator=g)
    rows_new = torch.cat([lat[b][ctx[b]:] for b in range(2)] + [torch.randn(2, L + R, generator=g)])
    meta = SimpleNamespace(prefill=SimpleNamespace(block_table=torch.tensor(blocks)),
                           ascend_prefill=HostLengths([3, 7], [8, 4]))
    output = torch.zeros(sum(new) + 2, N * V)
    impl.forward_mha(q, rows_new[:, :L], rows_new[:, L:].unsqueeze(1), cache, meta, None, output)
    out = output.view(-1, N, V).double()
    torch.testing.assert_close(out[:3], _naive(q[:3], lat[0], impl.w, 5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[3:7], _naive(q[3:7], lat[1], impl.w, 0), atol=1e-5, rtol=1e-5)
    assert (out[7:] == 0).all()




@pytest.mark.parametrize("heads", [12, 16])
def test_simulated_npu_decode_pads_heads_and_captures_with_a_workspace(sim, heads):
    """Simulated NPU, DeepSeek-sized latent (512 + 64): a TP-split head count (12 = 96 / 8) is
    zero-padded to a power of two for FIA's MLA path and the result keeps the real heads; a
    FULL-graph capture passes one max-size workspace (shared by the graph's layers) to the
    captured call and to its updates, and the replay after an update equals the MLA reference
    at the new lengths."""
    import ascend_ops
    from ascend_ops import device
    from vllm.v1.attention.backend import AttentionType
    from vllm_ascend_attention import graph_params
    from vllm_ascend_attention.backends.mla import AscendMLAImpl

    lat, rope_dim, bs, dt = 512, 64, 16, torch.bfloat16
    layers = [AscendMLAImpl(heads, lat + rope_dim, 0.05, 1, None, None, "auto", None,
                            AttentionType.DECODER, None, q_lora_rank=None, kv_lora_rank=lat,
                            qk_nope_head_dim=8, qk_rope_head_dim=rope_dim, qk_head_dim=8 + rope_dim,
                            v_head_dim=8, kv_b_proj=None) for _ in range(2)]
    g = torch.Generator().manual_seed(4)
    cache = torch.randn(6, 1, bs, lat + rope_dim, generator=g).to(dt)
    table = torch.tensor([[2, 4], [1, 0]], dtype=torch.int32)
    q_nope = torch.randn(2, heads, lat, generator=g).to(dt)
    q_pe = torch.randn(2, heads, rope_dim, generator=g).to(dt)
    nope, rope = layers[0]._caches(cache)

    def meta(kv):
        return SimpleNamespace(decode=SimpleNamespace(block_table=table), ascend_decode=HostLengths([1, 2], kv))

    def want(kv):
        return ascend_ops.reference.mla_decode(q_nope, q_pe, nope, rope, table, [1, 2], kv, 0.05).float()

    eager, _ = layers[0].forward_mqa((q_nope, q_pe), cache, meta([7, 20]), None)
    assert eager.shape == (2, heads, lat)
    torch.testing.assert_close(eager.float(), want([7, 20]), atol=2e-2, rtol=2e-2)

    names = [f"model.layers.{i}.self_attn.attn" for i in range(2)]
    sized = sim.ledger().launches["_npu_fused_infer_attention_score_get_max_workspace"]
    graph = device.Graph()
    graph.capture_begin()
    outs = [impl.forward_mqa((q_nope, q_pe), cache, meta([7, 20]), SimpleNamespace(layer_name=name))[0]
            for impl, name in zip(layers, names, strict=True)]
    graph.capture_end()
    assert sim.ledger().launches["_npu_fused_infer_attention_score_get_max_workspace"] == sized + 1
    graph_params.update_graph_params(
        SimpleNamespace(batch_descriptor=None, attn_metadata={name: meta([8, 21]) for name in names}))
    graph.replay()
    for out in outs:
        assert out.shape == (2, heads, lat)
        torch.testing.assert_close(out.float(), want([8, 21]), atol=2e-2, rtol=2e-2)


def test_kv_cache_update_takes_the_arguments_vllm_passes():
    # vLLM's MLA layer calls impl.do_kv_cache_update with the parameters of its base class,
    # MLAAttentionImpl (vllm/v1/attention/backend.py); 0.33 added skip_scale
    import inspect

    from vllm.v1.attention.backend import MLAAttentionImpl
    from vllm_ascend_attention.backends.mla import AscendMLAImpl

    ours = inspect.signature(AscendMLAImpl.do_kv_cache_update).parameters
    theirs = inspect.signature(MLAAttentionImpl.do_kv_cache_update).parameters
    assert list(ours) == list(theirs)
    assert [p.default for p in ours.values()] == [p.default for p in theirs.values()]


def test_skip_scale_writes_the_same_rows(impl):
    # the cache is never quantized (supported_kv_cache_dtypes ["auto"]): skip_scale, which vLLM
    # sets only for an fp8 cache with k_scale 1.0, writes exactly the rows written without it
    latent = torch.randn(5, L + R, generator=torch.Generator().manual_seed(3))
    cache, slots = _cache_with(latent, [2, 0])
    again = torch.zeros_like(cache)
    impl.do_kv_cache_update(latent[:, :L], latent[:, L:].unsqueeze(1), cache, slots, "auto", None)
    impl.do_kv_cache_update(latent[:, :L], latent[:, L:].unsqueeze(1), again, slots, "auto", None,
                            True)
    assert cache.abs().sum() > 0 and torch.equal(cache, again)
