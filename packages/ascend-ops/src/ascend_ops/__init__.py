# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ascend_ops: the hardware seam of vllm-ascend, usable from plain PyTorch.

Each op is a ``torch.library`` custom op in namespace ``ascend`` (``torch.ops.ascend.<name>``) with
a fake impl and three implementations: torch_npu (tensors on ``npu``), native CPU kernels
(``ascend_ops._C``) and the pure-torch reference (``ascend_ops.reference``, the test oracle).
"""

from ascend_ops import device, reference
from ascend_ops._dispatch import (
    BACKENDS,
    call_counts,
    forced_backend,
    native_available,
    reset_call_counts,
    use_backend,
)
from ascend_ops.families import listed
from ascend_ops.ops.activation import silu_and_mul, swiglu
from ascend_ops.ops.attention import fused_infer_attention, fused_infer_attention_workspace
from ascend_ops.ops.encoder_attention import encoder_attention
from ascend_ops.ops.kv_blocks import read_kv_blocks, write_kv_blocks
from ascend_ops.ops.kv_cache import reshape_and_cache
from ascend_ops.ops.linear import linear, pack_linear_weight, release_linear_weight
from ascend_ops.ops.lora import lora_expand, lora_linear, lora_shrink, sgmv_expand, sgmv_shrink
from ascend_ops.ops.mla import (
    mla_decode,
    mla_decode_heads,
    mla_decode_workspace,
    mla_gather_context,
    mla_prefill,
)
from ascend_ops.ops.moe import (
    grouped_matmul,
    grouped_matmul_swiglu,
    moe_finalize_routing,
    moe_gating_top_k,
    moe_init_routing,
    pack_grouped_matmul_weight,
    release_grouped_matmul_weight,
)
from ascend_ops.ops.mrope import mrope
from ascend_ops.ops.norm import add_rms_norm, rms_norm
from ascend_ops.ops.quant import dynamic_quant, quant_matmul, quantize
from ascend_ops.ops.quant_moe import grouped_quant_matmul
from ascend_ops.ops.rotary import rotary_embedding
from ascend_ops.ops.sampling import greedy_argmax
from ascend_ops.ops.sparse_attention import lightning_indexer, sparse_flash_attention
from ascend_ops.ops.spec_decode import rejection_sample, sample_recovered_tokens

__version__ = "0.2.0"

#: the ops of each group, read from the family table (``ascend_ops.families``, one entry per
#: ``ascend_ops.ops`` module): the core layer and MoE ops, then the groups listed apart
OPS = listed("OPS")

#: the MLA ops (ascend_ops.ops.mla), listed apart from OPS
MLA_OPS = listed("MLA_OPS")

#: the DeepSeek-V3.2 sparse-attention ops (ascend_ops.ops.sparse_attention), listed apart from OPS
SPARSE_ATTENTION_OPS = listed("SPARSE_ATTENTION_OPS")

#: the LoRA (Punica) ops (ascend_ops.ops.lora), listed apart from OPS
LORA_OPS = listed("LORA_OPS")

#: the int8 quantization ops (ascend_ops.ops.quant, ops.quant_moe), listed apart from OPS
QUANT_OPS = listed("QUANT_OPS")

#: the dense linear op with CPU weight prepacking (ascend_ops.ops.linear), listed apart from OPS
LINEAR_OPS = listed("LINEAR_OPS")

#: the speculative-decoding verification ops (ascend_ops.ops.spec_decode), listed apart from OPS
SPEC_DECODE_OPS = listed("SPEC_DECODE_OPS")

#: the greedy-sampling op (ascend_ops.ops.sampling), listed apart from OPS
SAMPLING_OPS = listed("SAMPLING_OPS")

#: the multimodal ops (ascend_ops.ops.encoder_attention, ops.mrope), listed apart from OPS
MULTIMODAL_OPS = listed("MULTIMODAL_OPS")

#: block-level KV access for KV connectors / offloading (ascend_ops.ops.kv_blocks)
KV_BLOCK_OPS = listed("KV_BLOCK_OPS")

__all__ = [
    "BACKENDS",
    "KV_BLOCK_OPS",
    "LINEAR_OPS",
    "LORA_OPS",
    "MLA_OPS",
    "MULTIMODAL_OPS",
    "QUANT_OPS",
    "SAMPLING_OPS",
    "SPARSE_ATTENTION_OPS",
    "SPEC_DECODE_OPS",
    "OPS",
    "pack_grouped_matmul_weight",
    "pack_linear_weight",
    "release_grouped_matmul_weight",
    "release_linear_weight",
    "add_rms_norm",
    "call_counts",
    "device",
    "dynamic_quant",
    "encoder_attention",
    "forced_backend",
    "fused_infer_attention",
    "fused_infer_attention_workspace",
    "greedy_argmax",
    "grouped_matmul",
    "grouped_matmul_swiglu",
    "grouped_quant_matmul",
    "lightning_indexer",
    "linear",
    "lora_expand",
    "lora_linear",
    "lora_shrink",
    "mla_decode",
    "mla_decode_heads",
    "mla_decode_workspace",
    "mla_gather_context",
    "mla_prefill",
    "moe_finalize_routing",
    "moe_gating_top_k",
    "moe_init_routing",
    "mrope",
    "native_available",
    "quant_matmul",
    "quantize",
    "read_kv_blocks",
    "reference",
    "rejection_sample",
    "reset_call_counts",
    "reshape_and_cache",
    "rms_norm",
    "rotary_embedding",
    "sample_recovered_tokens",
    "sgmv_expand",
    "sgmv_shrink",
    "sparse_flash_attention",
    "silu_and_mul",
    "swiglu",
    "use_backend",
    "write_kv_blocks",
]
