# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``mrope``: the per-token merged cos/sin table is gathered with index ops
(``reference.mrope.mrope_cos_sin``: cache rows, no arithmetic) and the C++ rotary kernel
(``csrc/rotary.cpp`` through ``native.layers.rotary_embedding``) rotates with it, token t reading
row t. Semantics as in ``ascend_ops.reference.mrope``."""

from __future__ import annotations

import torch

from ascend_ops.checks import mrope as _checks
from ascend_ops.native.layers import rotary_embedding
from ascend_ops.reference.mrope import mrope_cos_sin


def mrope(positions, query, key, head_size, cos_sin_cache, mrope_section, interleaved, is_neox):
    _checks.mrope_values(positions, cos_sin_cache)
    table = mrope_cos_sin(positions, cos_sin_cache, list(mrope_section), interleaved)
    token = torch.arange(positions.shape[1], dtype=torch.int64)
    return rotary_embedding(token, query, key, head_size, table, is_neox)
