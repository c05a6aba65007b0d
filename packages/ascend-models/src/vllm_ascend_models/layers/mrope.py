# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM's multimodal rotary embedding (M-RoPE) routed to ``ascend_ops.mrope``.

``MRotaryEmbedding`` (``vllm/model_executor/layers/rotary_embedding/mrope.py``) is what
``get_rope`` builds for every model whose ``rope_parameters`` carry ``mrope_section``
(Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V, Keye, ...). It is a ``rotary_embedding`` CustomOp, kept
enabled by the models layer's ``+rotary_embedding`` directive. ``MRotaryEmbeddingInterleaved``
(same folder) overrides ``forward`` itself and is not replaced.
"""

from __future__ import annotations

import ascend_ops
import torch
from vllm.model_executor.layers.rotary_embedding.mrope import MRotaryEmbedding


class AscendMRotaryEmbedding(MRotaryEmbedding):
    """``MRotaryEmbedding`` whose ``forward_oot`` runs ``ascend_ops.mrope`` (3-row positions) or
    ``ascend_ops.rotary_embedding`` (1-row positions: text-only batches of a model without
    M-RoPE positions)."""

    def forward_oot(
        self,
        positions: torch.Tensor,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        offsets: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Rotate ``query`` / ``key`` by the positions' rows of this layer's cos/sin cache.

        Shapes (vLLM ``MRotaryEmbedding.forward_native``): ``positions`` int [T] or [3, T]
        (temporal, height, width); ``query`` [T, Hq*head_size]; ``key`` [T, Hk*head_size].
        Returns new ``(query, key)`` of the input shapes and dtype (out of place). The cache is
        cast to the query's dtype first, as vLLM does. ``offsets`` (per-token position offsets)
        is added to the positions when given. ``key=None`` is refused, as vLLM's forwards assert.
        """
        if key is None:
            raise ValueError("M-RoPE needs a key (vLLM's MRotaryEmbedding asserts the same)")
        if offsets is not None:
            positions = positions + offsets
        cos_sin_cache = self._match_cos_sin_cache_dtype(query)
        num_tokens = positions.shape[-1]
        q2d = query.reshape(num_tokens, -1)
        k2d = key.reshape(num_tokens, -1)
        if positions.ndim == 2:
            if not self.mrope_section:
                raise ValueError("3-row M-RoPE positions need mrope_section in the rope "
                                 "parameters (vLLM's MRotaryEmbedding asserts the same)")
            q_out, k_out = ascend_ops.mrope(
                positions, q2d, k2d, self.head_size, cos_sin_cache, list(self.mrope_section),
                interleaved=bool(self.mrope_interleaved), is_neox=self.is_neox_style)
        else:
            q_out, k_out = ascend_ops.rotary_embedding(
                positions.reshape(-1), q2d, k2d, self.head_size, cos_sin_cache,
                self.is_neox_style)
        return q_out.reshape(query.shape), k_out.reshape(key.shape)
