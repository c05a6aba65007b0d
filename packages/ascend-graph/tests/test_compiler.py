# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendCompiler's cache-key hook on both vLLM versions: ``compute_hash`` on vLLM 0.33,
``compile_factors`` on 0.34 (``vllm/compilation/compiler_interface.py``, whose
``CompilerInterface.__init_subclass__`` refuses a class that still defines ``compute_hash``)."""

from __future__ import annotations

from types import SimpleNamespace

from vllm.compilation.compiler_interface import CompilerInterface
from vllm_ascend_graph.compiler import AscendCompiler
from vllm_ascend_graph.options import SECTION


def _config(section: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(additional_config={SECTION: section} if section is not None else {})


def test_compile_factors_name_this_layers_options():
    factors = AscendCompiler().compile_factors(_config())
    assert list(factors) == ["ascend"]
    assert isinstance(factors["ascend"], dict)
    assert factors == AscendCompiler().compile_factors(_config({}))  # defaults: same key


def test_compile_factors_change_with_the_options():
    default = AscendCompiler().compile_factors(_config())["ascend"]
    key = next(k for k, v in default.items() if isinstance(v, bool))
    changed = AscendCompiler().compile_factors(_config({key: not default[key]}))["ascend"]
    assert changed[key] is (not default[key]) and changed != default


def test_compute_hash_only_where_vllm_calls_it():
    defines = "compute_hash" in vars(AscendCompiler)
    assert defines == hasattr(CompilerInterface, "compute_hash")
    if defines:  # vLLM 0.33
        assert AscendCompiler().compute_hash(_config()) == AscendCompiler().compute_hash(_config())
