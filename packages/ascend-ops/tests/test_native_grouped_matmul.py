# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The C++ grouped matmul (``_C.grouped_matmul``, decode-sized groups, N-major weights) against a
float64 per-expert oracle: every dtype, K and N off the kernel's 16-lane / 4-column / 32-column
tiles, empty experts, rows past the groups, the multi-threaded size, and the switch to torch's
per-expert loop for larger groups or K-major weights."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import _native_moe
from ascend_ops._dispatch import native_module

pytestmark = pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built")

EPS = {torch.float32: 2.0**-23, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}


def _oracle(x, weight, counts):
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=torch.float64)
    start = 0
    for e, n in enumerate(counts.tolist()):
        out[start : start + n] = x[start : start + n].double() @ weight[e].double()
        start += n
    return out


def _problem(experts, k, n, counts, extra_rows, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    counts = torch.tensor(counts)
    x = torch.randn(int(counts.sum()) + extra_rows, k, generator=g).to(dtype)
    # vLLM's expert layout [E, N, K], viewed as the op's [E, K, N]: stride 1 along K
    weight = (torch.randn(experts, n, k, generator=g) * k**-0.5).to(dtype).transpose(1, 2)
    return x, weight, counts


@pytest.fixture
def kernel_calls(monkeypatch):
    """Count calls that reach ``_C.grouped_matmul``."""
    mod = native_module()
    calls = []
    real = mod.grouped_matmul

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(mod, "grouped_matmul", spy)
    return calls


def _check(got, x, weight, counts, dtype):
    exact = _oracle(x, weight, counts)
    tol = 4 * EPS[dtype] * max(1.0, float(exact.abs().max()))
    torch.testing.assert_close(got.double(), exact, atol=tol, rtol=4 * EPS[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "experts,k,n,counts,extra",
    [
        (5, 37, 19, [2, 0, 4, 1, 0], 3),  # K and N tails past the tiles, empty experts
        (3, 8, 5, [1, 1, 1], 0),  # K below one 16-lane step
        (4, 1024, 70, [3, 7, 0, 2], 1),  # multi-threaded region, 4/2/1-row tiles, 3 column blocks
    ],
)
def test_kernel_matches_oracle(kernel_calls, dtype, experts, k, n, counts, extra):
    x, weight, counts = _problem(experts, k, n, counts, extra, dtype)
    with ascend_ops.use_backend("native"):
        got = ascend_ops.grouped_matmul(x, weight, counts)
    assert len(kernel_calls) == 1
    assert got.dtype == dtype and got.shape == (x.shape[0], n)
    _check(got, x, weight, counts, dtype)
    if extra:
        assert not got[-extra:].any(), "rows past the groups must be zero"


def test_larger_groups_and_k_major_weights_use_the_torch_loop(kernel_calls):
    limit = _native_moe.SMALL_GROUP_ROWS[torch.float32]
    x, weight, counts = _problem(2, 16, 8, [2 * limit + 1, 0], 0, torch.float32)
    with ascend_ops.use_backend("native"):
        big = ascend_ops.grouped_matmul(x, weight, counts)
        contiguous = ascend_ops.grouped_matmul(x[:3], weight.contiguous(), torch.tensor([3, 0]))
    assert kernel_calls == []
    _check(big, x, weight, counts, torch.float32)
    _check(contiguous, x[:3], weight, torch.tensor([3, 0]), torch.float32)


def test_kernel_rejects_counts_past_the_rows():
    x, weight, _ = _problem(2, 16, 8, [2, 1], 0, torch.float32)
    with ascend_ops.use_backend("native"), pytest.raises(ValueError, match="group_list"):
        ascend_ops.grouped_matmul(x, weight, torch.tensor([2, 2]))
    with ascend_ops.use_backend("native"), pytest.raises(ValueError, match="group_list"):
        ascend_ops.grouped_matmul(x, weight, torch.tensor([-1, 2]))
