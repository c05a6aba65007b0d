# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The op families and their backends: one table, family -> backend -> implementation module.

An op validates its arguments (``ascend_ops.checks``), asks its family for the implementation
(:meth:`Family.pick`: the backend chosen by ``ascend_ops._dispatch.select_backend``, the call
counted) and makes one call into it: every implementation module has one function per op of the
family, named as the op, taking the same arguments (``npu/`` maps them onto torch_npu,
``native/`` onto ``ascend_ops._C`` or vectorised torch, ``reference/backend.py`` onto the
pure-torch oracle). The public tuples ``ascend_ops.OPS``, ``MLA_OPS``, ... and the per-family
report of ``ascend_ops.backends`` are read from this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType

import torch

from ascend_ops._dispatch import count, select_backend
from ascend_ops.native import encoder_attention as native_encoder_attention
from ascend_ops.native import kv_blocks as native_kv_blocks
from ascend_ops.native import layers as native_layers
from ascend_ops.native import linear as native_linear
from ascend_ops.native import lora as native_lora
from ascend_ops.native import mla as native_mla
from ascend_ops.native import moe as native_moe
from ascend_ops.native import mrope as native_mrope
from ascend_ops.native import quant as native_quant
from ascend_ops.native import quant_moe as native_quant_moe
from ascend_ops.native import sparse_attention as native_sparse_attention
from ascend_ops.native import spec_decode as native_spec_decode
from ascend_ops.npu import encoder_attention as npu_encoder_attention
from ascend_ops.npu import kv_blocks as npu_kv_blocks
from ascend_ops.npu import layers as npu_layers
from ascend_ops.npu import linear as npu_linear
from ascend_ops.npu import lora as npu_lora
from ascend_ops.npu import mla as npu_mla
from ascend_ops.npu import moe as npu_moe
from ascend_ops.npu import mrope as npu_mrope
from ascend_ops.npu import quant as npu_quant
from ascend_ops.npu import quant_moe as npu_quant_moe
from ascend_ops.npu import sparse_attention as npu_sparse_attention
from ascend_ops.npu import spec_decode as npu_spec_decode
from ascend_ops.reference import backend as reference_backend


@dataclass(frozen=True)
class Family:
    """One op family (an ``ascend_ops.ops`` module).

    Attributes:
        name: the ``ascend_ops.ops`` module name (``"attention"``).
        ops: its public ops as the ``ascend_ops`` tuple ``listed_in`` lists them.
        listed_in: the ``ascend_ops`` tuple naming the ops (``"OPS"``, ``"MLA_OPS"``, ...).
        has_native: whether ``ascend_ops._C`` has CPU kernels for it (reported by
            ``ascend_ops.backends``; without them the native backend runs vectorised torch).
        backends: ``"npu"`` / ``"native"`` / ``"reference"`` -> implementation module.
    """

    name: str
    ops: tuple[str, ...]
    listed_in: str
    has_native: bool
    backends: Mapping[str, ModuleType]

    def pick(self, op: str, t: torch.Tensor) -> ModuleType:
        """The implementation module for a call of ``op`` whose main input is ``t``; counts
        the call (``ascend_ops.call_counts``). Raises as ``select_backend``."""
        backend = select_backend(t)
        count(op, backend)
        return self.backends[backend]

    def peek(self, t: torch.Tensor) -> ModuleType:
        """The implementation module :meth:`pick` would return, without counting a call (for
        the queries beside the ops: packs, workspaces, head counts)."""
        return self.backends[select_backend(t)]


def _family(name, ops, listed_in, has_native, npu, native) -> Family:
    backends = {"npu": npu, "native": native, "reference": reference_backend}
    return Family(name, ops, listed_in, has_native, MappingProxyType(backends))


#: family name -> Family; the order is that of the ``ascend_ops`` tuples' entries
FAMILIES: Mapping[str, Family] = MappingProxyType({f.name: f for f in (
    _family("norm", ("rms_norm", "add_rms_norm"), "OPS", True, npu_layers, native_layers),
    _family("rotary", ("rotary_embedding",), "OPS", True, npu_layers, native_layers),
    _family("activation", ("swiglu",), "OPS", True, npu_layers, native_layers),
    _family("kv_cache", ("reshape_and_cache",), "OPS", True, npu_layers, native_layers),
    _family("attention", ("fused_infer_attention",), "OPS", True, npu_layers, native_layers),
    _family("moe", ("moe_gating_top_k", "moe_init_routing", "moe_finalize_routing",
                    "grouped_matmul", "grouped_matmul_swiglu"), "OPS", True, npu_moe, native_moe),
    _family("mla", ("mla_decode", "mla_prefill", "mla_gather_context"), "MLA_OPS", False, npu_mla,
            native_mla),
    _family("sparse_attention", ("lightning_indexer", "sparse_flash_attention"),
            "SPARSE_ATTENTION_OPS", False, npu_sparse_attention, native_sparse_attention),
    _family("lora", ("lora_shrink", "lora_expand", "lora_linear", "sgmv_shrink", "sgmv_expand"),
            "LORA_OPS", True, npu_lora, native_lora),
    _family("quant", ("quantize", "dynamic_quant", "quant_matmul"), "QUANT_OPS", True, npu_quant,
            native_quant),
    _family("quant_moe", ("grouped_quant_matmul",), "QUANT_OPS", True, npu_quant_moe,
            native_quant_moe),
    _family("linear", ("linear",), "LINEAR_OPS", True, npu_linear, native_linear),
    _family("spec_decode", ("rejection_sample", "sample_recovered_tokens"), "SPEC_DECODE_OPS", True,
            npu_spec_decode, native_spec_decode),
    _family("sampling", ("greedy_argmax",), "SAMPLING_OPS", True, npu_layers, native_layers),
    _family("encoder_attention", ("encoder_attention",), "MULTIMODAL_OPS", True,
            npu_encoder_attention, native_encoder_attention),
    _family("mrope", ("mrope",), "MULTIMODAL_OPS", True, npu_mrope, native_mrope),
    _family("kv_blocks", ("read_kv_blocks", "write_kv_blocks"), "KV_BLOCK_OPS", True,
            npu_kv_blocks, native_kv_blocks),
)})


def listed(tuple_name: str) -> tuple[str, ...]:
    """The ops of every family listed in the ``ascend_ops`` tuple ``tuple_name``, in table
    order (``listed("OPS")`` is ``ascend_ops.OPS``)."""
    return tuple(op for f in FAMILIES.values() if f.listed_in == tuple_name for op in f.ops)
