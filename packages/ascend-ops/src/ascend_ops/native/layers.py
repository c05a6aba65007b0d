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
from ascend_ops.reference import backend as reference_backend
from ascend_ops.reference import paged

DTYPE_CODES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}


def _code(t: torch.Tensor) -> int:
    return DTYPE_CODES[t.dtype]


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t.to(dtype).contiguous()``; skips the ``to`` call (a few us) when it would be a no-op."""
    return (t if t.dtype is dtype else t.to(dtype)).contiguous()


# The kernels address row-major memory only, so a contiguous input of any rank is passed as is
# and its output allocated in its own shape: no reshape / view round trip per call (these ops
# run a few times per layer per decode step). Other inputs take the original reshape path;
# so does a zero-sized last dim (whose reshape(-1, 0) raises, as before).


def rms_norm(x, weight, eps):
    c = native_module()
    h = x.shape[-1]
    w = weight.contiguous()
    if h and x.is_contiguous():
        out = torch.empty_like(x)
        c.rms_norm(x.data_ptr(), w.data_ptr(), out.data_ptr(), x.numel() // h, h, _code(x), _code(w),
                   float(eps))
        return out
    x2 = x.reshape(-1, h).contiguous()
    out = torch.empty_like(x2)
    c.rms_norm(x2.data_ptr(), w.data_ptr(), out.data_ptr(), x2.shape[0], h, _code(x2), _code(w), float(eps))
    return out.view(x.shape)


def add_rms_norm(x, residual, weight, eps):
    c = native_module()
    h = x.shape[-1]
    w = weight.contiguous()
    if h and x.is_contiguous() and residual.is_contiguous():
        x2, r2, shaped = x, residual, False
    else:
        x2, r2, shaped = x.reshape(-1, h).contiguous(), residual.reshape(-1, h).contiguous(), True
    out = torch.empty_like(x2)
    new_res = torch.empty_like(x2)
    c.add_rms_norm(
        x2.data_ptr(), r2.data_ptr(), w.data_ptr(), out.data_ptr(), new_res.data_ptr(),
        x2.numel() // h, h, _code(x2), _code(w), float(eps),
    )
    if shaped:
        return out.view(x.shape), new_res.view(x.shape)
    return out, new_res


def swiglu(x):
    c = native_module()
    two_i = x.shape[-1]
    if two_i and x.is_contiguous():
        out = x.new_empty((*x.shape[:-1], two_i // 2))
        c.swiglu(x.data_ptr(), out.data_ptr(), x.numel() // two_i, two_i // 2, _code(x))
        return out
    x2 = x.reshape(-1, two_i).contiguous()
    out = x2.new_empty((x2.shape[0], two_i // 2))
    c.swiglu(x2.data_ptr(), out.data_ptr(), x2.shape[0], two_i // 2, _code(x2))
    return out.view(*x.shape[:-1], two_i // 2)


def greedy_argmax(logits):
    x = logits.contiguous()
    out = torch.empty(x.shape[0], dtype=torch.int64)
    native_module().greedy_argmax(x.data_ptr(), out.data_ptr(), x.shape[0], x.shape[1], _code(x))
    return out


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    c = native_module()
    t = positions.shape[0]
    pos = _as(positions, torch.int64)
    if t and query.is_contiguous() and key.is_contiguous():
        q, k, shaped = query, key, False
        q_width, k_width = query.numel() // t, key.numel() // t
    else:
        q, k, shaped = query.reshape(t, -1).contiguous(), key.reshape(t, -1).contiguous(), True
        q_width, k_width = q.shape[1], k.shape[1]
    cache = cos_sin_cache.contiguous()
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    c.rotary_embedding(
        pos.data_ptr(), q.data_ptr(), k.data_ptr(), q_out.data_ptr(), k_out.data_ptr(),
        t, q_width // head_size, k_width // head_size, head_size,
        cache.data_ptr(), _code(cache), cache.shape[0], cache.shape[1], bool(is_neox), _code(q),
    )
    if shaped:
        return q_out.view(query.shape), k_out.view(key.shape)
    return q_out, k_out


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, k_scale=1.0, v_scale=1.0):
    """The C++ scatter; a cache stored in another dtype (quantize-on-write) or a value head dim
    other than key's (MLA) goes to the reference scatter (``reference/backend.py``)."""
    if key_cache.dtype != key.dtype or value.shape[-1] != key.shape[-1]:
        reference_backend.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping,
                                            k_scale, v_scale)
        return
    c = native_module()
    slots = _as(slot_mapping, torch.int64)
    c.reshape_and_cache(
        key.data_ptr(), value.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(),
        slots.data_ptr(), key.shape[0], key.shape[1], key.shape[2],
        key.stride(), value.stride(), key_cache.stride(), value_cache.stride(),
        key_cache.shape[0], key_cache.shape[1], _code(key),
    )


def fused_infer_attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
                          scale, causal, ends, kv_lens, k_scale, v_scale, out=None,
                          softmax_lse=None, workspace=None, step=None):
    """TND attention on the C++ kernel; returns ``out`` (filled) when given, else a new tensor.

    A cache stored narrower is dequantized for the blocks in use, and host lengths, when given,
    become the length tensors, checked once per value through ``step``
    (``reference.paged.cpu_inputs``). ``softmax_lse`` / ``workspace`` are the NPU operator's."""
    key_cache, value_cache, block_table, query_start_loc, seq_lens = paged.cpu_inputs(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, ends, kv_lens,
        k_scale, v_scale, step)
    result = _fia(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale,
                  causal, out)
    if out is None or result is out:
        return result
    out.copy_(result)
    return out


def fused_infer_attention_workspace(*args) -> None:
    """CPU branches need no workspace."""
    return None


def _fia(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal,
         out=None):
    """``out``: a contiguous tensor of query's shape and dtype, not sharing query's storage, to
    write into (otherwise a new one is returned)."""
    c = native_module()
    q = query.contiguous()
    bt = _as(block_table, torch.int32)
    qsl = _as(query_start_loc, torch.int32)
    lens = _as(seq_lens, torch.int32)
    if (out is None or not out.is_contiguous()
            or out.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()):
        out = torch.empty_like(q)
    c.paged_attention(
        q.data_ptr(), key_cache.data_ptr(), value_cache.data_ptr(), bt.data_ptr(),
        qsl.data_ptr(), lens.data_ptr(), out.data_ptr(),
        q.shape[0], q.shape[1], key_cache.shape[2], q.shape[2], lens.shape[0], bt.shape[1],
        key_cache.shape[0], key_cache.shape[1],
        key_cache.stride(), value_cache.stride(), float(scale), bool(causal), _code(q),
    )
    return out
