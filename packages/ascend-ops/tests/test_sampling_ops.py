# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``ascend_ops.greedy_argmax``: every backend gives ``torch.argmax(dim=-1)``'s index (first
maximal index, NaN as the largest value) over ties, NaN, infinities, vector tails and reduced
precision; argument errors; the fake implementation; the NPU branch on the simulated NPU."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st


def _logits(rows: int, vocab: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # few distinct values: ties between the first maximum and later ones are common
    x = torch.randint(-3, 4, (rows, vocab), generator=g).float()
    if rows > 1:
        x[1, vocab // 2] = float("nan")  # a NaN wins wherever it is
    if rows > 2:
        x[2] = float("-inf")  # all -inf: index 0
    if rows > 3:
        x[3, -1] = float("inf")  # the max in the scalar tail
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("rows,vocab", [(1, 1), (1, 7), (4, 9), (8, 1000), (17, 49152 // 16)])
def test_matches_torch_argmax(backend, dtype, rows, vocab):
    x = _logits(rows, vocab, dtype, seed=rows * 31 + vocab)
    y = ascend_ops.greedy_argmax(x)
    assert y.dtype == torch.int64 and y.shape == (rows,)
    assert torch.equal(y, x.argmax(dim=-1))


@given(rows=st.integers(1, 6), vocab=st.integers(1, 70), seed=st.integers(0, 2**16))
def test_native_matches_reference_on_random_ties(rows, vocab, seed):
    if not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    x = _logits(rows, vocab, torch.float32, seed)
    with ascend_ops.use_backend("native"):
        native = ascend_ops.greedy_argmax(x)
    with ascend_ops.use_backend("reference"):
        ref = ascend_ops.greedy_argmax(x)
    assert torch.equal(native, ref) and torch.equal(native, x.argmax(dim=-1))


def test_strided_rows_are_read_as_logical_rows(backend):
    x = torch.randn(64, 5).t()  # [5, 64], non-contiguous
    assert torch.equal(ascend_ops.greedy_argmax(x), x.argmax(dim=-1))


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="logits must be 2-D"):
        ascend_ops.greedy_argmax(torch.randn(8))
    with pytest.raises(TypeError, match="logits must be float32"):
        ascend_ops.greedy_argmax(torch.ones(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="vocab dim > 0"):
        ascend_ops.greedy_argmax(torch.empty(2, 0))


def test_custom_op_fake_impl_gives_the_output_shape():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.ascend.greedy_argmax(torch.empty(3, 11, dtype=torch.bfloat16))
    assert y.shape == (3,) and y.dtype == torch.int64


def test_npu_branch_on_simulated_npu(simulated_npu):
    x = _logits(5, 300, torch.bfloat16, seed=1)
    ascend_ops.reset_call_counts()
    y = ascend_ops.greedy_argmax(x)
    assert ascend_ops.call_counts(per_backend=True) == {("greedy_argmax", "npu"): 1}
    assert torch.equal(y, x.argmax(dim=-1))
