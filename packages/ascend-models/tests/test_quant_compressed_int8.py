# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The int8 GEMM for vLLM's compressed-tensors W8A8 int8 scheme (quantization/compressed_int8.py)
without an engine: vLLM's kernel contract (``process_weights_after_loading`` on the layer's
``weight`` int8 [N, K] / ``weight_scale`` / ``input_scale``, then ``apply_weights``) against a
float64 reference of the scheme (compressed-tensors: symmetric int8 weights per channel,
activations per token dynamic or per tensor static), and its place in vLLM's int8 kernel list
for out-of-tree platforms."""

from __future__ import annotations

import pytest
import torch

N_PARTS, K = (48, 16), 32


@pytest.fixture
def oot_current_platform(monkeypatch):
    """vLLM's ``current_platform`` as an out-of-tree platform (what NPUPlatform is)."""
    import vllm.platforms
    from vllm.platforms.interface import Platform, PlatformEnum

    class StandInOOTPlatform(Platform):
        _enum = PlatformEnum.OOT
        device_name = "cpu"
        device_type = "cpu"

    monkeypatch.setattr(vllm.platforms, "_current_platform", StandInOOTPlatform())


def _layer(static: bool, g):
    from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
        Int8ScaledMMLinearLayerConfig,
    )
    from vllm_ascend_models.quantization.compressed_int8 import AscendInt8ScaledMMLinearKernel

    n = sum(N_PARTS)
    layer = torch.nn.Module()
    layer.weight = torch.nn.Parameter(torch.randint(-127, 128, (n, K), generator=g,
                                                    dtype=torch.int8), requires_grad=False)
    layer.weight_scale = torch.nn.Parameter(torch.rand(n, 1, generator=g) * 1e-2 + 1e-3,
                                            requires_grad=False)
    layer.logical_widths = list(N_PARTS)
    if static:
        layer.input_scale = torch.nn.Parameter(torch.tensor([0.03, 0.05]), requires_grad=False)
    cfg = Int8ScaledMMLinearLayerConfig(is_static_input_scheme=static, is_channelwise=True,
                                        input_symmetric=True)
    kernel = AscendInt8ScaledMMLinearKernel(
        cfg, ["weight", "weight_scale", "input_scale", "input_zero_point", "azp_adj"])
    return layer, kernel


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-token", "static-tensor"])
def test_matches_the_float64_scheme(static, oot_current_platform):
    g = torch.Generator().manual_seed(0)
    layer, kernel = _layer(static, g)
    w = layer.weight.data.double()
    ws = layer.weight_scale.data.double().reshape(-1)
    kernel.process_weights_after_loading(layer)
    assert layer.weight.dtype == torch.int8 and layer.weight.shape == (K, sum(N_PARTS))
    x = torch.randn(5, K, generator=g)
    bias = torch.randn(sum(N_PARTS), generator=g)
    y = kernel.apply_weights(layer, x, bias).double()
    xd = x.double()
    if static:  # vLLM fuses the parts' input scales to their max (one quantizer per input)
        s = 0.05
        ref = (torch.round(xd / s).clamp(-128, 127) @ w.T) * ws * s
    else:
        s = xd.abs().amax(-1, keepdim=True) / 127
        ref = (torch.round(xd / s) @ w.T) * ws * s
    torch.testing.assert_close(y, ref + bias.double(), rtol=1e-5, atol=1e-5)


def test_asymmetric_activations_refused_by_name():
    from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
        Int8ScaledMMLinearLayerConfig,
    )
    from vllm_ascend_models.quantization.compressed_int8 import AscendInt8ScaledMMLinearKernel

    ok, why = AscendInt8ScaledMMLinearKernel.can_implement(Int8ScaledMMLinearLayerConfig(
        is_static_input_scheme=False, is_channelwise=True, input_symmetric=False))
    assert not ok and "asymmetric int8 activations" in why


def test_in_vllms_int8_kernel_list_for_out_of_tree_platforms():
    from vllm.model_executor.kernels import linear
    from vllm.platforms.interface import PlatformEnum
    from vllm_ascend_models.quantization.compressed_int8 import (
        AscendInt8ScaledMMLinearKernel,
        register_int8_kernel,
    )

    register_int8_kernel()
    register_int8_kernel()
    assert linear._POSSIBLE_INT8_KERNELS[PlatformEnum.OOT].count(
        AscendInt8ScaledMMLinearKernel) == 1


def test_not_offered_on_other_platforms():
    from vllm_ascend_models.quantization.compressed_int8 import AscendInt8ScaledMMLinearKernel

    ok, why = AscendInt8ScaledMMLinearKernel.is_supported()
    assert not ok and "out-of-tree" in why


@pytest.fixture
def simulated_npu():
    import os

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


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-token", "static-tensor"])
def test_npu_branch_on_the_simulated_npu(static, oot_current_platform, simulated_npu):
    """The same kernel in float16 on the simulated NPU: npu_dynamic_quant / npu_quantize and
    npu_quant_matmul under their published schemas, against the float64 scheme."""
    import ascend_ops

    g = torch.Generator().manual_seed(1)
    layer, kernel = _layer(static, g)
    w = layer.weight.data.double()
    ws = layer.weight_scale.data.double().reshape(-1)
    kernel.process_weights_after_loading(layer)
    x = torch.randn(4, K, generator=g).half()
    ascend_ops.reset_call_counts()
    y = kernel.apply_weights(layer, x)
    assert y.dtype == torch.float16
    y = y.double()
    quant_op = "quantize" if static else "dynamic_quant"
    assert set(ascend_ops.call_counts(per_backend=True)) == {(quant_op, "npu"),
                                                             ("quant_matmul", "npu")}
    xd = x.double()
    s = 0.05 if static else xd.abs().amax(-1, keepdim=True) / 127
    ref = (torch.round(xd / s).clamp(-128, 127) @ w.T) * ws * s
    torch.testing.assert_close(y, ref, rtol=2e-3, atol=2e-3)
