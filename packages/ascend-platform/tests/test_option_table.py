# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The option support table against vLLM 0.32 itself: every engine argument, quantization
method, kv_cache_dtype choice and VLLM_* variable read below the engine has exactly one row, no
row names an option vLLM no longer has, each supported row names a test that exists, each
refused engine argument has a start-up check, and docs/option-support.md is the rendered table."""

from __future__ import annotations

import ast
import importlib.metadata
from collections import Counter
from pathlib import Path

import pytest
from vllm_ascend_platform.options import support as S
from vllm_ascend_platform.options.table import NOT_OURS, REFUSED, SUPPORTED
from vllm_ascend_platform.startup import contract

REPO = Path(__file__).resolve().parents[3]
#: refused engine arguments whose check lives in features.py REFUSALS (the transfer configs,
#: the data-parallel backend)
CHECKED_ELSEWHERE = {"kv_transfer_config", "ec_transfer_config", "data_parallel_backend"}


@pytest.fixture(scope="module")
def vllm_names():
    # the quantization methods beyond vLLM's are the models layer's, read from its description
    # (options/quant_methods.py); this package's own session hides that layer, so read the checkout's
    if contract.provider("quantization_methods") is not None:
        return S.vllm_names()
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(REPO / "packages" / "ascend-models" / "src"))
        ep = importlib.metadata.EntryPoint("models", "vllm_ascend_models:LAYER",
                                           contract.ENTRY_POINT_GROUP)
        mp.setattr(contract, "_entry_points", lambda: [ep])
        contract.clear_cache()
        try:
            return S.vllm_names()
        finally:
            contract.clear_cache()


@pytest.mark.parametrize("kind", S.KINDS)
def test_table_covers_exactly_vllms_options(vllm_names, kind):
    table = [r.name for r in S.rows() if r.kind == kind]
    dupes = [n for n, c in Counter(table).items() if c > 1]
    assert not dupes, f"{kind}: rows listed twice: {dupes}"
    missing = sorted(vllm_names[kind] - set(table))
    stale = sorted(set(table) - vllm_names[kind])
    assert not missing, f"{kind}: vLLM options with no row in option_table*.py: {missing}"
    assert not stale, f"{kind}: rows for options vLLM does not define: {stale}"


def test_below_engine_env_scan_finds_known_readers(vllm_names):
    # independent spot checks from vLLM's source: the runner reads VLLM_COMPUTE_NANS_IN_LOGITS
    # (vllm/v1/worker/gpu_model_runner.py), the KV layout comes from VLLM_KV_CACHE_LAYOUT
    # (vllm/v1/attention/backends/utils.py)
    assert {"VLLM_COMPUTE_NANS_IN_LOGITS", "VLLM_KV_CACHE_LAYOUT"} <= vllm_names[S.KINDS[3]]


def test_statuses_and_evidence():
    for r in S.rows():
        assert r.status in (SUPPORTED, REFUSED, NOT_OURS), r
        assert r.evidence.strip(), r


def _test_exists(test_id: str) -> bool:
    path, _, func = test_id.partition("::")
    file = REPO / path
    if not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == func
               for n in ast.walk(tree))


def test_supported_rows_name_an_existing_test():
    bad = sorted({r.evidence for r in S.rows() if r.status == SUPPORTED
                  and not _test_exists(r.evidence)})
    assert not bad, f"supported rows cite tests that do not exist: {bad}"


def test_every_refused_engine_argument_has_a_startup_check():
    refused = {r.name for r in S.rows() if r.kind == S.KINDS[0] and r.status == REFUSED}
    unchecked = sorted(refused - set(S.ARG_CHECKS) - CHECKED_ELSEWHERE)
    assert not unchecked, f"refused rows without a check in option_support.ARG_CHECKS: {unchecked}"
    # ARG_CHECKS serves every supported vLLM line: each name is a refused row of some line
    every = {r.name for r in S.rows(line=S.EVERY_LINE)
             if r.kind == S.KINDS[0] and r.status == REFUSED}
    assert not set(S.ARG_CHECKS) - every, "ARG_CHECKS names rows that are not refused"


def test_line_only_rows_follow_the_installed_vllm():
    """Rows of one vLLM line (options/table_lines.py) appear on that line only: vLLM 0.34.0 added
    --enable-extensible-kv-cache and dropped the fp_quant method (vllm/engine/arg_utils.py,
    vllm/model_executor/layers/quantization/__init__.py of each release)."""
    for line, present, absent in (("0.33.0", "fp_quant", "enable_extensible_kv_cache"),
                                  ("0.34.0+empty", "enable_extensible_kv_cache", "fp_quant")):
        names = {r.name for r in S.rows(line=line)}
        assert present in names and absent not in names, line
    every = {r.name for r in S.rows(line=S.EVERY_LINE)}
    assert {"fp_quant", "enable_extensible_kv_cache"} <= every


def test_docs_are_the_rendered_table():
    doc = REPO / "docs" / "option-support.md"
    assert doc.read_text(encoding="utf-8") == S.render_markdown(), (
        "docs/option-support.md is stale: run "
        "`python -m vllm_ascend_platform.options.support > docs/option-support.md`"
    )
