# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host buffers of the native backend's packs: huge-page advised mappings (``_host_memory``)."""

from __future__ import annotations

import gc
import mmap

import pytest
import torch
from ascend_ops.native import host_memory as host_memory

HUGE = host_memory.HUGE_PAGE_BYTES
linux_thp = pytest.mark.skipif(
    not hasattr(mmap, "MADV_HUGEPAGE") or host_memory.thp_mode() not in ("always", "madvise"),
    reason="needs Linux with transparent huge pages in 'always' or 'madvise' mode",
)


def _vm_flags(address: int) -> list[str]:
    """VmFlags of the mapping that holds ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@linux_thp
def test_large_buffer_starts_on_a_huge_page_advised_and_outlives_its_mapping_object(monkeypatch):
    monkeypatch.delenv("ASCEND_OPS_HUGE_PAGES", raising=False)
    numel = (5 * HUGE) // 4 + 3  # 10 MiB + 12 bytes of float32: five whole huge pages and a tail
    t = host_memory.empty(numel, torch.float32)
    assert t.shape == (numel,) and t.dtype == torch.float32 and t.device.type == "cpu"
    assert t.data_ptr() % HUGE == 0
    assert "hg" in _vm_flags(t.data_ptr())  # MADV_HUGEPAGE reached the kernel
    t.copy_(torch.arange(numel, dtype=torch.float32))
    gc.collect()  # the mmap object is referenced only by the tensor's storage
    assert t[-1].item() == numel - 1 and t[HUGE // 4].item() == HUGE // 4


@linux_thp
def test_bf16_buffer_views_the_mapping_with_its_own_element_size(monkeypatch):
    monkeypatch.delenv("ASCEND_OPS_HUGE_PAGES", raising=False)
    t = host_memory.empty(HUGE, torch.bfloat16)  # 4 MiB
    assert t.element_size() == 2 and t.numel() == HUGE and t.data_ptr() % HUGE == 0
    assert t.untyped_storage().nbytes() > t.numel() * 2  # the mapping, with its alignment head


def test_small_buffers_and_opt_out_are_plain_allocations(monkeypatch):
    small = host_memory.empty(HUGE // 4 - 1, torch.float32)
    assert small.untyped_storage().nbytes() == small.numel() * 4
    for off in ("0", "false", "OFF", "no"):
        monkeypatch.setenv("ASCEND_OPS_HUGE_PAGES", off)
        assert not host_memory.enabled()
    big = host_memory.empty(HUGE, torch.float32)
    assert big.untyped_storage().nbytes() == big.numel() * 4
    assert host_memory.empty(0, torch.float16).numel() == 0


def test_no_advice_without_transparent_huge_pages(monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_OPS_HUGE_PAGES", raising=False)
    monkeypatch.setattr(host_memory, "THP_ENABLED", str(tmp_path / "missing"))
    assert not host_memory.enabled()
    big = host_memory.empty(HUGE, torch.float32)
    assert big.untyped_storage().nbytes() == big.numel() * 4


def test_negative_size_is_refused():
    with pytest.raises(ValueError, match="numel must be >= 0"):
        host_memory.empty(-1, torch.float32)


def test_thp_mode_reads_the_bracketed_choice(tmp_path):
    enabled = tmp_path / "enabled"
    enabled.write_text("always [madvise] never\n")
    assert host_memory.thp_mode(str(enabled)) == "madvise"
    enabled.write_text("[always] madvise never\n")
    assert host_memory.thp_mode(str(enabled)) == "always"
    assert host_memory.thp_mode(str(tmp_path / "missing")) == "unknown"


@linux_thp
def test_expert_pack_of_a_large_weight_lives_in_a_huge_page_mapping(monkeypatch):
    from ascend_ops import native_available
    from ascend_ops.native import moe as _native_moe

    if not native_available():
        pytest.skip("ascend_ops._C is not built")
    monkeypatch.delenv("ASCEND_OPS_HUGE_PAGES", raising=False)
    weight = torch.randn(4, 512, 384)  # 3 MiB of float32 [E, K, N]
    handle = _native_moe.pack(weight)
    try:
        packed = _native_moe._registry.get(handle).packed
        assert packed.data_ptr() % HUGE == 0 and "hg" in _vm_flags(packed.data_ptr())
        x = torch.randn(6, 512)
        counts = torch.tensor([2, 1, 0, 3])
        out = _native_moe.grouped_matmul(x, weight, counts, handle)
        w64, x64 = weight.double(), x.double()
        ref = torch.cat([x64[0:2] @ w64[0], x64[2:3] @ w64[1], x64[3:6] @ w64[3]])
        torch.testing.assert_close(out.double(), ref, rtol=0, atol=1e-4)
        monkeypatch.setenv("ASCEND_OPS_HUGE_PAGES", "0")  # the same layout in malloc'd memory
        plain = _native_moe.pack(weight)
        try:
            assert _native_moe._registry.get(plain).packed.untyped_storage().nbytes() == \
                packed.numel() * 4
            assert torch.equal(_native_moe.grouped_matmul(x, weight, counts, plain), out)
        finally:
            _native_moe.release(plain)
    finally:
        _native_moe.release(handle)
