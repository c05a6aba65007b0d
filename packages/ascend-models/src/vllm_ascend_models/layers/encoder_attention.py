# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM's multimodal encoder attention routed to ``ascend_ops.encoder_attention``.

Every vision / audio tower vLLM serves builds its self-attention from ``MMEncoderAttention``
(``vllm/model_executor/layers/attention/mm_encoder_attention.py``, a CustomOp registered as
``mm_encoder_attn`` whose ``enabled()`` is always True), so one out-of-tree replacement covers
them all: ``CustomOp.__new__`` swaps the class by name and ``dispatch_forward`` picks
``forward_oot`` on an out-of-tree platform. The towers' other layers (linear, norms, the 2-D
rotary of the Qwen-VL towers) are vLLM's own CustomOps or ours already.
"""

from __future__ import annotations

import ascend_ops
import torch
from vllm.model_executor.layers.attention.mm_encoder_attention import MMEncoderAttention


class AscendMMEncoderAttention(MMEncoderAttention):
    """``MMEncoderAttention`` whose ``forward_oot`` runs ``ascend_ops.encoder_attention``.

    The class methods vLLM's towers call before the forward (``maybe_recompute_cu_seqlens``,
    ``maybe_compute_seq_lens``, ``compute_max_seqlen``) are inherited: for the platform's
    default ViT backend (``TORCH_SDPA``, ``Platform.get_vit_attn_backend``) they return
    ``cu_seqlens`` unchanged on the device and no sequence lengths, as the op wants.
    """

    def forward_oot(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        cu_seqlens: torch.Tensor | None = None,
        max_seqlen: torch.Tensor | None = None,
        sequence_lengths: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Non-causal attention within each sequence.

        Shapes (vLLM ``MMEncoderAttention.forward_native``): ``query`` [B, S, Hq*D] or
        [B, S, Hq, D], ``key`` / ``value`` [B, S_kv, Hk*D] or [B, S_kv, Hk, D]. With
        ``cu_seqlens`` (int32/int64 [N+1], cumulative lengths over the ``B*S`` packed tokens, the
        Qwen-VL towers' windows / images) each packed sequence attends to itself; without it each
        of the ``B`` rows is one sequence. Returns the query's shape and dtype.
        ``max_seqlen`` / ``sequence_lengths`` (FlashAttention / FlashInfer only) are ignored.
        Query and key lengths that differ (no tower in vLLM 0.34 built on this layer does so)
        and FP8 attention (``--mm-encoder-attn-dtype fp8``, refused by vLLM's own check for the
        SDPA backend) take vLLM's SDPA path.
        """
        bsz, q_len = query.shape[:2]
        kv_len = key.shape[1]
        if q_len != kv_len or self.fp8_enabled:
            return self._forward_sdpa(query, key, value, cu_seqlens)
        q = query.reshape(bsz * q_len, self.num_heads, self.head_size)
        k = key.reshape(bsz * kv_len, self.num_kv_heads, self.head_size)
        v = value.reshape(bsz * kv_len, self.num_kv_heads, self.head_size)
        if cu_seqlens is None:
            cu = torch.arange(bsz + 1, dtype=torch.int32, device=query.device) * q_len
            ends = [q_len * (b + 1) for b in range(bsz)]
            out = ascend_ops.encoder_attention(q, k, v, cu, self.scale, actual_seq_lengths=ends)
        else:
            out = ascend_ops.encoder_attention(q, k, v, cu_seqlens, self.scale)
        return out.reshape(query.shape)
