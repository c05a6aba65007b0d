# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host stand-ins for the per-request ``logprob_token_ids`` path of vLLM 0.34's Model Runner V2.

``SamplingParams.logprob_token_ids`` asks for the logprobs of a fixed list of token ids (at most
``vllm.sampling_params.MAX_LOGPROB_TOKEN_IDS``) at every generated position, in place of the
top-k. MRv2 (``vllm/v1/worker/gpu/sample/logprob.py``) keeps the lists in a
``LogprobTokenIdsState`` (``num_token_ids`` per request slot, ``token_ids``
``[max_num_reqs, MAX_LOGPROB_TOKEN_IDS]`` int32) and, when any request of the batch has one,
``compute_topk_scores`` builds a ``[batch, 1 + num_cols]`` token-id matrix and validity mask with
``_fill_logprob_token_ids_kernel`` (column 0 the sampled token; then the request's own ids, or
the top-k ids when it has none), scores it and sets invalid columns to ``-inf``.

That branch computes the kernel's ``PADDED_COLS`` with ``triton.next_power_of_2``, which vLLM's
Triton placeholder lacks, so on our host modes the launch is never reached: the wrapper
``compute_topk_scores`` is replaced as a whole (wrapper level, same contract; its callers
``sample/sampler.py``, ``sample/prompt_logprob.py`` and ``spec_decode/rejection_sampler.py``
import it by name and are rebound by the dispatcher), and the kernel gets a stand-in as well
(kernel level, :class:`~vllm_ascend_platform.host.mrv2_kernels.HostLaunch`) for any other
launcher. Both share :func:`fill_logprob_token_ids`. Nothing here reads a device value back to
the host (docs/model-runner-v2.md, "Host syncs of a decode step").

``prompt_logprob_token_ids`` needs nothing more: ``PromptLogprobsWorker`` scores those with
``compute_token_logprobs`` (already a stand-in in ``mrv2_kernels``).
"""

from __future__ import annotations

from typing import Any

import torch

from vllm_ascend_platform.host.mrv2_kernels import HostLaunch, _grid, _ranks, compute_token_logprobs


def fill_logprob_token_ids(out_token_ids: torch.Tensor, valid_mask: torch.Tensor,
                           sampled_token_ids: torch.Tensor, topk_indices: torch.Tensor,
                           expanded_idx_mapping: torch.Tensor, num_per_req_token_ids: torch.Tensor,
                           per_req_token_ids: torch.Tensor, num_topk: int,
                           batch_size: int | None = None) -> None:
    """``_fill_logprob_token_ids_kernel`` over the first ``batch_size`` rows (default: all of
    ``out_token_ids``), in place.

    Shapes: ``out_token_ids`` ``[B, 1 + C]`` (integer), ``valid_mask`` ``[B, 1 + C]`` bool,
    ``sampled_token_ids`` ``[B]``, ``topk_indices`` ``[B, num_topk]`` (not read when
    ``num_topk == 0``), ``expanded_idx_mapping`` ``[B]`` (batch row -> request slot),
    ``num_per_req_token_ids`` ``[max_num_reqs]`` int32, ``per_req_token_ids``
    ``[max_num_reqs, MAX_LOGPROB_TOKEN_IDS]`` int32.

    Row b: column 0 = the sampled token, valid. With ``n = num_per_req_token_ids[slot] > 0``
    columns ``1 .. n`` = the request's ids; otherwise columns ``1 .. num_topk`` = the row's
    top-k ids. Those columns become valid; every other column is left as it was (the caller
    passes zeros and ``False``), as the kernel stores under its mask only.
    """
    b = out_token_ids.shape[0] if batch_size is None else batch_size
    if b == 0:
        return
    num_cols = out_token_ids.shape[1] - 1
    out_token_ids[:b, 0] = sampled_token_ids[:b].to(out_token_ids.dtype)
    valid_mask[:b, 0] = True
    if num_cols <= 0:
        return
    slots = expanded_idx_mapping[:b].to(torch.int64)
    num_custom = num_per_req_token_ids[slots].to(torch.int64)[:, None]  # [b, 1]
    col = torch.arange(num_cols, device=out_token_ids.device)
    custom = num_custom > 0
    valid = torch.where(custom, col < num_custom, col < num_topk)
    width = per_req_token_ids.shape[1]
    own = per_req_token_ids[slots[:, None], col.clamp_max(width - 1)[None, :]]
    if num_topk > 0:
        top = torch.zeros((b, num_cols), dtype=topk_indices.dtype, device=topk_indices.device)
        top[:, :num_topk] = topk_indices[:b, :num_topk]
        tokens = torch.where(custom, own.to(torch.int64), top.to(torch.int64))
    else:
        tokens = own.to(torch.int64)
    dst = out_token_ids[:b, 1:]
    dst.copy_(torch.where(valid, tokens.to(dst.dtype), dst))
    valid_mask[:b, 1:] |= valid


def _fill_logprob_token_ids(grid, out_token_ids_ptr, out_token_ids_stride, out_valid_mask_ptr,
                            out_valid_mask_stride, sampled_token_ids_ptr, topk_indices_ptr,
                            topk_indices_stride, expanded_idx_mapping_ptr,
                            num_per_req_token_ids_ptr, per_req_token_ids_ptr,
                            per_req_token_ids_stride, NUM_TOPK=0, PADDED_COLS=None,
                            **_: Any) -> None:
    """``_fill_logprob_token_ids_kernel`` launched over ``grid[0]`` batch rows: see
    :func:`fill_logprob_token_ids` (the strides are the tensors' own)."""
    fill_logprob_token_ids(out_token_ids_ptr, out_valid_mask_ptr, sampled_token_ids_ptr,
                           topk_indices_ptr, expanded_idx_mapping_ptr, num_per_req_token_ids_ptr,
                           per_req_token_ids_ptr, int(NUM_TOPK), batch_size=_grid(grid, 0))


def compute_topk_scores(logits: torch.Tensor, num_logprobs: int,
                        sampled_token_ids: torch.Tensor,
                        cu_num_logits: list[int] | torch.Tensor | None = None,
                        logprob_token_ids_state: Any = None,
                        expanded_idx_mapping: torch.Tensor | None = None,
                        max_per_req_token_ids: int = 0, logits_mode: bool = False) -> Any:
    """``compute_topk_scores`` (``vllm/v1/worker/gpu/sample/logprob.py``), same arguments and
    result (a ``vllm.v1.outputs.LogprobsTensors``).

    ``logits`` ``[B, V]``; ``sampled_token_ids`` ``[B]`` int64. Without per-request ids
    (``max_per_req_token_ids == 0``): token ids ``[B, 1 + num_logprobs]`` = the sampled token
    then the top-``num_logprobs`` ids. With them: ``[B, 1 + max(num_logprobs,
    max_per_req_token_ids)]`` filled by :func:`fill_logprob_token_ids`, invalid columns scored
    ``-inf``. Scores are float32 log-softmax values, or the logits themselves when
    ``logits_mode`` (``raw_logits`` / ``processed_logits``). Ranks: 1-based rank of the sampled
    token (``_ranks_kernel``).
    """
    from vllm.v1.outputs import LogprobsTensors

    assert num_logprobs >= 0
    batch_size = logits.shape[0]
    sampled = sampled_token_ids
    if max_per_req_token_ids == 0:
        token_ids = sampled.unsqueeze(-1)
        if num_logprobs > 0:
            top = torch.topk(logits, num_logprobs, dim=-1).indices
            token_ids = torch.cat((token_ids, top), dim=1)
        valid = None
    else:
        assert logprob_token_ids_state is not None and expanded_idx_mapping is not None
        per_req = logprob_token_ids_state.token_ids.gpu
        if num_logprobs > 0:
            topk = torch.topk(logits, num_logprobs, dim=-1).indices.to(torch.int32)
        else:
            topk = per_req  # not read (vLLM passes it as a placeholder pointer too)
        num_cols = max(num_logprobs, max_per_req_token_ids)
        token_ids = sampled.new_zeros((batch_size, 1 + num_cols))
        valid = torch.zeros_like(token_ids, dtype=torch.bool)
        fill_logprob_token_ids(token_ids, valid, sampled, topk, expanded_idx_mapping,
                               logprob_token_ids_state.num_token_ids.gpu, per_req, num_logprobs)
    if logits_mode:
        scores = logits.gather(-1, token_ids.to(torch.int64)).to(torch.float32)
    else:
        scores = compute_token_logprobs(logits, token_ids)
    if valid is not None:
        scores = scores.masked_fill(~valid, float("-inf"))

    ranks = torch.empty(batch_size, dtype=torch.int64, device=logits.device)
    _ranks((batch_size,), ranks, logits, logits.stride(0), sampled, logits.shape[1])
    is_tensor = isinstance(cu_num_logits, torch.Tensor)
    return LogprobsTensors(
        logprob_token_ids=token_ids,
        logprobs=scores,
        selected_token_ranks=ranks,
        cu_num_generated_tokens=None if is_tensor else cu_num_logits,
        cu_num_generated_tokens_tensor=cu_num_logits if is_tensor else None,
    )


G = "vllm.v1.worker.gpu.sample.logprob"

#: vLLM 0.34 qualified name -> stand-in, registered with the other MRv2 stand-ins
#: (``host.mrv2_spec_decode.register``)
KERNELS: dict[str, Any] = {
    f"{G}.compute_topk_scores": compute_topk_scores,
    f"{G}._fill_logprob_token_ids_kernel": HostLaunch(_fill_logprob_token_ids),
}
