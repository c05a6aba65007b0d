"""Ascend MLA backend: Multi-head Latent Attention (DeepSeek-V2/V3) on a latent KV cache.

Built on vLLM 0.32's shared MLA scaffolding (``MLACommonBackend`` / ``MLACommonImpl`` /
``MLACommonMetadataBuilder`` in ``model_executor/layers/attention/mla_attention.py``), whose
``MLAAttention.forward_impl`` splits a batch into decode tokens (weight-absorbed MQA: ``q_nope``
arrives already multiplied by W_UK, the output is up-projected by W_UV afterwards) and prefill
tokens (MHA on up-projected K/V). This module supplies the three device parts:

* cache write (``do_kv_cache_update``): one row per token, ``[kv_c_normed (kv_lora_rank) | k_pe
  (rope dim)]``, cache view ``[num_blocks, block_size, kv_lora_rank + rope_dim]``;
* decode (``forward_mqa``): per request, scores over the request's latent rows (block table),
  softmax, weighted sum of the ``kv_c`` part -> ``[B, N, kv_lora_rank]``;
* prefill (``forward_mha``): per request, the context already in the cache (prefix-cache hits and
  earlier chunks of a chunked prefill) plus the new tokens are up-projected by ``kv_b_proj`` and
  attended causally (query i of a request with context c sees keys 0..c+i).

Math runs in float32 with torch ops (TND, per request); on NPU the same layout maps onto
``npu_fused_infer_attention_score`` with ``query_rope``/``key_rope`` (not wired yet: the paths
here are device-agnostic torch). Sparse MLA (DeepSeek V3.2 DSA) and compressed-KV models are
refused by :func:`vllm_ascend_attention.select_backend`.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from vllm.model_executor.layers.attention.mla_attention import (
    MLACommonBackend,
    MLACommonImpl,
    MLACommonMetadata,
)
from vllm.v1.attention.backend import AttentionType, MultipleOf
from vllm.v1.attention.backends.mla.prefill.base import MLAPrefillBackend


class AscendMLAPrefillBackend(MLAPrefillBackend):
    """Prefill-backend slot for vLLM's MLA layer; ``AscendMLAImpl.forward_mha`` does the work.

    ``NPUPlatform.get_mla_prefill_backend_cls`` must return this class (vLLM's default picks a
    CUDA backend by device capability).
    """

    @staticmethod
    def get_name() -> str:
        return "ASCEND_MLA_PREFILL"

    @classmethod
    def is_available(cls) -> bool:
        return True

    def run_prefill_new_tokens(self, *args, **kwargs):
        raise NotImplementedError("AscendMLAImpl.forward_mha computes the prefill itself")

    def run_prefill_context_chunk(self, *args, **kwargs):
        raise NotImplementedError("AscendMLAImpl.forward_mha computes the prefill itself")


class AscendMLABackend(MLACommonBackend):
    """Attention backend descriptor for MLA on Ascend (latent cache, 576 = 512 + 64 typical)."""

    # dtypes / cache dtypes accepted
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto"]

    @staticmethod
    def get_name() -> str:
        return "ASCEND_MLA"

    @staticmethod
    def get_impl_cls() -> type[AscendMLAImpl]:
        return AscendMLAImpl

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        """Any latent width (kv_lora_rank + rope dim); the torch paths have no fixed size."""
        return []

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        """Block sizes that are a multiple of 16 (the FIA paged-KV granularity)."""
        return [MultipleOf(16)]


def _gather_latent(cache: torch.Tensor, block_row: torch.Tensor, length: int) -> torch.Tensor:
    """Rows 0..length-1 of one request from the paged latent cache -> [length, width]."""
    if length == 0:
        return cache.new_empty(0, cache.shape[-1])
    block_size = cache.shape[1]
    pos = torch.arange(length, device=cache.device)
    blocks = block_row.long()[pos // block_size]
    return cache[blocks, pos % block_size]


class AscendMLAImpl(MLACommonImpl[MLACommonMetadata]):
    """MLA on the latent cache: absorbed-weight decode, up-projected causal prefill."""

    can_return_lse_for_decode: bool = False

    def __init__(self, num_heads, head_size, scale, num_kv_heads, alibi_slopes, sliding_window,
                 kv_cache_dtype, logits_soft_cap, attn_type, kv_sharing_target_layer_name, **mla_args):
        # MLACommonImpl.__init__ picks a CUDA prefill kernel; set the attributes it would set.
        if kv_sharing_target_layer_name is not None:
            raise NotImplementedError("KV sharing (kv_sharing_target_layer_name) is not supported for MLA")
        if attn_type != AttentionType.DECODER:
            raise NotImplementedError(f"Ascend MLA supports decoder self-attention only, got {attn_type}")
        if alibi_slopes or sliding_window or logits_soft_cap:
            raise NotImplementedError("Ascend MLA does not support alibi_slopes / sliding_window / logits_soft_cap")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads
        self.kv_cache_dtype = kv_cache_dtype
        self.q_lora_rank = mla_args["q_lora_rank"]
        self.kv_lora_rank = mla_args["kv_lora_rank"]
        self.qk_nope_head_dim = mla_args["qk_nope_head_dim"]
        self.qk_rope_head_dim = mla_args["qk_rope_head_dim"]
        self.qk_head_dim = mla_args["qk_head_dim"]
        self.v_head_dim = mla_args["v_head_dim"]
        self.kv_b_proj = mla_args["kv_b_proj"]
        self.indexer = mla_args.get("indexer")
        self.q_pad_num_heads = mla_args.get("q_pad_num_heads")
        self.supports_quant_query_input = False
        self._use_flashinfer_concat_mla_k = False
        self._pad_v = False
        self.dcp_world_size = 1
        self.cp_kv_cache_interleave_size = 1

    # -- cache write ------------------------------------------------------------------------
    def do_kv_cache_update(self, kv_c_normed, k_pe, kv_cache, slot_mapping, kv_cache_dtype, k_scale):
        """Write ``[kv_c_normed | k_pe]`` rows at ``slot_mapping`` (slots < 0 are padding)."""
        if kv_cache.numel() == 0:
            return
        rank = kv_c_normed.shape[-1]
        k_pe = k_pe.reshape(k_pe.shape[0], -1)
        flat = kv_cache.view(-1, rank + k_pe.shape[-1])
        n = slot_mapping.shape[0]
        slots = slot_mapping.flatten().long()
        valid = slots >= 0
        rows = torch.cat([kv_c_normed[:n], k_pe[:n]], dim=-1).to(flat.dtype)
        flat[slots[valid]] = rows[valid]

    # -- decode (weight-absorbed MQA over the latent rows) ----------------------------------
    def forward_mqa(self, q, kv_c_and_k_pe_cache, attn_metadata, layer):
        """q: (q_nope·W_UK [B, N, L], q_pe [B, N, R]) or [B, N, L+R] -> ([B, N, L], None)."""
        assert attn_metadata.decode is not None
        if isinstance(q, tuple):
            q = torch.cat(q, dim=-1)
        dec = attn_metadata.decode
        seq_lens = dec.seq_lens.tolist()
        rank = self.kv_lora_rank
        out = q.new_empty(q.shape[0], q.shape[1], rank)
        for b, length in enumerate(seq_lens):
            latent = _gather_latent(kv_c_and_k_pe_cache, dec.block_table[b], length).float()
            scores = torch.einsum("nd,sd->ns", q[b].float(), latent) * self.scale
            out[b] = (torch.softmax(scores, dim=-1) @ latent[:, :rank]).to(out.dtype)
        return out, None

    # -- prefill (context from the cache + new tokens, up-projected, causal) ----------------
    def forward_mha(self, q, kv_c_normed, k_pe, kv_c_and_k_pe_cache, attn_metadata, k_scale, output,
                    output_scale=None):
        """q [T, N, nope+rope], kv_c_normed [T, L], k_pe [T, 1, R] -> writes output [T, N*V]."""
        if output_scale is not None:
            raise NotImplementedError("Ascend MLA prefill has no fused output quantization")
        pre = attn_metadata.prefill
        assert pre is not None
        starts = pre.query_start_loc.tolist()
        ctx = pre.chunked_context
        ctx_lens = ctx.context_lens_list if ctx is not None else [0] * (len(starts) - 1)
        rank, nope = self.kv_lora_rank, self.qk_nope_head_dim
        out = output.view(-1, self.num_heads, self.v_head_dim)
        for i in range(len(starts) - 1):
            s, e, c = starts[i], starts[i + 1], int(ctx_lens[i])
            new_latent = torch.cat([kv_c_normed[s:e], k_pe[s:e].reshape(e - s, -1)], dim=-1)
            old_latent = _gather_latent(kv_c_and_k_pe_cache, pre.block_table[i], c).to(new_latent.dtype)
            latent = torch.cat([old_latent, new_latent], dim=0)
            kv = self.kv_b_proj(latent[:, :rank])[0].view(-1, self.num_heads, nope + self.v_head_dim)
            k_nope, v = kv.split([nope, self.v_head_dim], dim=-1)
            k_rope = latent[:, rank:].unsqueeze(1).expand(-1, self.num_heads, -1)
            k = torch.cat([k_nope, k_rope], dim=-1).float()
            scores = torch.einsum("qnd,knd->nqk", q[s:e].float(), k) * self.scale
            qpos = torch.arange(e - s, device=q.device).unsqueeze(1) + c
            kpos = torch.arange(c + e - s, device=q.device).unsqueeze(0)
            scores = scores.masked_fill(kpos > qpos, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            out[s:e] = torch.einsum("nqk,knd->qnd", probs, v.float()).to(out.dtype)
