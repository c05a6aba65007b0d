# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Backend per op family (``ascend_ops.backends``) and the missing-``_C`` error (``_dispatch``)."""

from __future__ import annotations

from pathlib import Path

import ascend_ops
import pytest
import torch
from ascend_ops import _dispatch, backends, families

OPS_DIR = Path(ascend_ops.__file__).parent / "ops"


def test_families_are_the_op_modules_and_native_flags_match_their_implementations():
    """The family table (``ascend_ops.families``) has one entry per ``ops`` module; each
    backend's implementation module has a function for every op of the family; a family flagged
    native has a native implementation of its own for every op, the others (MLA) serve at
    least one op with the reference's function."""
    modules = {p.stem for p in OPS_DIR.glob("*.py") if p.stem != "__init__"}
    assert set(backends.FAMILIES) == modules == set(families.FAMILIES)
    for name, family in families.FAMILIES.items():
        assert set(family.backends) == set(_dispatch.BACKENDS), name
        for backend, impl in family.backends.items():
            for op in family.ops:
                assert callable(getattr(impl, op, None)), (name, backend, op)
        native, ref = family.backends["native"], family.backends["reference"]
        own = all(getattr(native, op) is not getattr(ref, op) for op in family.ops)
        assert own == backends.FAMILIES[name] == family.has_native, name


def test_op_tuples_are_read_from_the_family_table():
    every = [op for f in families.FAMILIES.values() for op in f.ops]
    assert len(every) == len(set(every))
    tuples = (ascend_ops.OPS, ascend_ops.MLA_OPS, ascend_ops.LORA_OPS, ascend_ops.QUANT_OPS,
              ascend_ops.LINEAR_OPS, ascend_ops.SPEC_DECODE_OPS, ascend_ops.SAMPLING_OPS,
              ascend_ops.MULTIMODAL_OPS, ascend_ops.KV_BLOCK_OPS,
              ascend_ops.SPARSE_ATTENTION_OPS)
    assert sorted(op for t in tuples for op in t) == sorted(every)
    assert ascend_ops.OPS[:2] == ("rms_norm", "add_rms_norm") and "swiglu" in ascend_ops.OPS
    assert ascend_ops.SPARSE_ATTENTION_OPS == ("lightning_indexer", "sparse_flash_attention")
    assert ascend_ops.QUANT_OPS == ("quantize", "dynamic_quant", "quant_matmul",
                                    "grouped_quant_matmul")
    assert ascend_ops.MULTIMODAL_OPS == ("encoder_attention", "mrope")
    assert ascend_ops.KV_BLOCK_OPS == ("read_kv_blocks", "write_kv_blocks")
    for op in every:
        assert callable(getattr(ascend_ops, op)), op


@pytest.fixture
def no_native(monkeypatch):
    monkeypatch.setattr(_dispatch, "_native_module", None)
    monkeypatch.setattr(_dispatch, "_native_error", "ImportError: libgomp.so.1: not found")
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)


def test_missing_native_module_is_an_error_naming_the_failure_and_the_fix(no_native):
    with pytest.raises(_dispatch.NativeKernelsMissing) as info:
        ascend_ops.swiglu(torch.zeros(2, 4))
    text = str(info.value)
    assert "libgomp.so.1" in text and "pip install" in text and "ASCEND_OPS_BACKEND=reference" in text
    report = {fb.family: fb for fb in backends.kernel_backends("cpu")}
    assert report["norm"].backend is None and "libgomp.so.1" in report["norm"].reason
    assert report["mla"].backend == "reference"  # no compiled kernel for MLA in any case
    assert "libgomp.so.1" in backends.native_problem()
    assert "UNAVAILABLE: activation" in backends.summary("cpu")


def test_reference_chosen_explicitly_runs_without_native_module(no_native, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_BACKEND", "reference")
    x = torch.randn(2, 8)
    gate, up = x.chunk(2, dim=-1)
    torch.testing.assert_close(ascend_ops.swiglu(x), torch.nn.functional.silu(gate) * up)
    assert {fb.backend for fb in backends.kernel_backends("cpu")} == {"reference"}
    assert all("explicitly" in fb.reason for fb in backends.kernel_backends("cpu"))


def test_npu_device_reports_torch_npu_for_every_family(monkeypatch):
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    assert {fb.backend for fb in backends.kernel_backends("npu")} == {"npu"}
    with pytest.raises(ValueError, match="device_type"):
        backends.kernel_backends("cuda")


@pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built here")
def test_cpu_with_native_module(monkeypatch):
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    got = {fb.family: fb.backend for fb in backends.kernel_backends("cpu")}
    assert got == {f: ("native" if native else "reference") for f, native in backends.FAMILIES.items()}
    assert backends.native_problem() is None


def test_simulated_npu_runs_the_npu_branch_even_without_native_module(simulated_npu, no_native):
    """Simulated NPU (docs/simulated-npu.md): every family reports the torch_npu branch, and a
    missing ``_C`` is no error there because no CPU kernel is used."""
    report = backends.kernel_backends("cpu")
    assert {fb.backend for fb in report} == {"npu"}
    assert all("simulated NPU" in fb.reason for fb in report)
    x = torch.randn(2, 8)
    gate, up = x.chunk(2, dim=-1)
    ascend_ops.reset_call_counts()
    torch.testing.assert_close(ascend_ops.swiglu(x), torch.nn.functional.silu(gate) * up)
    assert ascend_ops.call_counts(per_backend=True) == {("swiglu", "npu"): 1}


@pytest.mark.parametrize("device_type", ["cpu", "npu"])
def test_summary_gives_each_family_its_backend_and_reason(device_type, monkeypatch):
    # the start-up line: the same backend and reason as kernel_backends (what doctor lists)
    monkeypatch.delenv("ASCEND_OPS_BACKEND", raising=False)
    line = backends.summary(device_type)
    assert "\n" not in line
    groups = {}
    for group in line.split("; "):
        backend, _, rest = group.partition(": ")
        families, _, reason = rest.partition(" (")
        for family in families.split(", "):
            groups[family] = (backend, reason[:-1])
    expected = {fb.family: (fb.backend or "UNAVAILABLE", fb.reason)
                for fb in backends.kernel_backends(device_type)}
    assert groups == expected


def test_summary_names_why_kernels_are_unavailable(no_native):
    line = backends.summary("cpu")
    assert "UNAVAILABLE: activation" in line and "libgomp.so.1" in line
    assert "reference: mla, sparse_attention (no compiled CPU kernel for this family" in line


@pytest.mark.skipif(not ascend_ops.native_available(), reason="ascend_ops._C not built here")
def test_backend_env_variable_is_read_at_each_call(monkeypatch):
    """ASCEND_OPS_BACKEND changes take effect on the next call (its parse is cached per value),
    an invalid name raises on every call, and call counts per op sum the per-backend ones."""
    ascend_ops.reset_call_counts()
    x = torch.randn(2, 8)
    for name in ("reference", " Native ", "reference"):
        monkeypatch.setenv("ASCEND_OPS_BACKEND", name)
        assert ascend_ops.forced_backend() == name.strip().lower()
        ascend_ops.swiglu(x)
    monkeypatch.setenv("ASCEND_OPS_BACKEND", "bogus")
    for _ in range(2):
        with pytest.raises(ValueError, match="backend must be one of"):
            ascend_ops.swiglu(x)
    monkeypatch.setenv("ASCEND_OPS_BACKEND", "")
    assert ascend_ops.forced_backend() is None
    monkeypatch.delenv("ASCEND_OPS_BACKEND")
    assert ascend_ops.forced_backend() is None
    per = ascend_ops.call_counts(per_backend=True)
    assert per[("swiglu", "reference")] == 2 and per[("swiglu", "native")] == 1
    assert ascend_ops.call_counts()["swiglu"] == 3
