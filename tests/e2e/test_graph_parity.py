# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph mode PIECEWISE (Ascend compile backend with fusion passes) == eager.

Greedy tokens for batch sizes 1, 3, 5 and 9 equal eager mode on
SmolLM2-135M-Instruct (float32). One engine in this module (graph mode, through the
platform's real graph hooks); the eager reference runs in a subprocess with
``enforce_eager=True`` (shared with test_graph_full_decode_only.py in one pytest run).
"""

from __future__ import annotations

import pytest
from _graph_eager_ref import (
    BATCHES,
    CAPTURE_SIZES,
    MAX_TOKENS,
    PROMPTS,
    eager_tokens,
    engine_wrappers,
    graph_llm,
    greedy,
    replays,
)


@pytest.fixture(scope="module")
def llm(model_path):
    from engine import close_llm

    engine = graph_llm(model_path, "PIECEWISE")
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def eager(model_path):
    return eager_tokens(model_path, PROMPTS, MAX_TOKENS)


def test_capture_sizes_and_wrappers(llm):
    from vllm.config import CUDAGraphMode

    comp = llm.llm_engine.vllm_config.compilation_config
    assert comp.cudagraph_mode == CUDAGraphMode.PIECEWISE
    assert comp.cudagraph_capture_sizes == CAPTURE_SIZES
    wrappers = engine_wrappers(llm)
    # SmolLM2-135M: 30 decoder layers -> 31 pieces between attention ops, each captured per size
    assert len(wrappers) == 31
    assert all(w.runtime_mode == CUDAGraphMode.PIECEWISE for w in wrappers)
    assert all(len(w.entries) == len(CAPTURE_SIZES) for w in wrappers)


@pytest.mark.parametrize("batch", BATCHES)
def test_greedy_tokens_equal_eager(llm, eager, batch):
    wrappers = engine_wrappers(llm)
    before = replays(wrappers)
    outs = greedy(llm, PROMPTS[:batch])
    assert replays(wrappers) > before  # decode steps replayed captured graphs
    assert [list(o.outputs[0].token_ids) for o in outs] == eager[:batch]
