# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rotary embedding -> ascend_ops.rotary_embedding: numbers and dispatch.

Oracle: vLLM's ``RotaryEmbedding.forward_native`` on the same layer (same cos/sin cache).
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from vllm.model_executor.layers.rotary_embedding import get_rope
from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbedding
from vllm_ascend_models.layers.rotary_embedding import (
    ASCEND_ROPE_CLASSES,
    AscendLlama3RotaryEmbedding,
    AscendRotaryEmbedding,
    AscendYaRNScalingRotaryEmbedding,
)

MAX_POS = 64


def _rope_calls() -> int:
    return ascend_ops.call_counts().get("rotary_embedding", 0)


def _qkv(num_tokens, hq, hk, head_size, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    positions = torch.randint(0, MAX_POS, (num_tokens,), generator=g)
    q = torch.randn(num_tokens, hq * head_size, generator=g).to(dtype)
    k = torch.randn(num_tokens, hk * head_size, generator=g).to(dtype)
    return positions, q, k


def _tol(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)


def _check_against_native(layer, positions, q, k):
    q0, k0 = q.clone(), k.clone()
    want_q, want_k = layer.forward_native(positions, q.clone(), k.clone())
    got_q, got_k = layer.forward_oot(positions, q, k)
    assert got_q.shape == q.shape and got_k.shape == k.shape and got_q.dtype == q.dtype
    torch.testing.assert_close(got_q, want_q, **_tol(q.dtype))
    torch.testing.assert_close(got_k, want_k, **_tol(q.dtype))
    # Out of place, like forward_native: the inputs are untouched.
    assert torch.equal(q, q0) and torch.equal(k, k0)


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("head_size,rotary_dim", [(16, 16), (32, 16), (64, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_oot_matches_native(backend, vllm_context, is_neox, head_size, rotary_dim, dtype):
    with vllm_context(["all"]):
        layer = AscendRotaryEmbedding(head_size, rotary_dim, MAX_POS, 10000.0, is_neox, dtype)
    positions, q, k = _qkv(5, 4, 2, head_size, dtype, seed=head_size + rotary_dim)
    _check_against_native(layer, positions, q, k)


@given(
    num_tokens=st.integers(1, 9),
    hk=st.integers(1, 3),
    group=st.integers(1, 3),
    half_rot=st.sampled_from([4, 8]),
    extra=st.sampled_from([0, 8]),
    is_neox=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_forward_oot_matches_native_property(
    base_vllm_config, num_tokens, hk, group, half_rot, extra, is_neox, seed
):
    from vllm.config import set_current_vllm_config

    rotary_dim = 2 * half_rot
    head_size = rotary_dim + extra
    base_vllm_config.compilation_config.custom_ops = ["all"]
    with set_current_vllm_config(base_vllm_config):
        layer = AscendRotaryEmbedding(head_size, rotary_dim, MAX_POS, 500.0, is_neox, torch.float32)
    positions, q, k = _qkv(num_tokens, hk * group, hk, head_size, torch.float32, seed)
    _check_against_native(layer, positions, q, k)




@pytest.mark.parametrize("is_neox", [True, False])
def test_npu_branch_partial_rotary_and_two_thetas(simulated_npu, vllm_context, is_neox):
    """GLM-style partial rotary (rotary_dim = head_size / 2) in two layers with different theta
    (a main and a draft model, per-layer theta), on the simulated NPU: each layer matches vLLM's
    forward_native with its own cache (ATB rope kept the first cache of the process and rotated
    the pass-through half)."""
    from ascend_ops import simulator

    with vllm_context(["all"]):
        layers = [AscendRotaryEmbedding(128, 64, MAX_POS, theta, is_neox, torch.bfloat16)
                  for theta in (10000.0, 1000000.0)]
    positions, q, k = _qkv(6, 4, 2, 128, torch.bfloat16, seed=21)
    ascend_ops.reset_call_counts()
    for layer in (*layers, layers[0]):
        _check_against_native(layer, positions, q, k)
    assert ascend_ops.call_counts(per_backend=True).get(("rotary_embedding", "npu")) == 3
    assert simulator.ledger().launches.get("npu_mrope") == 3


def test_key_none_rotates_query_only(vllm_context):
    with vllm_context(["all"]):
        layer = AscendRotaryEmbedding(32, 32, MAX_POS, 10000.0, True, torch.float32)
    positions, q, _ = _qkv(4, 2, 1, 32, torch.float32, seed=5)
    want_q, want_k = layer.forward_native(positions, q, None)
    got_q, got_k = layer.forward_oot(positions, q, None)
    assert got_k is None and want_k is None
    torch.testing.assert_close(got_q, want_q)


def test_three_dim_query_keeps_shape(vllm_context):
    with vllm_context(["all"]):
        layer = AscendRotaryEmbedding(16, 16, MAX_POS, 10000.0, True, torch.float32)
    positions, q, k = _qkv(3, 2, 2, 16, torch.float32, seed=9)
    q3, k3 = q.view(3, 2, 16), k.view(3, 2, 16)
    want_q, want_k = layer.forward_native(positions, q3, k3)
    got_q, got_k = layer.forward_oot(positions, q3, k3)
    assert got_q.shape == (3, 2, 16)
    torch.testing.assert_close(got_q, want_q)
    torch.testing.assert_close(got_k, want_k)


# (rope_parameters for get_rope, class we expect) — Llama 3.x and long-context Qwen shapes.
SCALED = [
    (
        {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        },
        AscendLlama3RotaryEmbedding,
    ),
    (
        {
            "rope_type": "yarn",
            "rope_theta": 1000000.0,
            "factor": 4.0,
            "original_max_position_embeddings": 16,
        },
        AscendYaRNScalingRotaryEmbedding,
    ),
]


@pytest.mark.parametrize("params,expected_cls", SCALED)
def test_scaled_rope_from_get_rope_is_ours_and_matches(vllm_context, params, expected_cls):
    with vllm_context(["all"]):
        layer = get_rope(
            32, MAX_POS, is_neox_style=True, rope_parameters=params, dtype=torch.float32
        )
    assert type(layer) is expected_cls
    positions, q, k = _qkv(6, 4, 2, 32, torch.float32, seed=11)
    _check_against_native(layer, positions, q, k)


def test_every_ascend_class_subclasses_its_upstream():
    for name, cls in ASCEND_ROPE_CLASSES.items():
        assert cls.__mro__[2].__name__ == name
        assert issubclass(cls, RotaryEmbedding)


@pytest.mark.parametrize("custom_ops", [["all"], ["none", "+rotary_embedding"]])
def test_get_rope_dispatches_to_ascend_ops(vllm_context, oot_platform, custom_ops):
    """What Llama/Qwen2/Qwen3 attention builds (get_rope) runs our op when enabled."""
    with vllm_context(custom_ops):
        # head_size 24 / max_position 40 keep get_rope's cache key unique to this test.
        layer = get_rope(
            24, 40, is_neox_style=True, rope_parameters={"rope_theta": 1e4}, dtype=torch.float32
        )
    assert type(layer) is AscendRotaryEmbedding
    assert layer._forward_method == layer.forward_oot
    positions = torch.tensor([0, 5, 39])
    q, k = torch.randn(3, 48), torch.randn(3, 24)
    before = _rope_calls()
    got_q, got_k = layer(positions, q, k)
    assert _rope_calls() == before + 1
    want_q, want_k = layer.forward_native(positions, q, k)
    torch.testing.assert_close(got_q, want_q)
    torch.testing.assert_close(got_k, want_k)


def test_disabled_rope_runs_vllm_native(vllm_context, oot_platform):
    with vllm_context(["all", "-rotary_embedding"]):
        layer = RotaryEmbedding(16, 16, MAX_POS, 10000.0, True, torch.float32)
        assert not layer.enabled()
    before = _rope_calls()
    layer(torch.tensor([1, 2]), torch.randn(2, 16), torch.randn(2, 16))
    assert _rope_calls() == before
