# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multimodal layers -> ascend_ops: vLLM's ``MMEncoderAttention`` on ``encoder_attention`` and
``MRotaryEmbedding`` on ``mrope``.

Oracles: vLLM's own ``forward_native`` of the same layer (SDPA per ``cu_seqlens`` sequence;
the sectioned M-RoPE in torch), on the same inputs.
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from conftest import TOL
from vllm.model_executor.custom_op import op_registry_oot
from vllm.model_executor.layers.attention.mm_encoder_attention import MMEncoderAttention
from vllm.model_executor.layers.rotary_embedding import get_rope
from vllm_ascend_models.layers.encoder_attention import AscendMMEncoderAttention
from vllm_ascend_models.layers.mrope import AscendMRotaryEmbedding


def _calls(name: str) -> int:
    return ascend_ops.call_counts().get(name, 0)


def test_construction_through_vllm_classes_gives_ours(vllm_context, oot_platform):
    """The towers build ``MMEncoderAttention(...)`` and ``get_rope`` builds
    ``MRotaryEmbedding``: both come out as our subclasses once registered."""
    assert op_registry_oot["MMEncoderAttention"] is AscendMMEncoderAttention
    assert op_registry_oot["MRotaryEmbedding"] is AscendMRotaryEmbedding
    with vllm_context(["all"]):
        attn = MMEncoderAttention(num_heads=2, head_size=16)
        rope = get_rope(32, 64, True, dtype=torch.float32,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                         "mrope_section": [4, 6, 6]})
    assert type(attn) is AscendMMEncoderAttention
    assert type(rope) is AscendMRotaryEmbedding
    assert attn._forward_method == attn.forward_oot
    assert rope._forward_method == rope.forward_oot


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("four_d", [True, False])
def test_encoder_attention_matches_sdpa(backend, vllm_context, dtype, four_d):
    with vllm_context(["all"]):
        layer = AscendMMEncoderAttention(num_heads=4, head_size=16, num_kv_heads=2)
    g = torch.Generator().manual_seed(0)
    t = 13
    shape_q = (1, t, 4, 16) if four_d else (1, t, 64)
    shape_k = (1, t, 2, 16) if four_d else (1, t, 32)
    q = torch.randn(*shape_q, generator=g).to(dtype)
    k = torch.randn(*shape_k, generator=g).to(dtype)
    v = torch.randn(*shape_k, generator=g).to(dtype)
    cu = torch.tensor([0, 4, 9, 13], dtype=torch.int32)
    before = _calls("encoder_attention")
    got = layer.forward_oot(q, k, v, cu_seqlens=cu)
    assert _calls("encoder_attention") == before + 1
    want = layer.forward_native(q, k, v, cu_seqlens=cu)
    assert got.shape == q.shape and got.dtype == dtype
    torch.testing.assert_close(got, want.to(dtype), **TOL[dtype])


def test_encoder_attention_without_cu_seqlens_is_one_sequence_per_row(backend, vllm_context):
    with vllm_context(["all"]):
        layer = AscendMMEncoderAttention(num_heads=2, head_size=8)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(3, 5, 2, 8, generator=g) for _ in range(3))
    got = layer.forward_oot(q, k, v)
    want = layer.forward_native(q, k, v)
    torch.testing.assert_close(got, want, **TOL[torch.float32])


def _mrope_layer(vllm_context, head_size, rotary_dim, section, dtype):
    with vllm_context(["all"]):
        return AscendMRotaryEmbedding(head_size, rotary_dim, 64, 10000.0, True, dtype,
                                      mrope_section=section)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mrope_matches_native(backend, vllm_context, dtype):
    layer = _mrope_layer(vllm_context, 64, 64, [8, 12, 12], dtype)
    g = torch.Generator().manual_seed(2)
    t = 7
    positions = torch.randint(0, 60, (3, t), generator=g)
    q = torch.randn(t, 4 * 64, generator=g).to(dtype)
    k = torch.randn(t, 2 * 64, generator=g).to(dtype)
    before = _calls("mrope")
    got_q, got_k = layer.forward_oot(positions, q.clone(), k.clone())
    assert _calls("mrope") == before + 1
    want_q, want_k = layer.forward_native(positions, q.clone(), k.clone())
    torch.testing.assert_close(got_q, want_q, **TOL[dtype])
    torch.testing.assert_close(got_k, want_k, **TOL[dtype])


def test_mrope_text_positions_take_plain_rope(backend, vllm_context):
    layer = _mrope_layer(vllm_context, 32, 32, [4, 6, 6], torch.float32)
    g = torch.Generator().manual_seed(3)
    positions = torch.randint(0, 60, (6,), generator=g)
    q, k = torch.randn(6, 64, generator=g), torch.randn(6, 32, generator=g)
    got_q, got_k = layer.forward_oot(positions, q.clone(), k.clone())
    want_q, want_k = layer.forward_native(positions, q.clone(), k.clone())
    torch.testing.assert_close(got_q, want_q, **TOL[torch.float32])
    torch.testing.assert_close(got_k, want_k, **TOL[torch.float32])


def test_mrope_refuses_a_missing_key(vllm_context):
    layer = _mrope_layer(vllm_context, 32, 32, [4, 6, 6], torch.float32)
    with pytest.raises(ValueError, match="key"):
        layer.forward_oot(torch.zeros(3, 2, dtype=torch.int64), torch.zeros(2, 32), None)
