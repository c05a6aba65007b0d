# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Dense GQA/MQA attention backend over a paged KV cache (``ASCEND_ATTN``).

One kernel call serves every batch shape vLLM's scheduler produces — prefill,
chunked prefill, prefix-cache hits, decode and mixed batches — because
``ascend_ops.fused_infer_attention`` follows the semantics of torch_npu's
``npu_fused_infer_attention_score`` in TND layout: per request, the query tokens
are the last ``q_len`` positions of a ``seq_len``-token context read through the
block table.

KV cache: vLLM 0.32 allocates the cache and hands each layer a logical
``[num_blocks, num_kv_heads, block_size, head_size + head_size_v]`` view (see
``vllm/v1/kv_cache_interface.py::create_kv_cache_views``). This backend asks for
the ``LBNHC`` physical layout, so each layer's view is one dense slab, which
:mod:`vllm_ascend_attention.kv_layout` reinterprets as a contiguous key cache
followed by a contiguous value cache, each ``[num_blocks, block_size,
num_kv_heads, head_size]`` (the BnBsND paged layout FIA and the ATB cache write
read). Block zeroing goes through :meth:`AscendAttentionBackend.zero_kv_cache_blocks`.

FULL graphs: on NPU the FIA call of each layer is captured as a graph task group
and its host lengths are re-issued before every replay (:mod:`vllm_ascend_attention.
graph_params`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import ascend_ops
import torch
from ascend_ops import device
from vllm.config import VllmConfig
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionCGSupport,
    AttentionImpl,
    AttentionLayer,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_interface import AttentionSpec, KVCacheLayout

from vllm_ascend_attention import graph_params, host_lengths, kv_dtype, kv_layout

#: KV cache block size (tokens) this backend prefers: FIA's paged path is tuned
#: for 128-token blocks on Atlas A2/A3 (the torch_npu operator accepts multiples
#: of 16 up to 512).
PREFERRED_BLOCK_SIZE = 128


class AscendAttentionBackend(AttentionBackend):
    """vLLM attention backend for Ascend (dense decoder and encoder-only attention)."""

    # the KV write happens in do_kv_cache_update, before forward
    forward_includes_kv_cache_update: bool = False
    # dtypes the FIA operator and our CPU kernels accept
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    # kv_cache_dtype values the ops serve (fp8 / float16 / bfloat16 storage: CPU branches,
    # ascend_ops/reference/kv_quant.py; the platform refuses them on the NPU branch)
    supported_kv_cache_dtypes: ClassVar[list[str]] = [
        "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"
    ]

    @staticmethod
    def get_name() -> str:
        return "ASCEND_ATTN"

    @staticmethod
    def get_impl_cls() -> type[AscendAttentionImpl]:
        return AscendAttentionImpl

    @staticmethod
    def get_builder_cls() -> type[AscendAttentionMetadataBuilder]:
        return AscendAttentionMetadataBuilder

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        """Block sizes FIA accepts: multiples of 16 tokens."""
        return [MultipleOf(16)]

    @classmethod
    def get_preferred_block_size(cls, default_block_size: int) -> int:
        """Prefer 128-token blocks regardless of vLLM's generic default."""
        return PREFERRED_BLOCK_SIZE

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        return [64, 80, 96, 112, 128, 192, 256]

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple[KVCacheLayout, ...]:
        """Token-major pages ([B, N, H, C] physical), the layout FIA's paged path reads."""
        return (KVCacheLayout.LBNHC,)

    @classmethod
    def zero_kv_cache_blocks(cls, kv_cache: torch.Tensor, block_ids: torch.Tensor, layer) -> None:
        """Zero blocks ``block_ids`` (int64, kernel blocks) of ``layer``'s key and value caches.

        The runner calls this instead of zeroing dim 0 of vLLM's view, which under this
        backend's slab reinterpretation would hit other blocks (see ``kv_layout``).
        """
        kv_layout.zero_blocks(kv_cache, block_ids, _widths(kv_cache, getattr(layer, "head_size", None)))

    @classmethod
    def kv_cache_parts(cls, kv_cache: torch.Tensor, layer) -> tuple[torch.Tensor, torch.Tensor]:
        """``layer``'s key and value caches, each ``[num_blocks, block_size, num_kv_heads, D]``
        (no copy): the layout block-level KV access (``ascend_ops.read_kv_blocks``, the KV
        connectors) addresses instead of vLLM's logical view (see ``kv_layout``)."""
        key_cache, value_cache = kv_layout.split_cache(
            kv_cache, _widths(kv_cache, getattr(layer, "head_size", None)))
        return key_cache, value_cache

    @classmethod
    def supports_non_causal(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type in (AttentionType.DECODER, AttentionType.ENCODER_ONLY)


@dataclass
class AscendAttentionMetadata:
    """Per-step attention inputs (host-prepared, then on the device).

    Attributes:
        num_actual_tokens: query rows attended (``lengths.num_tokens``): the real tokens,
            or every row of a padded FULL-graph batch (see ``host_lengths``).
        max_query_len: longest per-request query in this step.
        query_start_loc: int32 ``[num_reqs + 1]`` cumulative query lengths.
        seq_lens: int32 ``[num_reqs]`` context lengths including this step's tokens.
        block_table: int32 ``[num_reqs, max_blocks_per_req]`` KV cache block ids.
        slot_mapping: int64 ``[num_tokens]`` cache slot per token (-1 = padding).
        causal: False for encoder-only (bidirectional) attention.
        lengths: host ``actual_seq_lengths`` / ``actual_seq_lengths_kv`` of this step.
    """

    num_actual_tokens: int
    max_query_len: int
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor
    lengths: host_lengths.HostLengths
    causal: bool = True


class AscendAttentionMetadataBuilder(AttentionMetadataBuilder[AscendAttentionMetadata]):
    """Builds :class:`AscendAttentionMetadata` from vLLM's common metadata."""

    _cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.UNIFORM_BATCH

    def __init__(
        self,
        kv_cache_spec: AttentionSpec,
        layer_names: list[str],
        vllm_config: VllmConfig,
        device: torch.device,
    ) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self._exact_upper_bound = host_lengths.upper_bound_is_exact(vllm_config)

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ) -> AscendAttentionMetadata:
        cm = common_attn_metadata
        causal = cm.causal if isinstance(cm.causal, bool) else True
        block_table = cm.block_table_tensor[: cm.num_reqs]
        lengths = host_lengths.build(
            cm.query_start_loc_cpu[: cm.num_reqs + 1],
            host_lengths.seq_lens_host(cm, self._exact_upper_bound),
            cm.num_actual_tokens,
            block_table.shape[1] * self.block_size,
        )
        return AscendAttentionMetadata(
            num_actual_tokens=lengths.num_tokens,
            max_query_len=cm.max_query_len,
            query_start_loc=cm.query_start_loc[: cm.num_reqs + 1],
            seq_lens=cm.seq_lens[: cm.num_reqs],
            block_table=block_table,
            slot_mapping=cm.slot_mapping,
            lengths=lengths,
            causal=causal,
        )


def _widths(kv_cache: torch.Tensor, head_size: int | None) -> tuple[int, int]:
    channels = kv_cache.shape[-1]
    key = channels // 2 if head_size is None else head_size
    return key, channels - key


def split_kv_cache(kv_cache: torch.Tensor, head_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Split vLLM's per-layer KV view into paged key and value caches (no copy).

    Args:
        kv_cache: logical ``[num_blocks, num_kv_heads, block_size, head_size + head_size_v]``
            view of an LBNHC allocation.
        head_size: key head size.

    Returns:
        ``(key_cache, value_cache)``: contiguous ``[num_blocks, block_size, num_kv_heads, D]``
        caches sharing ``kv_cache``'s storage (the slab's first and second part).

    Raises:
        ValueError: from :func:`kv_layout.split_cache` for a non-dense slab.
    """
    key_cache, value_cache = kv_layout.split_cache(kv_cache, _widths(kv_cache, head_size))
    return key_cache, value_cache


class AscendAttentionImpl(AttentionImpl[AscendAttentionMetadata]):
    """Runs ``reshape_and_cache`` and ``fused_infer_attention`` from ``ascend_ops``."""

    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int,
        alibi_slopes: list[float] | None,
        sliding_window: int | None,
        kv_cache_dtype: str,
        logits_soft_cap: float | None = None,
        attn_type: str = AttentionType.DECODER,
        kv_sharing_target_layer_name: str | None = None,
        sinks: torch.Tensor | None = None,
    ) -> None:
        unsupported = {
            "alibi_slopes": alibi_slopes is not None,
            "sliding_window": sliding_window is not None,
            "logits_soft_cap": bool(logits_soft_cap),
            "sinks": sinks is not None,
            "kv_sharing_target_layer_name": kv_sharing_target_layer_name is not None,
        }
        named = [k for k, used in unsupported.items() if used]
        if named:
            raise NotImplementedError(
                f"ASCEND_ATTN does not support {', '.join(named)} yet; this model needs a "
                "feature the Ascend dense backend has not built."
            )
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})."
            )
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads
        self.kv_cache_dtype = kv_cache_dtype
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = None
        self._split: tuple[tuple, tuple[torch.Tensor, torch.Tensor]] | None = None

    def _paged_caches(self, kv_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``split_kv_cache`` of the KV view in its storage dtype, kept while the view keeps its
        address, shape and dtype (each step's cache write and attention ask; a split is view
        arithmetic that adds up per layer and step); sleep mode's restore moves the storage, so it is redone then."""
        ident = (kv_cache.data_ptr(), kv_cache.shape, kv_cache.stride(), kv_cache.dtype)
        memo = self._split
        if memo is not None and memo[0] == ident:
            return memo[1]
        caches = split_kv_cache(kv_dtype.storage_view(kv_cache, self.kv_cache_dtype), self.head_size)
        self._split = (ident, caches)
        return caches

    def do_kv_cache_update(
        self,
        layer: torch.nn.Module,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        slot_mapping: torch.Tensor,
    ) -> None:
        """Write this step's K/V into the paged cache at ``slot_mapping``."""
        if self.attn_type == AttentionType.ENCODER_ONLY:
            return
        key_cache, value_cache = self._paged_caches(kv_cache)
        num_tokens = slot_mapping.shape[0]
        ascend_ops.reshape_and_cache(
            key[:num_tokens].view(-1, self.num_kv_heads, self.head_size),
            value[:num_tokens].view(-1, self.num_kv_heads, self.head_size),
            key_cache,
            value_cache,
            slot_mapping,
            **kv_dtype.scales(layer, key_cache),
        )

    def forward(
        self,
        layer: AttentionLayer,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        attn_metadata: AscendAttentionMetadata | None,
        output: torch.Tensor | None = None,
        output_scale: torch.Tensor | None = None,
        output_block_scale: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention for one layer.

        Args:
            query: ``[num_tokens, num_heads, head_size]``.
            key, value: ``[num_tokens, num_kv_heads, head_size]`` (already cached).
            kv_cache: this layer's KV view (see module docstring).
            output: ``[num_tokens, num_heads * head_size]`` (or 3-D) written in place.
        """
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("ASCEND_ATTN has no fused output quantization.")
        assert output is not None
        if attn_metadata is None:  # profiling / warm-up run without metadata
            return output.fill_(0)
        n = attn_metadata.num_actual_tokens
        q = query[:n].view(n, self.num_heads, self.head_size)
        out = output[:n].view(n, self.num_heads, self.head_size)
        if self.attn_type == AttentionType.ENCODER_ONLY:
            out.copy_(self._encoder_only(q, key[:n], value[:n], attn_metadata))
        else:
            key_cache, value_cache = self._paged_caches(kv_cache)
            self._paged(layer, q, key_cache, value_cache, attn_metadata, out)
        if n < output.shape[0]:
            output[n:].zero_()  # padding rows no request owns: defined, never attended
        return output

    def _paged(self, layer, q, key_cache, value_cache, md: AscendAttentionMetadata, out) -> None:
        """FIA over the paged cache into ``out``; captured as an updatable task group on NPU."""
        # FIA takes a dense query (vLLM's q is a column slice of the fused QKV output). Made
        # here, outside the launch, so a captured call and its updates read the same tensor.
        q = q.contiguous()
        lse = q.new_empty(1)
        tensors = (q, key_cache, value_cache, md.block_table, md.query_start_loc, md.seq_lens)
        causal = md.causal
        scales: dict[str, Any] = kv_dtype.scales(layer, key_cache)  # k_scale, v_scale

        def launch(step: AscendAttentionMetadata, workspace=None) -> None:
            ascend_ops.fused_infer_attention(
                *tensors, self.scale, causal,
                actual_seq_lengths=step.lengths.ends,
                actual_seq_lengths_kv=step.lengths.kv_lens,
                out=out, softmax_lse=lse, workspace=workspace, **scales,
            )

        if not device.is_capturing():
            launch(md)
            return
        workspace = graph_params.shared_workspace(
            lambda: ascend_ops.fused_infer_attention_workspace(
                *tensors[:4], self.scale, causal, md.lengths.ends, md.lengths.kv_lens
            )
        )
        name = getattr(layer, "layer_name", None) or f"attention@{id(self):x}"
        graph_params.capture_call(name, lambda step: launch(step, workspace), md)

    def _encoder_only(
        self,
        q: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        md: AscendAttentionMetadata,
    ) -> torch.Tensor:
        """Bidirectional attention over this step's tokens only (no KV cache).

        The step's K/V are written into a scratch paged cache with one block run
        per request, then read back with ``causal=False``. The block table and slots
        are computed on the host from the step's host lengths (no device reads).
        """
        n = q.shape[0]
        block = PREFERRED_BLOCK_SIZE
        ends = torch.tensor(md.lengths.ends, dtype=torch.int64)
        starts = torch.cat([ends.new_zeros(1), ends[:-1]])
        lens = ends - starts
        blocks_per_req = (lens + block - 1) // block
        first_block = torch.cumsum(blocks_per_req, 0) - blocks_per_req
        max_blocks = int(blocks_per_req.max()) if lens.numel() else 0
        block_table = first_block[:, None] + torch.arange(max_blocks)[None, :]
        token_req = torch.repeat_interleave(torch.arange(lens.numel()), lens)
        slots = first_block[token_req] * block + torch.arange(n) - starts[token_req]
        shape = (int(blocks_per_req.sum()), block, self.num_kv_heads, self.head_size)
        key_cache = key.new_zeros(shape)
        value_cache = value.new_zeros(shape)
        ascend_ops.reshape_and_cache(
            key.view(n, self.num_kv_heads, self.head_size),
            value.view(n, self.num_kv_heads, self.head_size),
            key_cache,
            value_cache,
            slots.to(q.device),
        )
        kv_lens = [int(v) for v in lens.tolist()]  # host tensors: no device sync
        return ascend_ops.fused_infer_attention(
            q,
            key_cache,
            value_cache,
            block_table.to(device=q.device, dtype=torch.int32),
            md.query_start_loc,
            lens.to(device=q.device, dtype=torch.int32),
            self.scale,
            causal=False,
            actual_seq_lengths=md.lengths.ends,
            actual_seq_lengths_kv=kv_lens,
        )
