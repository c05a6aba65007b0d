# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative-decoding verification ops: ``torch.ops.ascend.sample_recovered_tokens`` and
``torch.ops.ascend.rejection_sample``.

Semantics: vLLM 0.32 ``vllm/v1/sample/rejection_sampler.py`` (Leviathan et al.,
arXiv:2211.17192); the rule is spelled out in ``ascend_ops.reference.spec_decode``. Randomness
is an input (``uniform_probs``, ``inv_q``), so the NPU branch (``ascend_ops.npu.spec_decode``: aten
device ops, no torch_npu operator exists for it), the native C++ kernel
(``csrc/spec_decode.cpp``) and the reference agree token for token on the same noise.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import spec_decode as chk
from ascend_ops.families import FAMILIES
from ascend_ops.reference import spec_decode as ref

PLACEHOLDER_TOKEN_ID = ref.PLACEHOLDER_TOKEN_ID
_SPEC_DECODE = FAMILIES["spec_decode"]


def _recovered_impl(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                    draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                    inv_q: torch.Tensor) -> torch.Tensor:
    chk.recovered(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, inv_q)
    # the CPU branches also check the token layout (chk.layout) on the host first; the NPU
    # branch reads no device value back
    impl = _SPEC_DECODE.pick("sample_recovered_tokens", draft_token_ids)
    return impl.sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens, draft_probs,
                                        target_probs, inv_q)


def _rejection_impl(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                    target_argmax: torch.Tensor | None, target_probs: torch.Tensor | None,
                    draft_probs: torch.Tensor | None, bonus_token_ids: torch.Tensor,
                    recovered_token_ids: torch.Tensor | None,
                    uniform_probs: torch.Tensor | None, is_greedy: torch.Tensor | None,
                    max_spec_len: int) -> torch.Tensor:
    args = (draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs, draft_probs,
            bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy, max_spec_len)
    chk.rejection(*args)
    return _SPEC_DECODE.pick("rejection_sample", draft_token_ids).rejection_sample(*args)


_recovered_op = torch.library.custom_op("ascend::sample_recovered_tokens", mutates_args=())(
    _recovered_impl)
_rejection_op = torch.library.custom_op("ascend::rejection_sample", mutates_args=())(
    _rejection_impl)


@_recovered_op.register_fake
def _(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, inv_q):
    chk.recovered(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, inv_q)
    return torch.empty_like(draft_token_ids)


@_rejection_op.register_fake
def _(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs, draft_probs,
      bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy, max_spec_len):
    chk.rejection(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs,
                  draft_probs, bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy,
                  max_spec_len)
    return draft_token_ids.new_empty((cu_num_draft_tokens.shape[0], max_spec_len + 1),
                                     dtype=torch.int32)


def sample_recovered_tokens(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                            draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                            inv_q: torch.Tensor) -> torch.Tensor:
    """The token a rejected draft position emits: a sample of ``normalize(max(p - q, 0))``.

    Shapes: ``draft_token_ids`` [N] int32/int64 (flat drafts of all requests, -1 = padded);
    ``cu_num_draft_tokens`` [B] int32/int64, inclusive cumulative draft counts (``cu[-1] == N``);
    ``draft_probs`` [N, V] float32/bfloat16/float16 or None (n-gram drafts: ``q`` is the one-hot
    of the draft, so ``p`` with the draft's entry zeroed); ``target_probs`` [N, V] float32/
    bfloat16/float16; ``inv_q`` [B, V] float32/float64, ``1 / q`` with ``q ~ Exp(1)`` (one row
    per request, shared by its positions; vLLM's ``use_fp64_gumbel`` gives float64).
    Returns [N] in ``draft_token_ids.dtype``: argmax over V of ``max(p - q, 0) * inv_q[b]``
    (float32 residual; product in ``inv_q.dtype``; ties: lowest id on the CPU backends).
    Source: vLLM 0.32 ``sample_recovered_tokens_kernel``. NPU: aten device ops.
    Raises TypeError/ValueError naming the argument for wrong dtypes, shapes or devices; the CPU
    backends also for a malformed ``cu_num_draft_tokens`` or draft ids outside [-1, V).
    """
    tensors = [t for t in (draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs,
                           inv_q) if t is not None]
    if eager_direct(*tensors):
        return _recovered_impl(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs,
                               inv_q)
    return torch.ops.ascend.sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens,
                                                    draft_probs, target_probs, inv_q)


def rejection_sample(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                     target_argmax: torch.Tensor | None, target_probs: torch.Tensor | None,
                     draft_probs: torch.Tensor | None, bonus_token_ids: torch.Tensor,
                     recovered_token_ids: torch.Tensor | None,
                     uniform_probs: torch.Tensor | None, is_greedy: torch.Tensor | None,
                     max_spec_len: int) -> torch.Tensor:
    """Verify draft tokens; returns ``[B, max_spec_len + 1]`` int32 output token ids.

    Row ``b`` holds its accepted drafts, then the recovered token at the first rejected position
    (greedy rows: the target argmax there) or, when every draft was accepted, the bonus token;
    the remaining cells are ``PLACEHOLDER_TOKEN_ID`` (-1). Greedy rows accept a draft equal to
    ``target_argmax``; random rows accept draft ``d >= 0`` when ``q(d) > 0`` and
    ``float32(p(d) / q(d)) >= uniform_probs`` (``q(d) = 1`` when ``draft_probs`` is None).

    Shapes: ``draft_token_ids`` [N] int32/int64; ``cu_num_draft_tokens`` [B] int32/int64
    (inclusive cumulative counts, each count <= ``max_spec_len``); ``target_argmax`` [N] int or
    None (only when no row is greedy, vLLM's ``all_random``: greedy rows then stay -1);
    ``target_probs`` / ``draft_probs`` [N, V] float32/bfloat16/float16 (``draft_probs`` None for
    n-gram drafts); ``bonus_token_ids`` [B] or [B, 1] int; ``recovered_token_ids`` [N] int (from
    :func:`sample_recovered_tokens`); ``uniform_probs`` [N] float64 (float32 accepted) in
    [0, 1); ``is_greedy`` [B] bool, or None when every row is greedy (then ``target_probs``,
    ``recovered_token_ids`` and ``uniform_probs`` may be None); ``max_spec_len`` host int.
    Source: vLLM 0.32 ``rejection_sample`` (its greedy and random kernels). NPU: aten device ops
    (no host sync, graph-capturable); draft ids outside [-1, V) are clamped there, while the CPU
    backends raise ValueError.
    Raises TypeError/ValueError naming the argument for wrong dtypes, shapes, devices or a
    missing input.
    """
    args = (draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs, draft_probs,
            bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy, max_spec_len)
    if eager_direct(*(t for t in args[:-1] if t is not None)):
        return _rejection_impl(*args)
    return torch.ops.ascend.rejection_sample(*args)
