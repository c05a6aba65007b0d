"""NPU branch: each op mapped onto the torch_npu operator whose semantics it follows.

torch_npu is imported at call time (``sys.modules`` first) so that tests can run this branch on CPU
against a schema-checking fake. Argument names follow the torch-npu 2.13.0 wheel's published
schemas (``npu_native_functions_by_codegen.yaml`` and ``op_plugin/include/AtbOpsInterface.h``).
"""

from __future__ import annotations

import importlib

import torch

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


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    # The ATB kernel rotates in place on [T, H*D] tensors: work on contiguous copies.
    t = positions.shape[0]
    q = query.reshape(t, -1).clone()
    k = key.reshape(t, -1).clone()
    torch_npu()._npu_rotary_embedding(
        positions,
        q,
        k,
        head_size=head_size,
        cos_sin_cache=cos_sin_cache.to(query.dtype),
        is_neox_style=is_neox,
    )
    return q.view(query.shape), k.view(key.shape)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    torch_npu()._npu_reshape_and_cache(
        key=key,
        value=value,
        key_cache=key_cache,
        value_cache=value_cache,
        slot_indices=slot_mapping.to(torch.int32),
    )


def fused_infer_attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal):
    """TND query + paged KV (block_table) through npu_fused_infer_attention_score."""
    num_blocks, block_size, num_kv_heads, _ = key_cache.shape
    num_heads = query.shape[1]
    kwargs = {}
    if causal:
        kwargs = {"atten_mask": _causal_mask(query.device), "sparse_mode": 3}
    out, _lse = torch_npu().npu_fused_infer_attention_score(
        query,
        key_cache.reshape(num_blocks, block_size, -1),
        value_cache.reshape(num_blocks, block_size, -1),
        actual_seq_lengths=[int(v) for v in query_start_loc[1:].tolist()],
        actual_seq_lengths_kv=[int(v) for v in seq_lens.tolist()],
        block_table=block_table.to(torch.int32),
        block_size=block_size,
        num_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        scale=scale,
        input_layout="TND",
        **kwargs,
    )
    return out
