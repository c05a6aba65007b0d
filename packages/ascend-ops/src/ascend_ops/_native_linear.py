# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``ascend.linear``: weights prepacked once, in one of two layouts.

The packed copies live only here, in a registry keyed by an integer handle; callers hold the
handle and keep passing the plain ``[N, K]`` weight, which stays the source of truth (the NPU
branch, LoRA, sleep mode and weight reloads all use it). A pack is rebuilt when its weight was
written in place (``Tensor._version``) or moved (``data_ptr``), so a reload can never leave a
stale copy behind.

Which layout (:func:`packable`), by the vector ISA ``ascend_ops._C`` was built for:

* AVX-512 builds: ``"onednn"``, PyTorch's own CPU linear packing, the primitive
  ``torch._inductor`` uses for frozen linears (``torch/_inductor/fx_passes/mkldnn_fusion.py``):
  ``torch.ops.mkldnn._reorder_linear_weight`` (oneDNN blocked layout; AMX / AVX-512-BF16 kernels
  for bfloat16 and float16 where the CPU has them), applied with
  ``torch.ops.mkldnn._linear_pointwise`` for any number of rows: what vLLM 0.32's CPU backend runs
  too (its ``onednn_mm``, ``dispatch_cpu_unquantized_gemm``). oneDNN float32 results equal
  ``aten.linear``'s up to float32 rounding (another summation order), not bitwise.
* Other builds (AVX2, the x86-64-v3 wheel): ``"blocks"``, the column-block layout of ``_C``'s
  prepacked grouped matmul (``csrc/moe_packed.cpp``) with one group: inputs of up to
  :data:`BLOCK_ROWS` rows (decode) stream each block of 32 output columns once, float32
  accumulation; larger inputs (prefill) run ``aten.linear`` on the plain weight. On a 2-core AVX2
  EPYC at SmolLM2's shapes this kernel took 200-530 us per call at 1-4 rows where torch's oneDNN
  pack took 300-830 us and vLLM's ``onednn_mm`` 290-750 us, and was level with both at 16 rows
  (benchmarks/README.md); oneDNN also refuses bfloat16 packs on CPUs without AVX-512-BF16, which
  this layout serves. Results equal ``aten.linear``'s up to rounding (float32 sums in a fixed
  order; bfloat16 / float16 rounded once at the output).

Why not MKL for float32 (``cblas_sgemm_pack``, used here before): torch's ``_mkl_linear`` applies
such a pack only to inputs with exactly the row count it was packed for and runs ``aten.linear``
(MKL ``sgemm``) at any other (``aten/src/ATen/native/mkldnn/Linear.cpp``, ``mkl_linear``), and on
an AMD EPYC box MKL's float32 kernels are 1.4-4.7x slower than oneDNN's at SmolLM2's shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ascend_ops._dispatch import native_module, native_vector_isa
from ascend_ops._native import DTYPE_CODES
from ascend_ops._pack_registry import PackRegistry

#: Most rows a ``"blocks"`` pack serves; above it ``aten.linear`` runs on the plain weight (the
#: kernel tiles up to 4 rows per pass over a block, so it is a decode kernel, level with oneDNN at 16).
BLOCK_ROWS = 16


@dataclass
class _Pack:
    kind: str  # "onednn" or "blocks"
    packed: torch.Tensor
    version: int
    data_ptr: int


_registry: PackRegistry[_Pack] = PackRegistry()
_counts: dict[int, torch.Tensor] = {}  # rows -> the one-group group_list [rows] (int64)


def packable(weight: torch.Tensor) -> str | None:
    """The packing this weight gets ("onednn" or "blocks"), or None for plain ``aten.linear``."""
    if weight.device.type != "cpu" or weight.dim() != 2 or weight.layout != torch.strided:
        return None
    if weight.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return None
    if native_vector_isa() not in (None, "avx512"):
        return "blocks"
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
    w = weight.detach()
    if kind == "blocks":
        mod = native_module()
        n, k = w.shape
        code = DTYPE_CODES[w.dtype]
        packed = torch.empty(mod.grouped_weight_packed_size(1, k, n, code), dtype=w.dtype)
        # [N, K] seen as one expert's [K, N]: stride along K is w.stride(1), along N w.stride(0)
        mod.pack_grouped_weight(w.data_ptr(), packed.data_ptr(), 1, k, n, 0, w.stride(1),
                                w.stride(0), code)
    else:
        packed = torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), None)
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


def _blocks_linear(x2: torch.Tensor, entry: _Pack, n: int, bias: torch.Tensor | None):
    rows, k = x2.shape
    counts = _counts.get(rows)
    if counts is None:
        counts = _counts.setdefault(rows, torch.tensor([rows], dtype=torch.int64))
    out = x2.new_empty(rows, n)
    native_module().grouped_matmul_packed(x2.data_ptr(), entry.packed.data_ptr(), counts.data_ptr(),
                                          out.data_ptr(), rows, k, n, 1, DTYPE_CODES[x2.dtype])
    if bias is not None:
        out += bias
    return out


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, handle: int):
    entry = _registry.get(handle)
    if entry is None:
        return torch.nn.functional.linear(x, weight, bias)
    x2 = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    if entry.kind == "blocks" and not 0 < x2.shape[0] <= BLOCK_ROWS:
        return torch.nn.functional.linear(x, weight, bias)  # prefill-sized: the plain weight
    if entry.version != weight._version or entry.data_ptr != weight.data_ptr():
        entry = _build(weight, entry.kind)  # written in place or moved since it was packed
        _registry.replace(handle, entry)
    if not x2.is_contiguous():
        x2 = x2.contiguous()
    if entry.kind == "blocks":
        out = _blocks_linear(x2, entry, weight.shape[0], bias)
    else:
        out = torch.ops.mkldnn._linear_pointwise(x2, entry.packed, bias, "none", [], "")
    return out if x.dim() == 2 else out.view(*x.shape[:-1], weight.shape[0])
