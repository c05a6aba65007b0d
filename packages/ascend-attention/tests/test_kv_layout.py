# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV slab reinterpretation: contiguous K/V (and MLA nope/rope) caches without a copy, and
block zeroing that hits exactly one block of each part.

The layer views come from vLLM 0.32's own ``create_kv_cache_views`` with the LBNHC layout,
so the test sees the strides a real allocation has (two layers in one backing tensor).
"""

from __future__ import annotations

import pytest
import torch
from vllm.v1.kv_cache_interface import (
    FullAttentionSpec,
    KVCacheTensor,
    MLAAttentionSpec,
    create_kv_cache_views,
)
from vllm.v1.kv_cache_layout import KVCacheLayout
from vllm_ascend_attention import kv_layout
from vllm_ascend_attention.backends.dense import AscendAttentionBackend, split_kv_cache


def _views(num_blocks, block_size, heads, head_size, layout=KVCacheLayout.LBNHC, layers=2,
           spec_cls=FullAttentionSpec):
    spec = spec_cls(block_size=block_size, num_kv_heads=heads, head_size=head_size,
                             dtype=torch.float32)
    page = spec.page_size_bytes
    tensor = KVCacheTensor(size=page * num_blocks * layers, layers=[f"l{i}" for i in range(layers)],
                           layer_stride=page * num_blocks, block_stride=page)
    raw = torch.zeros(tensor.size, dtype=torch.int8)
    return raw, create_kv_cache_views(raw, spec, num_blocks, layout, tensor)


def test_vllm_lbnhc_view_splits_into_contiguous_caches_sharing_storage():
    raw, views = _views(num_blocks=5, block_size=16, heads=2, head_size=8)
    for index, view in enumerate(views):
        assert view.shape == (5, 2, 16, 16)  # logical [B, H, N, K+V]
        k, v = split_kv_cache(view, 8)
        assert k.shape == v.shape == (5, 16, 2, 8)
        assert k.is_contiguous() and v.is_contiguous()
        # same storage, no copy: K starts at the layer's slab, V right after K
        assert k.untyped_storage().data_ptr() == raw.untyped_storage().data_ptr()
        slab = 5 * 16 * 2 * 16 * 4
        assert k.data_ptr() == raw.data_ptr() + index * slab
        assert v.data_ptr() == k.data_ptr() + k.numel() * 4
        k.fill_(1.0 + index)
        v.fill_(-1.0 - index)
    # every byte of the backing tensor belongs to exactly one part cache
    floats = raw.view(torch.float32).view(2, 2, -1)
    assert (floats[0, 0] == 1).all() and (floats[0, 1] == -1).all()
    assert (floats[1, 0] == 2).all() and (floats[1, 1] == -2).all()


def test_zeroing_a_block_zeroes_exactly_that_block_of_k_and_v():
    _, views = _views(num_blocks=6, block_size=16, heads=2, head_size=8, layers=1)
    view = views[0]
    k, v = split_kv_cache(view, 8)
    k.copy_(torch.arange(k.numel(), dtype=torch.float32).view_as(k) + 1)
    v.copy_(-(torch.arange(v.numel(), dtype=torch.float32).view_as(v) + 1))
    before_k, before_v = k.clone(), v.clone()
    layer = type("Layer", (), {"head_size": 8})()
    AscendAttentionBackend.zero_kv_cache_blocks(view, torch.tensor([1, 4]), layer)
    for b in range(6):
        if b in (1, 4):
            assert (k[b] == 0).all() and (v[b] == 0).all()
        else:
            assert torch.equal(k[b], before_k[b]) and torch.equal(v[b], before_v[b])


def test_mla_widths_split_nope_and_rope():
    # MLA spec: one latent row per token, [kv_c (16) | k_pe (8)]
    _, views = _views(num_blocks=3, block_size=16, heads=1, head_size=24, layers=1,
                      spec_cls=MLAAttentionSpec)
    nope, rope = kv_layout.split_cache(views[0], (16, 8))
    assert nope.shape == (3, 16, 1, 16) and rope.shape == (3, 16, 1, 8)
    assert nope.is_contiguous() and rope.is_contiguous()
    assert rope.data_ptr() == nope.data_ptr() + nope.numel() * 4
    nope.fill_(3.0)
    rope.fill_(5.0)
    kv_layout.zero_blocks(views[0], torch.tensor([2]), (16, 8))
    assert (nope[2] == 0).all() and (rope[2] == 0).all()
    assert (nope[:2] == 3).all() and (rope[:2] == 5).all()
    # vLLM's MLA layer hands the backend the 3-D [num_blocks, block_size, C] form: same split
    nope3, rope3 = kv_layout.split_cache(views[0][:, 0], (16, 8))
    assert nope3.data_ptr() == nope.data_ptr() and rope3.data_ptr() == rope.data_ptr()
    assert nope3.shape == nope.shape and rope3.shape == rope.shape


def test_a_layout_that_is_not_one_slab_is_refused():
    _, views = _views(num_blocks=3, block_size=16, heads=2, head_size=8, layout=KVCacheLayout.LBHNC,
                      layers=1)
    with pytest.raises(ValueError, match="LBNHC"):
        split_kv_cache(views[0], 8)
