# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""options/guards.py: the refusals checked on EngineArgs before vLLM's own config checks, and the
IR-op providers. Engine arguments are a vLLM 0.32 ``EngineArgs`` holding its fields' defaults,
built without ``__post_init__`` (which resolves the model; no model is read here)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from vllm_ascend_platform.options import guards as G
from vllm_ascend_platform.options import support as S
from vllm_ascend_platform.options.features import check_features
from vllm_ascend_platform.options.refusal import UnsupportedFeatureError
from vllm_ascend_platform.startup.config import AscendConfig

EARLY_VALUES = {"enable_eplb": True, "enable_elastic_ep": True, "enable_cumem_allocator": True,
                "engram_config": SimpleNamespace(), "enable_fault_tolerance": True,
                "enable_extensible_kv_cache": True}


def _engine_fields() -> set[str]:
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    return {f.name for f in dataclasses.fields(EngineArgs)}


def _engine_args(**kw):
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    args = object.__new__(EngineArgs)
    for f in dataclasses.fields(EngineArgs):
        if f.default is not dataclasses.MISSING:
            setattr(args, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            setattr(args, f.name, f.default_factory())
    for name, value in kw.items():
        setattr(args, name, value)
    return args


def test_default_engine_args_pass():
    G.check_engine_args(_engine_args())


@pytest.mark.parametrize("name", sorted(EARLY_VALUES))
def test_each_early_argument_refused_by_name_with_the_fix(name):
    if name not in _engine_fields():
        pytest.skip(f"this vLLM has no {name} engine argument (options/table_lines.py)")
    args = _engine_args()
    setattr(args, name, EARLY_VALUES[name])
    with pytest.raises(UnsupportedFeatureError) as err:
        G.check_engine_args(args)
    msg = str(err.value)
    fix = {r.name: r.evidence for r in S.rows()}[name]
    assert msg.startswith("vllm-ascend does not") and S.flag(name) in msg and fix in msg


def test_every_early_argument_is_a_refused_row_with_a_value_check():
    # every early argument is refused on the lines that define it (options/table_lines.py),
    # and each one this vLLM defines is a refused row of this vLLM's line
    every = {r.name for r in S.rows(line=S.EVERY_LINE)
             if r.kind == S.KINDS[0] and r.status == "refused"}
    assert set(G.EARLY_ARGS) <= every & set(S.ARG_CHECKS)
    refused = {r.name for r in S.rows() if r.kind == S.KINDS[0] and r.status == "refused"}
    assert set(G.EARLY_ARGS) & _engine_fields() <= refused & set(S.ARG_CHECKS)


def test_wrapper_runs_our_check_first_only_on_ascend(monkeypatch):
    from vllm.engine.arg_utils import EngineArgs

    G.refuse_before_vllm()
    G.refuse_before_vllm()  # idempotent
    wrapped = EngineArgs.create_engine_config
    assert wrapped.__ascend_early_check__ and not getattr(wrapped.__wrapped__,
                                                           "__ascend_early_check__", False)
    monkeypatch.setattr(G, "_ascend_is_current", lambda: True)
    with pytest.raises(UnsupportedFeatureError, match="--enable-eplb"):
        _engine_args(enable_eplb=True).create_engine_config()


def test_wrapper_applies_the_emulation_engine_defaults_before_vllm(monkeypatch):
    """The wrapper hands vLLM's ``create_engine_config`` (a recorder here) EngineArgs whose
    unset ``async_scheduling`` emulation turned off."""
    seen = []
    wrapper = G.wrap_create_engine_config(lambda self, *a, **k: seen.append(self.async_scheduling))
    monkeypatch.setattr(G, "_ascend_is_current", lambda: True)
    monkeypatch.setenv("VLLM_ASCEND_EMULATE", "1")
    args = _engine_args()
    assert args.async_scheduling is None
    wrapper(args)
    assert seen == [False]


def _kernel_cfg(**lists):
    from vllm.config.kernel import IrOpPriorityConfig

    return SimpleNamespace(kernel_config=SimpleNamespace(ir_op_priority=IrOpPriorityConfig(**lists)))


@pytest.mark.parametrize("lists", [{}, {"rms_norm": ["native"]},
                                   {"fused_add_rms_norm": ["ascend", "native"]}])
def test_ascend_and_native_ir_providers_pass(lists):
    assert G.foreign_ir_providers(_kernel_cfg(**lists)) == []
    assert not G.ir_provider_refusal().requested(_kernel_cfg(**lists), AscendConfig())


def test_other_ir_provider_refused_by_name():
    cfg = _kernel_cfg(rms_norm=["vllm_c", "native"], gelu_and_mul_sparse=["triton"])
    assert G.foreign_ir_providers(cfg) == ["rms_norm=vllm_c", "gelu_and_mul_sparse=triton"]
    refusal = G.ir_provider_refusal()
    assert refusal.requested(cfg, AscendConfig()) and "'ascend' and 'native'" in refusal.fix
    with pytest.raises(UnsupportedFeatureError, match="--ir-op-priority"):
        check_features(SimpleNamespace(**vars(cfg), model_config=None), AscendConfig())


def test_data_parallel_backend_other_than_mp_refused():
    from vllm_ascend_platform.options.features import refused_features

    cfg = SimpleNamespace(parallel_config=SimpleNamespace(data_parallel_backend="ray"))
    names = [r.feature for r in refused_features(cfg, AscendConfig())]
    assert "--data-parallel-backend / data_parallel_backend" in names
    cfg.parallel_config.data_parallel_backend = "mp"
    assert not any("data-parallel" in r.feature for r in refused_features(cfg, AscendConfig()))
