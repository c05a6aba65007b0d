# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the simulated rotary-embedding operators (``_npu_rotary_embedding``,
``npu_mrope``); a violation raises ``SimulatedNpuError("<operator>: <rule>")``.

Sources (each rule cites one):

* [ATB-ROPE] CANN ATB ``RopeOperation`` reference (hiascend.com ascendtb_01_0075 / 80RC3
  ascendtb_01_0091 / 83RC1 ascendtb_01_0075): query [ntokens, hiddenSizeQ], key [ntokens,
  hiddenSizeK], float16/bf16; cos/sin float16/float/bf16; input tensors share one dtype except
  in high-precision mode (float32 cos/sin), which bf16 does not support (83RC1 product table).
  op-plugin's own NPU test runs that mode: float16 query/key with a float32 cos_sin_cache
  (test/test_custom_ops/test_atb_rope.py @ 517f2e7, Ascend910B).
* [ATB-OP] hicann/ascend-transformer-boost ``src/ops_infer/rope/rope_operation.cpp`` @ f589bb7
  (HiddenSizeCheck: hiddenSizeQ a multiple of hiddenSizeK) and
  ``src/kernels/mixkernels/rope/rope_operation.cpp`` @ a6f12c7 (InferShape: the last dims of
  query and key must be 32-byte aligned, i.e. multiples of 16 elements).
* [ROPE-ATB] op-plugin ``op_plugin/ops/atb/RopeAtb.cpp`` @ 517f2e7: splits cos_sin_cache with
  ``chunk(2, -1)`` and tiles it with ``repeat({1, 2})`` (a 2-D table), indexes it with
  ``index_select(0, positions.flatten())``.
* [MROPE-DOC] op-plugin ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_mrope.md`` @ 517f2e7
  (参数说明 / 约束说明).
* [MROPE-SRC] op-plugin ``op_plugin/ops/opapi/RopeWithSinCosCacheKernelNpuOpApi.cpp`` @ 517f2e7
  (last changed 96b51a1d; the strict mode checks arrived in 49a65c88, before the torch-npu
  2.13.0 wheel, whose schema already has ``cache_mode``).
* [ATB-TENSOR] see ``constraints``: ATB operands are pointer + shape, so they must be contiguous.
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.base import HALF, _contig, _dtype, _need

INDEX = (torch.int32, torch.int64)
# [MROPE-DOC] mrope_section: 不传或[0, 0, 0]表示RoPE模式; 传[16, 24, 24]、[24, 20, 20]、[8, 12, 12]、
# [16, 16, 16, 16]表示MRoPE模式.
MROPE_SECTIONS = ([16, 24, 24], [24, 20, 20], [8, 12, 12], [16, 16, 16, 16])


def atb_rotary_embedding(a: dict, op="_npu_rotary_embedding") -> None:
    q, k, table = a["query"], a["key"], a["cos_sin_cache"]
    # [ATB-ROPE] query [ntokens, hiddenSizeQ], key [ntokens, hiddenSizeK], float16/bfloat16.
    _need(q.dim() == 2 and k.dim() == 2, op, "query and key must be 2-D [num_tokens, hidden]")
    _need(q.shape[0] == k.shape[0], op, "query and key must have the same number of tokens")
    _dtype(q, HALF, op, "query")
    _need(k.dtype == q.dtype, op, "key must have query's dtype")
    # [ATB-OP] InferShape: the shapes of inputQ and inputK must be 32 bytes aligned.
    _need(q.shape[1] % 16 == 0 and k.shape[1] % 16 == 0, op,
          f"query/key widths ({q.shape[1]}, {k.shape[1]}) must be multiples of 16 (32-byte aligned)")
    # [ATB-OP] HiddenSizeCheck: hiddenSizeQ should be an integer multiple of hiddenSizeK.
    _need(k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0, op, "query width must be a multiple of key width")
    # [ROPE-ATB] chunk(2, -1) + repeat({1, 2}) on the table: 2-D [max_position, rotary_dim].
    _need(table.dim() == 2 and table.shape[1] % 2 == 0, op,
          "cos_sin_cache must be 2-D [max_position, rotary_dim] with rotary_dim even")
    # [ATB-ROPE] one dtype for all inputs, or a float32 table with float16 query/key (high precision).
    _need(table.dtype == q.dtype or (table.dtype == torch.float32 and q.dtype == torch.float16), op,
          "cos_sin_cache must have query's dtype (or be float32 with a float16 query: high-precision mode)")
    # [ROPE-ATB] index_select(0, positions.flatten()): an int32/int64 index.
    _dtype(a["positions"], INDEX, op, "positions")
    # [ATB-TENSOR]
    for name in ("query", "key", "cos_sin_cache"):
        _contig(a[name], op, name)


def _mrope_mode(a: dict, op: str, positions: torch.Tensor, rot: int) -> None:
    section = list(a["mrope_section"] or [0, 0, 0])
    rope_mode = not any(section)
    cache_mode = a["cache_mode"] or "default"
    # [MROPE-SRC] parse_cache_mode_to_int: "cache_mode only support default or interleave".
    _need(cache_mode in ("default", "interleave"), op, "cache_mode only support default or interleave")
    if rope_mode:
        # [MROPE-DOC] positions: RoPE模式: 1维张量 (num_tokens). The .md also says RoPE mode
        # supports only cache_mode='default', but op-plugin's Ascend910B test runs RoPE mode with
        # 'interleave' and checks a golden that ignores it (test/test_custom_ops/test_npu_mrope.py
        # @ 517f2e7, test_npu_mrope_rope): the hardware-proven call wins, cache_mode is ignored.
        _need(positions.dim() == 1, op, "mrope_section [0, 0, 0] (RoPE mode) needs 1-D positions [num_tokens]")
        return
    # [MROPE-DOC] MRoPE模式: positions (3, num_tokens) 或 (4, num_tokens), 与mrope_section分段数一致.
    _need(section in MROPE_SECTIONS, op, f"mrope_section must be [0, 0, 0] or one of {MROPE_SECTIONS}")
    _need(positions.dim() == 2 and positions.shape[0] == len(section), op,
          f"MRoPE needs positions [{len(section)}, num_tokens] for mrope_section {section}")
    # [MROPE-DOC] 约束: mrope_section各元素之和应等于rotary_dim / 2.
    _need(sum(section) * 2 == rot, op, f"sum(mrope_section) must equal rotary_dim / 2 ({rot // 2})")
    # [MROPE-DOC] 当mrope_section为[16, 16, 16, 16]时, 仅支持cache_mode='default'.
    _need(len(section) == 3 or cache_mode == "default", op,
          "mrope_section [16, 16, 16, 16] supports only cache_mode='default'")


def mrope(a: dict, op="npu_mrope") -> None:
    positions, q, k, table = a["positions"], a["query"], a["key"], a["cos_sin_cache"]
    hs = a["head_size"]
    # [MROPE-DOC] positions int32/int64; query/key/cos_sin_cache 2-D; float16/bfloat16/float32,
    # key and cos_sin_cache in query's dtype. Non-contiguous tensors are supported (not checked).
    _dtype(positions, INDEX, op, "positions")
    _need(q.dim() == 2 and k.dim() == 2 and table.dim() == 2, op,
          "query, key and cos_sin_cache must be 2-D")
    _dtype(q, (*HALF, torch.float32), op, "query")
    _need(k.dtype == q.dtype and table.dtype == q.dtype, op, "key and cos_sin_cache must have query's dtype")
    t = positions.shape[-1]
    _need(q.shape[0] == t and k.shape[0] == t, op, f"query/key must have num_tokens ({t}) rows")
    # [MROPE-DOC] query (num_tokens, num_q_heads * head_size), key (num_tokens, num_k_heads * head_size).
    _need(hs > 0 and q.shape[1] % hs == 0 and k.shape[1] % hs == 0, op,
          f"query/key widths must be multiples of head_size ({hs})")
    rot = table.shape[1]
    # [MROPE-DOC] 约束: rotary_dim为cos_sin_cache最后一维大小, 且满足rotary_dim <= head_size;
    # head_size and rotary_dim multiples of 32 for float16/bfloat16, of 16 for float32.
    _need(rot <= hs, op, f"rotary_dim (cos_sin_cache width {rot}) must be <= head_size ({hs})")
    align = 16 if q.dtype == torch.float32 else 32
    _need(hs % align == 0 and rot % align == 0, op,
          f"head_size ({hs}) and rotary_dim ({rot}) must be multiples of {align} for {q.dtype}")
    # [MROPE-SRC] parse_rotary_mode_to_neox_style: "rotary_mode only support half or interleave"
    # (the .md spells GPT-J 'interleaved', which this check rejects).
    mode = a["rotary_mode"] or "half"
    _need(mode in ("half", "interleave"), op, f"rotary_mode only support half or interleave, got {mode!r}")
    _mrope_mode(a, op, positions, rot)


ROPE_RULES = {
    "_npu_rotary_embedding": atb_rotary_embedding,
    "npu_mrope": mrope,
}
