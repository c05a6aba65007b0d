# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up checks made from the support table (options/support.py): refused engine arguments,
VLLM_* variables, kv_cache_dtype per branch, quantization methods. Config objects are stand-ins
with vLLM 0.32's field names (vllm/config/*.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm_ascend_platform.options import support as S
from vllm_ascend_platform.options.features import check_features
from vllm_ascend_platform.options.refusal import UnsupportedFeatureError
from vllm_ascend_platform.startup.config import AscendConfig


def _cfg(cache_dtype="auto", model_dtype=torch.float32, use_mla=False, **parallel):
    return SimpleNamespace(
        model_config=SimpleNamespace(dtype=model_dtype, use_mla=use_mla, multimodal_config=None),
        cache_config=SimpleNamespace(cache_dtype=cache_dtype),
        parallel_config=SimpleNamespace(enable_dbo=False, worker_cls="auto", **parallel),
    )


def _mode(monkeypatch, mode):
    monkeypatch.delenv("VLLM_ASCEND_EMULATE", raising=False)
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    if mode == "emulation":
        monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    elif mode == "simulated":
        monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")


@pytest.mark.parametrize("dtype", ["fp8", "fp8_e4m3", "fp8_e5m2", "float16", "bfloat16"])
def test_narrow_kv_caches_served_in_emulation(monkeypatch, dtype):
    _mode(monkeypatch, "emulation")
    assert S.kv_cache_problem(_cfg(dtype)) is None
    check_features(_cfg(dtype), AscendConfig())


@pytest.mark.parametrize("mode", ["simulated", "npu"])
@pytest.mark.parametrize("dtype", ["fp8", "fp8_e5m2", "bfloat16"])
def test_npu_branch_refuses_a_cache_dtype_other_than_the_model_dtype(monkeypatch, mode, dtype):
    _mode(monkeypatch, mode)
    with pytest.raises(UnsupportedFeatureError, match=r"--kv-cache-dtype / kv_cache_dtype: .*"
                       r"Atlas A2/A3 \(Ascend 910B/910_93\)"):
        check_features(_cfg(dtype, torch.float16), AscendConfig())
    # the cache in the model's own dtype is what the operators take
    assert S.kv_cache_problem(_cfg("float16", torch.float16)) is None


def test_mla_and_packed_formats_refused(monkeypatch):
    _mode(monkeypatch, "emulation")
    assert "MLA" in S.kv_cache_problem(_cfg("fp8", use_mla=True))
    for dtype in ("int8_per_token_head", "fp8_inc", "nvfp4"):
        assert "not built" in S.kv_cache_problem(_cfg(dtype))


def test_refused_argument_and_env_named_with_fix(monkeypatch):
    _mode(monkeypatch, "emulation")
    with pytest.raises(UnsupportedFeatureError) as err:
        check_features(_cfg_dbo(), AscendConfig())
    assert "--enable-dbo / enable_dbo: dual-batch overlap is not built" in str(err.value)
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    with pytest.raises(UnsupportedFeatureError, match="environment variable VLLM_BATCH_INVARIANT"):
        check_features(_cfg(), AscendConfig())
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")  # the default value is not a request
    check_features(_cfg(), AscendConfig())


def _cfg_dbo():
    cfg = _cfg()
    cfg.parallel_config.enable_dbo = True
    return cfg


def test_worker_cls_ours_or_auto(monkeypatch):
    _mode(monkeypatch, "emulation")
    cfg = _cfg()
    cfg.parallel_config.worker_cls = "vllm_ascend_platform.worker.worker.NPUWorker"
    check_features(cfg, AscendConfig())
    cfg.parallel_config.worker_cls = "vllm.v1.worker.gpu_worker.Worker"
    with pytest.raises(UnsupportedFeatureError, match="--worker-cls / worker_cls"):
        check_features(cfg, AscendConfig())


def test_quantization_refused_by_name_with_the_fix():
    S.check_quantization("ascend", ["ascend"])
    with pytest.raises(ValueError) as err:
        S.check_quantization("fp8", ["ascend"])
    msg = str(err.value)
    assert "--quantization fp8" in msg and "msModelSlim" in msg and "Served methods: ascend" in msg
    with pytest.raises(ValueError, match="not in the Ascend support table"):
        S.check_quantization("some_plugin_method", ["ascend"])


@pytest.mark.parametrize("backend, refused", [("cumem", False), ("ascend", False),
                                              ("cuda_checkpoint", True)])
def test_sleep_mode_backend_ours_or_vllms_default(monkeypatch, backend, refused):
    # vLLM 0.34's --sleep-mode-backend (ModelConfig.sleep_mode_backend): "cumem" is vLLM's
    # default, which the platform runs as its "ascend" backend (sleep_mode.select_default)
    _mode(monkeypatch, "emulation")
    cfg = _cfg()
    cfg.model_config.sleep_mode_backend = backend
    if not refused:
        check_features(cfg, AscendConfig())
        return
    with pytest.raises(UnsupportedFeatureError,
                       match="--sleep-mode-backend / sleep_mode_backend: .*pass ascend"):
        check_features(cfg, AscendConfig())


def test_monokernel_refused(monkeypatch):
    _mode(monkeypatch, "emulation")
    cfg = _cfg()
    cfg.kernel_config = SimpleNamespace(monokernel=True, ir_op_priority=None)
    with pytest.raises(UnsupportedFeatureError, match="--monokernel / monokernel: .*ROCm gfx942"):
        check_features(cfg, AscendConfig())
