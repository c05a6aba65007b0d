# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``ascend.linear``: weights prepacked once into oneDNN layouts.

The packed copies live only here, in a registry keyed by an integer handle; callers hold the
handle and keep passing the plain ``[N, K]`` weight, which stays the source of truth (the NPU
branch, LoRA, sleep mode and weight reloads all use it). A pack is rebuilt when its weight was
written in place (``Tensor._version``) or moved (``data_ptr``), so a reload can never leave a
stale copy behind.

Layout: PyTorch's own CPU linear packing, the primitive ``torch._inductor`` uses for frozen
linears (``torch/_inductor/fx_passes/mkldnn_fusion.py``): ``torch.ops.mkldnn._reorder_linear_weight``
(oneDNN blocked layout; AVX-512 for float32, AMX / AVX-512-BF16 kernels for bfloat16 and float16
where the CPU has them), applied with ``torch.ops.mkldnn._linear_pointwise`` for any number of
rows: what vLLM 0.32's CPU backend runs too (its ``onednn_mm``, ``dispatch_cpu_unquantized_gemm``).
oneDNN float32 results equal ``aten.linear``'s up to float32 rounding (another summation order),
not bitwise.

Why not MKL for float32 (``cblas_sgemm_pack``, used here before): torch's ``_mkl_linear`` applies
such a pack only to inputs with exactly the row count it was packed for and runs ``aten.linear``
(MKL ``sgemm``) at any other (``aten/src/ATen/native/mkldnn/Linear.cpp``, ``mkl_linear``), and on
an AMD EPYC box MKL's float32 kernels are 1.4-4.7x slower than oneDNN's at SmolLM2's shapes
(LM head 49152x576 at 8 rows: 12.0 ms packed MKL, 2.8 ms oneDNN). On a Xeon the two were within a
few per cent at 1 and 8 rows and oneDNN faster at every other count (benchmarks/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ascend_ops._pack_registry import PackRegistry


@dataclass
class _Pack:
    kind: str  # "onednn"
    packed: torch.Tensor
    version: int
    data_ptr: int


_registry: PackRegistry[_Pack] = PackRegistry()


def packable(weight: torch.Tensor) -> str | None:
    """The packing this weight gets ("onednn"), or None to use plain ``aten.linear``."""
    if weight.device.type != "cpu" or weight.dim() != 2 or weight.layout != torch.strided:
        return None
    if not torch.backends.mkldnn.is_available():
        return None
    if weight.dtype == torch.float32:
        return "onednn"
    if weight.dtype == torch.bfloat16 and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return "onednn"
    if weight.dtype == torch.float16 and torch.ops.mkldnn._is_mkldnn_fp16_supported():
        return "onednn"
    return None


def _build(weight: torch.Tensor, kind: str) -> _Pack:
    w = weight.detach().contiguous()
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
    return _Pack(kind, packed, weight._version, weight.data_ptr())


def pack(weight: torch.Tensor) -> int:
    """Pack ``weight`` [N, K]; return its handle (>= 0), or -1 when no packing applies."""
    kind = packable(weight)
    if kind is None:
        return -1
    return _registry.add(_build(weight, kind))


def release(handle: int) -> None:
    """Drop a pack (no-op for -1 or an unknown handle)."""
    _registry.release(handle)


def pack_count() -> int:
    return _registry.count()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, handle: int):
    entry = _registry.get(handle)
    if entry is None:
        return torch.nn.functional.linear(x, weight, bias)
    if entry.version != weight._version or entry.data_ptr != weight.data_ptr():
        entry = _build(weight, entry.kind)  # written in place or moved since it was packed
        _registry.replace(handle, entry)
    x2 = x.reshape(-1, x.shape[-1])
    if not x2.is_contiguous():
        x2 = x2.contiguous()
    out = torch.ops.mkldnn._linear_pointwise(x2, entry.packed, bias, "none", [], "")
    return out.view(*x.shape[:-1], weight.shape[0])
