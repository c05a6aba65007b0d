# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tagged device memory for sleep mode: release and restore groups of tensors by tag.

A framework registers the tensors of a group under a tag (vLLM uses ``"weights"`` and
``"kv_cache"``), then asks for the group to be *offloaded* (contents copied to host memory,
device memory freed), *discarded* (device memory freed, contents dropped) or *restored*
(device memory allocated again, contents copied back, or zeros after a discard).

Mechanism, in every mode: the tensors keep their identity (every view, every module attribute
and every captured-graph reference stays valid); their untyped storage is resized to 0 bytes
on release and back to its size on restore (``torch.UntypedStorage.resize_``, as PyTorch's
FSDP2 frees and re-materializes parameters). The storage may come back at a different device
address: :meth:`TaggedMemory.restore` reports whether it did, and the caller must then drop the
device graphs captured over those tensors (they hold addresses). vllm-ascend's CaMemAllocator
keeps the addresses instead by allocating through torch_npu's pluggable allocator
(``torch_npu.npu.memory.NPUPluggableAllocator(so_path, alloc_fn, free_fn)`` routed with
``torch_npu.npu.memory.MemPool`` / ``use_mem_pool``) over ACL virtual memory
(``aclrtReserveMemAddress`` / ``aclrtMallocPhysical`` / ``aclrtMapMem`` / ``aclrtUnmapMem``);
that needs a compiled allocator library this project does not ship, so graphs are re-captured.

Memory accounting per mode (``ascend_ops.device.kind()``):

* NPU: the freed blocks go back to the caching allocator; ``torch.npu.empty_cache()`` hands
  them to the driver so ``torch.npu.mem_get_info`` reports them free.
* simulated NPU: the same calls, plus the accounting the simulator registers
  (``device.hooks.account``: its ``account_free/account_alloc``) of the released/restored
  bytes, so the simulated ``mem_get_info`` moves by them (docs/simulated-npu.md, "memory").
* CPU emulation: the storages are host memory. On release the C heap is trimmed
  (glibc ``malloc_trim``), so freed storages of every size go back to the OS and the emulated
  ``mem_get_info`` (process RSS) drops by them; the host copies of offloaded groups are host
  memory, not emulated device memory, so ``mem_get_info`` leaves them out (:meth:`host_bytes`).
  vLLM's ``Worker.sleep`` asserts that free device memory did not shrink while sleeping.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_ops.device import _npu, hooks

#: states of a tag
RESIDENT, OFFLOADED, DISCARDED = "resident", "offloaded", "discarded"


@dataclass
class _Block:
    storage: torch.UntypedStorage
    nbytes: int
    device: torch.device
    address: int = 0  # device address when last resident
    host: torch.Tensor | None = None  # uint8 [nbytes] while offloaded


@dataclass
class _Group:
    blocks: list[_Block] = field(default_factory=list)
    state: str = RESIDENT


class TaggedMemory:
    """Groups of device tensors that can be released and restored together, by tag.

    Raises (all methods): ``ValueError`` naming the tag or tensor when the request cannot be
    served (unknown tag, wrong state, a tensor whose storage cannot be resized).
    """

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self.bytes_to_host = 0  # cumulative bytes copied device -> host by offload
        self.bytes_to_device = 0  # cumulative bytes copied host -> device by restore

    # ---- registration -----------------------------------------------------------------------
    def register(self, tag: str, tensors: Iterable[torch.Tensor]) -> int:
        """Add the storages under ``tensors`` to group ``tag`` (deduplicated, also across
        tags: a storage belongs to the first tag that registered it). Returns the group's
        bytes. Raises ValueError when the group is not resident or a storage is not resizable
        (e.g. memory-mapped from a file)."""
        group = self._groups.setdefault(tag, _Group())
        if group.state != RESIDENT:
            raise ValueError(f"tag {tag!r} is {group.state}; restore it before registering more")
        known = {b.storage.data_ptr() for g in self._groups.values() for b in g.blocks}
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"tag {tag!r}: expected tensors, got {type(t).__name__}")
            st = t.untyped_storage()
            if st.nbytes() == 0 or st.data_ptr() in known:
                continue
            if not st.resizable():
                raise ValueError(
                    f"tag {tag!r}: a tensor of shape {tuple(t.shape)} has a non-resizable storage "
                    "(memory-mapped or borrowed); copy it into an owned tensor before registering"
                )
            known.add(st.data_ptr())
            group.blocks.append(_Block(st, st.nbytes(), t.device, st.data_ptr()))
        return self.nbytes(tag)

    def forget(self, tag: str) -> None:
        """Drop group ``tag`` from the registry (its tensors are untouched)."""
        self._groups.pop(tag, None)

    # ---- queries ----------------------------------------------------------------------------
    def tags(self) -> list[str]:
        """Registered tags, in registration order."""
        return list(self._groups)

    def state(self, tag: str) -> str:
        """``"resident"``, ``"offloaded"`` or ``"discarded"``."""
        return self._group(tag).state

    def nbytes(self, tag: str) -> int:
        """Device bytes of group ``tag`` when resident."""
        return sum(b.nbytes for b in self._group(tag).blocks)

    def host_bytes(self) -> int:
        """Bytes of host memory held by the host copies of offloaded groups."""
        return sum(b.host.nbytes for g in self._groups.values() for b in g.blocks
                   if b.host is not None)

    def addresses(self, tag: str) -> list[int]:
        """Current device addresses of the group's storages (0 while released)."""
        return [b.storage.data_ptr() for b in self._group(tag).blocks]

    # ---- transitions ------------------------------------------------------------------------
    def offload(self, tag: str, pin_memory: bool = True,
                drop: Collection[int] = frozenset()) -> int:
        """Copy group ``tag`` to host memory (pinned when the device has pinned memory and
        ``pin_memory``) and free its device memory. Returns the bytes moved to host.

        ``drop``: device addresses (``untyped_storage().data_ptr()``) of storages in the group
        whose contents are not kept: they are freed without a host copy and come back as zeros
        on :meth:`restore` (a caller that rewrites them after the restore, e.g. vLLM 0.34's
        ``SleepModeBackend.suspend(discardable)`` for the weights a reload overwrites).
        Addresses outside the group are ignored."""
        group = self._resident(tag, "offload")
        pin = pin_memory and _npu.available() and not _npu.simulated()
        moved = 0
        for b in group.blocks:
            if b.storage.data_ptr() in drop:
                b.host = None
                continue
            host = torch.empty(b.nbytes, dtype=torch.uint8, pin_memory=pin)
            host.copy_(_bytes_view(b.storage, b.device), non_blocking=pin)
            b.host = host
            moved += b.nbytes
        if _npu.available():
            _npu.synchronize(None)  # the copies must land before the device memory is freed
        self._release(group, OFFLOADED)
        self.bytes_to_host += moved
        return moved

    def discard(self, tag: str) -> int:
        """Free group ``tag``'s device memory without keeping its contents (also drops a host
        copy of an offloaded group). Returns the device bytes freed (0 when already off)."""
        group = self._group(tag)
        if group.state == OFFLOADED:
            for b in group.blocks:
                b.host = None
            group.state = DISCARDED
            return 0
        if group.state == DISCARDED:
            return 0
        return self._release(group, DISCARDED)

    def restore(self, tag: str) -> bool:
        """Allocate group ``tag`` on the device again; copy its host copy back (offloaded) or
        zero it (discarded). A resident group is left alone. Returns True when any storage came
        back at a different address (device graphs captured over it must be dropped)."""
        group = self._group(tag)
        if group.state == RESIDENT:
            return False
        need = sum(b.nbytes for b in group.blocks)
        _account(+need)
        moved = False
        for b in group.blocks:
            b.storage.resize_(b.nbytes)
            view = _bytes_view(b.storage, b.device)
            if b.host is not None:
                view.copy_(b.host)
                self.bytes_to_device += b.nbytes
                b.host = None
            else:
                view.zero_()
            moved = moved or b.storage.data_ptr() != b.address
            b.address = b.storage.data_ptr()
        group.state = RESIDENT
        return moved

    # ---- helpers ----------------------------------------------------------------------------
    def _group(self, tag: str) -> _Group:
        if tag not in self._groups:
            raise ValueError(f"unknown memory tag {tag!r}; registered tags: {self.tags()}")
        return self._groups[tag]

    def _resident(self, tag: str, what: str) -> _Group:
        group = self._group(tag)
        if group.state != RESIDENT:
            raise ValueError(f"cannot {what} tag {tag!r}: it is {group.state}, not resident")
        return group

    def _release(self, group: _Group, new_state: str) -> int:
        freed = 0
        for b in group.blocks:
            b.storage.resize_(0)
            freed += b.nbytes
        group.state = new_state
        _account(-freed)
        if _npu.available():
            torch.npu.empty_cache()
        else:
            _trim_host_heap()
        return freed


def _bytes_view(storage: torch.UntypedStorage, device: torch.device) -> torch.Tensor:
    """A flat uint8 tensor over the whole of ``storage``."""
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage)


def _trim_host_heap() -> None:
    """Return the C heap's free pages to the OS (glibc ``malloc_trim(0)``, malloc(3)); storages
    below glibc's mmap threshold live on the heap and stay resident after ``free`` otherwise.
    Without glibc the call does not exist and RSS keeps those pages until reused."""
    global _malloc_trim
    if _malloc_trim is None:
        import ctypes
        import ctypes.util

        try:
            _malloc_trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None  # glibc's malloc_trim, False where absent, None until looked up


def _account(nbytes: int) -> None:
    """Move the simulated NPU's accounted usage by ``nbytes`` (no-op in the other modes)."""
    if nbytes == 0 or not (_npu.available() and _npu.simulated()):
        return
    hooks.account(nbytes)


_default = TaggedMemory()


def default_pool() -> TaggedMemory:
    """This process's tagged memory (one engine per process, as vLLM's CuMemAllocator)."""
    return _default


def reset_default_pool() -> TaggedMemory:
    """Replace this process's tagged memory by an empty one (a new engine in the process)."""
    global _default
    _default = TaggedMemory()
    return _default
