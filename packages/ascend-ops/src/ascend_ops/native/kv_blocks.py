# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``read_kv_blocks`` / ``write_kv_blocks``: vectorised torch, no C++ (each
block is one contiguous page per part cache; aten's ``index_select`` / ``index_copy_`` already
copy page by page). The block ids are checked on the host first (range, and distinct for a
write). Semantics as in ``ascend_ops.reference.kv_blocks``."""

from __future__ import annotations

from ascend_ops.checks import kv_blocks as _checks
from ascend_ops.reference.kv_blocks import gather_blocks, scatter_blocks


def read_kv_blocks(key_cache, value_cache, block_ids):
    _checks.block_values(block_ids, key_cache.shape[0], distinct=False)
    return gather_blocks(key_cache, value_cache, block_ids)


def write_kv_blocks(blocks, key_cache, value_cache, block_ids):
    _checks.block_values(block_ids, key_cache.shape[0], distinct=True)
    scatter_blocks(blocks, key_cache, value_cache, block_ids)
