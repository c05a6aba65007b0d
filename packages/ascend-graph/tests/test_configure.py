# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``configure()``: eager path and graph-mode decisions on vLLM's real config enums."""

from types import SimpleNamespace

import pytest
import vllm_ascend_graph
from vllm.config import CompilationConfig, CompilationMode, CUDAGraphMode
from vllm_ascend_graph import COMPILER_CLS


class _Model(SimpleNamespace):
    def get_num_layers(self, parallel_config):
        return self.num_layers


def make_config(*, enforce_eager=False, sizes=(1, 2, 4, 8), cg=CUDAGraphMode.FULL_AND_PIECEWISE,
                mode=CompilationMode.VLLM_COMPILE, budget=None, max_num_seqs=8, backend=""):
    comp = CompilationConfig()
    comp.mode = mode
    comp.cudagraph_mode = cg
    comp.cudagraph_capture_sizes = list(sizes)
    comp.max_cudagraph_capture_size = max(sizes) if sizes else 0
    comp.backend = backend
    additional = {} if budget is None else {"ascend_compilation_config": {"graph_budget": budget}}
    return SimpleNamespace(
        model_config=_Model(enforce_eager=enforce_eager, num_layers=30),
        compilation_config=comp,
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, max_num_batched_tokens=2048),
        parallel_config=SimpleNamespace(),
        uniform_decode_query_len=1,
        additional_config=additional,
    )


def test_enforce_eager_is_left_to_the_platform():
    # the one eager setting is the platform's (it runs before this hook); nothing to decide here
    cfg = make_config(enforce_eager=True)
    before = (cfg.compilation_config.mode, cfg.compilation_config.cudagraph_mode,
              list(cfg.compilation_config.cudagraph_capture_sizes), cfg.compilation_config.backend)
    vllm_ascend_graph.configure(cfg)
    comp = cfg.compilation_config
    assert (comp.mode, comp.cudagraph_mode, comp.cudagraph_capture_sizes, comp.backend) == before


def test_typed_options_from_the_platform_are_used():
    from vllm_ascend_graph.options import GraphOptions

    cfg = make_config(sizes=[1, 2, 4, 8], budget=None)  # the raw config says nothing
    with pytest.raises(ValueError, match="graph budget 5"):
        vllm_ascend_graph.configure(cfg, GraphOptions(graph_budget=5))


def test_description_publishes_what_the_module_has():
    from vllm.utils.import_utils import resolve_obj_by_qualname

    layer = vllm_ascend_graph.LAYER
    assert layer["options"]["section"] == "ascend_compilation_config"
    for qualname in layer["provides"].values():
        assert resolve_obj_by_qualname(qualname) is not None


def test_graph_mode_sets_our_backend_and_sizes():
    cfg = make_config(sizes=[8, 4, 4, 1, 2, 16, 32])
    vllm_ascend_graph.configure(cfg)
    comp = cfg.compilation_config
    assert comp.backend == COMPILER_CLS
    assert comp.cudagraph_capture_sizes == [1, 2, 4, 8]  # max_num_seqs 8
    assert comp.max_cudagraph_capture_size == 8
    assert comp.cudagraph_mode == CUDAGraphMode.FULL_AND_PIECEWISE


def test_budget_prunes_with_warning(caplog):
    # FULL_AND_PIECEWISE, 30 layers: 31 piecewise + 1 full = 32 graphs per size; 70 -> 2 sizes
    cfg = make_config(sizes=[1, 2, 4, 8], budget=70)
    with caplog.at_level("WARNING"):
        vllm_ascend_graph.configure(cfg)
    assert cfg.compilation_config.cudagraph_capture_sizes == [1, 8]
    assert "kept [1, 8]" in caplog.text


def test_budget_too_small_rejected():
    cfg = make_config(budget=5)
    with pytest.raises(ValueError, match="graph budget 5"):
        vllm_ascend_graph.configure(cfg)


def test_full_decode_only_counts_one_graph_per_size():
    cfg = make_config(cg=CUDAGraphMode.FULL_DECODE_ONLY, budget=4)
    vllm_ascend_graph.configure(cfg)
    assert cfg.compilation_config.cudagraph_capture_sizes == [1, 2, 4, 8]


def test_cudagraph_none_keeps_compile_but_no_sizes():
    cfg = make_config(cg=CUDAGraphMode.NONE)
    vllm_ascend_graph.configure(cfg)
    assert cfg.compilation_config.cudagraph_capture_sizes == []
    assert cfg.compilation_config.mode == CompilationMode.VLLM_COMPILE


def test_unknown_backend_rejected():
    cfg = make_config(backend="my.custom.Backend")
    with pytest.raises(ValueError, match="not supported on Ascend"):
        vllm_ascend_graph.configure(cfg)


def test_stock_torch_compile_rejected():
    cfg = make_config(mode=CompilationMode.STOCK_TORCH_COMPILE)
    with pytest.raises(ValueError, match="STOCK_TORCH_COMPILE"):
        vllm_ascend_graph.configure(cfg)


def test_register_is_idempotent():
    vllm_ascend_graph.register()
    vllm_ascend_graph.register()
    assert vllm_ascend_graph._registered is True


def test_mega_aot_artifact_turned_off_for_our_backend(monkeypatch):
    """vLLM's mega AOT reload needs inductor artifacts we never produce (second start died)."""
    from vllm_ascend_graph.execution_mode import MEGA_AOT_ENV

    monkeypatch.setenv(MEGA_AOT_ENV, "unset-me")  # records the original value for teardown
    monkeypatch.delenv(MEGA_AOT_ENV)
    vllm_ascend_graph.configure(make_config())
    import os

    assert os.environ[MEGA_AOT_ENV] == "0"
    from vllm import envs

    assert envs.VLLM_USE_MEGA_AOT_ARTIFACT is False


def test_mega_aot_artifact_explicit_on_is_refused(monkeypatch):
    from vllm_ascend_graph.execution_mode import MEGA_AOT_ENV

    monkeypatch.setenv(MEGA_AOT_ENV, "1")
    with pytest.raises(ValueError, match=MEGA_AOT_ENV):
        vllm_ascend_graph.configure(make_config())


def test_mega_aot_artifact_untouched_when_eager(monkeypatch):
    from vllm_ascend_graph.execution_mode import MEGA_AOT_ENV

    monkeypatch.setenv(MEGA_AOT_ENV, "unset-me")  # records the original value for teardown
    monkeypatch.delenv(MEGA_AOT_ENV)
    vllm_ascend_graph.configure(make_config(enforce_eager=True))
    import os

    assert MEGA_AOT_ENV not in os.environ


@pytest.mark.parametrize("switch", ["fuse_qk_norm_rope", "fuse_rope_kv_cache"])
def test_fusions_without_a_pass_are_refused_by_name(switch):
    from pydantic import ValidationError
    from vllm_ascend_graph.options import GraphOptions

    with pytest.raises(ValidationError, match=rf"not built on Ascend yet.*{switch}: "):
        GraphOptions.model_validate({switch: True, "fuse_swiglu": False})
    assert GraphOptions.model_validate({"fuse_swiglu": False}).fuse_swiglu is False
