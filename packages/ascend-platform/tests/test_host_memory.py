# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Zeroed host buffers without touching their pages (vllm_ascend_platform.host.memory)."""

from __future__ import annotations

import mmap

import pytest
import torch
from vllm_ascend_platform.host import memory as hm


def _resident_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * mmap.PAGESIZE // 1024


@pytest.mark.parametrize("head", [0, 1, 123, mmap.PAGESIZE - 1])
def test_zeroes_reused_memory_and_leaves_the_neighbours(head):
    """Memory that held data (as reused allocator memory does) reads zero afterwards, ends
    included, and the bytes just outside the tensor keep their values."""
    n = hm.MIN_BYTES + 3 * mmap.PAGESIZE + 17
    big = torch.full((head + n + 77,), 7, dtype=torch.int8)
    out = hm.zero_without_touching(big[head:head + n])
    assert out.data_ptr() == big.data_ptr() + head
    assert int(torch.count_nonzero(big[head:head + n])) == 0
    assert bool((big[:head] == 7).all()) and bool((big[head + n:] == 7).all())


def test_untouched_zeros_are_zero_and_not_resident():
    n = 256 << 20
    before = _resident_kib()
    buf = hm.untouched_zeros(n)
    grew = _resident_kib() - before
    assert buf.dtype == torch.int8 and buf.shape == (n,) and buf.untyped_storage().resizable()
    assert grew < 16 << 10, f"{grew} KiB became resident for a 256 MiB buffer"
    assert int(torch.count_nonzero(buf[:: mmap.PAGESIZE // 2])) == 0
    assert int(torch.count_nonzero(buf[-5000:])) == 0


def test_small_shared_and_strided_buffers():
    small = torch.full((1000,), 3, dtype=torch.int8)
    assert int(torch.count_nonzero(hm.zero_without_touching(small))) == 0
    shared = torch.full((hm.MIN_BYTES + 5,), 3, dtype=torch.int8).share_memory_()
    assert int(torch.count_nonzero(hm.zero_without_touching(shared))) == 0
    wide = torch.ones(hm.MIN_BYTES // 4 + 9, dtype=torch.float32)
    assert float(hm.zero_without_touching(wide).abs().sum()) == 0.0
    with pytest.raises(ValueError, match="contiguous CPU tensor"):
        hm.zero_without_touching(torch.ones(8, 8).t())


def test_allocation_context_replaces_only_large_cpu_byte_buffers():
    n = hm.MIN_BYTES + 1
    with hm.kv_cache_allocation():
        kv = torch.zeros(n, dtype=torch.int8, device=torch.device("cpu"))
        other = torch.zeros(4, 4)
        small = torch.zeros(16, dtype=torch.int8)
    assert kv.shape == (n,) and kv.dtype == torch.int8 and int(torch.count_nonzero(kv)) == 0
    assert other.shape == (4, 4) and float(other.abs().sum()) == 0.0
    assert small.shape == (16,)


def test_without_madvise_the_buffer_is_still_zero(monkeypatch):
    monkeypatch.setattr(hm, "_madvise", lambda: None)
    big = torch.full((hm.MIN_BYTES + 10,), 9, dtype=torch.int8)
    assert int(torch.count_nonzero(hm.zero_without_touching(big))) == 0


def test_allocation_context_runs_inside_the_given_one():
    entered = []

    class Inner:
        def __enter__(self):
            entered.append("in")

        def __exit__(self, *exc):
            entered.append("out")

    with hm.kv_cache_allocation(Inner()):
        assert entered == ["in"]
        kv = torch.zeros(hm.MIN_BYTES, dtype=torch.int8, device="cpu")
    assert entered == ["in", "out"] and int(torch.count_nonzero(kv)) == 0
