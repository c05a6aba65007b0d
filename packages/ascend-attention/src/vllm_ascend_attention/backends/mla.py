# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend MLA backend: Multi-head Latent Attention (DeepSeek-V2/V3) on a latent KV cache.

Built on vLLM 0.32's shared MLA scaffolding (``MLACommonBackend`` / ``MLACommonImpl`` /
``MLACommonMetadataBuilder`` in ``model_executor/layers/attention/mla_attention.py``), whose
``MLAAttention.forward_impl`` splits a batch into decode tokens (weight-absorbed MQA: ``q_nope``
arrives already multiplied by W_UK, the output is up-projected by W_UV afterwards) and prefill
tokens (MHA on up-projected K/V). This module supplies the device parts, each an ``ascend_ops`` op:

* KV cache: vLLM's per-layer latent view ``[num_blocks, 1, block_size, kv_lora_rank + rope_dim]``
  is one dense slab, reinterpreted (``vllm_ascend_attention.kv_layout``, no copy) as a contiguous
  latent "nope" cache ``[num_blocks, block_size, 1, kv_lora_rank]`` followed by a contiguous rope
  cache ``[num_blocks, block_size, 1, rope_dim]``; written with ``ascend_ops.reshape_and_cache``
  (key = kv_c_normed, value = k_pe: ATB ``_npu_reshape_and_cache``); block zeroing through
  :meth:`AscendMLABackend.zero_kv_cache_blocks`;
* decode (``forward_mqa``): ``ascend_ops.mla_decode`` (``npu_fused_infer_attention_score`` with
  ``query_rope``/``key_rope`` over the two caches), query heads zero-padded to
  ``ascend_ops.mla_decode_heads`` (a power of two on NPU) and the padded heads dropped; a
  FULL-graph capture passes one max-size workspace per graph (``graph_params.shared_workspace``);
* prefill (``forward_mha``): ``ascend_ops.mla_gather_context`` reads the cached context rows
  (prefix-cache hits, earlier chunks), the rows are ordered per request with one host-built
  index, up-projected by ``kv_b_proj`` and attended causally by ``ascend_ops.mla_prefill``.

All lengths are host lists built once per step by :class:`AscendMLAMetadataBuilder` from vLLM's
CPU copies; no request loop touches device tensors. Sparse MLA (DeepSeek V3.2 DSA) and
compressed-KV models are refused by :func:`vllm_ascend_attention.select_backend`.
"""

from __future__ import annotations

from typing import ClassVar

import ascend_ops
import torch
from ascend_ops import device
from vllm.model_executor.layers.attention.mla_attention import (
    MLACommonBackend,
    MLACommonImpl,
    MLACommonMetadata,
    MLACommonMetadataBuilder,
    QueryLenSupport,
)
from vllm.v1.attention.backend import (
    AttentionCGSupport,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.attention.backends.mla.prefill.base import MLAPrefillBackend

from vllm_ascend_attention import graph_params, host_lengths, kv_layout
from vllm_ascend_attention.host_lengths import HostLengths


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

    @staticmethod
    def get_builder_cls() -> type[AscendMLAMetadataBuilder]:
        return AscendMLAMetadataBuilder

    @classmethod
    def zero_kv_cache_blocks(cls, kv_cache: torch.Tensor, block_ids: torch.Tensor, layer) -> None:
        """Zero blocks ``block_ids`` (int64, kernel blocks) of the latent and rope caches."""
        kv_layout.zero_blocks(kv_cache, block_ids, _widths(kv_cache, getattr(layer, "kv_lora_rank", None)))

    @classmethod
    def kv_cache_parts(cls, kv_cache: torch.Tensor, layer) -> tuple[torch.Tensor, torch.Tensor]:
        """``layer``'s latent and rope caches, ``[num_blocks, block_size, 1, kv_lora_rank]`` and
        ``[num_blocks, block_size, 1, rope_dim]`` (no copy), for block-level KV access."""
        nope, rope = kv_layout.split_cache(
            kv_cache, _widths(kv_cache, getattr(layer, "kv_lora_rank", None)))
        return nope, rope

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        """Any latent width (kv_lora_rank + rope dim) the FIA head-dim limit (512) allows."""
        return []

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        """Block sizes that are a multiple of 16 (the FIA paged-KV granularity)."""
        return [MultipleOf(16)]


def _widths(kv_cache: torch.Tensor, kv_lora_rank: int | None) -> tuple[int, int]:
    if kv_lora_rank is None:
        raise ValueError("the MLA layer must expose kv_lora_rank to split its cache")
    return kv_lora_rank, kv_cache.shape[-1] - kv_lora_rank


def _host_lengths(qsl_cpu: torch.Tensor, seq_lens_cpu: torch.Tensor, first: int, last: int) -> HostLengths:
    """Lengths of requests ``first..last-1`` with query ends relative to request ``first``."""
    ends = (qsl_cpu[first + 1 : last + 1] - qsl_cpu[first]).tolist()
    return HostLengths([int(v) for v in ends], [int(v) for v in seq_lens_cpu[first:last].tolist()])


class AscendMLAMetadataBuilder(MLACommonMetadataBuilder[MLACommonMetadata]):
    """vLLM's MLA metadata plus the host lengths the Ascend ops take.

    Adds to the metadata: ``ascend_decode`` / ``ascend_prefill`` (:class:`HostLengths` of the
    decode requests ``[0, num_decodes)`` and of the prefill requests ``[num_decodes, num_reqs)``,
    query ends relative to the group's first request), built from ``query_start_loc_cpu`` and
    ``seq_lens_cpu_upper_bound`` (``vllm/v1/attention/backend.py``), never from device tensors.
    The decode lengths cover all ``num_decode_tokens`` rows of a padded FULL-graph batch (padding
    tokens become dummy requests in the padded slots, see ``host_lengths``), so uniform decode
    batches can be captured: the decode call is re-issued with each step's lengths before a
    replay (``graph_params``).
    """

    _cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.UNIFORM_BATCH
    # Decode requests may carry 1 + k tokens (speculative verification) when every decode
    # request of the step has the same query length: vLLM then raises reorder_batch_threshold to
    # 1 + k and counts them as decodes (``split_decodes_and_prefills(require_uniform=True)``);
    # ``ascend_ops.mla_decode`` attends each request's query rows causally, bottom-right aligned
    # (FIA TND with sparse_mode 3), which is what verification needs.
    query_len_support: ClassVar[QueryLenSupport] = QueryLenSupport.UNIFORM

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> MLACommonMetadata:
        md = super().build(common_prefix_len, common_attn_metadata, fast_build)
        cm = common_attn_metadata
        seq = host_lengths.seq_lens_host(cm, host_lengths.upper_bound_is_exact(self.vllm_config))
        qsl = cm.query_start_loc_cpu
        num_decodes = md.num_decodes or 0
        md.ascend_decode = host_lengths.build(
            qsl[: num_decodes + 1], seq[:num_decodes], md.num_decode_tokens or 0,
            cm.block_table_tensor.shape[1] * self.kv_cache_spec.block_size,
        )
        md.ascend_prefill = _host_lengths(qsl, seq, num_decodes, cm.num_reqs)
        return md


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
    def _caches(self, kv_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        nope, rope = kv_layout.split_cache(kv_cache, (self.kv_lora_rank, self.qk_rope_head_dim))
        return nope, rope

    def do_kv_cache_update(self, kv_c_normed, k_pe, kv_cache, slot_mapping, kv_cache_dtype, k_scale,
                           skip_scale: bool = False):
        """Write kv_c_normed [T, L] / k_pe [T, 1, R] at ``slot_mapping`` (slots < 0 are padding).

        Signature of vLLM 0.34's ``MLAAttentionImpl.do_kv_cache_update``
        (vllm/v1/attention/backend.py). ``skip_scale`` lets an fp8 cache skip the multiplication
        by a ``k_scale`` of 1.0 (vLLM sets it only for an fp8 ``kv_cache_dtype``); this cache is
        never quantized (``supported_kv_cache_dtypes`` is ``["auto"]``), so the rows are written
        as they are and ``kv_cache_dtype``, ``k_scale`` and ``skip_scale`` change nothing."""
        if kv_cache.numel() == 0:
            return
        nope, rope = self._caches(kv_cache)
        n = slot_mapping.shape[0]
        ascend_ops.reshape_and_cache(
            kv_c_normed[:n].reshape(n, 1, self.kv_lora_rank),
            k_pe[:n].reshape(n, 1, self.qk_rope_head_dim),
            nope,
            rope,
            slot_mapping,
        )

    # -- decode (weight-absorbed MQA over the latent rows) ----------------------------------
    def forward_mqa(self, q, kv_c_and_k_pe_cache, attn_metadata, layer):
        """q: (q_nope·W_UK [B, N, L], q_pe [B, N, R]) or [B, N, L+R] -> ([B, N, L], None)."""
        assert attn_metadata.decode is not None
        if isinstance(q, tuple):
            q_nope, q_pe = q
        else:
            q_nope, q_pe = q.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        lengths = attn_metadata.ascend_decode
        n = lengths.num_tokens
        nope, rope = self._caches(kv_c_and_k_pe_cache)
        rows, heads = q_nope.shape[0], q_nope.shape[1]
        # FIA's MLA path takes a power-of-two head count on NPU: zero heads appended, dropped
        # after (vllm-ascend's num_heads_padded). Dense copies made outside the launch: a
        # captured call and its updates read the same tensors (a copy made at update time
        # would hold update-time contents).
        padded = ascend_ops.mla_decode_heads(q_nope)
        q_nope, q_pe = _pad_heads(q_nope[:n], padded), _pad_heads(q_pe[:n], padded)
        block_table = attn_metadata.decode.block_table
        out = q_nope.new_zeros(q_nope.shape)
        lse = q_nope.new_empty(1)

        def launch(step, workspace=None) -> None:
            ascend_ops.mla_decode(q_nope, q_pe, nope, rope, block_table, step.ascend_decode.ends,
                                  step.ascend_decode.kv_lens, self.scale, out=out, softmax_lse=lse,
                                  workspace=workspace)

        if device.is_capturing():
            # one max-size FIA workspace per captured graph for the call and its updates (the
            # operator would otherwise allocate one per call, freed after capture)
            workspace = graph_params.shared_workspace(
                lambda: ascend_ops.mla_decode_workspace(q_nope, q_pe, nope, rope, block_table, lengths.ends,
                                                        lengths.kv_lens, self.scale))
            name = getattr(layer, "layer_name", None) or f"mla@{id(self):x}"
            graph_params.capture_call(name, lambda step: launch(step, workspace), attn_metadata)
        else:
            launch(attn_metadata)
        # a new name: ``launch`` (re-issued by graph updates) must keep writing ``out``
        result = out if padded == heads else out[:, :heads].contiguous()
        if n < rows:  # rows no request owns (not attended)
            result = torch.cat([result, result.new_zeros(rows - n, *result.shape[1:])])
        return result, None

    # -- prefill (context from the cache + new tokens, up-projected, causal) ----------------
    def forward_mha(self, q, kv_c_normed, k_pe, kv_c_and_k_pe_cache, attn_metadata, k_scale, output,
                    output_scale=None):
        """q [T, N, nope+rope], kv_c_normed [T, L], k_pe [T, 1, R] -> writes output [T, N*V]."""
        if output_scale is not None:
            raise NotImplementedError("Ascend MLA prefill has no fused output quantization")
        pre = attn_metadata.prefill
        assert pre is not None
        lengths = attn_metadata.ascend_prefill
        n = lengths.num_tokens  # rows past n are padding of the step
        rope_dim = self.qk_rope_head_dim
        starts = [0, *lengths.ends[:-1]] if lengths.ends else []
        q_lens = [e - s for s, e in zip(starts, lengths.ends, strict=True)]
        ctx_lens = [kv - ql for kv, ql in zip(lengths.kv_lens, q_lens, strict=True)]
        nope, rope = self._caches(kv_c_and_k_pe_cache)
        ctx_c, ctx_pe = ascend_ops.mla_gather_context(nope, rope, pre.block_table, ctx_lens)
        # per request: its context rows, then its new rows (one host-built index, no loop on device)
        order = _request_major_order(ctx_lens, starts, q_lens)
        order = order.to(kv_c_normed.device)
        latent_c = torch.cat([ctx_c, kv_c_normed[:n].to(ctx_c.dtype)]).index_select(0, order)
        latent_pe = torch.cat([ctx_pe, k_pe[:n].reshape(n, rope_dim).to(ctx_pe.dtype)]).index_select(0, order)
        kv = self.kv_b_proj(latent_c)[0].view(-1, self.num_heads, self.qk_nope_head_dim + self.v_head_dim)
        k_nope, v = kv.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k = torch.cat([k_nope, latent_pe.unsqueeze(1).expand(-1, self.num_heads, -1).to(k_nope.dtype)], dim=-1)
        out = ascend_ops.mla_prefill(q[:n].to(k.dtype), k, v.contiguous(), lengths.ends, lengths.kv_lens,
                                     self.scale)
        output.view(-1, self.num_heads, self.v_head_dim)[:n].copy_(out)


def _pad_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[T, N, D] -> dense [T, heads, D], zero heads appended when heads > N."""
    if x.shape[1] == heads:
        return x.contiguous()
    return torch.nn.functional.pad(x, (0, 0, 0, heads - x.shape[1])).contiguous()


def _request_major_order(ctx_lens: list[int], starts: list[int], q_lens: list[int]) -> torch.Tensor:
    """Index into ``cat([context rows (request-major), new rows])`` that lists, per request,
    its context rows then its new rows."""
    ctx = torch.tensor(ctx_lens, dtype=torch.long)
    new = torch.tensor(q_lens, dtype=torch.long)
    ctx_start = torch.cumsum(ctx, 0) - ctx
    total_ctx = int(ctx.sum())
    per_req = ctx + new
    req = torch.repeat_interleave(torch.arange(len(ctx_lens)), per_req)
    pos = torch.arange(int(per_req.sum())) - (torch.cumsum(per_req, 0) - per_req)[req]
    in_ctx = pos < ctx[req]
    new_start = torch.tensor(starts, dtype=torch.long)
    return torch.where(in_ctx, ctx_start[req] + pos, total_ctx + new_start[req] + pos - ctx[req])
