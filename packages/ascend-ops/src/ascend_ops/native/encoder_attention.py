# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``encoder_attention``: the C++ paged attention kernel
(``csrc/attention.cpp``, ``_C.paged_attention``) in its non-causal mode, reading the packed K/V
in place (no copy).

The kernel addresses key block ``id`` row ``n`` at ``id * stride0 + n * stride1``. Passing the
token row stride as both strides makes "block" ``id`` the window of rows ``id, id+1, ...``, so
sequence b (rows ``start_b .. end_b - 1``) is read through the block-table row ``start_b,
start_b + bs, start_b + 2*bs, ...``: the kernel reads only the ``end_b - start_b`` rows the
sequence has (a partial last block stops at the sequence length), every id lies in ``[0, T)``,
and ``num_blocks = T`` bounds its check. Semantics as in ``ascend_ops.reference.encoder_attention``.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import native_module
from ascend_ops.checks import encoder_attention as _checks
from ascend_ops.native.layers import _code

#: key rows per kernel block (a window of rows, see the module docstring)
WINDOW = 128


def _window_table(ends: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(query_start_loc [B+1], seq_lens [B], block_table [B, max_blocks]) int32 for the windows."""
    qsl = torch.tensor([0, *ends], dtype=torch.int64)
    lens = qsl[1:] - qsl[:-1]
    need = (lens + WINDOW - 1) // WINDOW
    cols = max(int(need.max()) if len(ends) else 1, 1)
    j = torch.arange(cols)
    table = qsl[:-1, None] + j[None, :] * WINDOW
    table = torch.where(j[None, :] < need[:, None], table, 0)
    return qsl.to(torch.int32), lens.to(torch.int32), table.to(torch.int32).contiguous()


def encoder_attention(query, key, value, cu_seqlens, scale, ends):
    _checks.cu_seqlens_values(cu_seqlens, ends)
    t, hq, d = query.shape
    out = torch.empty(query.shape, dtype=query.dtype)
    if t == 0 or not ends:
        return out.zero_()
    q = query.contiguous()
    qsl, lens, table = _window_table(list(ends))
    ks, vs = key.stride(), value.stride()
    native_module().paged_attention(
        q.data_ptr(), key.data_ptr(), value.data_ptr(), table.data_ptr(), qsl.data_ptr(),
        lens.data_ptr(), out.data_ptr(),
        t, hq, key.shape[1], d, len(ends), table.shape[1], t, WINDOW,
        [ks[0], ks[0], ks[1], ks[2]], [vs[0], vs[0], vs[1], vs[2]], float(scale), False, _code(q),
    )
    return out
