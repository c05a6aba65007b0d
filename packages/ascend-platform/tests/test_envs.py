# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Parsing of our environment variables."""

from __future__ import annotations

import pytest
from vllm_ascend_platform import envs


@pytest.mark.parametrize("text,value", [("8GiB", 8 << 30), ("512MiB", 512 << 20), ("1024", 1024),
                                        ("1.5g", int(1.5 * (1 << 30)))])
def test_parse_bytes(text, value):
    assert envs.parse_bytes(text, "X") == value


@pytest.mark.parametrize("text", ["", "eight", "-1GiB", "0", "3 parsecs"])
def test_parse_bytes_rejects(text):
    with pytest.raises(ValueError, match="X="):
        envs.parse_bytes(text, "X")


def test_emulated_memory_default_and_cap(monkeypatch):
    monkeypatch.delenv("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", raising=False)
    assert 0 < envs.emulated_device_memory() <= 8 << 30
    monkeypatch.setenv("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "100TiB")
    with pytest.raises(ValueError, match="VLLM_ASCEND_EMULATE_DEVICE_MEMORY"):
        envs.emulated_device_memory()
    monkeypatch.setenv("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", "100000GiB")
    with pytest.raises(ValueError, match="half of this host"):
        envs.emulated_device_memory()


def test_emulate_flag(monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    assert envs.emulate()
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "0")
    assert not envs.emulate()
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "maybe")
    with pytest.raises(ValueError, match="VLLM_ASCEND_EMULATE"):
        envs.emulate()


def test_requested_mode(monkeypatch):
    monkeypatch.delenv("VLLM_ASCEND_EMULATE", raising=False)
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    assert envs.requested_mode() is None and not envs.host_device()
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    assert envs.requested_mode() == "simulated-npu" and envs.host_device()
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "0")
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    assert envs.requested_mode() == "emulation"
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    with pytest.raises(ValueError, match="both set.*unset one"):
        envs.requested_mode()
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "0")
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "sure")
    with pytest.raises(ValueError, match="VLLM_ASCEND_SIMULATE_NPU='sure'"):
        envs.simulate_npu()


@pytest.mark.parametrize("dtype,refused", [("float32", True), ("float16", False), ("bfloat16", False)])
def test_simulated_npu_refuses_float32(dtype, refused):
    """The torch_npu operators (and so the simulator) take float16/bfloat16 activations only."""
    from types import SimpleNamespace

    import torch
    from vllm_ascend_platform.startup.config_defaults import check_simulated_dtype

    config = SimpleNamespace(model_config=SimpleNamespace(dtype=getattr(torch, dtype)))
    if refused:
        with pytest.raises(ValueError, match="--dtype float16 or --dtype bfloat16"):
            check_simulated_dtype(config)
    else:
        check_simulated_dtype(config)


def test_every_variable_the_code_reads_is_declared():
    """Each ``VLLM_ASCEND_*`` name spelled as a string in the sources (the packages, the
    meta-package, noxfile.py, scripts/) is declared in ``ENVIRONMENT_VARIABLES``, so ``doctor``
    and vLLM's unknown-variable check never call a variable we read "ignored"."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    files = [*root.glob("packages/*/src/**/*.py"), *root.glob("src/**/*.py"),
             root / "noxfile.py", *root.glob("scripts/*.py"), *root.glob("scripts/*.sh")]
    pattern = re.compile(r"[\"'](VLLM_ASCEND_[A-Z0-9_]+)[\"']")
    read = {m.group(1): f for f in files for m in pattern.finditer(f.read_text())}
    assert "VLLM_ASCEND_EMULATE" in read  # the scan sees the sources
    undeclared = {name: str(f.relative_to(root)) for name, f in read.items()
                  if name not in envs.ENVIRONMENT_VARIABLES}
    assert not undeclared, f"add these to vllm_ascend_platform.envs.ENVIRONMENT_VARIABLES: {undeclared}"
