# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendRejectionSampler against vLLM 0.33's own RejectionSampler: same inputs, same seed, the
same output tokens (and logprobs). vLLM's Triton kernels run on the CPU under Triton's
interpreter in a child process (tests/_vllm_rejection_oracle.py); ours run in this process on
the ascend_ops CPU backends."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import ascend_ops
import pytest
import torch
from spec_cases import CASES, run

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _sampler_on_an_out_of_tree_platform(oot_platform, monkeypatch):
    """vLLM's ``Sampler`` as it runs under the Ascend platform, which is out of tree
    (``is_cpu()`` False: greedy rows by ``logits.argmax``, ``Sampler.greedy_sample`` in
    vllm/v1/sample/sampler.py; random rows by ``TopKTopPSampler.forward_native``,
    vllm/v1/sample/ops/topk_topp_sampler.py), as in the oracle's child process. Under vLLM's
    ``CpuPlatform`` (this package's conftest) they would call ``torch.ops._C.greedy_argmax`` and
    ``_C.fused_gumbel_argmax``, kernels of vLLM's CPU build that a vLLM built for the empty
    target does not have."""
    from vllm.v1.sample import sampler
    from vllm.v1.sample.ops import topk_topp_sampler

    monkeypatch.setattr(sampler, "current_platform", oot_platform)
    monkeypatch.setattr(topk_topp_sampler, "current_platform", oot_platform)


@pytest.fixture(scope="module")
def vllm_results(tmp_path_factory):
    if importlib.util.find_spec("triton") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("triton (installed with vllm) is missing: the vLLM oracle needs its "
                        "interpreter")
        pytest.skip("triton is not installed: vLLM's Triton kernels cannot be interpreted")
    out = tmp_path_factory.mktemp("oracle") / "vllm.pt"
    proc = subprocess.run([sys.executable, str(HERE / "_vllm_rejection_oracle.py"), str(out),
                           *CASES], capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return torch.load(out)


@pytest.mark.parametrize("backend", ["native", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_vllm_rejection_sampler(vllm_results, name, backend):
    from vllm_ascend_models.spec_decode.rejection_sampler import AscendRejectionSampler

    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    ascend_ops.reset_call_counts()
    with ascend_ops.use_backend(backend):
        ours = run(AscendRejectionSampler, CASES[name])
    want = vllm_results[name]
    for got, exp in zip(ours["tokens"], want["tokens"], strict=True):
        assert got.dtype == torch.int32 and torch.equal(got, exp), (got, exp)
    for got, exp in zip(ours["logprobs"], want["logprobs"], strict=True):
        assert (got is None) == (exp is None)
        if got is not None:
            assert torch.equal(got[0], exp[0])
            torch.testing.assert_close(got[1], exp[1])
    counts = ascend_ops.call_counts(per_backend=True)
    assert counts.get(("rejection_sample", backend)) == 3
    greedy = all(t == 0 for t in CASES[name]["temperature"])
    assert counts.get(("sample_recovered_tokens", backend), 0) == (0 if greedy else 3)


def test_cases_exercise_acceptance_rejection_and_bonus(vllm_results):
    # the oracle's outputs cover what the comparison is meant to prove
    counts = torch.cat([(t != -1).sum(1) for r in vllm_results.values() for t in r["tokens"]])
    assert (counts == 1).any() and (counts >= 3).any()  # first-rejected rows and long accepts
    acc = vllm_results["accepting_drafts"]["tokens"][0]
    assert (acc != -1).sum(1).max() == 5  # four accepted drafts + the bonus token


def test_synthetic_rejection_is_refused():
    from types import SimpleNamespace

    from vllm.v1.sample.sampler import Sampler
    from vllm_ascend_models.spec_decode.rejection_sampler import AscendRejectionSampler

    cfg = SimpleNamespace(rejection_sample_method="synthetic", synthetic_acceptance_rates=[0.5])
    with pytest.raises(ValueError, match="rejection_sample_method='synthetic' is not supported"):
        AscendRejectionSampler(Sampler(), cfg)


@pytest.fixture
def simulated_npu():
    from ascend_ops import simulator

    try:
        module = simulator.install(capacity_bytes=1 << 30, device_count=1)
    except simulator.SimulatedNpuError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield module
    finally:
        simulator.uninstall()


@pytest.mark.parametrize("name", ["mixed_draft_probs", "random_ngram_topk_topp"])
def test_npu_branch_matches_vllm_on_the_simulated_npu(vllm_results, simulated_npu, name):
    from vllm_ascend_models.spec_decode.rejection_sampler import AscendRejectionSampler

    ascend_ops.reset_call_counts()
    ours = run(AscendRejectionSampler, CASES[name])
    for got, exp in zip(ours["tokens"], vllm_results[name]["tokens"], strict=True):
        assert torch.equal(got, exp), (got, exp)
    expected = {("rejection_sample", "npu"), ("sample_recovered_tokens", "npu")}
    if any(t == 0 for t in CASES[name]["temperature"]):  # greedy rows: the target argmax
        expected.add(("greedy_argmax", "npu"))
    assert set(ascend_ops.call_counts(per_backend=True)) == expected
