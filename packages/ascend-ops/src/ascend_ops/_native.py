# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch: marshal tensors into raw pointers + shapes/strides for ``ascend_ops._C``.

``_C`` is a pybind11 module that does not link libtorch; it reads and writes memory at the
addresses given (element strides, dtype codes below) and raises ValueError on bad indices before
writing anything.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import native_module

DTYPE_CODES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}


def _code(t: torch.Tensor) -> int:
    return DTYPE_CODES[t.dtype]


def rms_norm(x, weight, eps):
    c = native_module()
    h = x.shape[-1]
    x2 = x.reshape(-1, h).contiguous()
    w = weight.contiguous()
    out = torch.empty_like(x2)
    c.rms_norm(x2.data_ptr(), w.data_ptr(), out.data_ptr(), x2.shape[0], h, _code(x2), _code(w), float(eps))
    return out.view(x.shape)


def add_rms_norm(x, residual, weight, eps):
    c = native_module()
    h = x.shape[-1]
    x2 = x.reshape(-1, h).contiguous()
    r2 = residual.reshape(-1, h).contiguous()
    w = weight.contiguous()
    out = torch.empty_like(x2)
    new_res = torch.empty_like(x2)
    c.add_rms_norm(
        x2.data_ptr(), r2.data_ptr(), w.data_ptr(), out.data_ptr(), new_res.data_ptr(),
        x2.shape[0], h, _code(x2), _code(w), float(eps),
    )
    return out.view(x.shape), new_res.view(x.shape)


def swiglu(x):
    c = native_module()
    two_i = x.shape[-1]
    x2 = x.reshape(-1, two_i).contiguous()
    out = x2.new_empty((x2.shape[0], two_i // 2))
    c.swiglu(x2.data_ptr(), out.data_ptr(), x2.shape[0], two_i // 2, _code(x2))
    return out.view(*x.shape[:-1], two_i // 2)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    c = native_module()
    t = positions.shape[0]
    pos = positions.to(torch.int64).contiguous()
    q = query.reshape(t, -1).contiguous()
    k = key.reshape(t, -1).contiguous()
    cache = cos_sin_cache.contiguous()
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    c.rotary_embedding(
        pos.data_ptr(), q.data_ptr(), k.data_ptr(), q_out.data_ptr(), k_out.data_ptr(),
        t, q.shape[1] // head_size, k.shape[1] // head_size, head_size,
        cache.data_ptr(), _code(cache), cache.shape[0], cache.shape[1], bool(is_neox), _code(q),
    )
    return q_out.view(query.shape), k_out.view(key.shape)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    c = native_module()
    slots = slot_mapping.to(torch.int64).contiguous()
    c.reshape_and_cache(
        key.data_ptr(), value.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(),
        slots.data_ptr(), key.shape[0], key.shape[1], key.shape[2],
        list(key.stride()), list(value.stride()), list(key_cache.stride()), list(value_cache.stride()),
        key_cache.shape[0], key_cache.shape[1], _code(key),
    )


def fused_infer_attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal):
    c = native_module()
    q = query.contiguous()
    bt = block_table.to(torch.int32).contiguous()
    qsl = query_start_loc.to(torch.int32).contiguous()
    lens = seq_lens.to(torch.int32).contiguous()
    out = torch.empty_like(q)
    c.paged_attention(
        q.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(), bt.data_ptr(),
        qsl.data_ptr(), lens.data_ptr(), out.data_ptr(),
        q.shape[0], q.shape[1], key_cache.shape[2], q.shape[2], lens.shape[0], bt.shape[1],
        key_cache.shape[0], key_cache.shape[1],
        list(key_cache.stride()), list(value_cache.stride()), float(scale), bool(causal), _code(q),
    )
    return out
