# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""IR-op provider "ascend" for rms_norm / fused_add_rms_norm: numbers and dispatch.

Oracle: vLLM's own native implementations (``ir.ops.<op>.impls["native"].impl_fn``) and, for the
layer test, the RMSNorm formula written out here.
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
import vllm_ascend_models
from vllm import ir
from vllm_ascend_models import ir_kernels

SHAPES = [(1, 8), (5, 64), (2, 3, 32)]
EPS = [1e-6, 1e-5]


def _tol(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)


def _native(op):
    return op.impls["native"].impl_fn


def test_provider_registered_on_both_ops():
    assert "ascend" in ir.ops.rms_norm.impls
    assert "ascend" in ir.ops.fused_add_rms_norm.impls
    assert ir.ops.rms_norm.impls["ascend"].impl_fn is ir_kernels.rms_norm
    assert ir.ops.fused_add_rms_norm.impls["ascend"].impl_fn is ir_kernels.fused_add_rms_norm
    assert "ascend" in ir.ops.rms_norm.supported_providers()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("eps", EPS)
def test_rms_norm_matches_native(backend, shape, dtype, eps):
    g = torch.Generator().manual_seed(hash((shape, eps)) % 2**31)
    x = torch.randn(shape, generator=g).to(dtype) * 3
    w = torch.randn(shape[-1], generator=g).to(dtype)
    want = _native(ir.ops.rms_norm)(x, w, eps)
    got = ir_kernels.rms_norm(x, w, eps)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **_tol(dtype))


def test_rms_norm_without_weight_matches_native(backend):
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(
        ir_kernels.rms_norm(x, None, 1e-6), _native(ir.ops.rms_norm)(x, None, 1e-6)
    )


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_add_rms_norm_matches_native(backend, shape, dtype):
    g = torch.Generator().manual_seed(7 + len(shape))
    x = torch.randn(shape, generator=g).to(dtype)
    res = torch.randn(shape, generator=g).to(dtype)
    w = torch.randn(shape[-1], generator=g).to(dtype)
    x0, res0 = x.clone(), res.clone()
    want_out, want_res = _native(ir.ops.fused_add_rms_norm)(x, res, w, 1e-6)
    got_out, got_res = ir_kernels.fused_add_rms_norm(x, res, w, 1e-6)
    torch.testing.assert_close(got_res, want_res, atol=0, rtol=0)
    torch.testing.assert_close(got_out, want_out, **_tol(dtype))
    # Registered as a functional (not in-place) provider: inputs stay as they were.
    assert torch.equal(x, x0) and torch.equal(res, res0)


def test_supports_args_declines_what_ascend_ops_cannot_match():
    x = torch.randn(2, 8)
    assert ir_kernels.rms_norm_supports_args(x, torch.ones(8), 1e-6)
    assert ir_kernels.rms_norm_supports_args(x, None, 1e-6)
    assert not ir_kernels.rms_norm_supports_args(x, torch.ones(8), 1e-6, 4)
    assert not ir_kernels.rms_norm_supports_args(x, torch.ones(8, dtype=torch.bfloat16), 1e-6)
    assert not ir_kernels.fused_add_rms_norm_supports_args(x, x, torch.ones(8), 1e-6, 4)
    assert not ir_kernels.fused_add_rms_norm_supports_args(x, x.bfloat16(), torch.ones(8), 1e-6)


def test_variance_size_is_an_error_when_called_directly():
    with pytest.raises(ValueError, match="variance_size"):
        ir_kernels.rms_norm(torch.randn(2, 8), torch.ones(8), 1e-6, 4)


def test_default_priority_puts_ascend_first_for_norms():
    cfg = vllm_ascend_models.default_ir_op_priority(None)
    assert cfg.rms_norm == ["ascend", "native"]
    assert cfg.fused_add_rms_norm == ["ascend", "native"]
    assert cfg.gelu_and_mul_sparse == ["native"]


@pytest.mark.parametrize("torch_wrap", [False, True])
def test_ir_dispatch_reaches_ascend_ops(torch_wrap):
    cfg = vllm_ascend_models.default_ir_op_priority(None)
    x = torch.randn(3, 16)
    w = torch.randn(16)
    before = ascend_ops.call_counts()
    with cfg.set_priority(), ir.enable_torch_wrap(torch_wrap):
        assert ir.ops.rms_norm.get_priority() == ["ascend", "native"]
        out = ir.ops.rms_norm(x, w, 1e-6)
        out2, res2 = ir.ops.fused_add_rms_norm(x, x, w, 1e-6)
    after = ascend_ops.call_counts()
    assert after.get("rms_norm", 0) == before.get("rms_norm", 0) + 1
    assert after.get("add_rms_norm", 0) == before.get("add_rms_norm", 0) + 1
    torch.testing.assert_close(out, _native(ir.ops.rms_norm)(x, w, 1e-6))
    torch.testing.assert_close(res2, 2 * x)


def test_ir_dispatch_sends_variance_size_to_native():
    cfg = vllm_ascend_models.default_ir_op_priority(None)
    x, w = torch.randn(2, 8), torch.randn(8)
    with cfg.set_priority():
        assert ir.ops.rms_norm.dispatch(x, w, 1e-6, 4).provider == "native"
        assert ir.ops.rms_norm.dispatch(x, w, 1e-6, None).provider == "ascend"


@pytest.mark.parametrize("with_residual", [False, True])
def test_vllm_rmsnorm_layer_runs_our_op(vllm_context, oot_platform, with_residual):
    """vLLM's RMSNorm layer (as Llama/Qwen build it) reaches ascend_ops under our priority."""
    from vllm.model_executor.layers.layernorm import RMSNorm

    cfg = vllm_ascend_models.default_ir_op_priority(None)
    hidden, eps = 32, 1e-5
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, hidden, generator=g)
    res = torch.randn(6, hidden, generator=g)
    with vllm_context(["all"]), cfg.set_priority():
        layer = RMSNorm(hidden, eps=eps)
        with torch.no_grad():
            layer.weight.copy_(torch.randn(hidden, generator=g))
        op = "add_rms_norm" if with_residual else "rms_norm"
        before = ascend_ops.call_counts().get(op, 0)
        out = layer(x, res.clone()) if with_residual else layer(x)
        assert ascend_ops.call_counts().get(op, 0) == before + 1
    # Oracle: the RMSNorm formula (Zhang & Sennrich 2019), float32.
    h = x + res if with_residual else x
    want = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps) * layer.weight.detach()
    if with_residual:
        torch.testing.assert_close(out[0], want, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out[1], h)
    else:
        torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
