# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph mode FULL_AND_PIECEWISE (vLLM 0.32's default) == eager, with chunked prefill.

Uniform decode steps replay one FULL graph per capture size; every other step
(prefill, chunked prefill, mixed batches) replays the 31 PIECEWISE pieces of the Ascend
compile backend with attention run between them. The engine and its eager reference both
use ``max_num_batched_tokens=64``, so a prompt over 64 tokens is prefilled in chunks.
Greedy tokens for batch sizes 1, 3, 5 and 9, and for a batch holding the long prompt,
equal eager mode on SmolLM2-135M-Instruct (float32). One engine in this module; the eager
reference runs in a subprocess.
"""

from __future__ import annotations

import pytest
from _graph_eager_ref import (
    BATCHES,
    CAPTURE_SIZES,
    LONG_PROMPT,
    MAX_TOKENS,
    PROMPTS,
    eager_tokens,
    engine_wrappers,
    graph_llm,
    greedy,
    replays,
)

CHUNK = 64


@pytest.fixture(scope="module")
def llm(model_path):
    from engine import close_llm

    engine = graph_llm(model_path, "FULL_AND_PIECEWISE", max_num_batched_tokens=CHUNK)
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def eager(model_path):
    return eager_tokens(model_path, PROMPTS + [LONG_PROMPT], MAX_TOKENS, CHUNK)


def _full_and_pieces(llm):
    from vllm.config import CUDAGraphMode

    return (engine_wrappers(llm, CUDAGraphMode.FULL),
            engine_wrappers(llm, CUDAGraphMode.PIECEWISE))


def test_full_and_piecewise_graphs_captured(llm):
    from vllm.config import CUDAGraphMode

    comp = llm.llm_engine.vllm_config.compilation_config
    assert comp.cudagraph_mode == CUDAGraphMode.FULL_AND_PIECEWISE
    full, pieces = _full_and_pieces(llm)
    assert len(full) == 1 and sorted(d.num_tokens for d in full[0].entries) == CAPTURE_SIZES
    assert len(pieces) == 31  # 30 decoder layers -> 31 pieces between attention ops
    assert all(len(w.entries) == len(CAPTURE_SIZES) for w in pieces)


@pytest.mark.parametrize("batch", BATCHES)
def test_greedy_tokens_equal_eager(llm, eager, batch):
    full, pieces = _full_and_pieces(llm)
    before = replays(full), replays(pieces)
    outs = greedy(llm, PROMPTS[:batch])
    assert replays(full) > before[0]  # decode steps replayed the FULL graph
    if batch == 1:  # a prefill of <= 16 tokens is not uniform decode: PIECEWISE pieces
        assert replays(pieces) > before[1]
    assert [list(o.outputs[0].token_ids) for o in outs] == eager[:batch]


def test_chunked_prefill_equal_eager(llm, eager):
    full, _ = _full_and_pieces(llm)
    before = replays(full)
    outs = greedy(llm, [LONG_PROMPT] + PROMPTS[:2])
    assert len(outs[0].prompt_token_ids) > CHUNK  # the long prompt was prefilled in chunks
    assert replays(full) > before
    assert [list(o.outputs[0].token_ids) for o in outs] == [eager[-1]] + eager[:2]
