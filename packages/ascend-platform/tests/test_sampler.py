# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendSampler: vLLM's Sampler with greedy picks through ``ascend_ops.greedy_argmax``.

Greedy rows give vLLM's tokens (``logits.argmax``) through one ``greedy_argmax`` call; a mixed
greedy / random batch keeps vLLM's random sampling (the same tokens as vLLM's own Sampler under
the same seed) and its logprobs; ``like`` copies the runner-built sampler's configuration.
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from vllm_ascend_platform.startup.version_check import uses_model_runner_v2

if uses_model_runner_v2():
    pytest.skip("vLLM >= 0.34 removed the V1 Sampler AscendSampler subclasses "
                "(vllm/v1/sample/sampler.py); MRv2 samples through gumbel_sample, whose host "
                "stand-in is tested for the same properties in test_mrv2_kernels.py (greedy "
                "batch = one greedy_argmax call, first maximal index; seeded rows repeat)",
                allow_module_level=True)

from vllm.v1.sample.logits_processor import LogitsProcessors  # noqa: E402
from vllm.v1.sample.metadata import SamplingMetadata  # noqa: E402
from vllm.v1.sample.sampler import Sampler  # noqa: E402
from vllm_ascend_platform.worker.sampler import AscendSampler  # noqa: E402


@pytest.fixture(autouse=True)
def _sampling_as_on_an_out_of_tree_platform(monkeypatch):
    """vLLM's sampling code as it runs under the Ascend platform, which is out of tree
    (``is_cpu()`` False: ``Sampler.greedy_sample`` takes ``logits.argmax``,
    ``TopKTopPSampler`` its ``forward_native``). Under vLLM's ``CpuPlatform`` (this package's
    conftest) they would call ``torch.ops._C.greedy_argmax`` / ``_C.fused_gumbel_argmax``,
    kernels of vLLM's CPU build that a vLLM built for the empty target does not have."""
    from vllm.platforms.interface import Platform, PlatformEnum
    from vllm.v1.sample import sampler
    from vllm.v1.sample.ops import topk_topp_sampler

    class StandInOOTPlatform(Platform):
        _enum = PlatformEnum.OOT
        device_name = "cpu"
        device_type = "cpu"

    platform = StandInOOTPlatform()
    monkeypatch.setattr(sampler, "current_platform", platform)
    monkeypatch.setattr(topk_topp_sampler, "current_platform", platform)


def _metadata(temperature: list[float], logprobs: int | None = None) -> SamplingMetadata:
    temp = torch.tensor(temperature)
    batch = len(temperature)
    all_greedy, all_random = bool((temp == 0).all()), bool((temp != 0).all())
    return SamplingMetadata(
        temperature=None if all_greedy else temp, all_greedy=all_greedy, all_random=all_random,
        top_p=None, top_k=None, generators={}, max_num_logprobs=logprobs, no_penalties=True,
        prompt_token_ids=None, frequency_penalties=torch.zeros(batch),
        presence_penalties=torch.zeros(batch), repetition_penalties=torch.ones(batch),
        output_token_ids=[[] for _ in range(batch)], allowed_token_ids_mask=None,
        bad_words_token_ids={}, logitsprocs=LogitsProcessors())


def _run(sampler: Sampler, logits: torch.Tensor, md: SamplingMetadata):
    torch.manual_seed(7)
    with torch.compiler.set_stance("force_eager"):
        return sampler(logits.clone(), md)


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_greedy_batch_is_one_greedy_argmax_call(backend):
    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    logits = torch.randint(-4, 5, (8, 1000)).float()  # ties: the first maximal index wins
    ascend_ops.reset_call_counts()
    with ascend_ops.use_backend(backend):
        out = _run(AscendSampler(), logits, _metadata([0.0] * 8, logprobs=2))
    assert ascend_ops.call_counts(per_backend=True) == {("greedy_argmax", backend): 1}
    assert torch.equal(out.sampled_token_ids.view(-1).long(), logits.argmax(dim=-1))
    theirs = _run(Sampler(), logits, _metadata([0.0] * 8, logprobs=2))
    assert torch.equal(out.logprobs_tensors.logprobs, theirs.logprobs_tensors.logprobs)


def test_mixed_batch_keeps_vllm_random_sampling():
    logits = torch.randn(6, 500)
    md = _metadata([0.0, 0.8, 0.0, 1.2, 0.5, 0.0])
    ours, theirs = _run(AscendSampler(), logits, md), _run(Sampler(), logits, md)
    assert torch.equal(ours.sampled_token_ids, theirs.sampled_token_ids)
    greedy = torch.tensor([0, 2, 5])
    assert torch.equal(ours.sampled_token_ids.view(-1)[greedy].long(), logits[greedy].argmax(-1))


def test_like_copies_the_runner_sampler_configuration():
    built = Sampler(logprobs_mode="processed_logprobs", use_fp64_gumbel=True)
    ours = AscendSampler.like(built)
    assert isinstance(ours, Sampler)
    assert (ours.logprobs_mode, ours.use_fp64_gumbel) == ("processed_logprobs", True)
