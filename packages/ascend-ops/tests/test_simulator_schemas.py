# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Schemas read from the torch-npu 2.13.0 wheel (yaml ``custom`` with every overload, ATB header
prototypes) and the missing-wheel error (ascend_ops.simulator.schemas)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from ascend_ops.simulator import SimulatedNpuError, schemas

pytestmark = pytest.mark.sim_only  # the simulator's own contract


@pytest.fixture(scope="module")
def published():
    from conftest import wheel_missing

    try:
        return schemas.published_schemas()
    except SimulatedNpuError as exc:
        wheel_missing(exc)


def test_every_custom_schema_parses_with_all_overloads(published):
    assert len(published.custom) > 100
    for funcs in published.custom.values():
        for func in funcs:
            torch._C.parse_schema(func)
    fia = [f.split("(", 1)[0] for f in published.overloads("npu_fused_infer_attention_score")]
    assert fia == ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score.out"]
    out = torch._C.parse_schema(published.overloads("npu_fused_infer_attention_score")[1])
    written = [a.name for a in out.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert written == ["attention_out", "softmax_lse"]
    assert published.namespace("npu_rms_norm") == "npu"


def test_atb_prototypes(published):
    for name in ("_npu_rotary_embedding", "_npu_reshape_and_cache", "_npu_reshape_and_cache_siso"):
        assert name in published.atb, f"{name} prototype not found in AtbOpsInterface.h"
        assert published.namespace(name) == "atb"
    parsed = torch._C.parse_schema(published.atb["_npu_reshape_and_cache"])
    assert [a.name for a in parsed.arguments] == ["key", "value", "key_cache", "value_cache", "slot_indices"]
    assert parsed.arguments[2].alias_info.is_write


def test_atb_prototype_conversion():
    line = ("TORCH_NPU_API void _npu_x(const at::Tensor&q, at::Tensor &out, int64_t n, "
            "double s, bool flag, const c10::optional<at::Tensor>&mask);")
    assert schemas.atb_prototype_to_schema(line) == (
        "_npu_x(Tensor q, Tensor(a!) out, int n, float s, bool flag, Tensor? mask) -> ()"
    )
    assert schemas.atb_prototype_to_schema("TORCH_NPU_API at::Tensor _npu_y(const at::Tensor&q);") is None


def test_parsed_schemas_are_cached_next_to_the_wheel(published):
    cached = schemas.wheel_path().with_name(schemas.wheel_path().name + ".schemas.json")
    assert cached.is_file()
    assert schemas._parse_wheel(schemas.wheel_path()) == published


def test_missing_wheel_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_TORCH_NPU_CACHE", str(tmp_path))
    monkeypatch.setattr(schemas, "_memo", None)
    with pytest.raises(SimulatedNpuError, match=r"wheel not found in .*python -m ascend_ops.simulator.schemas --fetch"):
        schemas.published_schemas()
    assert schemas.fetch_command()[-1] == str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "ascend_ops.simulator.schemas", "--check"], capture_output=True,
                          text=True, timeout=120, env={**__import__("os").environ,
                                                       "ASCEND_OPS_TORCH_NPU_CACHE": str(tmp_path)})
    assert proc.returncode == 1 and "--fetch" in proc.stderr
