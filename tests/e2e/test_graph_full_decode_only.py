# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph mode FULL_DECODE_ONLY == eager, and the parameter-update hook's real lengths.

One FULL graph per capture size for uniform decode steps (the runner wraps the
whole model in the platform's static graph wrapper); prefill steps run eagerly. Greedy
tokens for batch sizes 1, 3, 5 and 9 equal eager mode on SmolLM2-135M-Instruct (float32);
batches 3, 5 and 9 are padded to captured sizes 4, 8 and 16. Before every FULL replay the
hooks registered with ``vllm_ascend_graph.params`` get the step's real KV lengths, which we
check against the prompt lengths from the tokenizer. One engine in this module; the eager
reference (subprocess) is shared with test_graph_parity.py in one pytest run.
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

    engine = graph_llm(model_path, "FULL_DECODE_ONLY")
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def eager(model_path):
    return eager_tokens(model_path, PROMPTS, MAX_TOKENS)


def test_one_full_graph_per_capture_size(llm):
    from vllm.config import CUDAGraphMode

    comp = llm.llm_engine.vllm_config.compilation_config
    assert comp.cudagraph_mode == CUDAGraphMode.FULL_DECODE_ONLY
    wrappers = engine_wrappers(llm)
    assert [w.runtime_mode for w in wrappers] == [CUDAGraphMode.FULL]
    assert sorted(d.num_tokens for d in wrappers[0].entries) == CAPTURE_SIZES


@pytest.mark.parametrize("batch", BATCHES)
def test_greedy_tokens_equal_eager(llm, eager, batch):
    wrappers = engine_wrappers(llm)
    before = replays(wrappers)
    outs = greedy(llm, PROMPTS[:batch])
    assert replays(wrappers) > before  # decode steps replayed the FULL graph
    assert [list(o.outputs[0].token_ids) for o in outs] == eager[:batch]


@pytest.mark.parametrize("batch", [3, 5])
def test_param_update_hook_gets_real_seq_lens(llm, batch):
    """Decode step k of a batch started together has KV length prompt_len + k per request."""
    from vllm_ascend_graph import params

    seen = []
    hook = params.register_param_update_hook(seen.append)
    try:
        n = 5
        outs = greedy(llm, PROMPTS[:batch], max_tokens=n, ignore_eos=True)
    finally:
        params.unregister_param_update_hook(hook)
    prompt_lens = [len(o.prompt_token_ids) for o in outs]
    # the first token comes from the (eager) prefill; decode steps 1..n-1 replay FULL graphs
    expected = [sorted(p + k for p in prompt_lens) for k in range(1, n)]
    assert [sorted(p.seq_lens) for p in seen] == expected
    assert all(p.num_actual_tokens == batch for p in seen)
    padded = min(s for s in CAPTURE_SIZES if s >= batch)
    assert all(p.batch_descriptor.num_tokens == padded for p in seen)
