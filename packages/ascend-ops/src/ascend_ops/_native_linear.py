# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``ascend.linear``: weights prepacked once into oneDNN / MKL layouts.

The packed copies live only here, in a registry keyed by an integer handle; callers hold the
handle and keep passing the plain ``[N, K]`` weight, which stays the source of truth (the NPU
branch, LoRA, sleep mode and weight reloads all use it). A pack is rebuilt when its weight was
written in place (``Tensor._version``) or moved (``data_ptr``), so a reload can never leave a
stale copy behind.

Layouts (PyTorch's own CPU linear packing, the same primitives ``torch._inductor`` uses for
frozen linears, ``torch/_inductor/fx_passes/mkldnn_fusion.py``):

* float32: ``torch.ops.mkl._mkl_reorder_linear_weight`` (MKL ``cblas_sgemm_pack``), applied with
  ``torch.ops.mkl._mkl_linear``; results are bitwise those of ``torch.nn.functional.linear``. The
  pack serves inputs of ``_PACK_ROWS_HINT`` rows; other row counts run ``aten.linear``.
* bfloat16 / float16 (when oneDNN supports the type on this CPU): ``torch.ops.mkldnn.
  _reorder_linear_weight`` (oneDNN blocked layout, AMX / AVX-512-BF16 kernels), applied with
  ``torch.ops.mkldnn._linear_pointwise``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ascend_ops._pack_registry import PackRegistry

# An MKL pack serves one row count: torch's ``_mkl_linear`` runs ``cblas_sgemm_compute`` on it only
# when the input has exactly ``_PACK_ROWS_HINT`` rows, and ``aten.linear`` on the plain weight at
# any other (aten/src/ATen/native/mkldnn/Linear.cpp, ``mkl_linear``): same results either way,
# so float32 gains from the pack at 8-row steps only. oneDNN packs for float32 instead were
# measured in the engine (SmolLM2, quiet box): batch 4 46 -> 56 tok/s, batch 16 148 -> 175,
# batch 8 107 -> 99, both packs together slower at every batch; but their float32 rounding is not
# aten.linear's, and two rounding-sensitive e2e checks (W8A8 static first-token logprobs vs the
# oracle, the fp8-KV option-sweep greedy check vs HF) failed with them: benchmarks/README.md.
# On an AMD EPYC box MKL's float32 kernels are 1.4-4.7x slower than oneDNN's (offline batch 8:
# 0.57x vLLM's CPU backend with this pack, 0.97x with oneDNN packs); the W8A8 check has been
# re-derived since, the fp8_e5m2 row of the option sweep still fails with oneDNN rounding.
_PACK_ROWS_HINT = 8


@dataclass
class _Pack:
    kind: str  # "mkl" or "onednn"
    packed: torch.Tensor
    version: int
    data_ptr: int


_registry: PackRegistry[_Pack] = PackRegistry()


def packable(weight: torch.Tensor) -> str | None:
    """The packing this weight gets ("mkl" / "onednn"), or None to use plain ``aten.linear``."""
    if weight.device.type != "cpu" or weight.dim() != 2 or weight.layout != torch.strided:
        return None
    if weight.dtype == torch.float32 and torch.backends.mkl.is_available():
        return "mkl"
    if not torch.backends.mkldnn.is_available():
        return None
    if weight.dtype == torch.bfloat16 and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return "onednn"
    if weight.dtype == torch.float16 and torch.ops.mkldnn._is_mkldnn_fp16_supported():
        return "onednn"
    return None


def _build(weight: torch.Tensor, kind: str) -> _Pack:
    w = weight.detach().contiguous()
    if kind == "mkl":
        packed = torch.ops.mkl._mkl_reorder_linear_weight(w, _PACK_ROWS_HINT)
    else:
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
    if entry.kind == "mkl":
        out = torch.ops.mkl._mkl_linear(x2, entry.packed, weight, bias, _PACK_ROWS_HINT)
    else:
        out = torch.ops.mkldnn._linear_pointwise(x2, entry.packed, bias, "none", [], "")
    return out.view(*x.shape[:-1], weight.shape[0])
