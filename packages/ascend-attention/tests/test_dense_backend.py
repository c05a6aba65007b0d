# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ASCEND_ATTN against an independent oracle: SDPA over each request's full K/V.

The KV cache is laid out exactly as vLLM 0.32 hands it to a layer with the LBNHC
layout: a physical [num_blocks, block_size, H, 2D] buffer seen through a logical
[num_blocks, H, block_size, 2D] view.
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
import torch.nn.functional as F
from vllm.v1.attention.backend import AttentionType
from vllm.v1.kv_cache_interface import KVCacheLayout
from vllm_ascend_attention.backends.dense import (
    PREFERRED_BLOCK_SIZE,
    AscendAttentionBackend,
    AscendAttentionImpl,
    AscendAttentionMetadata,
)
from vllm_ascend_attention.host_lengths import HostLengths

BACKENDS = ["reference"] + (["native"] if ascend_ops.native_available() else [])


@pytest.fixture(params=BACKENDS)
def ops_backend(request):
    """Run each backend test on every CPU implementation of the ops."""
    with ascend_ops.use_backend(request.param):
        yield request.param


def _oracle(q, k, v, scale, causal):
    """q: [Lq, Hq, D]; k, v: [Lk, Hk, D]; the last Lq of Lk positions are the queries."""
    hq, hk = q.shape[1], k.shape[1]
    k = k.repeat_interleave(hq // hk, dim=1)
    v = v.repeat_interleave(hq // hk, dim=1)
    lq, lk = q.shape[0], k.shape[0]
    mask = None
    if causal:
        qpos = torch.arange(lk - lq, lk)[:, None]
        mask = torch.arange(lk)[None, :] <= qpos
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), attn_mask=mask, scale=scale
    )
    return out.transpose(0, 1)


def _kv_view(num_blocks, block_size, hk, d):
    """vLLM's logical [B, H, N, C] view of one layer's LBNHC slab (physical [B, N, H, C])."""
    physical = torch.zeros(num_blocks, block_size, hk, 2 * d)
    return physical.permute(0, 2, 1, 3)


@pytest.mark.parametrize("hq,hk", [(4, 4), (8, 2), (4, 1)])
@pytest.mark.parametrize("block_size", [16, 32])
def test_mixed_batch_matches_oracle(hq, hk, block_size, ops_backend):
    torch.manual_seed(0)
    d = 64
    # (context already cached, new tokens this step): prefill, prefix-hit prefill, decode, chunk
    reqs = [(0, 7), (block_size + 3, 5), (2 * block_size + 1, 1), (9, 1)]
    blocks_per_req = [-(-(c + n) // block_size) for c, n in reqs]
    num_blocks = sum(blocks_per_req) + 3
    kv = _kv_view(num_blocks, block_size, hk, d)
    perm = torch.randperm(num_blocks)[: sum(blocks_per_req)]  # scattered block ids
    max_blocks = max(blocks_per_req)
    block_table = torch.zeros(len(reqs), max_blocks, dtype=torch.int32)
    start = 0
    for i, nb in enumerate(blocks_per_req):
        block_table[i, :nb] = perm[start : start + nb].to(torch.int32)
        start += nb
    impl = AscendAttentionImpl(hq, d, 0.125, hk, None, None, "auto")
    full_k = [torch.randn(c + n, hk, d) for c, n in reqs]
    full_v = [torch.randn(c + n, hk, d) for c, n in reqs]

    def slots(i, positions):
        return torch.stack(
            [block_table[i, p // block_size].long() * block_size + p % block_size for p in positions]
        )

    # cache the already-computed context, as earlier steps would have
    for i, (c, _) in enumerate(reqs):
        if c:
            impl.do_kv_cache_update(None, full_k[i][:c], full_v[i][:c], kv, slots(i, range(c)))
    # this step: the new tokens of every request in one batch (+2 padding slots)
    new_k = torch.cat([full_k[i][c:] for i, (c, _) in enumerate(reqs)])
    new_v = torch.cat([full_v[i][c:] for i, (c, _) in enumerate(reqs)])
    step_slots = torch.cat([slots(i, range(c, c + n)) for i, (c, n) in enumerate(reqs)])
    n_tok = new_k.shape[0]
    pad_k = torch.cat([new_k, torch.randn(2, hk, d)])
    pad_v = torch.cat([new_v, torch.randn(2, hk, d)])
    impl.do_kv_cache_update(
        None, pad_k, pad_v, kv, torch.cat([step_slots, torch.tensor([-1, -1])])
    )
    q = torch.randn(n_tok + 2, hq, d)
    qsl = torch.tensor([0] + list(torch.cumsum(torch.tensor([n for _, n in reqs]), 0)), dtype=torch.int32)
    md = AscendAttentionMetadata(
        num_actual_tokens=n_tok,
        max_query_len=max(n for _, n in reqs),
        query_start_loc=qsl,
        seq_lens=torch.tensor([c + n for c, n in reqs], dtype=torch.int32),
        block_table=block_table,
        slot_mapping=step_slots,
        lengths=HostLengths(qsl[1:].tolist(), [c + n for c, n in reqs]),
    )
    output = torch.full((n_tok + 2, hq * d), float("nan"))
    impl.forward(None, q, pad_k, pad_v, kv, md, output=output)
    for i, (_, n) in enumerate(reqs):
        got = output[qsl[i] : qsl[i + 1]].view(n, hq, d)
        want = _oracle(q[qsl[i] : qsl[i + 1]], full_k[i], full_v[i], 0.125, causal=True)
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
    assert (output[n_tok:] == 0).all(), "padding rows are zeroed, not attended"


def test_encoder_only_is_bidirectional(ops_backend):
    torch.manual_seed(1)
    hq, hk, d = 4, 2, 64
    lens = [5, 130]
    impl = AscendAttentionImpl(hq, d, 0.1, hk, None, None, "auto", attn_type=AttentionType.ENCODER_ONLY)
    n = sum(lens)
    q, k, v = torch.randn(n, hq, d), torch.randn(n, hk, d), torch.randn(n, hk, d)
    qsl = torch.tensor([0, lens[0], n], dtype=torch.int32)
    md = AscendAttentionMetadata(
        num_actual_tokens=n, max_query_len=max(lens), query_start_loc=qsl,
        seq_lens=torch.tensor(lens, dtype=torch.int32),
        block_table=torch.zeros(2, 1, dtype=torch.int32),
        slot_mapping=torch.full((n,), -1), causal=False,
        lengths=HostLengths([lens[0], n], lens),
    )
    output = torch.empty(n, hq * d)
    impl.forward(None, q, k, v, torch.empty(0), md, output=output)
    for i in range(2):
        s, e = int(qsl[i]), int(qsl[i + 1])
        want = _oracle(q[s:e], k[s:e], v[s:e], 0.1, causal=False)
        torch.testing.assert_close(output[s:e].view(-1, hq, d), want, atol=2e-5, rtol=1e-4)


def test_backend_declarations():
    assert AscendAttentionBackend.get_name() == "ASCEND_ATTN"
    assert AscendAttentionBackend.get_preferred_block_size(16) == PREFERRED_BLOCK_SIZE == 128
    assert AscendAttentionBackend.supports_block_size(128)
    assert not AscendAttentionBackend.supports_block_size(24)
    assert AscendAttentionBackend.supported_kv_cache_layouts() == (KVCacheLayout.LBNHC,)


def test_unsupported_features_are_named():
    with pytest.raises(NotImplementedError, match="sliding_window"):
        AscendAttentionImpl(4, 64, 0.1, 4, None, 128, "auto")
    with pytest.raises(ValueError, match="num_kv_heads"):
        AscendAttentionImpl(6, 64, 0.1, 4, None, None, "auto")


def test_register_puts_backend_in_vllm_registry():
    import vllm_ascend_attention
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    vllm_ascend_attention.register()
    assert AttentionBackendEnum["ASCEND_ATTN"].get_class() is AscendAttentionBackend
