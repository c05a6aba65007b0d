# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Zeroed host buffers whose pages are not touched at allocation (CPU emulation, simulated NPU).

vLLM allocates the KV cache as one ``torch.zeros`` byte buffer (``allocate_kv_cache``,
``vllm/v1/worker/utils.py``). On a CPU device that writes every page of a multi-GiB buffer at
start-up, a cost of page faults, not memory bandwidth (benchmarks/README.md, "Design
measurements behind the platform"). Where
the KV cache lives in host memory (CPU emulation, and the simulated NPU, whose device tensors are
CPU tensors: docs/simulated-npu.md), :func:`kv_cache_allocation` instead gives vLLM a buffer from
``torch.empty`` whose whole pages are handed back to the kernel with ``madvise(MADV_DONTNEED)``:
for private anonymous memory (what the allocator maps) the next access of such a page reads
zeros (madvise(2)), so the buffer is all zeros as ``torch.zeros`` promises, its pages are
faulted in as the KV cache fills, and the storage stays an ordinary, resizable torch storage
(sleep mode resizes it: ``ascend_ops.device.tagged_memory``). The partial pages at either end
are zeroed by hand. Where ``madvise`` is unavailable or fails, the buffer is zeroed normally.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache

import torch
from torch.overrides import TorchFunctionMode

MADV_DONTNEED = 4  # <sys/mman.h> on Linux
#: buffers below this are zeroed normally (not worth a system call)
MIN_BYTES = 16 << 20


@lru_cache(maxsize=1)
def _madvise():
    if not os.uname().sysname == "Linux":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def untouched_zeros(nbytes: int) -> torch.Tensor:
    """A zeroed ``int8`` CPU tensor of ``nbytes`` elements whose whole pages are not written.

    Returns:
        torch.int8 tensor ``[nbytes]`` on the CPU, every element 0.
    """
    return zero_without_touching(torch.empty(nbytes, dtype=torch.int8))


def zero_without_touching(buf: torch.Tensor) -> torch.Tensor:
    """Zero the contiguous CPU tensor ``buf`` in place: the whole pages inside it with
    ``madvise(MADV_DONTNEED)`` (valid for private anonymous memory, what torch's CPU allocator
    hands out), the partial pages at its ends (and all of a buffer under :data:`MIN_BYTES`, one in
    shared memory, or wherever ``madvise`` is unavailable or fails) with ``zero_()``. Returns
    ``buf``.

    Raises:
        ValueError: ``buf`` is not a contiguous CPU tensor.
    """
    if buf.device.type != "cpu" or not buf.is_contiguous():
        raise ValueError(f"zero_without_touching needs a contiguous CPU tensor, got {buf.device} "
                         f"{'contiguous' if buf.is_contiguous() else 'strided'}")
    flat = buf.view(-1).view(torch.int8) if buf.numel() else buf
    nbytes = flat.numel()
    madvise = _madvise()
    start = flat.data_ptr()
    page = mmap.PAGESIZE
    lo = -(-start // page) * page  # first whole page
    hi = (start + nbytes) // page * page  # end of the last whole page
    if (madvise is None or nbytes < MIN_BYTES or hi - lo < page or buf.is_shared()
            or madvise(lo, hi - lo, MADV_DONTNEED)):
        buf.zero_()
        return buf
    flat[: lo - start].zero_()
    flat[hi - start:].zero_()
    return buf


class _UntouchedZeros(TorchFunctionMode):
    """``torch.zeros(n, dtype=torch.int8, device=<cpu>)`` of at least :data:`MIN_BYTES` becomes
    :func:`untouched_zeros`; every other call runs unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.zeros and len(args) == 1 and isinstance(args[0], int) \
                and kwargs.get("dtype") == torch.int8 and args[0] >= MIN_BYTES \
                and torch.device(kwargs.get("device") or "cpu").type == "cpu" \
                and set(kwargs) <= {"dtype", "device"}:
            return untouched_zeros(args[0])
        return func(*args, **kwargs)


@contextmanager
def kv_cache_allocation(inner: AbstractContextManager | None = None) -> Iterator[None]:
    """The ``kv_cache_allocation_context`` of ``GPUModelRunner.initialize_kv_cache_tensors`` for
    a KV cache in host memory: inside ``inner`` (the context vLLM's worker passes, e.g. its
    memory-pool context; none: nothing), the backing ``torch.zeros`` byte buffer leaves its
    pages untouched."""
    with inner if inner is not None else nullcontext(), _UntouchedZeros():
        yield
