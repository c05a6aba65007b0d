# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendCompiler's cache-key hook, ``compile_factors`` (``vllm/compilation/compiler_interface.py``,
whose ``CompilerInterface.__init_subclass__`` refuses a class that still defines ``compute_hash``)."""

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


def test_no_compute_hash_which_vllm_refuses():
    assert "compute_hash" not in vars(AscendCompiler)
    assert not hasattr(CompilerInterface, "compute_hash")
