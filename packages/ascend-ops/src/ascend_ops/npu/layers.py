# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch: each op mapped onto the torch_npu operator whose semantics it follows.

torch_npu is imported at call time (``sys.modules`` first) so that tests can run this branch on CPU
against a schema-checking fake. Argument names follow the torch-npu 2.13.0 wheel's published
schemas (``npu_native_functions_by_codegen.yaml`` and ``op_plugin/include/AtbOpsInterface.h``).
"""

from __future__ import annotations

import importlib

import torch

from ascend_ops.checks import attention as attention_checks
from ascend_ops.checks.kv_cache import npu_cache_error
from ascend_ops.reference import paged

# npu_fused_infer_attention_score with sparse_mode=3 (causal, aligned bottom-right) takes this
# fixed 2048x2048 mask (True = masked) and derives the real mask from the actual lengths.
_CAUSAL_MASK_SIZE = 2048
_mask_cache: dict[torch.device, torch.Tensor] = {}


def torch_npu():
    """The torch_npu module (RuntimeError saying what to install when absent)."""
    try:
        return importlib.import_module("torch_npu")
    except ImportError as exc:
        raise RuntimeError(
            "the NPU backend needs torch_npu (matching your torch and CANN versions); "
            f"import failed: {exc}"
        ) from exc


def _causal_mask(device: torch.device) -> torch.Tensor:
    mask = _mask_cache.get(device)
    if mask is None:
        ones = torch.ones(_CAUSAL_MASK_SIZE, _CAUSAL_MASK_SIZE, dtype=torch.bool, device=device)
        mask = torch.triu(ones, diagonal=1)
        _mask_cache[device] = mask
    return mask


def rms_norm(x, weight, eps):
    y, _rstd = torch_npu().npu_rms_norm(x, weight, epsilon=eps)
    return y


def add_rms_norm(x, residual, weight, eps):
    y, _rstd, x_sum = torch_npu().npu_add_rms_norm(x, residual, weight, epsilon=eps)
    return y, x_sum


def swiglu(x):
    return torch_npu().npu_swiglu(x, dim=-1)


def _mrope_align(dtype: torch.dtype) -> int:
    # op-plugin docs/zh/custom_APIs/torch_npu/torch_npu-npu_mrope.md@517f2e7 (约束说明): head_size
    # and rotary_dim are multiples of 32 for float16/bfloat16, of 16 for float32
    return 16 if dtype == torch.float32 else 32


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    """``torch_npu.npu_mrope`` in RoPE mode (1-D positions, ``mrope_section=[0, 0, 0]``), out of
    place, with this call's table: ATB ``_npu_rotary_embedding`` keeps the first table of the
    process and takes the head width from it (op-plugin op_plugin/ops/atb/RopeAtb.cpp@517f2e7),
    so a second table (another theta, a draft model) or partial rotary would rotate wrongly.

    npu_mrope rotates each head's first rotary_dim (= table width) dims and passes the rest
    through (torch_npu-npu_mrope.md formulas). A head_size off its alignment rotates the
    contiguous rotary slice as whole heads (head_size = rotary_dim) and appends the tail; a
    rotary_dim off it runs the reference math in aten ops on the device.
    """
    t = positions.shape[0]
    rot = cos_sin_cache.shape[-1]
    table = cos_sin_cache.to(query.dtype)  # npu_mrope: query, key and table share one dtype
    align = _mrope_align(query.dtype)
    if rot % align:
        from ascend_ops import reference

        return reference.rotary_embedding(positions, query, key, head_size, table, is_neox)
    q = query.reshape(t, -1)
    k = key.reshape(t, -1)
    sliced = head_size % align != 0  # then rot < head_size: rot is aligned
    if sliced:
        q_heads, k_heads = q.view(t, -1, head_size), k.view(t, -1, head_size)
        q_in, k_in = q_heads[..., :rot].reshape(t, -1), k_heads[..., :rot].reshape(t, -1)
    else:
        # vllm-ascend passes contiguous [T, H*D] views (vllm_ascend/ops/rotary_embedding.py@182b75e)
        q_in, k_in = q.contiguous(), k.contiguous()
    q_out, k_out = torch_npu().npu_mrope(
        positions,
        q_in,
        k_in,
        table,
        rot if sliced else head_size,
        mrope_section=[0, 0, 0],
        # the op-plugin kernel accepts "half" / "interleave" only (RopeWithSinCosCacheKernelNpuOpApi.cpp)
        rotary_mode="half" if is_neox else "interleave",
        cache_mode="default",
    )
    if sliced:
        q_out = torch.cat((q_out.view(t, -1, rot), q_heads[..., rot:]), dim=-1)
        k_out = torch.cat((k_out.view(t, -1, rot), k_heads[..., rot:]), dim=-1)
    return q_out.reshape(query.shape), k_out.reshape(key.shape)


def greedy_argmax(logits):
    """``torch.argmax`` on the NPU tensor (aclnnArgMaxV2)."""
    return logits.argmax(dim=-1)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, k_scale=1.0, v_scale=1.0):
    """ATB ``_npu_reshape_and_cache``: the ATB kernel writes through the caches' base pointers
    with dense strides, so both caches must be contiguous (vllm-ascend allocates them so).

    A cache stored in another dtype than key's raises ValueError naming the SoC rule
    (``checks.kv_cache.NPU_RULE``). No slot range check here: it would read slot_mapping back
    from the device (a sync, illegal inside a graph capture); the ATB kernel bounds-checks on
    the device."""
    if key_cache.dtype != key.dtype:
        raise npu_cache_error("reshape_and_cache", key_cache.dtype, key.dtype)
    for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
        if not cache.is_contiguous():
            raise ValueError(
                f"{name} must be contiguous for torch_npu._npu_reshape_and_cache (got strides "
                f"{tuple(cache.stride())}); pass separate K and V caches, not halves of one buffer"
            )
    # the kernel reads key/value densely too; the callers' K/V are often column slices of the
    # fused QKV projection (row stride = q + k + v widths), so make them dense here
    torch_npu()._npu_reshape_and_cache(
        key=key.contiguous(),
        value=value.contiguous(),
        key_cache=key_cache,
        value_cache=value_cache,
        slot_indices=slot_mapping.to(torch.int32),
    )


def _paged(cache: torch.Tensor, name: str) -> torch.Tensor:
    """[num_blocks, block_size, H, D] -> the [num_blocks, block_size, H*D] view FIA reads."""
    if not cache.is_contiguous():
        raise ValueError(
            f"{name} must be contiguous for npu_fused_infer_attention_score's paged KV (got "
            f"strides {tuple(cache.stride())}); a reshape would copy the whole cache every call"
        )
    return cache.view(cache.shape[0], cache.shape[1], -1)


def _fia_kwargs(query, key_cache, block_table, ends, kv_lens, scale, causal):
    """Keyword arguments of npu_fused_infer_attention_score for TND query + paged KV."""
    kwargs = {
        "actual_seq_lengths": list(ends),
        "actual_seq_lengths_kv": list(kv_lens),
        "block_table": block_table if block_table.dtype == torch.int32 else block_table.to(torch.int32),
        "block_size": key_cache.shape[1],
        "num_heads": query.shape[1],
        "num_key_value_heads": key_cache.shape[2],
        "scale": scale,
        "input_layout": "TND",
    }
    if causal:
        kwargs.update(atten_mask=_causal_mask(query.device), sparse_mode=3)
    return kwargs


def fused_infer_attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
                          scale, causal, ends, kv_lens, k_scale, v_scale, out=None,
                          softmax_lse=None, workspace=None, step=None):
    """TND attention through npu_fused_infer_attention_score (``out`` given: its ``.out``
    overload, returning ``out``).

    The host lengths are ``ends`` / ``kv_lens`` when given, else read from the tensors (a
    device-to-host copy, illegal inside a graph capture), then checked without reading any
    device tensor. A cache stored in another dtype than query's raises ValueError naming the SoC
    rule. ``k_scale`` / ``v_scale`` (float8 caches only) and ``step`` (the CPU branches' memo)
    do not apply here."""
    if key_cache.dtype != query.dtype:
        raise npu_cache_error("fused_infer_attention", key_cache.dtype, query.dtype)
    ends, kv_lens = paged.host_lengths(query_start_loc, seq_lens, ends, kv_lens)
    attention_checks.attention_lengths(query, key_cache, block_table, seq_lens.shape[0], ends,
                                       kv_lens)
    if out is None:
        return _fia(query, key_cache, value_cache, block_table, ends, kv_lens, scale, causal)
    _fia_out(query, key_cache, value_cache, block_table, ends, kv_lens, scale, causal, out,
             softmax_lse, workspace)
    return out


def _fia(query, key_cache, value_cache, block_table, ends, kv_lens, scale, causal):
    """TND query + paged KV (block_table) through npu_fused_infer_attention_score.

    ``ends`` / ``kv_lens`` are host lists (actual_seq_lengths / actual_seq_lengths_kv)."""
    out, _lse = torch_npu().npu_fused_infer_attention_score(
        query,
        _paged(key_cache, "key_cache"),
        _paged(value_cache, "value_cache"),
        **_fia_kwargs(query, key_cache, block_table, ends, kv_lens, scale, causal),
    )
    return out


def _fia_out(query, key_cache, value_cache, block_table, ends, kv_lens, scale, causal, out,
             softmax_lse, workspace):
    """The ``.out`` overload: writes ``out`` / ``softmax_lse`` (vllm-ascend's FIA graph path).

    torch_npu registers this overload's two outputs as one ``Tensor[] out`` (Ascend/pytorch
    ``torchnpugen/custom_functions.py`` RegisterCustomSchema), so they go in as
    ``out=[attention_out, softmax_lse]``, as vllm-ascend passes them
    (``vllm_ascend/attention/attention_v1.py``); ``attention_out=`` would be an unknown keyword."""
    torch_npu().npu_fused_infer_attention_score.out(
        query,
        _paged(key_cache, "key_cache"),
        _paged(value_cache, "value_cache"),
        **_fia_kwargs(query, key_cache, block_table, ends, kv_lens, scale, causal),
        workspace=workspace,
        out=[out, softmax_lse],
    )


def fused_infer_attention_workspace(query, key_cache, value_cache, block_table, ends, kv_lens,
                                    scale, causal):
    return torch_npu()._npu_fused_infer_attention_score_get_max_workspace(
        query,
        _paged(key_cache, "key_cache"),
        _paged(value_cache, "value_cache"),
        **_fia_kwargs(query, key_cache, block_table, ends, kv_lens, scale, causal),
    )
