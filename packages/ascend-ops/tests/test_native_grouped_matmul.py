# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The C++ grouped matmuls against a float64 per-expert oracle: ``_C.grouped_matmul`` (decode-sized
groups, N-major weights) and ``_C.grouped_matmul_packed`` (prepacked weights,
``pack_grouped_matmul_weight``): every dtype, K and N off the kernels' 16-lane / 4-column /
32-column tiles (odd K for bf16's k pairs), empty experts, rows past the groups, the
multi-threaded size, the switch to torch's per-expert loop for larger groups or K-major weights,
packs rebuilt after an in-place write and handles of another weight refused."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops._dispatch import native_module
from ascend_ops.native import moe as _native_moe

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


def _spy(monkeypatch, name):
    """Record the calls that reach ``_C.<name>`` (the real kernel still runs)."""
    mod = native_module()
    calls = []
    real = getattr(mod, name)

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(mod, name, spy)
    return calls


@pytest.fixture
def kernel_calls(monkeypatch):
    """Calls that reach ``_C.grouped_matmul``."""
    return _spy(monkeypatch, "grouped_matmul")


@pytest.fixture
def packed_calls(monkeypatch):
    """Calls that reach ``_C.grouped_matmul_packed``."""
    return _spy(monkeypatch, "grouped_matmul_packed")


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "experts,k,n,counts,extra",
    [
        (5, 37, 19, [2, 0, 4, 1, 0], 3),  # odd K (bf16 pair tail), N below one 32-column block
        (3, 8, 5, [1, 1, 1], 0),  # K below one 16-k chunk
        (4, 1024, 70, [3, 7, 0, 2], 1),  # multi-threaded region, 4/3/2-row tiles, 3 column blocks
    ],
)
def test_packed_kernel_matches_oracle(packed_calls, dtype, experts, k, n, counts, extra):
    x, weight, counts = _problem(experts, k, n, counts, extra, dtype)
    with ascend_ops.use_backend("native"):
        # the public call packs every dtype in packed_dtypes(); the kernel serves each of them
        public = ascend_ops.pack_grouped_matmul_weight(weight)
        assert (public >= 0) == (dtype in _native_moe.packed_dtypes())
        ascend_ops.release_grouped_matmul_weight(public)
        handle = _native_moe.pack(weight)
        got = ascend_ops.grouped_matmul(x, weight, counts, handle)
    ascend_ops.release_grouped_matmul_weight(handle)
    assert handle >= 0 and len(packed_calls) == 1
    assert got.dtype == dtype and got.shape == (x.shape[0], n)
    _check(got, x, weight, counts, dtype)
    if extra:
        assert not got[-extra:].any(), "rows past the groups must be zero"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("k", "n"), [(1024, 70), (37, 200)])
def test_packed_rows_do_not_depend_on_their_tile(packed_calls, dtype, k, n):
    """A row's output is bit-identical whichever tile computes it: 1 to 16 rows in one expert (a
    second, empty expert keeps bf16's mean of 8 rows per expert on the packed kernel). That covers
    the single tiles (totals in registers: 1-4 rows over 1-4 blocks at once, 8 rows on AVX-512)
    and experts of several tiles, whose tiles take turns on each k chunk with the totals on the
    stack (full tiles plus a 4-, 3-, 2- or 1-row tile). N = 70 is 3 column blocks (an item short
    of its 4 blocks on AVX-512); N = 200 is 7 (a full item, then one of 3), with an odd K = 37
    (bf16's last k pair is half padding)."""
    x, weight, _ = _problem(2, k, n, [16, 0], 0, dtype)
    handle = _native_moe.pack(weight)
    try:
        with ascend_ops.use_backend("native"):
            outs = [ascend_ops.grouped_matmul(x[:rows], weight, torch.tensor([rows, 0]), handle)
                    for rows in range(1, 17)]
    finally:
        ascend_ops.release_grouped_matmul_weight(handle)
    assert len(packed_calls) == 16
    for rows, out in enumerate(outs, start=1):
        assert torch.equal(out, outs[-1][:rows]), f"{rows} rows differ from the 16-row result"
    _check(outs[-1], x, weight, torch.tensor([16, 0]), dtype)


def test_packed_expert_of_more_rows_than_one_group(packed_calls):
    """An expert holding more rows than one group of interleaved tiles (``kGroupRows``: 32 on
    AVX-512, 16 elsewhere) -- possible whenever the mean rows per expert stays small -- runs its
    rows group by group: 100 rows in one expert of 8 (mean 12.5), each row bit-identical to the
    same row computed alone, all within rounding of the oracle."""
    x, weight, counts = _problem(8, 96, 200, [100, 0, 0, 0, 0, 0, 0, 0], 0, torch.float32)
    handle = _native_moe.pack(weight)
    try:
        with ascend_ops.use_backend("native"):
            got = ascend_ops.grouped_matmul(x, weight, counts, handle)
            alone = [ascend_ops.grouped_matmul(x[r : r + 1], weight,
                                               torch.tensor([1, 0, 0, 0, 0, 0, 0, 0]), handle)
                     for r in (0, 31, 32, 63, 64, 99)]
    finally:
        ascend_ops.release_grouped_matmul_weight(handle)
    assert len(packed_calls) == 7
    for r, row in zip((0, 31, 32, 63, 64, 99), alone, strict=True):
        assert torch.equal(got[r : r + 1], row), f"row {r} differs from the row computed alone"
    _check(got, x, weight, counts, torch.float32)


def test_pack_follows_in_place_writes_and_refuses_another_weight(packed_calls):
    x, weight, counts = _problem(3, 40, 33, [2, 1, 3], 0, torch.bfloat16)
    with ascend_ops.use_backend("native"):
        handle = ascend_ops.pack_grouped_matmul_weight(weight)
        weight.mul_(-0.5)  # a weight reload writes the plain tensor in place
        _check(ascend_ops.grouped_matmul(x, weight, counts, handle), x, weight, counts, torch.bfloat16)
        with pytest.raises(ValueError, match="packed for a weight of shape"):
            ascend_ops.grouped_matmul(x, torch.randn(3, 40, 34).bfloat16(), counts, handle)
    ascend_ops.release_grouped_matmul_weight(handle)
    assert len(packed_calls) == 1


def test_no_pack_off_the_native_backend():
    weight = torch.randn(2, 8, 4).bfloat16()
    with ascend_ops.use_backend("reference"):
        assert ascend_ops.pack_grouped_matmul_weight(weight) == -1
    with pytest.raises(TypeError, match="weight"):
        ascend_ops.pack_grouped_matmul_weight(weight.to(torch.int32))


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


def test_no_pack_on_the_simulated_npu(simulated_npu):
    """Host tensors on the simulated NPU take the torch_npu branch: no CPU pack is made, and a
    handle passed anyway is ignored there (the NPU branch reads the plain weight)."""
    x, weight, counts = _problem(2, 16, 8, [2, 1], 0, torch.bfloat16)
    assert ascend_ops.pack_grouped_matmul_weight(weight) == -1
    got = ascend_ops.grouped_matmul(x, weight, counts, 12345)
    assert got.shape == (3, 8)
