# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``ascend_ops.linear`` with prepacked weights: every backend against the reference (a
broadcast-and-sum that shares no GEMM library with them), pack invalidation on in-place writes,
argument errors, the custom op's fake implementation, and the NPU branch on the simulated NPU
(torch.nn.functional.linear semantics, no pack)."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import reference
from ascend_ops.native import linear as _native_linear

TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
       torch.float16: dict(atol=3e-3, rtol=3e-3)}


def _oracle(x, w, b):
    """float64 reference, rounded to the inputs' dtype."""
    return reference.linear(x.double(), w.double(), None if b is None else b.double()).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 48), (8, 48), (2, 3, 48), (65, 48)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_matches_reference(backend, dtype, shape, with_bias):
    g = torch.Generator().manual_seed(0)
    w = (torch.randn(40, 48, generator=g) / 7).to(dtype)
    b = torch.randn(40, generator=g).to(dtype) if with_bias else None
    x = torch.randn(*shape, generator=g).to(dtype)
    handle = ascend_ops.pack_linear_weight(w)
    assert (handle >= 0) == (backend == "native" and _native_linear.packable(w) is not None)
    y = ascend_ops.linear(x, w, b, handle)
    assert y.shape == (*shape[:-1], 40) and y.dtype == dtype
    torch.testing.assert_close(y, _oracle(x, w, b), **TOL[dtype])
    ascend_ops.release_linear_weight(handle)


@pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built here")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_pack_follows_in_place_writes_and_strided_input(dtype):
    if _native_linear.packable(torch.empty(2, 2, dtype=dtype)) is None:
        pytest.skip(f"no oneDNN packing for {dtype} on this CPU")
    w = torch.randn(24, 16).to(dtype)
    with ascend_ops.use_backend("native"):
        handle = ascend_ops.pack_linear_weight(w)
        assert handle >= 0
        x = torch.randn(16, 5).to(dtype).t()  # non-contiguous rows
        torch.testing.assert_close(ascend_ops.linear(x, w, None, handle), _oracle(x, w, None),
                                   **TOL[dtype])
        w.mul_(-3)  # a reload writes in place: the pack must not serve the old values
        torch.testing.assert_close(ascend_ops.linear(x, w, None, handle), _oracle(x, w, None),
                                   **TOL[dtype])
    ascend_ops.release_linear_weight(handle)


def test_bad_arguments_name_the_argument():
    w = torch.randn(8, 4)
    with pytest.raises(ValueError, match="x last dim"):
        ascend_ops.linear(torch.randn(2, 5), w)
    with pytest.raises(TypeError, match="x dtype"):
        ascend_ops.linear(torch.randn(2, 4, dtype=torch.float64).float().half(), w)
    with pytest.raises(ValueError, match="weight must be 2-D"):
        ascend_ops.linear(torch.randn(2, 4), torch.randn(8, 4, 1))
    with pytest.raises(ValueError, match="bias must be"):
        ascend_ops.linear(torch.randn(2, 4), w, torch.randn(7))
    with pytest.raises(TypeError, match="weight must be"):
        ascend_ops.pack_linear_weight(torch.ones(3, 3, dtype=torch.int32))


def test_custom_op_fake_impl_gives_the_output_shape():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.ascend.linear(torch.empty(2, 3, 8), torch.empty(12, 8), None, 7)
    assert y.shape == (2, 3, 12) and y.dtype == torch.float32


def test_npu_branch_on_simulated_npu_is_plain_linear(simulated_npu):
    w = torch.randn(12, 8).to(torch.bfloat16)
    x = torch.randn(3, 8).to(torch.bfloat16)
    assert ascend_ops.pack_linear_weight(w) == -1  # no host layout on the NPU branch
    ascend_ops.reset_call_counts()
    y = ascend_ops.linear(x, w, None, -1)
    assert ascend_ops.call_counts(per_backend=True) == {("linear", "npu"): 1}
    torch.testing.assert_close(y, _oracle(x, w, None), **TOL[torch.bfloat16])


@pytest.mark.parametrize(("dtype", "n"), [(torch.float32, 40), (torch.float32, 70000),
                                          (torch.bfloat16, 40), (torch.bfloat16, 70000)])
def test_rows_above_the_blocks_run_the_onednn_pack(dtype, n, monkeypatch):
    """Where a weight keeps both packs (float32 wherever oneDNN runs float32; bfloat16 on AVX-512
    builds with oneDNN bf16 kernels on the CPU), inputs of more rows than ``block_rows`` run the
    oneDNN pack, bitwise what ``mkldnn._linear_pointwise`` gives on the same pack; the rows up to
    it run the column-block kernel; all within rounding of the float64 oracle. ``block_rows``:
    float32 ``FLOAT32_BLOCK_ROWS`` on AVX-512 builds, ``BLOCK_ROWS`` from ``WIDE_N`` columns or
    on other builds; bfloat16 8 for a narrow weight, 1 from ``WIDE_N`` columns."""
    from ascend_ops._dispatch import native_module, native_vector_isa

    w = (torch.randn(n, 40) / 7).to(dtype)
    if _native_linear.packable(w) != "blocks+onednn":
        pytest.skip(f"this build packs {dtype} as {_native_linear.packable(w)!r}")
    limit = _native_linear.block_rows(w)
    if dtype == torch.float32:
        narrow = n < _native_linear.WIDE_N and native_vector_isa() == "avx512"
        assert limit == (_native_linear.FLOAT32_BLOCK_ROWS if narrow else _native_linear.BLOCK_ROWS)
    else:
        assert limit == (8 if n < _native_linear.WIDE_N else 1)
    mod = native_module()
    kernel, calls = mod.grouped_matmul_packed, []
    monkeypatch.setattr(mod, "grouped_matmul_packed", lambda *a: (calls.append(a[4]), kernel(*a)))
    with ascend_ops.use_backend("native"):
        handle = ascend_ops.pack_linear_weight(w)
        packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
        for rows in sorted({1, limit, limit + 1, 13, 40, 64}):
            x = torch.randn(rows, 40).to(dtype)
            calls.clear()
            y = ascend_ops.linear(x, w, None, handle)
            if rows <= limit:
                assert calls == [rows]
            else:
                assert calls == []
                assert torch.equal(y, torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], ""))
            torch.testing.assert_close(y, _oracle(x, w, None), **TOL[dtype])
    ascend_ops.release_linear_weight(handle)


@pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_block_pack_serves_decode_rows_and_leaves_prefill_to_aten(dtype, monkeypatch):
    """A weight packed in the grouped-matmul column-block layout alone (where oneDNN has no kernel
    for its dtype: bfloat16 on AVX2 builds; forced here): up to ``BLOCK_ROWS`` rows run that kernel
    (``csrc/moe_packed.cpp``; bitwise the one-group packed grouped matmul of the same weight),
    larger inputs bitwise ``aten.linear`` on the plain
    weight; all within rounding of the float64 oracle, bias included."""
    from ascend_ops._dispatch import native_module
    from ascend_ops.native import moe as _native_moe

    g = torch.Generator().manual_seed(3)
    w = (torch.randn(70, 96, generator=g) / 9).to(dtype)  # N = 70: a partial 32-column block
    b = torch.randn(70, generator=g).to(dtype)
    monkeypatch.setattr(_native_linear, "_onednn_supports", lambda dt: False)
    assert _native_linear.packable(w) == "blocks"
    mod = native_module()
    kernel, calls = mod.grouped_matmul_packed, []
    monkeypatch.setattr(mod, "grouped_matmul_packed", lambda *a: (calls.append(a[4]), kernel(*a)))
    w_groups = w.t().unsqueeze(0)  # [1, K, N]
    with ascend_ops.use_backend("native"):
        handle = ascend_ops.pack_linear_weight(w)
        gmm_handle = _native_moe.pack(w_groups)
        for rows in (1, 3, 8, _native_linear.BLOCK_ROWS, _native_linear.BLOCK_ROWS + 1, 40):
            x = torch.randn(rows, 96, generator=g).to(dtype)
            calls.clear()
            y = ascend_ops.linear(x, w, b, handle)
            if rows <= _native_linear.BLOCK_ROWS:
                assert calls == [rows]
            else:
                assert calls == [] and torch.equal(y, torch.nn.functional.linear(x, w, b))
            if rows <= min(_native_linear.BLOCK_ROWS, _native_moe.SMALL_GROUP_ROWS[dtype]):
                # rows that grouped_matmul also sends to the packed kernel
                gmm = ascend_ops.grouped_matmul(x, w_groups, torch.tensor([rows]), gmm_handle)
                assert calls == [rows, rows] and torch.equal(y, gmm + b)
            torch.testing.assert_close(y, _oracle(x, w, b), **TOL[dtype])
    ascend_ops.release_linear_weight(handle)
    _native_moe.release(gmm_handle)
