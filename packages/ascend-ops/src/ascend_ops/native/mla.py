# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of the MLA ops. ``ascend_ops._C`` has no MLA kernel: decode runs the
vectorised reference, prefill the native paged attention over a scratch paged cache
(``reference.paged.paged_prefill``, through the op layer's ``write`` / ``attend``)."""

from __future__ import annotations

from ascend_ops.reference import backend as reference_backend
from ascend_ops.reference import paged

mla_decode = reference_backend.mla_decode
mla_decode_out = reference_backend.mla_decode_out
mla_decode_heads = reference_backend.mla_decode_heads
mla_decode_workspace = reference_backend.mla_decode_workspace
mla_gather_context = paged.gather_context


def mla_prefill(query, key, value, ends, kv_lens, scale, write, attend):
    return paged.paged_prefill(query, key, value, ends, kv_lens, scale, write, attend)
