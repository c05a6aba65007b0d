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
"""

from __future__ import annotations

import numpy as np
import torch
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p
from vllm.v1.worker.gpu.sample.sampler import Sampler

from vllm_ascend_platform.host.mrv2_kernels import greedy_sample


class HostSampler(Sampler):
    """vLLM 0.34's MRv2 ``Sampler`` with a host-decided greedy path (module docstring).

    Installed by ``NPUModelRunnerV2`` on the host by class swap of the instance vLLM built
    (same state, one method replaced)."""

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
