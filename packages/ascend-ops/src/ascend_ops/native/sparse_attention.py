# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of the sparse-attention ops. ``ascend_ops._C`` has no kernel for them: both
run the vectorised reference (``reference/sparse_attention.py``) with its value checks."""

from __future__ import annotations

from ascend_ops.reference import backend as reference_backend

lightning_indexer = reference_backend.lightning_indexer
sparse_flash_attention = reference_backend.sparse_flash_attention
