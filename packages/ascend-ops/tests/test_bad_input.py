# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Bad input raises ValueError/TypeError naming the argument, on every CPU backend, before any
write (never a crash or a silent wrong write)."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from conftest import make_paged_problem


def test_norm_and_activation_arguments(backend):
    x, w = torch.randn(2, 8), torch.ones(8)
    with pytest.raises(TypeError, match="x"):
        ascend_ops.rms_norm(x.to(torch.int32), w)
    with pytest.raises(TypeError, match="x"):
        ascend_ops.rms_norm(x.double(), w)
    with pytest.raises(ValueError, match="weight"):
        ascend_ops.rms_norm(x, torch.ones(4))
    with pytest.raises(ValueError, match="eps"):
        ascend_ops.rms_norm(x, w, -1.0)
    with pytest.raises(ValueError, match="residual"):
        ascend_ops.add_rms_norm(x, torch.randn(3, 8), w)
    with pytest.raises(TypeError, match="residual"):
        ascend_ops.add_rms_norm(x, torch.randn(2, 8).half(), w)
    with pytest.raises(ValueError, match="x"):
        ascend_ops.swiglu(torch.randn(2, 7))


def test_rotary_arguments(backend):
    pos, q, k, cache = torch.tensor([0, 1]), torch.randn(2, 32), torch.randn(2, 16), torch.randn(4, 16)
    with pytest.raises(TypeError, match="positions"):
        ascend_ops.rotary_embedding(pos.float(), q, k, 16, cache, True)
    with pytest.raises(ValueError, match="positions"):
        ascend_ops.rotary_embedding(torch.tensor([0, 4]), q, k, 16, cache, True)
    with pytest.raises(ValueError, match="positions"):
        ascend_ops.rotary_embedding(torch.tensor([-1, 0]), q, k, 16, cache, True)
    with pytest.raises(ValueError, match="cos_sin_cache"):
        ascend_ops.rotary_embedding(pos, q, k, 8, cache, True)
    with pytest.raises(ValueError, match="query"):
        ascend_ops.rotary_embedding(pos, torch.randn(3, 32), k, 16, cache, True)
    with pytest.raises(TypeError, match="key"):
        ascend_ops.rotary_embedding(pos, q, k.half(), 16, cache, True)


def test_reshape_and_cache_arguments(backend):
    key, val = torch.randn(2, 2, 8), torch.randn(2, 2, 8)
    kc, vc = torch.zeros(3, 4, 2, 8), torch.zeros(3, 4, 2, 8)
    with pytest.raises(ValueError, match="slot_mapping"):
        ascend_ops.reshape_and_cache(key, val, kc, vc, torch.tensor([1, 12]))
    assert torch.count_nonzero(kc) == 0 and torch.count_nonzero(vc) == 0  # nothing written
    with pytest.raises(ValueError, match="slot_mapping"):
        ascend_ops.reshape_and_cache(key, val, kc, vc, torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="slot_mapping"):
        ascend_ops.reshape_and_cache(key, val, kc, vc, torch.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="key_cache"):
        ascend_ops.reshape_and_cache(key, val, kc.half(), vc, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="value"):
        ascend_ops.reshape_and_cache(key, torch.randn(2, 2, 4), kc, vc, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="key"):
        ascend_ops.reshape_and_cache(torch.randn(2, 1, 8), torch.randn(2, 1, 8), kc, vc, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="key_cache"):
        ascend_ops.reshape_and_cache(key, val, kc[0], vc[0], torch.tensor([1, 2]))


def _attn_args():
    p = make_paged_problem([2, 1], [4, 6], 4, 2, 8, 4, torch.float32)
    return [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]


@pytest.mark.parametrize(
    "mutate, exc, match",
    [
        (lambda a: a.__setitem__(0, a[0].to(torch.int32)), TypeError, "query"),
        (lambda a: a.__setitem__(1, a[1].half()), TypeError, "key_cache"),
        (lambda a: a.__setitem__(0, torch.randn(3, 3, 8)), ValueError, "heads"),
        (lambda a: a.__setitem__(0, torch.randn(3, 4, 16)), ValueError, "head dim"),
        (lambda a: a[3].__setitem__((1, 0), 99), ValueError, "block_table"),
        (lambda a: a[3].__setitem__((0, 0), -2), ValueError, "block_table"),
        (lambda a: a.__setitem__(3, a[3][:, :1]), ValueError, "block_table"),
        (lambda a: a.__setitem__(3, a[3].float()), TypeError, "block_table"),
        (lambda a: a.__setitem__(5, torch.tensor([1, 6], dtype=torch.int32)), ValueError, "seq_lens"),
        (lambda a: a.__setitem__(4, torch.tensor([0, 2, 4], dtype=torch.int32)), ValueError, "query_start_loc"),
        (lambda a: a.__setitem__(4, torch.tensor([0, 2], dtype=torch.int32)), ValueError, "query_start_loc"),
    ],
)
def test_attention_arguments(backend, mutate, exc, match):
    args = _attn_args()
    mutate(args)
    with pytest.raises(exc, match=match):
        ascend_ops.fused_infer_attention(*args, 0.3)


def test_attention_rejects_unknown_layout(backend):
    with pytest.raises(ValueError, match="layout"):
        ascend_ops.fused_infer_attention(*_attn_args(), 0.3, True, layout="BNSD")
