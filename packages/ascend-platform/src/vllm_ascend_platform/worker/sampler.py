# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The runner's sampler: vLLM's ``Sampler`` with greedy picks through ``ascend_ops``.

vLLM's ``Sampler.greedy_sample`` (vllm/v1/sample/sampler.py) calls its own CPU kernel
(``torch.ops._C.greedy_argmax``) only when ``current_platform.is_cpu()``, and ``logits.argmax``
everywhere else, so on our platform (``is_cpu()`` is False in every mode) CPU emulation ran
``aten.argmax``, single-threaded over a [num_reqs, vocab] batch: ~2x vLLM CPU's sampler time at
batch 8 (benchmarks/README.md). :class:`AscendSampler` routes it to
``ascend_ops.greedy_argmax``: the C++ kernel in emulation, ``torch.argmax`` on the NPU (and the
simulated NPU). Everything else, random sampling, logprobs and logits processors included, is
vLLM's code unchanged.
"""

from __future__ import annotations

import torch
from vllm.v1.sample.sampler import Sampler


class AscendSampler(Sampler):
    """``vllm.v1.sample.sampler.Sampler``, same constructor and call."""

    @staticmethod
    def greedy_sample(logits: torch.Tensor) -> torch.Tensor:
        """Greedy token per request: ``logits`` [num_reqs, vocab] float32 -> [num_reqs] int64
        (``ascend_ops.greedy_argmax``: ``torch.argmax(dim=-1)`` semantics)."""
        import ascend_ops

        return ascend_ops.greedy_argmax(logits)

    @classmethod
    def like(cls, sampler: Sampler) -> AscendSampler:
        """An ``AscendSampler`` configured as ``sampler`` (the one ``GPUModelRunner`` built)."""
        return cls(logprobs_mode=sampler.logprobs_mode, use_fp64_gumbel=sampler.use_fp64_gumbel)
