# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Torch stand-ins for the Triton kernels of vLLM 0.32's EAGLE/MTP proposer (host modes).

vLLM's ``EagleProposer`` (``vllm/v1/spec_decode/llm_base_proposer.py``) launches three Triton
kernels from ``vllm/v1/spec_decode/utils.py`` on every speculative step. Triton has no backend
here, so :mod:`vllm_ascend_platform.host.triton_overrides` registers these functions through vLLM's
``register_kernels`` hook. Each one has the kernel's argument names (the dispatcher forwards by
name) and the kernel's contract; all are batched tensor ops (no per-request host loop, no device
read), so they are also legal inside a graph capture.
"""

from __future__ import annotations

import torch


def _req_ids(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.arange(n, device=like.device)


def eagle_prepare_next_token_padded(
    sampled_token_ids_ptr: torch.Tensor,
    discard_request_mask_ptr: torch.Tensor,
    backup_next_token_ids_ptr: torch.Tensor,
    next_token_ids_ptr: torch.Tensor,
    valid_sampled_tokens_count_ptr: torch.Tensor,
    vocab_size: int,
    num_sampled_tokens_per_req: int,
    num_reqs: int,
    stride_sampled_token_ids: int,
    BLOCK_SIZE_TOKENS: int,  # noqa: N803 (the Triton kernel's name)
) -> None:
    """Per request: the last valid sampled token (``-1`` marks rejected slots) and the count of
    valid ones; discarded requests and requests without a valid token take the backup token
    (count 0 when discarded). Kernel: ``eagle_prepare_next_token_padded_kernel``.

    Shapes: ``sampled_token_ids`` int32 ``[num_reqs, >= num_sampled_tokens_per_req]``, the
    others ``[num_reqs]`` (outputs written in place).
    """
    tokens = sampled_token_ids_ptr[:num_reqs, :num_sampled_tokens_per_req]
    valid = (tokens != -1) & (tokens < vocab_size)
    count = valid.sum(dim=1)
    cols = torch.arange(tokens.shape[1], device=tokens.device)
    last = torch.where(valid, cols, -1).amax(dim=1).clamp_min(0)
    last_token = tokens.gather(1, last[:, None]).squeeze(1)
    discarded = discard_request_mask_ptr[:num_reqs].to(torch.bool)
    backup = backup_next_token_ids_ptr[:num_reqs]
    use_backup = discarded | (count == 0)
    next_token_ids_ptr[:num_reqs] = torch.where(use_backup, backup.to(last_token.dtype), last_token)
    valid_sampled_tokens_count_ptr[:num_reqs] = torch.where(discarded, 0, count)


def eagle_prepare_inputs_padded(
    cu_num_draft_tokens_ptr: torch.Tensor,
    valid_sampled_tokens_count_ptr: torch.Tensor,
    query_start_loc_gpu_ptr: torch.Tensor,
    token_indices_to_sample_ptr: torch.Tensor,
    num_rejected_tokens_gpu_ptr: torch.Tensor,
    num_reqs: int,
) -> None:
    """Per request: rejected drafts ``num_draft + 1 - valid`` (0 without drafts) and the token
    index to sample (last query token minus the rejected ones). Kernel:
    ``eagle_prepare_inputs_padded_kernel``; ``cu_num_draft_tokens`` is the inclusive cumsum.
    """
    cu = cu_num_draft_tokens_ptr[:num_reqs]
    num_draft = cu - torch.cat([cu.new_zeros(1), cu[:-1]])
    valid = valid_sampled_tokens_count_ptr[:num_reqs].to(num_draft.dtype)
    rejected = torch.where(num_draft > 0, num_draft + 1 - valid, 0)
    last = query_start_loc_gpu_ptr[1 : num_reqs + 1].to(num_draft.dtype) - 1
    token_indices_to_sample_ptr[:num_reqs] = last - rejected
    num_rejected_tokens_gpu_ptr[:num_reqs] = rejected


def eagle_step_slot_mapping_metadata(
    positions_ptr: torch.Tensor,
    block_table_ptr: torch.Tensor,
    block_table_stride: int,
    seq_lens_ptr: torch.Tensor,
    out_clamped_positions_ptr: torch.Tensor,
    out_slot_mapping_ptr: torch.Tensor,
    block_size: int,
    max_model_len: int,
    n_blocks_per_req: int,
    PAD_ID: int,  # noqa: N803 (the Triton kernel's name)
    batch_size: int,
) -> None:
    """One autoregressive draft step: position + 1 (0 past ``max_model_len``), its KV slot
    from the block table (``PAD_ID`` past the limit and for padded rows ``>= batch_size``),
    ``seq_lens`` + 1 (1 past the limit, capped at it). Kernel:
    ``eagle_step_slot_mapping_metadata_kernel``.
    """
    pos = positions_ptr[:batch_size] + 1
    exceeds = pos >= max_model_len
    clamped = torch.where(exceeds, 0, pos)
    block_number = torch.clamp(clamped // block_size, max=n_blocks_per_req - 1)
    rows = _req_ids(batch_size, pos)
    table = block_table_ptr.reshape(-1)
    block_id = table[rows * block_table_stride + block_number].to(torch.int64)
    slot = block_id * block_size + clamped % block_size
    out_clamped_positions_ptr[:batch_size] = clamped
    out_slot_mapping_ptr[:batch_size] = torch.where(exceeds, PAD_ID, slot)
    out_slot_mapping_ptr[batch_size:] = PAD_ID
    seq = seq_lens_ptr[:batch_size]
    seq_lens_ptr[:batch_size] = torch.clamp(torch.where(exceeds, 1, seq + 1), max=max_model_len)


#: vLLM kernel qualname -> stand-in, for ``vllm.triton_utils.dispatcher.register_kernels``
KERNELS = {
    "vllm.v1.spec_decode.utils.eagle_prepare_next_token_padded_kernel":
        eagle_prepare_next_token_padded,
    "vllm.v1.spec_decode.utils.eagle_prepare_inputs_padded_kernel": eagle_prepare_inputs_padded,
    "vllm.v1.spec_decode.utils.eagle_step_slot_mapping_metadata_kernel":
        eagle_step_slot_mapping_metadata,
}
