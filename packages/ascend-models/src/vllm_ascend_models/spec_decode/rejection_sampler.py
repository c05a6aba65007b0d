# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendRejectionSampler``: vLLM 0.32's ``RejectionSampler`` with its Triton kernels replaced
by ``ascend_ops.sample_recovered_tokens`` / ``ascend_ops.rejection_sample``.

Interface: that of ``vllm.v1.sample.rejection_sampler.RejectionSampler`` (it subclasses it):
constructed as ``AscendRejectionSampler(sampler, spec_config, device)`` and called as
``sampler_output = rs(spec_decode_metadata, draft_probs, logits, sampling_metadata)`` with
``draft_probs`` [num_draft_tokens, vocab] or None (n-gram), ``logits``
[num_draft_tokens + batch, vocab]; returns a ``SamplerOutput`` whose ``sampled_token_ids`` is
int32 [batch, max_spec_len + 1] padded with -1, which the runner parses with the inherited
``RejectionSampler.parse_output``. The bonus-token sampling, logits processors (penalties, bad
words, allowed tokens, min-tokens), logprobs and output parsing are vLLM's own (inherited); only
what vLLM runs as Triton kernels is replaced: the temperature/top-k/top-p expansion over draft
positions (``repeat_interleave`` with a static ``output_size``), the greedy and random
verification and the recovered-token sampling (``ascend_ops``, whose NPU branch runs on the
device without a host sync). Random numbers are drawn exactly as vLLM draws them (float64
uniforms per draft token, one float32/float64 ``Exp(1)`` row per request, per-request
generators honoured), so with the same seed the output equals vLLM's token for token.

Refused at construction (``ValueError`` naming the option): ``rejection_sample_method`` other
than ``"standard"`` (``"synthetic"`` acceptance is not implemented on Ascend).

How the runner installs it (docs/spec-decode.md, "Rejection sampler"): after
``GPUModelRunner.__init__`` has built ``self.rejection_sampler`` for a speculative config,
replace it::

    if self.speculative_config is not None:
        self.rejection_sampler = AscendRejectionSampler(
            self.sampler, self.speculative_config, self.device)

(the platform names the class by its qualified-name string through the layer contract).
``GPUModelRunner._sample`` and the dummy sampler run then call it unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import ascend_ops
import torch
from vllm.v1.outputs import SamplerOutput
from vllm.v1.sample.metadata import SamplingMetadata
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p, apply_top_k_top_p_pytorch
from vllm.v1.sample.rejection_sampler import (
    GREEDY_TEMPERATURE,
    MAX_SPEC_LEN,
    RejectionSampler,
    generate_uniform_probs,
)
from vllm.v1.sample.sampler import Sampler
from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

if TYPE_CHECKING:
    from vllm.config.speculative import SpeculativeConfig


class AscendRejectionSampler(RejectionSampler):
    """vLLM's rejection sampler (arXiv:2211.17192 as vLLM 0.32 implements it) on ``ascend_ops``.

    See the module docstring for the interface, what is inherited and how to install it.
    Raises ValueError at construction for an unsupported ``rejection_sample_method``.
    """

    def __init__(self, sampler: Sampler, spec_config: SpeculativeConfig | None = None,
                 device: torch.device | None = None):
        method = getattr(spec_config, "rejection_sample_method", "standard")
        if method != "standard":
            raise ValueError(
                f"speculative_config.rejection_sample_method={method!r} is not supported on "
                "Ascend (only 'standard' rejection sampling); remove the option")
        super().__init__(sampler, spec_config, device)

    def forward(self, metadata: SpecDecodeMetadata, draft_probs: torch.Tensor | None,
                logits: torch.Tensor, sampling_metadata: SamplingMetadata) -> SamplerOutput:
        """Same contract as ``RejectionSampler.forward`` (vLLM 0.32); see the module docstring."""
        if metadata.max_spec_len > MAX_SPEC_LEN:
            raise ValueError(f"max_spec_len {metadata.max_spec_len} exceeds vLLM's "
                             f"MAX_SPEC_LEN {MAX_SPEC_LEN}; lower num_speculative_tokens")
        bonus_logits = logits[metadata.bonus_logits_indices]
        bonus_output = self.sampler(
            logits=bonus_logits,
            sampling_metadata=replace(sampling_metadata, max_num_logprobs=-1),
            predict_bonus_token=True,
            logprobs_mode_override="processed_logits" if self.is_processed_logprobs_mode
            else "raw_logits",
        )
        raw_target_logits = logits[metadata.target_logits_indices].to(torch.float32)
        target_logits = raw_target_logits
        if not self.is_processed_logprobs_mode:
            target_logits = target_logits.clone()  # processors below work in place
        target_logits = self.apply_logits_processors(target_logits, sampling_metadata,
                                                     metadata)
        target_logits = self._apply_sampling_constraints(target_logits, metadata,
                                                         sampling_metadata)
        output_token_ids = self._rejection_sample(metadata, draft_probs, target_logits,
                                                  bonus_output.sampled_token_ids,
                                                  sampling_metadata)
        logprobs_tensors = None
        if sampling_metadata.max_num_logprobs is not None:
            logprobs_tensors = self._get_logprobs_tensors(
                sampling_metadata.max_num_logprobs, metadata, logits,
                target_logits if self.is_processed_logprobs_mode else raw_target_logits,
                bonus_output.logprobs_tensors.logprobs, output_token_ids)
        return SamplerOutput(sampled_token_ids=output_token_ids,
                             logprobs_tensors=logprobs_tensors)

    @staticmethod
    def _expand(x: torch.Tensor, metadata: SpecDecodeMetadata, num_tokens: int) -> torch.Tensor:
        """[batch] -> [num_draft_tokens]: each request's value repeated over its drafts."""
        cu = metadata.cu_num_draft_tokens.to(torch.int64)
        counts = torch.diff(cu, prepend=cu.new_zeros(1))
        return x.repeat_interleave(counts, output_size=num_tokens)

    def _apply_sampling_constraints(self, logits: torch.Tensor, metadata: SpecDecodeMetadata,
                                    sampling_metadata: SamplingMetadata) -> torch.Tensor:
        """vLLM's ``apply_sampling_constraints``: temperature (greedy rows divided by 1), then
        top-k/top-p with vLLM's ``apply_top_k_top_p``.

        In CPU emulation (``ascend_ops.device.kind() == "cpu"``: the device is the host) the mask
        is taken as on vLLM's CPU platform (``apply_top_k_top_p`` passes ``allow_cpu_sync`` when
        ``current_platform.is_cpu()``, vllm/v1/sample/ops/topk_topp_sampler.py): top-k alone is
        a ``topk`` threshold instead of a sort of the whole vocabulary; the same logits are
        masked. On the NPU (and the simulated NPU) no host read is allowed here, as vLLM's
        accelerator platforms."""
        if sampling_metadata.all_greedy:
            return logits
        num_tokens = logits.shape[0]
        temperature = sampling_metadata.temperature
        temperature = torch.where(temperature == GREEDY_TEMPERATURE,
                                  torch.ones_like(temperature), temperature)
        logits.div_(self._expand(temperature, metadata, num_tokens).unsqueeze(-1))
        top_k = top_p = None
        if sampling_metadata.top_k is not None:
            top_k = self._expand(sampling_metadata.top_k, metadata, num_tokens)
        if sampling_metadata.top_p is not None:
            top_p = self._expand(sampling_metadata.top_p, metadata, num_tokens)
        if ascend_ops.device.kind() == "cpu":
            return apply_top_k_top_p_pytorch(logits, top_k, top_p, allow_cpu_sync=True)
        return apply_top_k_top_p(logits, top_k, top_p)

    def _exponential_noise(self, metadata: SpecDecodeMetadata, vocab_size: int,
                           sampling_metadata: SamplingMetadata,
                           device: torch.device) -> torch.Tensor:
        """``1 / q`` with ``q ~ Exp(1)`` [batch, vocab], drawn as vLLM's
        ``sample_recovered_tokens`` draws it (seeded requests with drafts use their generator)."""
        dtype = torch.float64 if self.use_fp64_gumbel else torch.float32
        q = torch.empty((len(metadata.num_draft_tokens), vocab_size), dtype=dtype, device=device)
        q.exponential_()
        for i, generator in sampling_metadata.generators.items():
            if metadata.num_draft_tokens[i] > 0:
                q[i].exponential_(generator=generator)
        return q.reciprocal()

    def _rejection_sample(self, metadata: SpecDecodeMetadata, draft_probs: torch.Tensor | None,
                          target_logits: torch.Tensor, bonus_token_ids: torch.Tensor,
                          sampling_metadata: SamplingMetadata) -> torch.Tensor:
        """vLLM's ``rejection_sample`` with the verification and recovery on ``ascend_ops``."""
        num_tokens, vocab_size = target_logits.shape
        device = target_logits.device
        all_greedy, all_random = sampling_metadata.all_greedy, sampling_metadata.all_random
        uniform_probs = None
        if not all_greedy:
            uniform_probs = generate_uniform_probs(num_tokens, metadata.num_draft_tokens,
                                                   sampling_metadata.generators, device)
        target_argmax = None if all_random else ascend_ops.greedy_argmax(target_logits)
        if all_greedy:
            return ascend_ops.rejection_sample(
                metadata.draft_token_ids, metadata.cu_num_draft_tokens, target_argmax, None, None,
                bonus_token_ids, None, None, None, metadata.max_spec_len)
        target_probs = target_logits.softmax(dim=-1, dtype=torch.float32)
        inv_q = self._exponential_noise(metadata, vocab_size, sampling_metadata, device)
        recovered = ascend_ops.sample_recovered_tokens(
            metadata.draft_token_ids, metadata.cu_num_draft_tokens, draft_probs, target_probs,
            inv_q)
        is_greedy = sampling_metadata.temperature == GREEDY_TEMPERATURE
        return ascend_ops.rejection_sample(
            metadata.draft_token_ids, metadata.cu_num_draft_tokens, target_argmax, target_probs,
            draft_probs, bonus_token_ids, recovered, uniform_probs, is_greedy,
            metadata.max_spec_len)
