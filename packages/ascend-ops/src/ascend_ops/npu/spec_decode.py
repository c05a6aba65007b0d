# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the speculative-decoding ops: vectorised aten device ops.

torch-npu 2.13.0 publishes no rejection-sampling operator (its schemas,
``npu_native_functions_by_codegen.yaml``, have ``npu_top_k_top_p(_sample)`` for filtering and
sampling but nothing that verifies drafts), so the branch is composed of aten ops that run on the
device: one ``[B, max_spec_len + 1]`` grid per call, gathers, a row minimum for the first
rejected position and ``where`` selects -- no loop per request, no host read (``.item()``/``.tolist()``),
no data-dependent output shape, so it can be captured in a graph. Every shape comes from host
ints (``N``, ``B``, ``V``, ``max_spec_len``). Arithmetic as ``ascend_ops.reference.spec_decode``
(float32 ratio and residual, the ratio compared with the float64 uniform).
"""

from __future__ import annotations

import torch

PLACEHOLDER_TOKEN_ID = -1


def _request_of_token(cu: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """[N] request index of each flat draft position (tokens t with cu[b-1] <= t < cu[b])."""
    tok = torch.arange(num_tokens, device=cu.device)
    req = (tok.unsqueeze(1) >= cu.to(torch.int64).unsqueeze(0)).sum(1)
    return req.clamp_(max=cu.shape[0] - 1)


def sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs,
                            inv_q):
    num_tokens, vocab = target_probs.shape
    p = target_probs.to(torch.float32)
    if draft_probs is None:
        cols = torch.arange(vocab, device=p.device).unsqueeze(0)
        residual = p.masked_fill(cols == draft_token_ids.to(torch.int64).unsqueeze(1), 0.0)
    else:
        residual = (p - draft_probs.to(torch.float32)).clamp_min_(0.0)
    noise = inv_q.index_select(0, _request_of_token(cu_num_draft_tokens, num_tokens))
    score = residual.to(inv_q.dtype) * noise
    return score.argmax(dim=-1).to(draft_token_ids.dtype)


def _gather(flat: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return flat.reshape(-1).index_select(0, idx.reshape(-1)).view(idx.shape)


def rejection_sample(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs,
                     draft_probs, bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy,
                     max_spec_len):
    device = draft_token_ids.device
    batch = cu_num_draft_tokens.shape[0]
    num_tokens = draft_token_ids.shape[0]
    width = max_spec_len + 1
    cu = cu_num_draft_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))                   # [B] drafts per request
    pos = torch.arange(width, device=device).unsqueeze(0)              # [1, S+1]
    bonus = bonus_token_ids.reshape(batch).to(torch.int32).unsqueeze(1)
    if num_tokens == 0:  # no drafts at all: every row is its bonus token
        return torch.where(pos == 0, bonus, PLACEHOLDER_TOKEN_ID).to(torch.int32)
    valid = pos < counts.unsqueeze(1)                                  # [B, S+1]
    idx = ((cu - counts).unsqueeze(1) + pos).clamp_(0, num_tokens - 1)  # flat token of each cell
    draft = _gather(draft_token_ids.to(torch.int64), idx)
    greedy_rows = (torch.ones(batch, dtype=torch.bool, device=device) if is_greedy is None
                   else is_greedy.to(torch.bool)).unsqueeze(1)

    if target_argmax is not None:
        argmax = _gather(target_argmax.to(torch.int64), idx)
        accept_greedy = draft == argmax
    else:
        argmax = torch.full_like(draft, PLACEHOLDER_TOKEN_ID)
        accept_greedy = torch.zeros_like(valid)
    if is_greedy is not None:
        vocab = target_probs.shape[1]
        cell = idx * vocab + draft.clamp(0, vocab - 1)
        p_d = _gather(target_probs, cell).to(torch.float32)
        q_d = (torch.ones_like(p_d) if draft_probs is None
               else _gather(draft_probs, cell).to(torch.float32))
        u = _gather(uniform_probs.to(torch.float64), idx)
        accept_random = (draft >= 0) & (q_d > 0) & ((p_d / q_d).to(torch.float64) >= u)
        recovered = _gather(recovered_token_ids.to(torch.int64), idx)
        accept = torch.where(greedy_rows, accept_greedy, accept_random)
        replacement = torch.where(greedy_rows, argmax, recovered)
    else:
        accept, replacement = accept_greedy, argmax

    # accepted prefix length = the first rejected position (a min over the row, no scan), or
    # the draft count when none is rejected (cells past a row's drafts never reject)
    first_rejected = torch.where(accept | ~valid, width, pos).amin(dim=1)
    num_accepted = torch.minimum(first_rejected, counts).unsqueeze(1)
    all_accepted = num_accepted == counts.unsqueeze(1)
    out = torch.where(pos < num_accepted, draft, PLACEHOLDER_TOKEN_ID)
    out = torch.where((pos == num_accepted) & ~all_accepted, replacement, out)
    out = torch.where((pos == num_accepted) & all_accepted, bonus.to(torch.int64), out)
    if target_argmax is None:  # greedy rows declared absent (vLLM's all_random): padding
        out = torch.where(greedy_rows, PLACEHOLDER_TOKEN_ID, out)
    return out.to(torch.int32)
