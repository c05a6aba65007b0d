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
from ascend_ops import _native_linear, reference

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


def test_float32_every_row_count_runs_the_onednn_pack():
    """float32 inputs of any row count (single-request decode included) run the oneDNN pack:
    bitwise what ``mkldnn._linear_pointwise`` gives on the same pack, equal to ``aten.linear`` up
    to float32 rounding."""
    w = torch.randn(24, 40)
    with ascend_ops.use_backend("native"):
        handle = ascend_ops.pack_linear_weight(w)
        if handle < 0:
            pytest.skip("no oneDNN packing for float32 on this CPU")
        packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
        for rows in (1, 2, 8, 13):
            x = torch.randn(rows, 40)
            y = ascend_ops.linear(x, w, None, handle)
            assert torch.equal(y, torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], ""))
            torch.testing.assert_close(y, _oracle(x, w, None), **TOL[torch.float32])
    ascend_ops.release_linear_weight(handle)
