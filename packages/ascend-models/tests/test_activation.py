# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""SiluAndMul -> ascend_ops.swiglu: numbers (oracle: vLLM's forward_native) and dispatch."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from vllm.model_executor.layers.activation import SiluAndMul
from vllm_ascend_models.layers.activation import AscendSiluAndMul


def _swiglu_calls() -> int:
    return ascend_ops.call_counts().get("swiglu", 0)


@pytest.mark.parametrize("shape", [(1, 2), (7, 64), (2, 3, 48)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_oot_matches_vllm_native(backend, vllm_context, oot_platform, shape, dtype):
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(shape[-1])) * 4).to(dtype)
    with vllm_context(["all"]):
        layer = SiluAndMul()
    want = SiluAndMul.forward_native(x)
    got = layer.forward_oot(x)
    assert got.shape == want.shape and got.dtype == dtype
    tol = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("custom_ops", [["all"], ["none", "+silu_and_mul"]])
def test_enabled_op_dispatches_to_ascend_ops(vllm_context, oot_platform, custom_ops):
    with vllm_context(custom_ops):
        layer = SiluAndMul()
    assert type(layer) is AscendSiluAndMul
    assert layer._forward_method == layer.forward_oot
    x = torch.randn(3, 16)
    before = _swiglu_calls()
    out = layer(x)
    assert _swiglu_calls() == before + 1
    torch.testing.assert_close(out, torch.nn.functional.silu(x[:, :8]) * x[:, 8:])


@pytest.mark.parametrize("custom_ops", [["none"], ["all", "-silu_and_mul"]])
def test_disabled_op_runs_vllm_native(vllm_context, oot_platform, custom_ops):
    """custom_ops can switch our op off (upstream name applies); then vLLM's native path runs."""
    with vllm_context(custom_ops):
        layer = SiluAndMul()
        assert not layer.enabled()
    before = _swiglu_calls()
    layer(torch.randn(2, 8))
    assert _swiglu_calls() == before


def test_odd_width_is_rejected(vllm_context, oot_platform):
    with vllm_context(["all"]):
        layer = SiluAndMul()
    with pytest.raises(ValueError):
        layer(torch.randn(2, 7))
