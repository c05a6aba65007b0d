# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Pure-torch reference implementations: readable, slow, and the oracle for every other backend.

They take the same arguments as the public ops but do no argument validation beyond what torch
itself does; they accept any floating dtype (tests use float64 for a tighter oracle).
"""

from ascend_ops.reference.activation import swiglu
from ascend_ops.reference.attention import fused_infer_attention
from ascend_ops.reference.encoder_attention import encoder_attention
from ascend_ops.reference.kv_blocks import read_kv_blocks, write_kv_blocks
from ascend_ops.reference.kv_cache import reshape_and_cache
from ascend_ops.reference.linear import linear
from ascend_ops.reference.mla import mla_decode, mla_prefill
from ascend_ops.reference.mrope import mrope
from ascend_ops.reference.norm import add_rms_norm, rms_norm
from ascend_ops.reference.rotary import rotary_embedding
from ascend_ops.reference.sampling import greedy_argmax

silu_and_mul = swiglu

__all__ = [
    "add_rms_norm",
    "encoder_attention",
    "fused_infer_attention",
    "greedy_argmax",
    "linear",
    "mla_decode",
    "mla_prefill",
    "mrope",
    "read_kv_blocks",
    "reshape_and_cache",
    "rms_norm",
    "rotary_embedding",
    "silu_and_mul",
    "swiglu",
    "write_kv_blocks",
]
