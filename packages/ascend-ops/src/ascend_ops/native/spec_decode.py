# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of the speculative-decoding ops: marshal into ``ascend_ops._C``
(``csrc/spec_decode.cpp``). Index tensors go as int64, ``is_greedy`` as uint8, uniforms as
float64; probabilities keep their dtype (converted per element in C++). Semantics as in
``ascend_ops.reference.spec_decode``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import native_module
from ascend_ops.checks import spec_decode as chk
from ascend_ops.native.layers import DTYPE_CODES


def _i64(t):
    return t.to(torch.int64).contiguous()


def _probs(t):
    if t is None:
        return None, 0, 0
    t = t.contiguous()
    return t, t.data_ptr(), DTYPE_CODES[t.dtype]


def sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs,
                            inv_q):
    chk.layout(draft_token_ids, cu_num_draft_tokens, None, target_probs.shape[1])
    num_tokens, vocab = target_probs.shape
    cu, draft = _i64(cu_num_draft_tokens), _i64(draft_token_ids)
    tp, tp_ptr, tp_code = _probs(target_probs)
    dp, dp_ptr, dp_code = _probs(draft_probs)
    noise = inv_q.contiguous()
    out = torch.empty(num_tokens, dtype=torch.int64)
    native_module().sample_recovered_tokens(
        out.data_ptr(), cu.data_ptr(), draft.data_ptr(), dp_ptr, dp_code, tp_ptr, tp_code,
        noise.data_ptr(), noise.dtype == torch.float64, cu.shape[0], num_tokens, vocab)
    return out.to(draft_token_ids.dtype)


def rejection_sample(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs,
                     draft_probs, bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy,
                     max_spec_len):
    vocab = None if is_greedy is None or target_probs is None else target_probs.shape[1]
    chk.layout(draft_token_ids, cu_num_draft_tokens, max_spec_len, vocab)
    cu, draft = _i64(cu_num_draft_tokens), _i64(draft_token_ids)
    batch, num_tokens = cu.shape[0], draft.shape[0]
    keep = [cu, draft]
    argmax_ptr = rec_ptr = uni_ptr = greedy_ptr = 0
    if target_argmax is not None:
        # An empty tensor's data_ptr() is 0, which the kernel reads as "no greedy rows"; a step
        # with no draft tokens at all (N == 0) still emits each greedy row's bonus token.
        argmax = _i64(target_argmax) if num_tokens else torch.zeros(1, dtype=torch.int64)
        keep.append(argmax)
        argmax_ptr = keep[-1].data_ptr()
    if recovered_token_ids is not None:
        keep.append(_i64(recovered_token_ids))
        rec_ptr = keep[-1].data_ptr()
    if uniform_probs is not None:
        keep.append(uniform_probs.to(torch.float64).contiguous())
        uni_ptr = keep[-1].data_ptr()
    if is_greedy is not None:
        keep.append(is_greedy.to(torch.uint8).contiguous())
        greedy_ptr = keep[-1].data_ptr()
    bonus = _i64(bonus_token_ids.reshape(-1))
    tp, tp_ptr, tp_code = _probs(target_probs)
    dp, dp_ptr, dp_code = _probs(draft_probs)
    vocab = target_probs.shape[1] if target_probs is not None else 0
    out = torch.empty((batch, max_spec_len + 1), dtype=torch.int32)
    native_module().rejection_sample(
        out.data_ptr(), cu.data_ptr(), draft.data_ptr(), argmax_ptr, tp_ptr, tp_code, dp_ptr,
        dp_code, bonus.data_ptr(), rec_ptr, uni_ptr, greedy_ptr, batch, num_tokens, vocab,
        max_spec_len)
    return out
