# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A sparse-attention model (HF config ``index_topk``, DeepSeek-V3.2 DSA) runs eagerly: no
compilation, no ACL graphs, even when the graph layer is installed and graphs are requested
(startup/config_defaults.py, docs/sparse-attention.md); a dense model keeps the graph layer's
settings."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


def _config(hf):
    from vllm.config import CompilationMode, CUDAGraphMode

    comp = SimpleNamespace(mode=CompilationMode.VLLM_COMPILE,
                           cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
                           cudagraph_capture_sizes=[1, 2], max_cudagraph_capture_size=2)
    model = SimpleNamespace(enforce_eager=False, hf_text_config=hf)
    return SimpleNamespace(model_config=model, compilation_config=comp)


@pytest.mark.parametrize("sparse", [True, False])
def test_sparse_models_run_eager(monkeypatch, sparse):
    from vllm.config import CompilationMode, CUDAGraphMode
    from vllm_ascend_platform.startup import config_defaults, contract

    monkeypatch.setattr(contract, "provided", lambda role: "some.GraphWrapper")  # graphs installed
    hf = SimpleNamespace(index_topk=2048) if sparse else SimpleNamespace()
    cfg = _config(hf)
    config_defaults._eager_when_no_graphs(cfg)
    comp = cfg.compilation_config
    if sparse:
        assert comp.mode == CompilationMode.NONE and comp.cudagraph_mode == CUDAGraphMode.NONE
        assert comp.cudagraph_capture_sizes == [] and cfg.model_config.enforce_eager
    else:
        assert comp.mode == CompilationMode.VLLM_COMPILE and not cfg.model_config.enforce_eager
