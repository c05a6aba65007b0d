# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""options/mrv2_host.py: non-standard rejection sampling and watermarked draft verification are
refused at start-up in the host modes on vLLM 0.34 (Model Runner V2, kernels replaced by host
stand-ins), by name and with the fix; the standard rule, watermarking without drafts and an NPU
are not refused. The real-config path (vLLM's CLI parser -> create_engine_config) is
tests/e2e/test_option_sweep.py::test_mrv2_host_sampling_features_refused_at_startup_by_name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from vllm_ascend_platform.options import mrv2_host
from vllm_ascend_platform.options.features import check_features
from vllm_ascend_platform.options.refusal import UnsupportedFeatureError
from vllm_ascend_platform.startup.config import AscendConfig


def _cfg(method: str | None = "standard", watermark: object = None):
    spec = None if method is None else SimpleNamespace(rejection_sample_method=method)
    return SimpleNamespace(
        model_config=SimpleNamespace(multimodal_config=None),
        parallel_config=SimpleNamespace(enable_dbo=False, worker_cls="auto"),
        speculative_config=spec, watermark_config=watermark)


@pytest.fixture
def host_mrv2(monkeypatch):
    """Emulation with no Triton (where the stand-ins run)."""
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    monkeypatch.setattr("vllm.triton_utils.HAS_TRITON", False)


@pytest.mark.parametrize("method", ["synthetic", "block", "fly"])
def test_non_standard_rejection_refused_by_name_with_the_fix(host_mrv2, method):
    with pytest.raises(UnsupportedFeatureError, match=r"rejection_sample_method") as err:
        check_features(_cfg(method), AscendConfig())
    assert "set it to 'standard'" in str(err.value)


def test_watermarked_verification_refused_by_name_with_the_fix(host_mrv2):
    with pytest.raises(UnsupportedFeatureError, match=r"--watermark-config with "
                       r"--speculative-config") as err:
        check_features(_cfg("standard", watermark=SimpleNamespace(key=7)), AscendConfig())
    assert "drop --watermark-config" in str(err.value)


def test_watermarking_without_drafts_starts(host_mrv2):
    """Watermarked sampling alone runs on the host (nothing newly refused)."""
    check_features(_cfg(None, watermark=SimpleNamespace(key=7)), AscendConfig())


@pytest.mark.parametrize("method", ["standard", None])
def test_standard_rule_and_no_speculation_start(host_mrv2, method):
    check_features(_cfg(method), AscendConfig())


def test_not_refused_where_vllms_kernels_run(monkeypatch):
    """NPU mode (no host flag) or Triton present: vLLM's own kernels serve these."""
    monkeypatch.delenv("VLLM_ASCEND_EMULATE", raising=False)
    monkeypatch.delenv("VLLM_ASCEND_SIMULATE_NPU", raising=False)
    assert not any(r.requested(_cfg("block", SimpleNamespace(key=1)), None)
                   for r in mrv2_host.REFUSALS)
    monkeypatch.setenv("VLLM_ASCEND_SIMULATE_NPU", "1")
    monkeypatch.setattr("vllm.triton_utils.HAS_TRITON", True)
    assert not any(r.requested(_cfg("block", SimpleNamespace(key=1)), None)
                   for r in mrv2_host.REFUSALS)
    monkeypatch.setattr("vllm.triton_utils.HAS_TRITON", False)
    assert all(r.requested(_cfg("block", SimpleNamespace(key=1)), None)
               for r in mrv2_host.REFUSALS)
