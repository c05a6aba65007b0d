# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-ins for the Triton kernels of vLLM 0.34's speculative decoding on Model Runner V2.

vLLM 0.34 (``vllm/v1/worker/gpu/spec_decode/``) drafts through speculator classes and verifies
through ``RejectionSampler`` (``rejection_sampler.py``), both launching Triton kernels that have
no backend in our host modes (CPU emulation, simulated NPU). This module replaces them through
the same seam as :mod:`vllm_ascend_platform.host.mrv2_kernels` (vLLM's
``vllm.triton_utils.dispatcher.register_kernels``, called from
``NPUPlatform.register_triton_kernel_overrides``; see docs/model-runner-v2.md, "Kernel table"):

* EAGLE / EAGLE-3 / MTP (``spec_decode/target_dependent_ar/speculator.py``): the draft-prefill
  input shift (``prepare_prefill_inputs``, wrapper level), the first draft-decode step's inputs
  (``_prepare_decode_inputs_kernel``, launched from a method: kernel level) and the per-step
  draft input update (``update_draft_inputs``, wrapper level);
* verification (``spec_decode/rejection_sampler_utils.py``, ``rejection_sample``): greedy and
  sampled (temperature > 0) rows through ``ascend_ops.rejection_sample`` and
  ``ascend_ops.sample_recovered_tokens`` (their NPU branch runs on the simulated NPU), with the
  randomness keyed as vLLM keys it (request seed and position, murmur3 counter hash; see
  :func:`rejection_sample`), with one-hot (greedy) drafts or the draft-logits cache
  (``draft_sample_method="probabilistic"``).

Also :func:`host_draft_tokens_handler_cls`: vLLM's ``DraftTokensHandler``
(``spec_decode/utils.py``) copies drafts for structured-output requests on a side stream and
calls ``Tensor.record_stream``, which a host tensor cannot do with a stand-in stream.
"""

from __future__ import annotations

from typing import Any

import torch

from vllm_ascend_platform.host.mrv2_kernels import (
    KERNELS as STEP_KERNELS,
)
from vllm_ascend_platform.host.mrv2_kernels import (
    HostLaunch,
    _grid,
    gumbel_sample,
    murmur3_noise_at,
    murmur3_uniform32,
)
from vllm_ascend_platform.host.mrv2_kernels import register as register_step_kernels
from vllm_ascend_platform.host.mrv2_logprobs import KERNELS as LOGPROB_KERNELS

# the murmur3 counter the acceptance draws use in place of a token id: never a vocabulary
# index, so the acceptance uniform of a position is independent of the Gumbel noise that
# resamples it (vLLM draws the former from Triton's Philox ``tl.rand(seed, pos)`` and the
# latter from murmur3(seed, pos, token id): a different stream, see ``_rejection_kernel``)
_ACCEPT_KEY = 0xFFFFFFFF


# ---- spec_decode/target_dependent_ar/speculator.py -------------------------------------------

def prepare_draft_prefill_inputs(last_token_indices, current_draft_step, input_buffers,
                                 input_batch, num_sampled, num_rejected, last_sampled,
                                 next_prefill_tokens, max_num_reqs):
    """``prepare_prefill_inputs`` (``_prepare_prefill_inputs_kernel``) of the target-dependent
    AR speculators: per request, the target's query tokens shifted left by one (rejected tail
    dropped) with the next token (last sampled, or the next prompt token of a chunked prefill)
    at the end, the target's positions, ``query_start_loc``/``seq_lens``; rows past the batch
    padded (query_start_loc = last end, seq_lens and last_token_indices 0); the draft step
    reset to 0. Returns ``last_token_indices``."""
    num_reqs = input_batch.num_reqs
    if num_reqs == 0:
        return last_token_indices
    draft_ids, draft_pos = input_buffers.input_ids, input_buffers.positions
    qsl = input_batch.query_start_loc[: num_reqs + 1].tolist()
    rejected = num_rejected[:num_reqs].tolist()
    sampled = num_sampled[:num_reqs].tolist()
    states = input_batch.idx_mapping[:num_reqs].tolist()
    # the kernel reads next_prefill_tokens[state] (the first look-ahead row of a 2-D buffer)
    next_prefill = next_prefill_tokens.reshape(-1)
    target_ids, target_pos = input_batch.input_ids, input_batch.positions
    for i in range(num_reqs):
        start = qsl[i]
        query_len = qsl[i + 1] - start - rejected[i]
        state = states[i]
        nxt = last_sampled[state] if sampled[i] > 0 else next_prefill[state]
        if query_len > 1:
            draft_ids[start:start + query_len - 1] = target_ids[start + 1:start + query_len]
        last = start + query_len - 1
        last_token_indices[i] = last
        draft_ids[last] = nxt.to(draft_ids.dtype)
        draft_pos[start:start + query_len] = target_pos[start:start + query_len]
    input_buffers.query_start_loc[:num_reqs] = input_batch.query_start_loc[:num_reqs]
    input_buffers.seq_lens[:num_reqs] = input_batch.seq_lens[:num_reqs]
    current_draft_step.fill_(0)
    input_buffers.query_start_loc[num_reqs:max_num_reqs + 1] = qsl[num_reqs]
    input_buffers.seq_lens[num_reqs:max_num_reqs] = 0
    last_token_indices[num_reqs:max_num_reqs] = 0
    return last_token_indices


def _prepare_decode_inputs(grid, draft_tokens_ptr, draft_tokens_stride, target_seq_lens_ptr,
                           num_rejected_ptr, input_ids_ptr, positions_ptr,
                           sample_src_positions_ptr, query_start_loc_ptr, seq_lens_ptr,
                           max_model_len, max_num_reqs, BLOCK_SIZE=None,  # noqa: N803
                           ADVANCE_DRAFT_POSITIONS=True, **_: Any) -> None:  # noqa: N803
    """``_prepare_decode_inputs_kernel`` (grid ``num_reqs + 1``): the first draft-decode step's
    inputs. Per request: the first draft token as input id, the sampling position + 1,
    ``seq_len = target_seq_len - rejected`` (+ 1 and the position + 1, both clamped to the
    model length, when draft steps advance positions); ``query_start_loc = min(i, num_reqs)``
    over ``max_num_reqs + 1`` entries and ``seq_lens`` past the batch 0 (graph padding).
    ``draft_tokens_ptr`` is vLLM's ``draft_tokens[:num_reqs, 0]`` view (its row stride)."""
    n = _grid(grid, 0) - 1
    query_start_loc_ptr[: max_num_reqs + 1] = torch.arange(max_num_reqs + 1).clamp_max(n).to(
        query_start_loc_ptr.dtype)
    seq_lens_ptr[n:max_num_reqs] = 0
    if n <= 0:
        return
    input_ids_ptr[:n] = draft_tokens_ptr[:n].to(input_ids_ptr.dtype)
    sample_src_positions_ptr[:n] += 1
    seq = target_seq_lens_ptr[:n].to(torch.int64) - num_rejected_ptr[:n].to(torch.int64)
    if ADVANCE_DRAFT_POSITIONS:
        positions_ptr[:n] = (positions_ptr[:n] + 1).clamp_max(max_model_len - 1)
        seq = (seq + 1).clamp_max(max_model_len)
    seq_lens_ptr[:n] = seq.to(seq_lens_ptr.dtype)


def update_draft_inputs(draft_tokens, current_draft_step, hidden_states, output_draft_tokens,
                        next_input_hidden_states, input_buffers, sample_src_positions, num_reqs,
                        max_model_len, num_speculative_steps, advance_draft_positions=True):
    """``update_draft_inputs`` (``_update_draft_inputs_kernel``): store draft step ``s`` (the
    device scalar ``current_draft_step``) into column ``s`` of ``output_draft_tokens``; unless
    it is the last step, feed the token and the draft's hidden state to the next step, advance
    the sampling position and (when positions advance) position and ``seq_lens``, clamped to
    ``max_model_len`` (a device scalar)."""
    n = num_reqs
    step = int(current_draft_step)
    output_draft_tokens[:n, step] = draft_tokens[:n].to(output_draft_tokens.dtype)
    if step >= num_speculative_steps - 1:
        return
    sample_src_positions[:n] += 1
    input_buffers.input_ids[:n] = draft_tokens[:n].to(input_buffers.input_ids.dtype)
    next_input_hidden_states[:n] = hidden_states[:n]
    if advance_draft_positions:
        limit = int(max_model_len)
        input_buffers.positions[:n] = (input_buffers.positions[:n] + 1).clamp_max(limit - 1)
        input_buffers.seq_lens[:n] = (input_buffers.seq_lens[:n] + 1).clamp_max(limit)


# ---- spec_decode/rejection_sampler_utils.py --------------------------------------------------

def _exp_race_noise(seeds: torch.Tensor, pos: torch.Tensor, probs: torch.Tensor,
                    use_fp64: bool) -> torch.Tensor:
    """``1 / E`` [rows, vocab] from vLLM's murmur3 uniform ``u`` of (seed, pos, token id):
    ``E = -log(1 - u)`` (float32), or ``-log(u)`` from the 53-bit uniform (float64, vLLM's
    ``use_fp64_gumbel``), so ``argmax(p * (1 / E))`` is the Gumbel-max draw vLLM's
    ``_resample_kernel`` takes from the same ``u`` (``argmax(log p + gumbel(u))``). Drawn only
    where ``probs > 0`` (elsewhere the residual is 0 whatever the noise)."""
    def inverse_exponential(u: torch.Tensor) -> torch.Tensor:
        e = -torch.log(u) if u.dtype == torch.float64 else -torch.log1p(-u)
        return torch.reciprocal(e)

    return murmur3_noise_at(seeds.to(torch.int64), pos.to(torch.int64), probs > 0,
                            inverse_exponential, 1.0, use_fp64)


def _recovered_at_first_rejection(drafts, cu_drafts, num_drafts, target_probs, draft_probs,
                                  uniform, is_greedy, row_seed, row_pos, vocab, use_fp64):
    """Recovered tokens [N] for ``ascend_ops.rejection_sample``, computed (by
    ``ascend_ops.sample_recovered_tokens``, one noise row per verification row: vLLM keys the
    resample by that row's position) only where the op will read one: the first rejected draft
    of each sampled request, found with the op's own rule (``q(d) > 0`` and float32
    ``p(d) / q(d) >= u``). Other entries are 0, never emitted. Saves the noise and the residual
    over the vocabulary for every other row (at 256 requests x 3 drafts x 49k tokens, most of
    a host step)."""
    import ascend_ops

    n = drafts.shape[0]
    valid = drafts >= 0
    d = drafts.clamp_min(0)[:, None]
    p_d = target_probs.gather(1, d).squeeze(1)
    q_d = torch.ones_like(p_d) if draft_probs is None else draft_probs.gather(1, d).squeeze(1)
    ratio = (p_d / torch.where(q_d > 0, q_d, 1.0)).double()
    accepted = valid & (q_d > 0) & (ratio >= uniform)
    req_of = torch.repeat_interleave(torch.arange(num_drafts.shape[0]), num_drafts)
    # rows up to and including each sampled request's first rejection
    rejected_before = torch.zeros(n, dtype=torch.int64)
    rejected_before[1:] = torch.cumsum((~accepted).to(torch.int64), 0)[:-1]
    first_of_req = torch.repeat_interleave(cu_drafts - num_drafts, num_drafts)
    before_in_req = rejected_before - rejected_before[first_of_req]
    wanted = (~accepted) & (before_in_req == 0) & ~is_greedy[req_of]
    out = torch.zeros_like(drafts)
    rows = wanted.nonzero().squeeze(1)
    if rows.numel():
        inv_q = _exp_race_noise(row_seed[rows], row_pos[rows], target_probs[rows], use_fp64)
        one_each = torch.arange(1, rows.numel() + 1, dtype=torch.int64)
        out[rows] = ascend_ops.sample_recovered_tokens(
            drafts[rows], one_each, None if draft_probs is None else draft_probs[rows],
            target_probs[rows], inv_q)
    return out


def rejection_sample(target_logits, draft_logits_cache, draft_sampled, cu_num_logits, pos,
                     idx_mapping, expanded_idx_mapping, expanded_local_pos, temperature, seed,
                     num_speculative_steps, synthetic_conditional_rates=None, use_fp64=False,
                     use_block_verification=False, contexts=None, watermarking=None,
                     watermarking_skip_mask=None, watermark_key=None, fly_window_size=0,
                     fly_entropy_threshold=0.3, fly_entropy_top_k=3,
                     skip_masked_vocab_blocks=False):
    """vLLM 0.34's ``rejection_sample`` (standard rule, arXiv:2211.17192) on ``ascend_ops``.

    Layout (vLLM's): request ``r`` owns logits rows ``[cu[r], cu[r+1])`` (temperature, top-k/p
    already applied by the sampler); row ``j`` verifies the draft fed at row ``j + 1``
    (``draft_sampled[j + 1]``, -1 = placeholder, always rejected); the last row is the bonus.
    Greedy requests (temperature 0) accept a draft equal to the row's argmax and emit the
    argmax at the first mismatch. Sampled requests accept draft ``d`` when
    ``p(d) / q(d) >= u`` (``q`` one-hot for greedy drafts, else the softmax of the draft-logits
    cache at the request's temperature) and emit a sample of ``normalize(max(p - q, 0))`` at
    the first rejection (``p`` itself after a placeholder); all accepted emits a sample of the
    bonus row. Randomness is keyed by (request seed, row position) as in vLLM: the acceptance
    uniform is murmur3(seed, pos, 0xFFFFFFFF) (vLLM: Philox ``tl.rand(seed, pos)``, so accepted
    counts agree in distribution, not draw for draw), the recovered and bonus samples use the
    murmur3(seed, pos, token id) Gumbel stream of vLLM's ``gumbel_sample`` (the same draw, up
    to float rounding).

    Shapes: ``target_logits`` [num_logits, V]; ``draft_sampled``/``pos``
    [num_logits]; ``cu_num_logits`` [num_reqs + 1]; ``idx_mapping`` [num_reqs] request-state
    rows; ``temperature``/``seed`` [max_num_reqs]. Returns (``sampled`` int64
    [num_reqs, num_speculative_steps + 1], ``num_sampled`` int32 [num_reqs]).

    Raises:
        NotImplementedError: synthetic acceptance rates, block verification, watermarking and
            FLy (``rejection_sample_method`` other than ``"standard"``).
    """
    import ascend_ops

    if (synthetic_conditional_rates is not None or use_block_verification or contexts is not None
            or fly_window_size > 0):
        raise NotImplementedError(
            "vllm-ascend host mode: speculative_config.rejection_sample_method other than "
            "'standard' (synthetic, block, FLy) and watermarked verification are not supported")
    num_reqs = cu_num_logits.shape[0] - 1
    vocab = target_logits.shape[1]
    cache = None
    if draft_logits_cache is not None:
        cache = draft_logits_cache.values
        vocab = min(vocab, cache.shape[-1])
    logits = target_logits[:, :vocab]
    if logits.dtype != torch.float32:
        logits = logits.float()
    cu = cu_num_logits[: num_reqs + 1].to(torch.int64)
    counts = cu[1:] - cu[:-1]
    bonus_rows = cu[1:] - 1
    states = idx_mapping[:num_reqs].to(torch.int64)
    temp = temperature[states].float()
    is_greedy = temp == 0
    all_greedy = bool(is_greedy.all())

    # bonus row of each request: its argmax, or a Gumbel draw (seed, pos) of the processed logits
    bonus = gumbel_sample(logits[bonus_rows], states, temperature, seed,
                          None if all_greedy else pos[bonus_rows], apply_temperature=False,
                          is_drafting=False, use_fp64=use_fp64)
    sampled = torch.zeros(num_reqs, num_speculative_steps + 1, dtype=torch.int64)
    is_draft_row = torch.ones(logits.shape[0], dtype=torch.bool)
    is_draft_row[bonus_rows] = False
    rows = is_draft_row.nonzero().squeeze(1)
    if rows.numel() == 0:
        sampled[:, 0] = bonus
        return sampled, torch.ones(num_reqs, dtype=torch.int32)
    drafts = draft_sampled[rows + 1].to(torch.int64)
    cu_drafts = torch.cumsum(counts - 1, 0)
    row_state = torch.repeat_interleave(states, counts - 1)
    target_argmax = ascend_ops.greedy_argmax(logits[rows])
    if all_greedy:
        out = ascend_ops.rejection_sample(drafts, cu_drafts, target_argmax, None, None, bonus,
                                          None, None, None, num_speculative_steps)
    else:
        target_probs = torch.softmax(logits[rows], dim=-1)
        draft_probs = None
        if cache is not None:
            cache_rows = row_state
            mapping = getattr(draft_logits_cache, "row_mapping", None)
            if mapping is not None:
                cache_rows = mapping[row_state].to(torch.int64).clamp_min(0)
            steps = torch.arange(rows.numel()) - torch.repeat_interleave(cu_drafts - (counts - 1),
                                                                          counts - 1)
            row_temp = temperature[row_state].float()
            row_temp = torch.where(row_temp == 0, 1.0, row_temp)
            draft_logits = cache[cache_rows, steps, :vocab].float() / row_temp[:, None]
            draft_probs = torch.softmax(draft_logits, dim=-1)
        row_seed = seed[row_state].to(torch.int64)
        row_pos = pos[rows].to(torch.int64)
        uniform = murmur3_uniform32(row_seed, row_pos,
                                    torch.full_like(row_pos, _ACCEPT_KEY)).double()
        recovered = _recovered_at_first_rejection(drafts, cu_drafts, counts - 1, target_probs,
                                                  draft_probs, uniform, is_greedy, row_seed,
                                                  row_pos, vocab, use_fp64)
        out = ascend_ops.rejection_sample(drafts, cu_drafts, target_argmax, target_probs,
                                          draft_probs, bonus, recovered, uniform, is_greedy,
                                          num_speculative_steps)
    out = out.to(torch.int64)
    width = min(out.shape[1], num_speculative_steps + 1)
    sampled[:, :width] = out[:, :width]
    num_sampled = (out >= 0).sum(dim=1).to(torch.int32)
    return sampled, num_sampled


def _flatten_sampled(grid, flat_sampled_ptr, sampled_ptr, sampled_stride, num_sampled_ptr,
                     cu_num_logits_ptr, **_: Any) -> None:
    """``_flatten_sampled_kernel`` (``rejection_sampler.py``, logprobs of verified tokens): each
    request's ``num_sampled`` tokens into its logits rows ``cu[r]..`` of ``flat_sampled``."""
    n = _grid(grid, 0)
    counts = num_sampled_ptr[:n].to(torch.int64)
    starts = cu_num_logits_ptr[:n].to(torch.int64)
    req = torch.repeat_interleave(torch.arange(n), counts)
    local = torch.arange(int(counts.sum())) - torch.repeat_interleave(
        torch.cumsum(counts, 0) - counts, counts)
    flat_sampled_ptr[starts[req] + local] = sampled_ptr[req, local].to(flat_sampled_ptr.dtype)


# ---- spec_decode/utils.py: DraftTokensHandler ------------------------------------------------

def host_draft_tokens_handler_cls() -> type:
    """vLLM's ``DraftTokensHandler`` whose draft copy for structured-output batches is a plain
    host copy: on the host the drafts are already in host memory (and ``record_stream`` of a
    host tensor on a stand-in stream raises ``RuntimeError: unknown parameter type``)."""
    from vllm.v1.worker.gpu.spec_decode.utils import DraftTokensHandler

    class HostDraftTokensHandler(DraftTokensHandler):
        def set_draft_tokens(self, input_batch: Any, draft_tokens: torch.Tensor) -> None:
            if not input_batch.has_structured_output_reqs:
                super().set_draft_tokens(input_batch, draft_tokens)
                return
            rows = draft_tokens.cpu().numpy().copy()
            for req_id, row in zip(input_batch.req_ids, rows, strict=False):
                self._draft_tokens_by_req[req_id] = row

    return HostDraftTokensHandler


G = "vllm.v1.worker.gpu.spec_decode"

#: vLLM 0.34 qualified name -> stand-in (speculative decoding), registered with
#: :data:`vllm_ascend_platform.host.mrv2_kernels.KERNELS`
KERNELS: dict[str, Any] = {
    f"{G}.target_dependent_ar.speculator.prepare_prefill_inputs": prepare_draft_prefill_inputs,
    f"{G}.target_dependent_ar.speculator._prepare_decode_inputs_kernel":
        HostLaunch(_prepare_decode_inputs),
    f"{G}.target_dependent_ar.speculator.update_draft_inputs": update_draft_inputs,
    f"{G}.rejection_sampler_utils.rejection_sample": rejection_sample,
    f"{G}.rejection_sampler._flatten_sampled_kernel": HostLaunch(_flatten_sampled),
}


def register() -> None:
    """Register the step stand-ins, the multimodal ones (``host/mrv2_mm_kernels.py``), the
    ``logprob_token_ids`` ones (``host/mrv2_logprobs.py``) and these with vLLM's dispatcher in one
    call (once per process, ``mrv2_kernels.register``); in CPU emulation the per-step ones in
    their numpy versions (``host/mrv2_kernels_np.py``)."""
    from vllm_ascend_platform import envs
    from vllm_ascend_platform.host.mrv2_mm_kernels import MM_KERNELS

    emulated: dict = {}
    if envs.emulate():
        from vllm_ascend_platform.host.mrv2_kernels_np import emulation_kernels

        emulated = emulation_kernels()
    register_step_kernels({**STEP_KERNELS, **MM_KERNELS, **LOGPROB_KERNELS, **KERNELS,
                           **emulated})
