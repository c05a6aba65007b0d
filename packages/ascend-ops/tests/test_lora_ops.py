# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA (Punica) ops on the CPU backends: properties over ranks, slices, segment layouts and
dtypes, against an independent float64 oracle (the merged-weight formulation
``y += x @ (scale * B_i A_i)^T``, Hu et al. 2021, LoRA eq. 3) and the reference kernels."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops.reference import lora as ref
from conftest import TOL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# the backend fixture only forces a backend for the whole test: safe to share across examples
_fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _merged_oracle(y0, x, a, b, idx, scale, offset, size):
    """Per token: y[t, off:off+size] += x[t] @ (scale * B_i[:size] @ A_i)^T (float64)."""
    y = y0.double().clone()
    for t in range(x.shape[0]):
        i = int(idx[t])
        if i >= 0:
            delta_w = scale * (b[i, 0, :size].double() @ a[i, 0].double())  # [size, in]
            y[t, offset:offset + size] += delta_w @ x[t].double()
    return y


@st.composite
def problems(draw):
    slots = draw(st.integers(1, 4))
    rank = draw(st.sampled_from([1, 4, 8, 16, 64, 256]))  # vLLM's max_lora_rank choices up to 256
    hidden = draw(st.sampled_from([8, 16, 24]))
    slices = draw(st.lists(st.integers(1, 12), min_size=1, max_size=3))  # packed qkv / gate_up
    tokens = draw(st.integers(1, 9))
    idx = draw(st.lists(st.integers(-1, slots - 1), min_size=tokens, max_size=tokens))
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**16))
    return slots, rank, hidden, slices, idx, dtype, seed


def _tensors(slots, rank, hidden, slices, idx, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    t = len(idx)
    x = torch.randn(t, hidden, generator=g).to(dtype)
    a = [(torch.randn(slots, 1, rank, hidden, generator=g) * 0.3).to(dtype) for _ in slices]
    b = [(torch.randn(slots, 1, n, rank, generator=g) * 0.3).to(dtype) for n in slices]
    y = torch.randn(t, sum(slices) + 3, generator=g).to(dtype)
    return x, a, b, y, torch.tensor(idx)


def _tol(dtype):
    return dict(atol=TOL[dtype]["atol"] * 20, rtol=TOL[dtype]["rtol"] * 5)


@_fixture_ok
@given(problems())
def test_lora_linear_per_slice_matches_merged_oracle(backend, prob):
    slots, rank, hidden, slices, idx, dtype, seed = prob
    x, a, b, y, idx = _tensors(*prob)
    want = y.double().clone()
    off = 0
    for ai, bi, n in zip(a, b, slices, strict=True):
        want = _merged_oracle(want, x, ai, bi, idx, 0.5, off, n)
        ascend_ops.lora_linear(y, x, ai, bi, idx, 0.5, off, n)
        off += n
    torch.testing.assert_close(y.double(), want, **_tol(dtype))


@_fixture_ok
@given(problems())
def test_shrink_then_expand_equals_linear_and_untouched_rows(backend, prob):
    slots, rank, hidden, slices, idx, dtype, seed = prob
    x, a, b, y, idx = _tensors(*prob)
    y_fused, y_split = y.clone(), y.clone()
    off = 0
    for ai, bi, n in zip(a, b, slices, strict=True):
        buf = torch.full((x.shape[0], rank), 7.0)  # shrink overwrites, even rows without adapter
        ascend_ops.lora_shrink(x, ai, idx, 0.5, buf)
        ascend_ops.lora_expand(buf, bi, idx, y_split, off, n, add_inputs=True)
        ascend_ops.lora_linear(y_fused, x, ai, bi, idx, 0.5, off, n)
        assert torch.all(buf[idx < 0] == 0)
        off += n
    torch.testing.assert_close(y_split.double(), y_fused.double(), **_tol(dtype))
    assert torch.equal(y_split[idx < 0], y[idx < 0]), "rows with index -1 must not change"
    assert torch.equal(y_split[:, off:], y[:, off:]), "columns after the slices must not change"


@st.composite
def segment_problems(draw):
    slots = draw(st.integers(1, 4))
    lens = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    loras = draw(st.lists(st.integers(-1, slots - 1), min_size=len(lens), max_size=len(lens)))
    pad = draw(st.integers(0, 3))  # rows after the segments (graph padding)
    dtype = draw(st.sampled_from(DTYPES))
    return slots, lens, loras, pad, dtype, draw(st.integers(0, 2**16))


@_fixture_ok
@given(segment_problems(), st.booleans())
def test_sgmv_equals_bgmv_of_expanded_segments(backend, prob, add_inputs):
    slots, lens, loras, pad, dtype, seed = prob
    g = torch.Generator().manual_seed(seed)
    n_tok, rank, hidden, out = sum(lens), 8, 16, 12
    rows = n_tok + pad
    x = torch.randn(rows, hidden, generator=g).to(dtype)
    a = torch.randn(slots, 1, rank, hidden, generator=g).to(dtype)
    b = torch.randn(slots, 1, out, rank, generator=g).to(dtype)
    per_tok = torch.tensor([lo for n, lo in zip(lens, loras, strict=True) for _ in range(n)] + [-1] * pad)
    seg_lens, seg_lora = torch.tensor(lens), torch.tensor(loras)
    s_seg, s_tok = torch.zeros(rows, rank), torch.zeros(rows, rank)
    ascend_ops.sgmv_shrink(x, a, seg_lens, seg_lora, n_tok, 0.25, s_seg)
    ascend_ops.lora_shrink(x, a, per_tok, 0.25, s_tok)
    torch.testing.assert_close(s_seg, s_tok, **_tol(dtype))
    y0 = torch.randn(rows, out + 4, generator=g).to(dtype)
    y_seg, y_tok = y0.clone(), y0.clone()
    ascend_ops.sgmv_expand(s_tok, b, seg_lens, seg_lora, n_tok, y_seg, 2, out, add_inputs)
    ascend_ops.lora_expand(s_tok, b, per_tok, y_tok, 2, out, add_inputs)
    torch.testing.assert_close(y_seg.double(), y_tok.double(), **_tol(dtype))
    want = y0.double().clone()
    ref.lora_expand(s_tok, b, per_tok, want, 2, out, add_inputs)
    torch.testing.assert_close(y_tok.double(), want, **_tol(dtype))


def test_reference_agrees_with_merged_oracle():
    """The reference itself against the independent merged-weight formulation (float64)."""
    x, a, b, y, idx = _tensors(3, 4, 16, [5, 7], [0, 2, -1, 1, 2], torch.float64, 3)
    got = y.clone()
    ref.lora_linear(got, x, a[0], b[0], idx, 2.0, 3, 5)
    torch.testing.assert_close(got, _merged_oracle(y, x, a[0], b[0], idx, 2.0, 3, 5))


@pytest.mark.parametrize("call,match", [
    (lambda x, a, b, y, i: ascend_ops.lora_linear(y, x, a, b, i, 1.0, 10, 8), "y_offset"),
    (lambda x, a, b, y, i: ascend_ops.lora_linear(y, x[:, :4], a, b, i, 1.0), "x.shape"),
    (lambda x, a, b, y, i: ascend_ops.lora_shrink(x, a, i[:1], 1.0, torch.zeros(3, 4)), "indices"),
    (lambda x, a, b, y, i: ascend_ops.lora_shrink(x, a, i, 1.0, torch.zeros(3, 2)), "out"),
    (lambda x, a, b, y, i: ascend_ops.lora_expand(torch.zeros(3, 4), b, i.float(), y), "int32"),
    (lambda x, a, b, y, i: ascend_ops.lora_linear(y, x, a[:, 0, :2], b, i, 1.0), "rank"),
    (lambda x, a, b, y, i: ascend_ops.sgmv_shrink(x, a, torch.tensor([2]), torch.tensor([0]), 9,
                                                  1.0, torch.zeros(3, 4)), "num_tokens"),
])
def test_bad_input_names_the_argument(call, match):
    x, a, b = torch.randn(3, 8), torch.randn(2, 1, 4, 8), torch.randn(2, 1, 8, 4)
    with pytest.raises((ValueError, TypeError), match=match):
        call(x, a, b, torch.zeros(3, 12), torch.tensor([0, 1, -1]))
