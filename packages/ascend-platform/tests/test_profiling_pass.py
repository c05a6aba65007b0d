# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The runner's ``_dummy_run``: vLLM's profiling pass (``profile_run`` -> ``_dummy_run(
max_num_tokens, is_profile=True)``) is cut to a few tokens only where its size measures nothing
(CPU emulation, compilation off: the KV budget is computed, memory.py); with compilation on, on
the NPU and on the simulated NPU it keeps vLLM's size, and other dummy runs (graph capture,
warm-up) are never touched.

The runner is ``NPUModelRunnerV2`` over MRv2's ``GPUModelRunner``
(``vllm/v1/worker/gpu/model_runner.py``; the rule in ``worker/profiling_pass.py``). It is
built without ``__init__`` holding only what the methods read; vLLM's
``GPUModelRunner._dummy_run`` is replaced by a recorder."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import vllm.v1.worker.gpu.model_runner as gmr
from vllm.config import CompilationMode
from vllm_ascend_platform.worker.model_runner_v2 import NPUModelRunnerV2 as Runner
from vllm_ascend_platform.worker.profiling_pass import UNMEASURED_PROFILE_TOKENS

GPUModelRunner = gmr.GPUModelRunner


@pytest.fixture
def recorded(monkeypatch):
    calls = []

    def fake_dummy_run(self, num_tokens, *args, **kwargs):
        calls.append((num_tokens, args, kwargs))
        return "hidden", "last"

    monkeypatch.setattr(GPUModelRunner, "_dummy_run", fake_dummy_run)
    return calls


def _runner(emulated: bool, compile_mode: CompilationMode) -> Runner:
    runner = Runner.__new__(Runner)
    runner.emulated = emulated
    runner.compilation_config = SimpleNamespace(mode=compile_mode)
    return runner


@pytest.mark.parametrize("emulated, compile_mode, unused", [
    (True, CompilationMode.NONE, True),
    (True, CompilationMode.VLLM_COMPILE, False),
    (False, CompilationMode.NONE, False),  # NPU and simulated NPU (emulated is False there)
    (False, CompilationMode.VLLM_COMPILE, False),
])
def test_profile_size_unused_only_in_eager_emulation(emulated, compile_mode, unused):
    assert _runner(emulated, compile_mode).profile_size_unused() is unused


def test_emulated_eager_profiling_pass_is_short(recorded):
    runner = _runner(True, CompilationMode.NONE)
    assert runner._dummy_run(8192, is_profile=True, randomize_inputs=False) == ("hidden", "last")
    assert recorded == [(UNMEASURED_PROFILE_TOKENS, (), {"is_profile": True,
                                                            "randomize_inputs": False})]
    recorded.clear()
    runner._dummy_run(4, is_profile=True)  # already below the cut: unchanged
    assert recorded[0][0] == 4


@pytest.mark.parametrize("emulated, compile_mode", [
    (True, CompilationMode.VLLM_COMPILE),
    (False, CompilationMode.NONE),
])
def test_profiling_pass_keeps_vllms_size_elsewhere(recorded, emulated, compile_mode):
    _runner(emulated, compile_mode)._dummy_run(8192, is_profile=True)
    assert recorded[0][0] == 8192


def test_other_dummy_runs_keep_their_size(recorded):
    runner = _runner(True, CompilationMode.NONE)
    runner._dummy_run(512, uniform_decode=True)
    runner._dummy_run(256, is_profile=False)
    assert [c[0] for c in recorded] == [512, 256]


def test_profile_run_goes_through_the_short_pass(recorded, monkeypatch):
    """vLLM's own ``profile_run`` asks ``_dummy_run`` for ``max_num_tokens`` with
    ``is_profile=True`` (the contract the cut relies on) and samples the pass's output."""
    runner = _runner(True, CompilationMode.NONE)
    runner.max_num_tokens = 8192
    runner.supports_mm_inputs = False
    runner.is_pooling_model = False
    runner.encoder_cache = {}
    sampled = []
    runner._dummy_sampler_run = lambda hidden: sampled.append(hidden)
    runner._sync_device = lambda: None
    # what MRv2's profile_run reads (vllm/v1/worker/gpu/model_runner.py)
    runner.vllm_config = SimpleNamespace(aux_output_config=SimpleNamespace(enabled=False))
    runner.is_first_pp_rank = runner.is_last_pp_rank = True
    runner.pooling_runner = None
    runner.encoder_cache = None
    # an engine has the platform's host stand-in here (patch emulation-host-accelerator)
    import torch

    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a, **k: None)
    runner.profile_run()
    assert [c[0] for c in recorded] == [UNMEASURED_PROFILE_TOKENS]
    assert recorded[0][2]["is_profile"] is True
    assert sampled == ["last"]
