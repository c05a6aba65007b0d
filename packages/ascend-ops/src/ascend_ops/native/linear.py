# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``ascend.linear``: weights prepacked once, in up to two layouts.

The packed copies live only here, in a registry keyed by an integer handle; callers hold the
handle and keep passing the plain ``[N, K]`` weight, which stays the source of truth (the NPU
branch, LoRA, sleep mode and weight reloads all use it). A pack is rebuilt when its weight was
written in place (``Tensor._version``) or moved (``data_ptr``), so a reload can never leave a
stale copy behind.

Layouts (:func:`packable` names them, :func:`block_rows` says which rows each serves):

* ``"blocks"``: the column-block layout of ``_C``'s prepacked grouped matmul
  (``csrc/moe_packed.cpp``) with one group, a decode kernel: each block of 32 output columns is
  streamed from memory once for all rows, float32 accumulation. It serves inputs of up to
  :func:`block_rows` rows; larger inputs (prefill) run ``aten.linear`` on the plain weight, or
  the oneDNN pack where one is kept. Every float dtype on every build.
* ``"onednn"``: PyTorch's own CPU linear packing, the primitive ``torch._inductor`` uses for
  frozen linears (``torch/_inductor/fx_passes/mkldnn_fusion.py``):
  ``torch.ops.mkldnn._reorder_linear_weight`` (oneDNN blocked layout; AMX / AVX-512-BF16 kernels
  for bfloat16 and float16), applied with ``torch.ops.mkldnn._linear_pointwise``: what vLLM 0.32's
  CPU backend runs too (its ``onednn_mm``, ``dispatch_cpu_unquantized_gemm``).

Which, by the vector ISA ``_C`` was built for and the dtype (chosen from
``benchmarks/linear_bench.py`` at SmolLM2's shapes, weights streamed from memory; the numbers are
in benchmarks/README.md, "Design measurements behind ascend-ops kernels"):

* float32, wherever oneDNN runs float32 (every x86 build of torch; aarch64 builds too, not
  measured there): ``"blocks+onednn"``, the column blocks up to :data:`FLOAT32_BLOCK_ROWS` (48)
  rows on AVX-512 builds (:data:`BLOCK_ROWS` from :data:`WIDE_N` columns and on other builds),
  the oneDNN pack above. The column blocks are ahead of oneDNN at decode rows, the two cross
  around 48-64 rows, and the oneDNN pack is ahead where the layer turns compute-bound; plain
  ``aten.linear`` (MKL's ``sgemm``) trails ``onednn_mm`` at prefill sizes, so float32 keeps the
  oneDNN pack for prefill, one more copy of the weights in host memory.
* bfloat16 / float16 on AVX-512 builds whose CPU has oneDNN kernels for them:
  ``"blocks+onednn"``, both packs. The column blocks serve decode rows while the weight is narrow
  (up to 8 rows for N < :data:`WIDE_N`, one row otherwise); oneDNN's AMX / AVX-512-BF16 GEMM,
  which overtakes a streaming kernel as rows x N grows, serves the rest (the LM head at batch 8,
  prefill). This keeps two packed copies besides the plain weight.
* bfloat16 / float16 elsewhere (AVX2: oneDNN refuses reduced-precision packs without
  AVX-512-BF16): ``"blocks"``, ``aten.linear`` above :data:`BLOCK_ROWS`.

Results equal ``aten.linear``'s up to rounding (float32 sums in a fixed order; bfloat16 /
float16 rounded once at the output); which layout serves a row count is fixed per weight, so a
batch size always gets the same numbers.

Why not MKL for float32 (``cblas_sgemm_pack``, used here before): torch's ``_mkl_linear`` applies
such a pack only to inputs with exactly the row count it was packed for and runs ``aten.linear``
(MKL ``sgemm``) at any other (``aten/src/ATen/native/mkldnn/Linear.cpp``, ``mkl_linear``), and on
AMD CPUs MKL's float32 kernels trail oneDNN's at SmolLM2's shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ascend_ops._dispatch import native_module, native_vector_isa
from ascend_ops.native import host_memory
from ascend_ops.native.layers import DTYPE_CODES
from ascend_ops.native.pack_registry import PackRegistry

#: Most rows the column blocks serve by default: a decode kernel (register tiles of up to 8 rows
#: on AVX-512, 4 elsewhere). The limit where the ``"blocks"`` layout is the only pack (bfloat16 /
#: float16 without oneDNN kernels: ``aten.linear`` above), and for float32 weights on builds
#: other than AVX-512 or from :data:`WIDE_N` columns (the oneDNN pack above).
BLOCK_ROWS = 16
#: Most rows a float32 ``"blocks+onednn"`` weight narrower than :data:`WIDE_N` sends to the column
#: blocks on AVX-512 builds (the oneDNN pack above): where the two crossed at SmolLM2's shapes
#: (module docstring). Wider float32 weights (an LM head) keep :data:`BLOCK_ROWS`: there the column
#: blocks lead at 8-16 rows and trail at 32-48. AVX2 builds keep :data:`BLOCK_ROWS` too: not
#: measured on an AVX2 CPU above 16 rows, and with oneDNN capped at AVX2 the AVX2 build's column
#: blocks trailed oneDNN at 32-48 rows.
FLOAT32_BLOCK_ROWS = 48
#: Output width from which a ``"blocks+onednn"`` weight leaves more rows to oneDNN: bfloat16 /
#: float16 every row above the first (SmolLM2's LM head, N = 49152, trails oneDNN at 8 rows where
#: its 3072-wide gate_up is level), float32 those above :data:`BLOCK_ROWS`.
WIDE_N = 8192


@dataclass
class _Pack:
    kind: str  # "onednn", "blocks" or "blocks+onednn"
    blocks: torch.Tensor | None  # column-block pack (``_C``)
    onednn: torch.Tensor | None  # oneDNN blocked pack
    block_rows: int  # inputs of 1..block_rows rows run the column blocks
    version: int
    data_ptr: int


_registry: PackRegistry[_Pack] = PackRegistry()
_counts: dict[int, torch.Tensor] = {}  # rows -> the one-group group_list [rows] (int64)


def _onednn_supports(dtype: torch.dtype) -> bool:
    if not torch.backends.mkldnn.is_available():
        return False
    if dtype == torch.bfloat16:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    if dtype == torch.float16:
        return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    return dtype == torch.float32


def packable(weight: torch.Tensor) -> str | None:
    """The packing this weight gets ("blocks", "blocks+onednn" or "onednn"), or None for plain
    ``aten.linear`` (not a 2-D strided CPU float weight)."""
    if weight.device.type != "cpu" or weight.dim() != 2 or weight.layout != torch.strided:
        return None
    if weight.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return None
    isa = native_vector_isa()
    if isa is None:  # no ``_C`` (only reached when a caller forces the pack): oneDNN alone
        return "onednn" if _onednn_supports(weight.dtype) else None
    if not _onednn_supports(weight.dtype):
        return "blocks"
    if weight.dtype == torch.float32 or isa == "avx512":
        return "blocks+onednn"
    return "blocks"


def block_rows(weight: torch.Tensor) -> int:
    """Most rows of an input the column blocks serve for this weight (0: none); see the module
    docstring for the measurements behind it."""
    kind = packable(weight)
    if kind is None or "blocks" not in kind:
        return 0
    if kind == "blocks+onednn":
        if weight.dtype == torch.float32:
            narrow = weight.shape[0] < WIDE_N and native_vector_isa() == "avx512"
            return FLOAT32_BLOCK_ROWS if narrow else BLOCK_ROWS
        return 8 if weight.shape[0] < WIDE_N else 1
    return BLOCK_ROWS


def _pack_blocks(w: torch.Tensor) -> torch.Tensor:
    mod = native_module()
    n, k = w.shape
    code = DTYPE_CODES[w.dtype]
    packed = host_memory.empty(mod.grouped_weight_packed_size(1, k, n, code), w.dtype)
    # [N, K] seen as one expert's [K, N]: stride along K is w.stride(1), along N w.stride(0)
    mod.pack_grouped_weight(w.data_ptr(), packed.data_ptr(), 1, k, n, 0, w.stride(1), w.stride(0),
                            code)
    return packed


def _build(weight: torch.Tensor, kind: str) -> _Pack:
    w = weight.detach()
    blocks = _pack_blocks(w) if "blocks" in kind else None
    onednn = torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), None) if "onednn" in kind else None
    return _Pack(kind, blocks, onednn, block_rows(weight), weight._version, weight.data_ptr())


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


def _blocks_linear(x2: torch.Tensor, packed: torch.Tensor, n: int, bias: torch.Tensor | None):
    rows, k = x2.shape
    counts = _counts.get(rows)
    if counts is None:
        counts = _counts.setdefault(rows, torch.tensor([rows], dtype=torch.int64))
    out = x2.new_empty(rows, n)
    native_module().grouped_matmul_packed(x2.data_ptr(), packed.data_ptr(), counts.data_ptr(),
                                          out.data_ptr(), rows, k, n, 1, DTYPE_CODES[x2.dtype])
    if bias is not None:
        out += bias
    return out


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, handle: int):
    entry = _registry.get(handle)
    if entry is None:
        return torch.nn.functional.linear(x, weight, bias)
    x2 = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    use_blocks = 0 < x2.shape[0] <= entry.block_rows
    if not use_blocks and entry.onednn is None:
        return torch.nn.functional.linear(x, weight, bias)  # prefill-sized: the plain weight
    if entry.version != weight._version or entry.data_ptr != weight.data_ptr():
        entry = _build(weight, entry.kind)  # written in place or moved since it was packed
        _registry.replace(handle, entry)
    if not x2.is_contiguous():
        x2 = x2.contiguous()
    if use_blocks:
        assert entry.blocks is not None
        out = _blocks_linear(x2, entry.blocks, weight.shape[0], bias)
    else:
        out = torch.ops.mkldnn._linear_pointwise(x2, entry.onednn, bias, "none", [], "")
    return out if x.dim() == 2 else out.view(*x.shape[:-1], weight.shape[0])


#: the family table's name for :func:`pack`
pack_linear_weight = pack
