# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ascend_ops.device.tagged_memory: release and restore tagged tensors (sleep mode), in CPU
emulation and on the simulated NPU, where ``mem_get_info`` must move by the released bytes
(docs/simulated-npu.md, "memory")."""

from __future__ import annotations

import pytest
import torch
from ascend_ops import device
from ascend_ops.device import tagged_memory
from ascend_ops.device.tagged_memory import TaggedMemory


def _tensors():
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(256, 128, generator=gen, dtype=torch.float16)
    tied = w.view(-1)[:64]  # a view shares w's storage: counted once
    kv = torch.randn(4, 16, 32, generator=gen, dtype=torch.float16)
    return w, tied, kv


def _cycle(mem, w, tied, kv):
    ref_w, ref_tied = w.clone(), tied.clone()
    assert mem.register("weights", [w, tied]) == w.numel() * 2
    assert mem.register("kv_cache", [kv]) == kv.numel() * 2
    assert mem.offload("weights") == w.numel() * 2
    assert mem.discard("kv_cache") == kv.numel() * 2
    assert w.untyped_storage().nbytes() == 0 and kv.untyped_storage().nbytes() == 0
    assert (mem.state("weights"), mem.state("kv_cache")) == ("offloaded", "discarded")
    mem.restore("weights")
    assert torch.equal(w, ref_w) and torch.equal(tied, ref_tied)  # same tensor objects
    mem.restore("kv_cache")
    assert torch.count_nonzero(kv) == 0  # discarded contents come back as zeros


def test_cpu_emulation_round_trip():
    _cycle(TaggedMemory(), *_tensors())


def test_offload_drops_the_named_storages():
    """``offload(drop=...)``: the storages at those addresses are freed without a host copy and
    come back as zeros; the rest of the group comes back with its contents (vLLM 0.34's
    ``SleepModeBackend.suspend(discardable)``)."""
    mem = TaggedMemory()
    w, tied, kv = _tensors()
    keep = torch.arange(32, dtype=torch.float32)
    mem.register("weights", [w, tied, keep])
    ref_keep = keep.clone()
    moved = mem.offload("weights", drop={w.untyped_storage().data_ptr(), 12345})
    assert moved == keep.nbytes and mem.host_bytes() == keep.nbytes
    assert w.untyped_storage().nbytes() == 0 and keep.untyped_storage().nbytes() == 0
    assert mem.state("weights") == "offloaded"
    mem.restore("weights")
    assert torch.equal(keep, ref_keep)
    assert w.untyped_storage().nbytes() == w.numel() * 2 and torch.count_nonzero(w) == 0
    assert torch.count_nonzero(tied) == 0  # a view of a dropped storage


def test_bad_input_names_tag_and_state():
    mem = TaggedMemory()
    with pytest.raises(ValueError, match="unknown memory tag 'weights'"):
        mem.offload("weights")
    (w, _, _) = _tensors()
    mem.register("weights", [w])
    mem.offload("weights")
    with pytest.raises(ValueError, match="it is offloaded"):
        mem.offload("weights")
    with pytest.raises(ValueError, match="restore it before registering"):
        mem.register("weights", [w])


@pytest.mark.sim_only
def test_simulated_npu_accounts_released_bytes(simulated_npu):
    mem = TaggedMemory()
    w, tied, kv = _tensors()
    mem.register("weights", [w, tied])
    mem.register("kv_cache", [kv])
    from ascend_ops import simulator

    simulator.account_alloc(w.numel() * 2 + kv.numel() * 2)  # what the owner accounted on load
    free0, _ = device.mem_get_info()
    mem.offload("weights")
    mem.discard("kv_cache")
    free1, _ = device.mem_get_info()
    assert free1 - free0 == w.numel() * 2 + kv.numel() * 2
    mem.restore("weights")
    mem.restore("kv_cache")
    assert device.mem_get_info()[0] == free0
    simulator.account_free(w.numel() * 2 + kv.numel() * 2)


def test_cpu_emulation_free_memory_grows_on_release():
    """vLLM's ``Worker.sleep`` asserts that free device memory did not shrink while sleeping:
    in CPU emulation, storages under glibc's mmap threshold (heap blocks) must go back to the OS
    on release, and the host copies of offloaded tensors must not count as device memory."""
    mem = tagged_memory.reset_default_pool()  # mem_get_info leaves out this process's pool
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(64 << 10, generator=gen) for _ in range(64)]  # 64 x 256 KiB
    kv = [torch.ones(64 << 10) for _ in range(64)]
    nbytes = sum(t.nbytes for t in weights)
    mem.register("weights", weights)
    mem.register("kv_cache", kv)
    free0, _ = device.mem_get_info()
    assert mem.offload("weights") == nbytes
    assert mem.host_bytes() == nbytes
    free1, _ = device.mem_get_info()
    assert free1 - free0 >= nbytes // 2, (free0, free1)
    assert mem.discard("kv_cache") == nbytes
    free2, _ = device.mem_get_info()
    assert free2 - free1 >= nbytes // 2, (free1, free2)
    mem.restore("weights")
    assert mem.host_bytes() == 0
    tagged_memory.reset_default_pool()
