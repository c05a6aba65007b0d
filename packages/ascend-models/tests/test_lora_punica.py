# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""PunicaWrapperNPU against the punica semantics of vLLM 0.32 (punica_base.py docstrings),
computed here in float64: packed slices, base-model rows, the segment (eager) and per-token
(graph) paths, and index buffers refilled in place."""

from __future__ import annotations

import pytest
import torch
from vllm.lora.layers import LoRAMapping
from vllm_ascend_models.lora import punica
from vllm_ascend_models.lora.punica import PunicaWrapperNPU

SLOTS, RANK, HIDDEN, SLICES = 3, 8, 16, (12, 6, 6)  # a packed qkv
# tokens of 3 requests: adapter id 7 (3 tokens), base (2), adapter id 9 (4)
TOKEN_IDS = (7, 7, 7, 0, 0, 9, 9, 9, 9)
SLOT_OF = {7: 0, 9: 2}


def _wrapper():
    w = PunicaWrapperNPU(64, 8, "cpu")
    w.update_metadata(LoRAMapping(TOKEN_IDS, (7, 0, 9), is_prefill=True), [7, None, 9], SLOTS, 100)
    return w


def _weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    a = tuple(torch.randn(SLOTS, 1, RANK, HIDDEN, generator=g) for _ in SLICES)
    b = tuple(torch.randn(SLOTS, 1, n, RANK, generator=g) for n in SLICES)
    return a, b


def _expected(y, x, a, b, scale):
    out = y.double().clone()
    off = 0
    for ai, bi, n in zip(a, b, SLICES, strict=True):
        for t, lid in enumerate(TOKEN_IDS):
            if lid:
                s = SLOT_OF[lid]
                out[t, off:off + n] += scale * (bi[s, 0].double() @ (ai[s, 0].double() @ x[t].double()))
        off += n
    return out


@pytest.mark.parametrize("eager", [True, False])
def test_add_lora_linear_packed_slices(monkeypatch, eager):
    monkeypatch.setattr(punica, "_eager", lambda: eager)
    w = _wrapper()
    assert w._use_segments(len(TOKEN_IDS)) is eager
    a, b = _weights()
    x = torch.randn(len(TOKEN_IDS), HIDDEN)
    y = torch.randn(len(TOKEN_IDS), sum(SLICES))
    want = _expected(y, x, a, b, 0.5)
    w.add_lora_linear(y, x, a, b, 0.5, SLICES)
    torch.testing.assert_close(y.double(), want, atol=1e-4, rtol=1e-4)


def test_shrink_expand_equals_linear():
    w = _wrapper()
    a, b = _weights(1)
    x = torch.randn(len(TOKEN_IDS), HIDDEN)
    y = torch.randn(len(TOKEN_IDS), sum(SLICES))
    buf = torch.zeros(len(SLICES), len(TOKEN_IDS), RANK)
    y2 = y.clone()
    w.add_shrink(buf, x, a, 0.5)
    w.add_expand(y2, buf, b, SLICES, offset_start=0)
    torch.testing.assert_close(y2.double(), _expected(y, x, a, b, 0.5), atol=1e-4, rtol=1e-4)


def test_index_buffers_refilled_in_place_with_tail_cleared():
    w = _wrapper()
    buf = w._token_lora_indices
    assert buf[: len(TOKEN_IDS)].tolist() == [0, 0, 0, -1, -1, 2, 2, 2, 2]
    w.update_metadata(LoRAMapping((9, 9), (9,), is_prefill=True), [7, None, 9], SLOTS, 100)
    assert w._token_lora_indices is buf, "a captured graph holds this buffer: never reallocate"
    assert buf[:4].tolist() == [2, 2, -1, -1] and bool((buf[2:] == -1).all())


def test_logits_use_one_adapter_per_request():
    w = _wrapper()
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(SLOTS, 1, RANK, HIDDEN, generator=g), torch.randn(SLOTS, 1, 20, RANK, generator=g)
    x, y = torch.randn(3, HIDDEN, generator=g), torch.randn(3, 24, generator=g)
    want = y.double().clone()
    for r, s in enumerate([0, None, 2]):
        if s is not None:
            want[r, :20] += b[s, 0].double() @ (a[s, 0].double() @ x[r].double())
    w.add_lora_logits(y, x, a, b, 1.0)
    torch.testing.assert_close(y.double(), want, atol=1e-4, rtol=1e-4)


def test_embedding_expands_each_tokens_own_adapter():
    """``VocabParallelEmbeddingWithLoRA.forward`` (vllm/lora/layers/vocab_parallel_embedding.py)
    looks up each token's LoRA A row itself and calls ``add_lora_embedding(y, x, lora_b_stacked,
    add_input=True)``: ``y[t] += lora_b[slot(t)] @ x[t]`` for tokens with an adapter, base tokens
    unchanged (punica_base.py's documented semantics)."""
    w = _wrapper()
    g = torch.Generator().manual_seed(3)
    b = torch.randn(SLOTS, 1, HIDDEN, RANK, generator=g)
    x = torch.randn(len(TOKEN_IDS), RANK, generator=g)
    y = torch.randn(len(TOKEN_IDS), HIDDEN, generator=g)
    want = y.double().clone()
    for t, lid in enumerate(TOKEN_IDS):
        if lid:
            want[t] += b[SLOT_OF[lid], 0].double() @ x[t].double()
    w.add_lora_embedding(y, x, b, add_input=True)
    torch.testing.assert_close(y.double(), want, atol=1e-4, rtol=1e-4)
