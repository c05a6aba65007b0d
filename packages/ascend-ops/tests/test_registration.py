# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""torch.library registration, fake impls, backend selection and the device seam."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import device
from conftest import make_paged_problem
from moe_samples import opcheck_samples as moe_opcheck_samples


def _samples():
    p = make_paged_problem([2, 1], [3, 5], 4, 2, 8, 4, torch.float32)
    x = torch.randn(3, 16)
    kc = torch.zeros(3, 4, 2, 8)
    return {
        "rms_norm": (x, torch.rand(16), 1e-6),
        "add_rms_norm": (x, torch.randn(3, 16), torch.rand(16), 1e-6),
        "swiglu": (x,),
        "rotary_embedding": (torch.tensor([0, 2, 1]), torch.randn(3, 16), torch.randn(3, 8), 8,
                             torch.randn(4, 8), True),
        "reshape_and_cache": (torch.randn(2, 2, 8), torch.randn(2, 2, 8), kc, kc.clone(),
                              torch.tensor([1, 6])),
        "fused_infer_attention": (p["query"], p["key_cache"], p["value_cache"], p["block_table"],
                                  p["query_start_loc"], p["seq_lens"], 0.3, True, "TND"),
        **moe_opcheck_samples(),
    }


DENSE_OPS = ("rms_norm", "add_rms_norm", "swiglu", "rotary_embedding", "reshape_and_cache",
             "fused_infer_attention")


@pytest.mark.parametrize("name", DENSE_OPS)
def test_custom_op_passes_opcheck(name):
    op = getattr(torch.ops.ascend, name)
    with ascend_ops.use_backend("reference"):
        torch.library.opcheck(op, _samples()[name], test_utils=("test_schema", "test_faketensor"))


def test_ops_trace_as_single_nodes_under_compile():
    def f(x, w, r):
        out, res = ascend_ops.add_rms_norm(x, r, w, 1e-6)
        return ascend_ops.swiglu(out), res

    x, w, r = torch.randn(4, 16), torch.rand(16), torch.randn(4, 16)
    gm_ops = []

    def backend(gm, inputs):
        gm_ops.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm

    with ascend_ops.use_backend("reference"):
        got = torch.compile(f, backend=backend, fullgraph=True)(x, w, r)
        expect = f(x, w, r)
    assert any("ascend.add_rms_norm" in t for t in gm_ops)
    assert any("ascend.swiglu" in t for t in gm_ops)
    torch.testing.assert_close(got, expect)


def test_backend_selection_rules(monkeypatch):
    t = torch.zeros(1)
    if ascend_ops.native_available():
        assert ascend_ops._dispatch.select_backend(t) == "native"
    else:  # no silent fallback to the reference kernels
        with pytest.raises(ascend_ops._dispatch.NativeKernelsMissing):
            ascend_ops._dispatch.select_backend(t)
    with ascend_ops.use_backend("npu"):
        assert ascend_ops._dispatch.select_backend(t) == "npu"
        with ascend_ops.use_backend("reference"):
            assert ascend_ops._dispatch.select_backend(t) == "reference"
    monkeypatch.setenv("ASCEND_OPS_BACKEND", "reference")
    assert ascend_ops._dispatch.select_backend(t) == "reference"
    with pytest.raises(ValueError, match="backend"):
        with ascend_ops.use_backend("cuda"):
            pass


def test_forcing_native_without_module_is_an_error(monkeypatch):
    from ascend_ops import _dispatch

    monkeypatch.setattr(_dispatch, "_native_module", None)
    monkeypatch.setattr(_dispatch, "_native_error", "ImportError: simulated")
    with ascend_ops.use_backend("native"), pytest.raises(RuntimeError, match="_C"):
        ascend_ops.swiglu(torch.zeros(2, 4))


def test_cpu_device_seam():
    assert device.kind() == "cpu"
    assert device.current_device() == torch.device("cpu")
    device.synchronize()
    old = device.emulated_memory()
    try:
        device.set_emulated_memory(2 << 30)
        free, total = device.mem_get_info()
        assert total == 2 << 30 and 0 <= free <= total
        with pytest.raises(ValueError, match="total_bytes"):
            device.set_emulated_memory(0)
    finally:
        device.set_emulated_memory(old)
    s = device.Stream()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record(s)
    end.record(s)
    s.wait_event(end)
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
    g = device.Graph()
    calls = []
    g.capture_callable(lambda: calls.append(1))
    g.replay()
    assert calls == [1, 1]
