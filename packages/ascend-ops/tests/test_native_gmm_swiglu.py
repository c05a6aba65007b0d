# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``grouped_matmul_swiglu`` on the native backend: the fused pass over prepacked experts
(``_C.grouped_matmul_packed_swiglu``) gives the bits of ``swiglu(grouped_matmul(...))`` (same
sums, same rounding, one SwiGLU formula), against a float64 oracle too; gate/up block pairs that
fill one work item, half of one, and more than one; experts of more rows than one row group; rows
past the groups; shapes the fused pass does not take (I not a multiple of 32, no pack, large
groups) run the two ops."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops._dispatch import native_module
from ascend_ops.native import moe as _native_moe

pytestmark = pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built")


@pytest.fixture
def fused_calls(monkeypatch):
    """Calls that reach ``_C.grouped_matmul_packed_swiglu`` (the real kernel still runs)."""
    mod, calls = native_module(), []
    real = mod.grouped_matmul_packed_swiglu

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(mod, "grouped_matmul_packed_swiglu", spy)
    return calls


def _problem(experts, k, inter, counts, extra_rows, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    counts = torch.tensor(counts)
    x = torch.randn(int(counts.sum()) + extra_rows, k, generator=g).to(dtype)
    # vLLM's w13 [E, 2I, K] (gate rows, then up rows) viewed as the op's [E, K, 2I]
    w13 = (torch.randn(experts, 2 * inter, k, generator=g) * k**-0.5).to(dtype).transpose(1, 2)
    return x, w13, counts


def _oracle(x, w13, counts):
    inter = w13.shape[2] // 2
    out = torch.zeros(x.shape[0], inter, dtype=torch.float64)
    start = 0
    for e, n in enumerate(counts.tolist()):
        h = x[start : start + n].double() @ w13[e].double()
        out[start : start + n] = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        start += n
    return out


# mean rows per expert at most SMALL_GROUP_ROWS of every dtype (8), where the packed kernels run
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "experts,k,inter,counts,extra",
    [
        (4, 64, 64, [3, 0, 9, 1], 2),  # two gate blocks: one full AVX-512 item; rows past groups
        (3, 37, 96, [8, 9, 5], 0),  # three gate blocks (an item and a half), odd K
        (6, 48, 32, [40, 1, 0, 2, 3, 1], 1),  # one gate block; an expert past one row group
        (5, 1024, 128, [7, 0, 16, 2, 9], 0),  # multi-threaded region
    ],
)
def test_fused_pass_is_bitwise_the_two_ops(fused_calls, dtype, experts, k, inter, counts, extra):
    x, w13, counts = _problem(experts, k, inter, counts, extra, dtype)
    handle = ascend_ops.pack_grouped_matmul_weight(w13)
    try:
        with ascend_ops.use_backend("native"):
            got = ascend_ops.grouped_matmul_swiglu(x, w13, counts, handle)
            assert len(fused_calls) == 1
            two_ops = ascend_ops.swiglu(ascend_ops.grouped_matmul(x, w13, counts, handle))
    finally:
        ascend_ops.release_grouped_matmul_weight(handle)
    assert got.shape == (x.shape[0], inter) and got.dtype == dtype
    assert torch.equal(got, two_ops)
    assert torch.count_nonzero(got[int(counts.sum()):]) == 0
    exact = _oracle(x, w13, counts)
    # one rounding of the product to dtype, then the activation's: a few ulps of the dtype
    eps = {torch.float32: 2.0**-23, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}[dtype]
    scale = max(1.0, float(exact.abs().max()))
    torch.testing.assert_close(got.double(), exact, atol=8 * eps * scale, rtol=8 * eps)


@pytest.mark.parametrize("inter,packed,tokens_per_expert", [
    (20, True, 2),  # up half starts inside a column block
    (64, False, 2),  # no pack
    (64, True, 40),  # float32 groups past SMALL_GROUP_ROWS: torch's per-expert loop
])
def test_other_shapes_run_the_two_ops(fused_calls, inter, packed, tokens_per_expert):
    x, w13, counts = _problem(3, 16, inter, [tokens_per_expert] * 3, 0, torch.float32)
    handle = ascend_ops.pack_grouped_matmul_weight(w13) if packed else -1
    try:
        with ascend_ops.use_backend("native"):
            got = ascend_ops.grouped_matmul_swiglu(x, w13, counts, handle)
            two_ops = ascend_ops.swiglu(ascend_ops.grouped_matmul(x, w13, counts, handle))
    finally:
        ascend_ops.release_grouped_matmul_weight(handle)
    assert fused_calls == []
    assert torch.equal(got, two_ops)
    torch.testing.assert_close(got.double(), _oracle(x, w13, counts), atol=1e-5, rtol=1e-5)


def test_kernel_refuses_an_intermediate_off_the_column_blocks():
    mod = native_module()
    x, w13, counts = _problem(1, 8, 20, [1], 0, torch.float32)
    out = torch.empty(1, 20)
    with pytest.raises(ValueError, match="multiple of 32"):
        mod.grouped_matmul_packed_swiglu(x.data_ptr(), w13.data_ptr(), counts.data_ptr(),
                                         out.data_ptr(), 1, 8, 40, 1, 0)


def test_pack_handle_of_another_weight_is_refused():
    x, w13, counts = _problem(2, 16, 32, [1, 1], 0, torch.float32)
    other = ascend_ops.pack_grouped_matmul_weight(torch.randn(2, 16, 32))
    try:
        with ascend_ops.use_backend("native"), pytest.raises(ValueError, match="packed for a weight"):
            ascend_ops.grouped_matmul_swiglu(x, w13, counts, other)
    finally:
        _native_moe.release(other)
