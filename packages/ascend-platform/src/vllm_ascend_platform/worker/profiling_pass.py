# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The size of vLLM's profiling pass, cut where it measures nothing (Model Runner V2).

vLLM's ``profile_run`` (``vllm/v1/worker/gpu/model_runner.py``, vLLM 0.34) runs one dummy
forward of ``max_num_tokens`` tokens (``max_num_batched_tokens``, 8192 by default) through
``_dummy_run(max_num_tokens, skip_attn=True, is_profile=True, ...)``, then the dummy sampler,
so the worker can read the device allocator's peak. In CPU emulation with compilation off
(eager) that size measures nothing: the KV budget is computed, not measured (weights counted,
activations estimated: ``NPUWorker._kv_budget``, ``activation_estimate`` in
``worker/memory.py``), and emulation has no device allocator whose peak the pass could raise;
the pass is a large share of every engine start on a small host. vLLM's CPU backend drops the
pass altogether in the same case (``CPUModelRunner.warming_up_model``,
``vllm/v1/worker/cpu_model_runner.py``, returns when the compilation mode is NONE).

We keep a short pass instead (:data:`UNMEASURED_PROFILE_TOKENS` tokens): ``_dummy_run`` also
builds state that serving reads later and runs the model, sampler and drafter once before the
engine reports READY. With compilation on the pass traces the model at its general shape, and
on the NPU and the simulated NPU (the NPU path, docs/simulated-npu.md) it runs as vLLM's; other
dummy runs (graph capture, warm-up: ``is_profile`` False) are never touched. The same rule as
the V1 runner's ``NPUModelRunner._dummy_run`` (``worker/model_runner.py``, vLLM 0.33).
"""

from __future__ import annotations

from typing import Any

#: Tokens of the profiling pass where its size is unused (:func:`profile_size_unused`).
UNMEASURED_PROFILE_TOKENS = 16


def profile_size_unused(emulated: bool, compilation_config: Any) -> bool:
    """True in CPU emulation (``emulated``) with ``compilation_config.mode`` NONE (eager); False
    with compilation on, on the NPU and on the simulated NPU (``emulated`` is False there)."""
    from vllm.config import CompilationMode

    return bool(emulated) and compilation_config.mode == CompilationMode.NONE


def dummy_run_tokens(num_tokens: int, is_profile: bool, emulated: bool,
                     compilation_config: Any) -> int:
    """The token count a ``_dummy_run(num_tokens, is_profile=...)`` call should use: at most
    :data:`UNMEASURED_PROFILE_TOKENS` for the profiling pass where its size is unused, else
    ``num_tokens`` unchanged."""
    if is_profile and profile_size_unused(emulated, compilation_config):
        return min(num_tokens, UNMEASURED_PROFILE_TOKENS)
    return num_tokens
