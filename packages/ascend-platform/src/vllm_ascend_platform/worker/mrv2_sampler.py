# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The MRv2 runner's sampler on the host (CPU emulation, simulated NPU), vLLM 0.34.

vLLM 0.34's Model Runner V2 samples every row through ``gumbel_sample``
(``vllm/v1/worker/gpu/sample/sampler.py``, ``Sampler._sample_random``), whose Triton kernel
takes the argmax for temperature-0 rows and adds Gumbel noise to the others; the kernel never
needs to know beforehand whether a batch is all greedy. Its host stand-in
(``host/mrv2_kernels.gumbel_sample``) cannot look at the temperatures without reading device
memory (a host sync on the simulated NPU), so it would draw noise for every row.
:class:`HostSampler` decides on the host, from the sampling states' host copy
(``SamplingStates.temperature.np``, the source of truth vLLM's own ``apply_temperature`` reads),
as V1's ``Sampler`` did with ``all_greedy`` (``vllm/v1/sample/sampler.py``): an all-greedy batch
takes ``greedy_sample`` (``ascend_ops.greedy_argmax``) directly; any other batch is vLLM's path.
Same tokens either way: at temperature 0 the kernel's pick is the argmax of the processed logits.

A plain all-greedy batch (one logits row per request, no logits processing, no top-k/top-p, no
logprobs, NaN counts, sampling masks or trace replay) skips the rest of ``Sampler.__call__``
too (:meth:`HostSampler.__call__`): with none of those, vLLM's ``__call__`` samples the
unprocessed logits and returns exactly the argmax, the per-request sampled/rejected counts
(``get_num_sampled_and_rejected``) and no logprobs; the positions and input ids it gathers
for the logits rows are read only by the skipped stages.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p
from vllm.v1.worker.gpu.sample.sampler import Sampler

from vllm_ascend_platform.host.mrv2_kernels import greedy_sample


class HostSampler(Sampler):
    """vLLM 0.34's MRv2 ``Sampler`` with a host-decided greedy path (module docstring).

    Installed by ``NPUModelRunnerV2`` on the host by class swap of the instance vLLM built
    (same state, two methods replaced)."""

    def __call__(self, logits: torch.Tensor, input_batch: Any) -> Any:
        """``Sampler.__call__``: [rows, vocab] logits -> ``SamplerOutput``; a plain all-greedy
        batch directly (module docstring), any other through vLLM's."""
        idx = input_batch.idx_mapping_np
        states = self.sampling_states
        if (self.compute_nans or self.trace_replay_state is not None
                or self.return_sampling_mask or logits.shape[0] != idx.shape[0]
                or states.temperature.np[idx].any() or self.needs_logits_processing[idx].any()
                or (states.top_k.np[idx] != states.vocab_size).any()
                or (states.top_p.np[idx] != 1.0).any()
                or self.get_logprobs_dims(idx) is not None):
            return super().__call__(logits, input_batch)
        from vllm.v1.worker.gpu.sample import sampler as vllm_sampler

        sampled = greedy_sample(logits)
        # through the module attribute: the dispatcher's host stand-in (mrv2_kernels)
        num_sampled, num_rejected = vllm_sampler.get_num_sampled_and_rejected(
            input_batch.seq_lens.new_ones(input_batch.num_reqs), input_batch.seq_lens,
            input_batch.cu_num_logits, input_batch.idx_mapping, self.req_states.prefill_len.gpu)
        return vllm_sampler.SamplerOutput(
            sampled_token_ids=sampled.view(-1, 1), logprobs_tensors=None, num_nans=None,
            num_sampled=num_sampled, num_rejected=num_rejected, sampling_mask_tensors=None)

    def _sample_random(self, processed_logits: torch.Tensor, expanded_idx_mapping: torch.Tensor,
                       idx_mapping_np: np.ndarray, pos: torch.Tensor, top_k: torch.Tensor | None,
                       top_p: torch.Tensor | None, has_topp_only_rows: bool,
                       use_fused_sampler: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``Sampler._sample_random``: [rows, vocab] processed logits -> ([rows] int64 sampled
        token ids, the logits after top-k/top-p)."""
        if use_fused_sampler or self.sampling_states.temperature.np[idx_mapping_np].any():
            return super()._sample_random(processed_logits, expanded_idx_mapping, idx_mapping_np,
                                          pos, top_k, top_p, has_topp_only_rows,
                                          use_fused_sampler)
        if top_k is not None or top_p is not None:
            processed_logits = apply_top_k_top_p(processed_logits, top_k, top_p,
                                                 has_topp_only_rows=has_topp_only_rows)
        return greedy_sample(processed_logits), processed_logits


def install(runner: object) -> None:
    """Make ``runner.sampler`` a :class:`HostSampler` when it is vLLM's plain ``Sampler``."""
    sampler = getattr(runner, "sampler", None)
    if type(sampler) is Sampler:
        sampler.__class__ = HostSampler
