# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""How the Ascend backends lay out a layer's KV cache slab.

vLLM 0.32 allocates each layer's cache and hands the backend a logical
``[num_blocks, num_kv_heads, block_size, C]`` view (``create_kv_cache_views`` in
``vllm/v1/kv_cache_interface.py``), where ``C`` packs every per-token part
(dense: key then value; MLA: latent ``kv_c`` then rope ``k_pe``). Every
``KVCacheLayout`` keeps ``C`` innermost, so no vLLM layout gives separate key and
value pages. With ``KVCacheLayout.LBNHC`` (layer-compact, token-major) and no page
padding, one layer's view is a single dense slab of
``num_blocks * block_size * num_kv_heads * C`` elements. The Ascend backends
reinterpret that slab as consecutive, contiguous part caches: for widths
``(w0, w1, ...)`` part ``i`` is ``[num_blocks, block_size, num_kv_heads, wi]``
starting where part ``i - 1`` ends. This is what torch_npu's operators want:
``_npu_reshape_and_cache`` and ``npu_fused_infer_attention_score`` take separate
contiguous key and value caches (BnBsND paged layout).

vLLM itself never reads the cache contents; the one place that writes them by
block is the runner's block zeroing, which therefore calls
:func:`zero_blocks` through the backend's ``zero_kv_cache_blocks``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def split_cache(kv_cache: torch.Tensor, widths: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Reinterpret a layer's KV slab as contiguous per-part caches (no copy).

    Args:
        kv_cache: vLLM's logical ``[num_blocks, num_kv_heads, block_size, sum(widths)]``
            view of an LBNHC allocation (physical ``[num_blocks, block_size, H, C]``), or the
            3-D ``[num_blocks, block_size, C]`` view vLLM's MLA layer passes (one head).
        widths: channel count of each part, e.g. ``(head_size, head_size_v)`` or
            ``(kv_lora_rank, qk_rope_head_dim)``.

    Returns:
        One ``[num_blocks, block_size, num_kv_heads, w]`` contiguous tensor per width,
        sharing ``kv_cache``'s storage, in order.

    Raises:
        ValueError: when ``kv_cache`` is not 4-D, its last dim is not ``sum(widths)``, or
            its physical pages are not one dense token-major slab (a layout other than
            LBNHC, or padded pages); the message names the layout to use.
    """
    if kv_cache.dim() == 3:  # MLA layers see [num_blocks, block_size, C] (one KV head)
        kv_cache = kv_cache.unsqueeze(1)
    if kv_cache.dim() != 4:
        raise ValueError(
            f"kv_cache must be vLLM's 4-D [num_blocks, num_kv_heads, block_size, C] view (or "
            f"3-D [num_blocks, block_size, C] for MLA), got shape {tuple(kv_cache.shape)}"
        )
    num_blocks, heads, block_size, channels = kv_cache.shape
    if channels != sum(widths):
        raise ValueError(
            f"kv_cache last dim {channels} must equal the sum of the part widths {list(widths)}"
        )
    pages = kv_cache.transpose(1, 2)
    if not pages.is_contiguous():
        raise ValueError(
            "kv_cache is not one dense token-major slab (strides "
            f"{tuple(kv_cache.stride())} for shape {tuple(kv_cache.shape)}); the Ascend backends "
            "need VLLM_KV_CACHE_LAYOUT=LBNHC without page padding"
        )
    flat = pages.reshape(-1)  # a view: pages is contiguous
    parts = []
    start = 0
    for width in widths:
        size = num_blocks * block_size * heads * width
        parts.append(flat[start : start + size].view(num_blocks, block_size, heads, width))
        start += size
    return tuple(parts)


def zero_blocks(kv_cache: torch.Tensor, block_ids: torch.Tensor, widths: Sequence[int]) -> None:
    """Zero blocks ``block_ids`` of every part cache of ``kv_cache`` (see :func:`split_cache`).

    Args:
        kv_cache: the layer's logical view, as for :func:`split_cache`.
        block_ids: int64 ``[n]`` block indices along the view's dim 0 (kernel blocks).
        widths: the part widths the backend splits the slab into.
    """
    for part in split_cache(kv_cache, widths):
        part.index_fill_(0, block_ids.to(part.device, torch.long), 0)
