# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The runner's host sampler (``worker/mrv2_sampler.py``) over vLLM 0.34's MRv2 ``Sampler``
(``vllm/v1/worker/gpu/sample/sampler.py``): an all-greedy batch is one ``greedy_argmax`` call
with ``argmax`` semantics, any other batch takes vLLM's own path, and ``install`` swaps the
class of the sampler vLLM built, keeping its configuration (what the former V1
``AscendSampler`` tests checked, ported to MRv2)."""

from __future__ import annotations

from types import SimpleNamespace

import ascend_ops
import numpy as np
import pytest
import torch
from vllm.v1.worker.gpu.sample.sampler import Sampler
from vllm_ascend_platform.worker import mrv2_sampler


def _sampler(temperatures: list[float], cls: type = mrv2_sampler.HostSampler) -> Sampler:
    """A sampler with only the state ``_sample_random`` reads (the host copy of the per-request
    temperatures, ``SamplingStates.temperature.np``); vLLM's constructor needs a whole
    ``VllmConfig`` and request state."""
    sampler = cls.__new__(cls)
    sampler.sampling_states = SimpleNamespace(
        temperature=SimpleNamespace(np=np.asarray(temperatures, dtype=np.float32)))
    return sampler


def _sample(sampler: Sampler, logits: torch.Tensor):
    rows = logits.shape[0]
    return sampler._sample_random(logits.clone(), torch.arange(rows, dtype=torch.int32),
                                  np.arange(rows), torch.arange(rows), None, None, False, False)


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_greedy_batch_is_one_greedy_argmax_call(backend):
    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    logits = torch.randint(-4, 5, (8, 1000)).float()  # ties: the first maximal index wins
    ascend_ops.reset_call_counts()
    with ascend_ops.use_backend(backend):
        sampled, processed = _sample(_sampler([0.0] * 8), logits)
    assert ascend_ops.call_counts(per_backend=True) == {("greedy_argmax", backend): 1}
    assert sampled.dtype == torch.int64 and torch.equal(sampled, logits.argmax(dim=-1))
    assert torch.equal(processed, logits)  # no top-k/top-p: the logits come back unchanged


def test_mixed_batch_keeps_vllms_path(monkeypatch):
    calls = []

    def vllms(self, logits, *args):
        calls.append(logits.shape)
        return logits.argmax(-1), logits

    monkeypatch.setattr(Sampler, "_sample_random", vllms)
    logits = torch.randn(6, 500)
    ascend_ops.reset_call_counts()
    _sample(_sampler([0.0, 0.8, 0.0, 1.2, 0.5, 0.0]), logits)
    assert calls == [logits.shape]  # one call of vLLM's own method with the whole batch
    assert "greedy_argmax" not in {op for op, _ in ascend_ops.call_counts(per_backend=True)}


def test_install_swaps_the_class_and_keeps_the_configuration():
    built = _sampler([0.0], cls=Sampler)
    built.logprobs_mode, built.use_fp64_gumbel = "processed_logprobs", True
    runner = SimpleNamespace(sampler=built)
    mrv2_sampler.install(runner)
    assert runner.sampler is built and type(built) is mrv2_sampler.HostSampler
    assert (built.logprobs_mode, built.use_fp64_gumbel) == ("processed_logprobs", True)
    other = SimpleNamespace(sampler=object())  # not vLLM's plain Sampler: left alone
    mrv2_sampler.install(other)
    assert type(other.sampler) is object
