# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-in of MRv2's ``_prepare_rope_positions_kernel`` (vllm/v1/worker/gpu/mm/rope.py)
against a per-token loop written from the Triton kernel."""

from __future__ import annotations

import torch
from vllm_ascend_platform.host.mrv2_mm_kernels import MM_KERNELS, _prepare_rope_positions


def _loop(positions, staged, stride0, stride1, delta, idx, qsl, prefill_lens, computed, dims):
    flat = staged.reshape(-1)
    for b in range(idx.shape[0]):
        r = int(idx[b])
        prefill = int(computed[r]) < int(prefill_lens[r])
        for off in range(int(qsl[b + 1]) - int(qsl[b])):
            orig = int(computed[r]) + off
            for j in range(dims):
                value = (int(flat[r * stride0 + j * stride1 + orig]) if prefill
                         else orig + int(delta[r]))
                positions[j, int(qsl[b]) + off] = value


def test_prepare_rope_positions_matches_the_kernel_loop():
    g = torch.Generator().manual_seed(0)
    dims, max_reqs, max_len, max_tokens = 3, 4, 16, 12
    staged = torch.randint(0, 100, (max_reqs * dims, max_len), generator=g, dtype=torch.int32)
    delta = torch.tensor([5, -3, 7, 0], dtype=torch.int32)
    prefill_lens = torch.tensor([10, 6, 8, 3], dtype=torch.int32)
    # request 2 mid-prefill, request 0 decoding, request 1 starting its prefill
    computed = torch.tensor([10, 0, 4, 3], dtype=torch.int32)
    idx = torch.tensor([2, 0, 1], dtype=torch.int32)
    qsl = torch.tensor([0, 4, 5, 9], dtype=torch.int32)
    got = torch.full((dims, max_tokens + 1), -1, dtype=torch.int64)
    want = got.clone()
    _prepare_rope_positions((3,), got, got.stride(0), staged, dims * max_len, max_len, delta, idx,
                            qsl, prefill_lens, computed, BLOCK_SIZE=1024, NUM_DIMS=dims)
    _loop(want, staged, dims * max_len, max_len, delta, idx, qsl, prefill_lens, computed, dims)
    assert torch.equal(got, want)
    assert (got[:, 9:] == -1).all()  # slots past the batch untouched


def test_the_kernel_name_resolves_in_vllm():
    import importlib

    for name in MM_KERNELS:
        module, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(module), attr)
