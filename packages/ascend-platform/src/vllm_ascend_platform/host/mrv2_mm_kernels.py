# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-ins for Model Runner V2's multimodal Triton kernels (vLLM 0.34,
``vllm/v1/worker/gpu/mm/``), registered with the step kernels by
``host.mrv2_spec_decode.register``. Same rule as ``host/mrv2_kernels.py``: no device value is
read back to the host.
"""

from __future__ import annotations

from typing import Any

import torch

from vllm_ascend_platform.host.mrv2_kernels import HostLaunch, _grid, _masked_assign, _token_rows


def _prepare_rope_positions(grid, positions_ptr, positions_stride, prefill_positions_ptr,
                            prefill_positions_stride0, prefill_positions_stride1,
                            prefill_delta_ptr, idx_mapping_ptr, query_start_loc_ptr,
                            prefill_lens_ptr, num_computed_tokens_ptr, BLOCK_SIZE=None,
                            NUM_DIMS=3, **_: Any) -> None:
    """``_prepare_rope_positions_kernel`` (``vllm/v1/worker/gpu/mm/rope.py``): for each token of
    batch row ``b`` (request ``r = idx_mapping[b]``, ``p = num_computed[r] + offset in the row``)
    and each of the ``NUM_DIMS`` position rows ``j``: while ``r`` is in its prefill
    (``num_computed[r] < prefill_lens[r]``) the staged M-RoPE position
    ``prefill_positions[r * stride0 + j * stride1 + p]`` (flat addressing, as the kernel), after
    it ``p + prefill_delta[r]``. ``positions`` is [NUM_DIMS, >= tokens] int64, written at
    ``[j, query_start + offset]``; tokens past the batch are left alone."""
    num_reqs = _grid(grid, 0)
    if num_reqs == 0:
        return
    num_slots = positions_ptr.shape[1]
    t, b, inside = _token_rows(query_start_loc_ptr, num_reqs, num_slots)
    req = idx_mapping_ptr[:num_reqs].to(torch.int64)[b]
    computed = num_computed_tokens_ptr.to(torch.int64)[req]
    orig = computed + (t - query_start_loc_ptr.to(torch.int64)[b])
    is_prefill = computed < prefill_lens_ptr.to(torch.int64)[req]
    delta = prefill_delta_ptr.to(torch.int64)[req]
    staged = prefill_positions_ptr.reshape(-1)
    limit = staged.numel() - 1
    for j in range(int(NUM_DIMS)):
        at = req * int(prefill_positions_stride0) + j * int(prefill_positions_stride1) + orig
        from_prefill = staged[at.clamp(0, limit)].to(torch.int64)
        value = torch.where(is_prefill, from_prefill, orig + delta)
        row = positions_ptr[j]
        _masked_assign(row, (t,), value, inside)


#: vLLM 0.34 qualified name -> stand-in (merged into the step kernels' registration)
MM_KERNELS: dict[str, Any] = {
    "vllm.v1.worker.gpu.mm.rope._prepare_rope_positions_kernel":
        HostLaunch(_prepare_rope_positions),
}
