# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Kernels of the simulated rotary-embedding operators: ATB ``_npu_rotary_embedding`` and
``npu_mrope``. Each follows its sources, quirks included; shapes and rules are checked first in
``constraints.rope``.

Sources:

* [ROPE-ATB] op-plugin ``op_plugin/ops/atb/RopeAtb.cpp`` @ 517f2e7 (Ascend/op-plugin master,
  file last changed in 9c0e5f78): the op-plugin glue of ``_npu_rotary_embedding``.
* [ATB-OP] hicann/ascend-transformer-boost ``src/ops_infer/rope/rope_operation.cpp`` @ f589bb7
  (RopeOperation parameter and shape checks) and ``src/kernels/mixkernels/rope/tiling/
  rope_tiling.cpp`` @ 22d0fe8 (how the kernel splits query/key into heads).
* [ATB-DOC] CANN ATB ``RopeOperation`` reference (hiascend.com canncommercial/80RC3
  ascendtb_01_0091): rotaryCoeff 2 rotates the two halves of a head, 4 splits the head into two
  halves each rotated that way, "and so on"; head_size means adjacent pairs.
* [MROPE-DOC] op-plugin ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_mrope.md`` @ 517f2e7
  (last changed abe5265d): the RoPE / MRoPE formulas of ``npu_mrope``.
* [MROPE-INTERLEAVE] the same page @ 09fca6f (计算公式, ``cache_mode``为``interleave``): the
  interleaved MRoPE split (Qwen3-VL's layout, vllm/model_executor/layers/rotary_embedding/
  mrope.py ``apply_interleaved_rope``).
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.errors import SimulatedNpuError

# [ROPE-ATB] ``static at::Tensor cosCache, sinCache, cosCacheNeox, sinCacheNeox``, built by
# InitializeCosSinCache only while undefined: the FIRST call's cos_sin_cache serves every later
# call of the process, whatever table those calls pass.
_ATB_TABLES: dict[str, torch.Tensor] = {}


def reset_atb_rope_tables() -> None:
    """Forget the table cached by the first ``_npu_rotary_embedding`` call (a fresh process).

    Called whenever the simulated torch_npu module is built (``install()``), so each install
    starts like a new process."""
    _ATB_TABLES.clear()


def _atb_tables(cos_sin_cache: torch.Tensor) -> dict[str, torch.Tensor]:
    if not _ATB_TABLES:
        # [ROPE-ATB] InitializeCosSinCache: chunk(2, -1); GPT-J tables repeat_interleave(2, 1)
        # (c0 c0 c1 c1 ...), neox tables repeat({1, 2}) ([c, c]); both rotary_dim wide.
        cos, sin = cos_sin_cache.chunk(2, -1)
        _ATB_TABLES.update(
            cos=cos.repeat_interleave(2, 1), sin=sin.repeat_interleave(2, 1),
            cos_neox=cos.repeat(1, 2), sin_neox=sin.repeat(1, 2),
        )
    return _ATB_TABLES


def _atb_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, coeff: int) -> torch.Tensor:
    """ATB RopeOperation on x [T, hidden]: heads of width cos.shape[1] ([ATB-OP] rope_tiling:
    headDim = cos width, headNum = hidden / headDim); each head splits into coeff/2 groups that
    rotate their halves ([ATB-DOC]): y = x * cos + cat(-x2, x1) * sin per group."""
    t, width = x.shape[0], cos.shape[1]
    if x.shape[1] % width:
        raise NotImplementedError(
            f"a query/key width ({x.shape[1]}) that is not a multiple of the cached table width ({width})")
    group = 2 * width // coeff
    xg = x.float().view(t, -1, width // group, group)
    half = group // 2
    rotated = torch.cat((-xg[..., half:], xg[..., :half]), dim=-1)
    c = cos.float().view(t, 1, width // group, group)
    s = sin.float().view(t, 1, width // group, group)
    return (xg * c + rotated * s).view(x.shape).to(x.dtype)


def _npu_rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style):
    """ATB rope, in place on query [T, hidden_q] and key [T, hidden_k].

    As [ROPE-ATB] runs it: the cos/sin tables come from the first call of the process (a later
    table is ignored); the head width is that table's width (rotary_dim), so with rotary_dim <
    head_size every rotary_dim-wide chunk of the row rotates, the pass-through part included;
    ``head_size`` is only the rotaryCoeff of the GPT-J style (``is_neox_style=False``).
    Raises SimulatedNpuError for a rotaryCoeff ATB refuses or a table dtype other than query's.
    """
    tables = _atb_tables(cos_sin_cache)
    flat = positions.flatten()
    suffix = "_neox" if is_neox_style else ""
    cos = tables["cos" + suffix].index_select(0, flat)
    sin = tables["sin" + suffix].index_select(0, flat)
    # [ROPE-ATB] ropeparam.rotaryCoeff = is_neox_style ? 2 : head_size
    coeff = 2 if is_neox_style else int(head_size)
    # [ATB-OP] RopeOperation::ParamCheck: rotaryCoeff must be 2, 4 or cos.shape[1], else
    # "Wrong rotaryCoeff" (seen on A2 as "RopeOperation_0 Wrong rotaryCoeff: 128" for GLM-4,
    # rotary_dim 64 of head_size 128: vllm-project/vllm-ascend commit 4230bc8646).
    if coeff not in (2, 4, cos.shape[1]):
        raise SimulatedNpuError(
            f"_npu_rotary_embedding: RopeOperation setup failed: Wrong rotaryCoeff: {coeff} (is_neox_style="
            f"False uses head_size as rotaryCoeff; it must be 2, 4 or the cached table width {cos.shape[1]})")
    # ATB RopeOperation doc (constraints): input tensors share one dtype, except a float32 cos/sin
    # with float16 query/key (high-precision mode); the cached table keeps the first call's dtype.
    if cos.dtype != query.dtype and not (cos.dtype == torch.float32 and query.dtype == torch.float16):
        raise SimulatedNpuError(
            f"_npu_rotary_embedding: the cos/sin table cached by the first call is {cos.dtype}, "
            f"query is {query.dtype} (ATB RopeOperation needs one dtype, or float32 cos/sin with float16)")
    query.copy_(_atb_rope(query, cos, sin, coeff))
    key.copy_(_atb_rope(key, cos, sin, coeff))


def _interleave(part: torch.Tensor, mrope_section) -> torch.Tensor:
    """[MROPE-INTERLEAVE] cache_mode='interleave': start from row set 0, then frequencies
    1, 4, ... below mropeSection[1] * 3 from row set 1 and 2, 5, ... below mropeSection[1] * 3
    from row set 2 (the document bounds both with mropeSection[1]; vLLM's
    apply_interleaved_rope bounds the width ones with mrope_section[2], equal in every
    documented 3-section list)."""
    out = part[0].clone()
    bound = int(mrope_section[1]) * 3
    out[..., 1:bound:3] = part[1, ..., 1:bound:3]
    out[..., 2:bound:3] = part[2, ..., 2:bound:3]
    return out


def _mrope_cos_sin(positions, cos_sin_cache, mrope_section, cache_mode):
    """[MROPE-DOC] cos/sin [T, rotary_dim/2]: RoPE mode (1-D positions) takes the cache rows
    (cache_mode ignored, as op-plugin's test_npu_mrope.py golden does);
    MRoPE mode (positions [m, T]) takes section i of cos/sin from row set i (cache_mode
    'default'; the 3- and 4-section formulas are the same contiguous split), or interleaves
    the three row sets (cache_mode 'interleave', [MROPE-INTERLEAVE])."""
    table = cos_sin_cache.float()
    if positions.dim() == 1:
        return table.index_select(0, positions.long()).chunk(2, -1)
    m, t = positions.shape
    rows = table.index_select(0, positions.reshape(-1).long()).view(m, t, -1)
    cos, sin = rows.chunk(2, -1)
    if cache_mode == "interleave":
        if m != 3:
            raise NotImplementedError("cache_mode='interleave' with other than 3 sections")
        return _interleave(cos, mrope_section), _interleave(sin, mrope_section)
    bounds = [0]
    for size in mrope_section:
        bounds.append(bounds[-1] + int(size))
    pick = [slice(bounds[i], bounds[i + 1]) for i in range(m)]
    return (torch.cat([cos[i, :, pick[i]] for i in range(m)], dim=-1),
            torch.cat([sin[i, :, pick[i]] for i in range(m)], dim=-1))


def _mrope_heads(x: torch.Tensor, cos, sin, head_size: int, neox: bool) -> torch.Tensor:
    """[MROPE-DOC] per head: queryRot = x[..., :rotary_dim] rotates (half: chunk(2); interleave:
    [::2] / [1::2]); queryPass = x[..., rotary_dim:] is kept; out = cat(queryRot, queryPass)."""
    t, rot = x.shape[0], 2 * cos.shape[-1]
    heads = x.float().reshape(t, -1, head_size)
    xr, xp = heads[..., :rot], heads[..., rot:]
    c, s = cos[:, None, :], sin[:, None, :]
    if neox:
        x1, x2 = xr.chunk(2, dim=-1)
        out = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
    else:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        out = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
    return torch.cat((out, xp), dim=-1).reshape(x.shape).to(x.dtype)


def npu_mrope(positions, query, key, cos_sin_cache, head_size, mrope_section, rotary_mode, cache_mode):
    """npu_mrope -> (query_out, key_out), new tensors of query's / key's shape and dtype.

    rotary_dim = cos_sin_cache.shape[-1]; every head's first rotary_dim dims rotate, the rest
    pass through ([MROPE-DOC]); ``rotary_mode`` 'half' is GPT-NeoX, 'interleave' GPT-J.
    """
    cos, sin = _mrope_cos_sin(positions, cos_sin_cache, mrope_section or [0, 0, 0], cache_mode)
    neox = (rotary_mode or "half") == "half"
    return (_mrope_heads(query, cos, sin, head_size, neox),
            _mrope_heads(key, cos, sin, head_size, neox))


ROPE_KERNELS = {
    "_npu_rotary_embedding": _npu_rotary_embedding,
    "npu_mrope": npu_mrope,
}
