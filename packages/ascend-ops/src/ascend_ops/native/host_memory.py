# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host buffers for prepacked CPU weights, backed by transparent huge pages where Linux has them.

A decode step streams every weight it uses from memory once: hundreds of MB per step for an MoE
layer. With 4 KiB pages that stream takes a TLB miss every 4 KiB (a two-level page walk on a
virtual machine), and the hardware prefetchers stop at each page boundary. 2 MiB pages make
both 512 times rarer, which shortens the packed grouped matmul of ``benchmarks/moe_bench.py``'s
layer (measurements: benchmarks/README.md, "Design measurements behind ascend-ops kernels").

:func:`empty` maps anonymous memory with ``mmap``, advises it ``MADV_HUGEPAGE`` (madvise(2); the
kernel honours it when ``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or
``madvise``) and wraps it as a tensor with ``torch.frombuffer`` (the tensor keeps the mapping
alive; the mapping is unmapped when the last tensor on it goes). Smaller buffers, hosts without
``MADV_HUGEPAGE`` (not Linux) or without THP, and ``ASCEND_OPS_HUGE_PAGES=0`` get a plain
``torch.empty`` (:func:`enabled`): the advice only changes speed, never results. Used for the native backend's own packs
(``native.moe``, ``native.linear``); nothing on the NPU branch allocates here.
"""

from __future__ import annotations

import mmap
import os

import torch

#: Size of one transparent huge page on x86-64 and (4 KiB-granule) aarch64 Linux.
HUGE_PAGE_BYTES = 2 << 20
_ENV = "ASCEND_OPS_HUGE_PAGES"
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def enabled() -> bool:
    """Whether :func:`empty` advises huge pages: Linux's ``MADV_HUGEPAGE`` exists here, the
    kernel's THP mode (:func:`thp_mode`) is ``always`` or ``madvise`` (a kernel built without THP
    has no such file, and refuses the advice), and ``ASCEND_OPS_HUGE_PAGES`` is not ``0`` (or
    ``false`` / ``off`` / ``no``)."""
    off = os.environ.get(_ENV, "1").strip().lower() in ("0", "false", "off", "no")
    return (hasattr(mmap, "MADV_HUGEPAGE") and not off
            and thp_mode() in ("always", "madvise"))


def thp_mode(path: str | None = None) -> str:
    """The kernel's transparent-huge-page mode (``always`` / ``madvise`` / ``never``: the
    bracketed word of ``path``, default :data:`THP_ENABLED`), or ``unknown`` where it cannot be
    read."""
    try:
        with open(path or THP_ENABLED) as f:
            text = f.read()
    except OSError:
        return "unknown"
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else "unknown"


def empty(numel: int, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialized 1-D CPU tensor of ``numel`` elements of ``dtype``.

    At least :data:`HUGE_PAGE_BYTES` of it (and :func:`enabled`): its data starts on a 2 MiB
    boundary of an anonymous mapping whose whole 2 MiB pages under the data are advised
    ``MADV_HUGEPAGE``; otherwise ``torch.empty``. Raises
    ``ValueError`` for a negative ``numel``.
    """
    if numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = numel * itemsize
    if nbytes < HUGE_PAGE_BYTES or not enabled():
        return torch.empty(numel, dtype=dtype)
    # The mapping has one huge page more than needed so that the data can start on a 2 MiB
    # boundary (the head before it is never touched, so it takes no memory). Only the data's whole
    # 2 MiB pages are advised: a tail in a huge page of its own would waste the rest of that page.
    region = mmap.mmap(-1, nbytes + HUGE_PAGE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = torch.frombuffer(region, dtype=torch.uint8)
    head = -raw.data_ptr() % HUGE_PAGE_BYTES
    try:
        region.madvise(mmap.MADV_HUGEPAGE, head, nbytes // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES)
    except OSError:  # refused (e.g. THP switched off since enabled() read it): plain pages
        pass
    return raw[head : head + nbytes].view(dtype)
