# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM rotary-embedding classes routed to ``ascend_ops.rotary_embedding``.

``CustomOp.__new__`` swaps a class for its OOT replacement by exact class name, so a
replacement for ``RotaryEmbedding`` does not cover subclasses built by ``get_rope`` for scaled
rope (``Llama3RotaryEmbedding`` for Llama 3.x, ``YaRNScalingRotaryEmbedding`` for long-context
Qwen2/Qwen3, ...). Those subclasses only change how the cos/sin cache is computed, not the
forward math, so each gets its own Ascend subclass sharing :class:`AscendRopeMixin`.
"""

from __future__ import annotations

import importlib
from typing import Any

import ascend_ops
import torch


class AscendRopeMixin:
    """``forward_oot`` for vLLM ``RotaryEmbedding`` and its cache-only subclasses."""

    # provided by the vLLM RotaryEmbedding class this mixin is combined with
    head_size: int
    is_neox_style: bool
    _match_cos_sin_cache_dtype: Any

    def forward_oot(
        self,
        positions: torch.Tensor,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Rotate ``query``/``key`` by the cos/sin cache rows at ``positions``.

        Shapes (vLLM ``RotaryEmbedding.forward``): ``positions`` int [T] (or any shape with T
        elements); ``query`` [..., Hq*head_size] and ``key`` [..., Hk*head_size] (or None) with T
        tokens. Returns new ``(query, key)`` in the input shapes and dtype: out of place, like
        ``forward_native`` (vLLM's CUDA/CPU kernels rotate in place and return the same tensors;
        Llama/Qwen2/Qwen3 attention use the returned tensors). neox or GPT-J style per
        ``is_neox_style``; partial rotary (``rotary_dim < head_size``) passes the tail through.
        The cache is cast to ``query.dtype`` first, as vLLM does. ``key=None`` (cross-layer KV
        sharing) returns ``(query_out, None)``.
        NPU: ``torch_npu.npu_mrope`` with this layer's own cache via
        ``ascend_ops.rotary_embedding`` (not ATB ``_npu_rotary_embedding``, which keeps the
        first cache of the process and rotates the pass-through dims of a partial rotary).
        """
        cos_sin_cache = self._match_cos_sin_cache_dtype(query)
        flat_positions = positions.reshape(-1)
        num_tokens = flat_positions.shape[0]
        q2d = query.reshape(num_tokens, -1)
        # The op needs a key; without one, rotate the query twice and drop the copy.
        k2d = q2d if key is None else key.reshape(num_tokens, -1)
        q_out, k_out = ascend_ops.rotary_embedding(
            flat_positions, q2d, k2d, self.head_size, cos_sin_cache, self.is_neox_style
        )
        q_out = q_out.reshape(query.shape)
        if key is None:
            return q_out, None
        return q_out, k_out.reshape(key.shape)


ROPE_CLASSES: tuple[tuple[str, str], ...] = (
    ("vllm.model_executor.layers.rotary_embedding.base", "RotaryEmbedding"),
    ("vllm.model_executor.layers.rotary_embedding.llama3_rope", "Llama3RotaryEmbedding"),
    (
        "vllm.model_executor.layers.rotary_embedding.linear_scaling_rope",
        "LinearScalingRotaryEmbedding",
    ),
    ("vllm.model_executor.layers.rotary_embedding.ntk_scaling_rope", "NTKScalingRotaryEmbedding"),
    (
        "vllm.model_executor.layers.rotary_embedding.dynamic_ntk_scaling_rope",
        "DynamicNTKScalingRotaryEmbedding",
    ),
    ("vllm.model_executor.layers.rotary_embedding.yarn_scaling_rope", "YaRNScalingRotaryEmbedding"),
)
"""(module, class) of each upstream rope class we replace; all inherit RotaryEmbedding's forward."""


def _build_ascend_classes() -> dict[str, type]:
    classes: dict[str, type] = {}
    for module_name, class_name in ROPE_CLASSES:
        upstream = getattr(importlib.import_module(module_name), class_name)
        ascend_cls = type(
            f"Ascend{class_name}",
            (AscendRopeMixin, upstream),
            {
                "__module__": __name__,
                "__doc__": f"vLLM ``{class_name}`` with ``forward_oot`` on ascend_ops.",
            },
        )
        classes[class_name] = ascend_cls
    return classes


ASCEND_ROPE_CLASSES: dict[str, type] = _build_ascend_classes()
"""Upstream class name -> its Ascend subclass (e.g. ``"RotaryEmbedding"`` -> AscendRotaryEmbedding)."""

AscendRotaryEmbedding = ASCEND_ROPE_CLASSES["RotaryEmbedding"]
AscendLlama3RotaryEmbedding = ASCEND_ROPE_CLASSES["Llama3RotaryEmbedding"]
AscendYaRNScalingRotaryEmbedding = ASCEND_ROPE_CLASSES["YaRNScalingRotaryEmbedding"]


def upstream_class(class_name: str) -> type:
    """The vLLM class named ``class_name`` from :data:`ROPE_CLASSES` (KeyError if not listed)."""
    module_name = dict((c, m) for m, c in ROPE_CLASSES)[class_name]
    return getattr(importlib.import_module(module_name), class_name)
