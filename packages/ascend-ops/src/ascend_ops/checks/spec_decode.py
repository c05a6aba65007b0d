# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the speculative-decoding ops (``ascend_ops.ops.spec_decode``).

``shapes`` reads only tensor metadata (safe on the device, inside a graph capture); ``layout``
reads the index data and runs for the CPU backends only (on the NPU it would be a host sync).
Errors name the argument and the fix.
"""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import FLOAT_DTYPES, float_tensor, index_tensor, tensor

UNIFORM_DTYPES = (torch.float64, torch.float32)
NOISE_DTYPES = (torch.float32, torch.float64)


def _probs(name: str, t, num_tokens: int, vocab: int | None) -> None:
    float_tensor(name, t, 2)
    if t.shape[0] != num_tokens or (vocab is not None and t.shape[1] != vocab):
        want = f"[{num_tokens}, {vocab if vocab is not None else 'vocab_size'}]"
        raise ValueError(f"{name} must be {want} (one row per draft token), got "
                         f"{tuple(t.shape)}")
    if t.shape[1] < 1:
        raise ValueError(f"{name} must have a vocabulary of at least one token")


def _same_device(pairs) -> None:
    first = None
    for name, t in pairs:
        if t is None:
            continue
        if first is None:
            first = (name, t.device)
        elif t.device != first[1]:
            raise ValueError(f"{name} is on {t.device} but {first[0]} is on {first[1]}; "
                             "move every argument to one device")


def recovered(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, inv_q) -> None:
    index_tensor("draft_token_ids", draft_token_ids, 1)
    index_tensor("cu_num_draft_tokens", cu_num_draft_tokens, 1)
    n = draft_token_ids.shape[0]
    _probs("target_probs", target_probs, n, None)
    vocab = target_probs.shape[1]
    if draft_probs is not None:
        _probs("draft_probs", draft_probs, n, vocab)
    tensor("inv_q", inv_q, 2)
    if inv_q.dtype not in NOISE_DTYPES:
        raise TypeError(f"inv_q must be float32 or float64 (1 / Exp(1) noise), got {inv_q.dtype}")
    b = cu_num_draft_tokens.shape[0]
    if b < 1 or tuple(inv_q.shape) != (b, vocab):
        raise ValueError(f"inv_q must be [batch_size={b}, vocab_size={vocab}] (one noise row "
                         f"per request; batch_size >= 1), got {tuple(inv_q.shape)}")
    _same_device([("draft_token_ids", draft_token_ids), ("cu_num_draft_tokens",
                  cu_num_draft_tokens), ("draft_probs", draft_probs),
                  ("target_probs", target_probs), ("inv_q", inv_q)])


def rejection(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs, draft_probs,
              bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy,
              max_spec_len) -> None:
    index_tensor("draft_token_ids", draft_token_ids, 1)
    index_tensor("cu_num_draft_tokens", cu_num_draft_tokens, 1)
    n, b = draft_token_ids.shape[0], cu_num_draft_tokens.shape[0]
    if b < 1:
        raise ValueError("cu_num_draft_tokens must have one entry per request (batch_size >= 1)")
    if not isinstance(max_spec_len, int) or max_spec_len < 0:
        raise ValueError(f"max_spec_len must be an int >= 0 (the largest per-request draft "
                         f"count), got {max_spec_len!r}")
    index_tensor("bonus_token_ids", bonus_token_ids)
    if bonus_token_ids.numel() != b or bonus_token_ids.dim() not in (1, 2):
        raise ValueError(f"bonus_token_ids must be [{b}] or [{b}, 1], got "
                         f"{tuple(bonus_token_ids.shape)}")
    for name, t in (("target_argmax", target_argmax), ("recovered_token_ids",
                                                       recovered_token_ids)):
        if t is not None:
            index_tensor(name, t, 1)
            if t.shape[0] != n:
                raise ValueError(f"{name} must be [{n}] (one per draft token), got "
                                 f"{tuple(t.shape)}")
    if is_greedy is None:
        if target_argmax is None:
            raise ValueError("target_argmax is required when is_greedy is None (every request "
                             "greedy); pass target_logits.argmax(-1)")
    else:
        tensor("is_greedy", is_greedy, 1)
        if is_greedy.dtype != torch.bool or is_greedy.shape[0] != b:
            raise ValueError(f"is_greedy must be a bool [{b}] tensor, got "
                             f"{tuple(is_greedy.shape)} {is_greedy.dtype}")
        missing = [name for name, t in (("target_probs", target_probs), ("recovered_token_ids",
                   recovered_token_ids), ("uniform_probs", uniform_probs)) if t is None]
        if missing:
            raise ValueError(f"{', '.join(missing)} required when is_greedy is given (random "
                             "rows may be present); pass is_greedy=None for an all-greedy batch")
        _probs("target_probs", target_probs, n, None)
        if draft_probs is not None:
            _probs("draft_probs", draft_probs, n, target_probs.shape[1])
        tensor("uniform_probs", uniform_probs, 1)
        if uniform_probs.dtype not in UNIFORM_DTYPES or uniform_probs.shape[0] != n:
            raise ValueError(f"uniform_probs must be float64 (vLLM's dtype) or float32 [{n}], "
                             f"got {tuple(uniform_probs.shape)} {uniform_probs.dtype}")
    for name, t in (("target_probs", target_probs), ("draft_probs", draft_probs)):
        if t is not None and t.dtype not in FLOAT_DTYPES:
            float_tensor(name, t)
    _same_device([("draft_token_ids", draft_token_ids), ("cu_num_draft_tokens",
                  cu_num_draft_tokens), ("target_argmax", target_argmax),
                  ("target_probs", target_probs), ("draft_probs", draft_probs),
                  ("bonus_token_ids", bonus_token_ids), ("recovered_token_ids",
                  recovered_token_ids), ("uniform_probs", uniform_probs),
                  ("is_greedy", is_greedy)])


def layout(draft_token_ids, cu_num_draft_tokens, max_spec_len: int | None,
           vocab: int | None) -> None:
    """Data checks for the CPU backends: inclusive cumulative counts, drafts ids in range."""
    cu = cu_num_draft_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    n = draft_token_ids.shape[0]
    if bool((counts < 0).any()) or int(cu[-1]) != n:
        raise ValueError(f"cu_num_draft_tokens must be the inclusive cumulative draft counts "
                         f"(non-decreasing, last == {n} draft tokens), got {cu.tolist()}")
    if max_spec_len is not None and int(counts.max()) > max_spec_len:
        raise ValueError(f"a request has {int(counts.max())} drafts, more than max_spec_len="
                         f"{max_spec_len}; pass max(num_draft_tokens)")
    if vocab is not None and n:
        lo, hi = int(draft_token_ids.min()), int(draft_token_ids.max())
        if lo < -1 or hi >= vocab:
            raise ValueError(f"draft_token_ids must lie in [-1, vocab_size={vocab}) (-1: padded "
                             f"draft), got values in [{lo}, {hi}]")
