# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""EAGLE and EAGLE-3 speculative decoding with tiny random-weight draft heads (CPU emulation).

The drafts (``eagle_drafts.py``) are one-layer heads of the classes vLLM 0.32 loads for a Llama
target (``EagleLlamaForCausalLM``, ``Eagle3LlamaForCausalLM`` with its own 2048-token draft
vocabulary and ``d2t`` map). Their weights are random, so their proposals are mostly rejected:
what is checked is that greedy output equals the output without speculation token for token
(whatever the draft proposes), that the draft model ran (drafts were proposed every decode
step) and that vLLM's counters are consistent (accepted <= proposed). These engines run with
asynchronous scheduling (vLLM's default for EAGLE), where the attention backends must not trust
the host copy of the KV lengths (``vllm_ascend_attention.host_lengths.upper_bound_is_exact``).

Graph mode: one EAGLE and one EAGLE-3 engine with FULL_DECODE_ONLY ACL graphs. The target's verification steps
(uniform ``1 + k`` tokens per request) replay FULL graphs whose sizes are multiples of ``1 + k``;
vLLM 0.32's proposer gives the draft model PIECEWISE graphs only
(``SpecDecodeBaseProposer.initialize_cudagraph_keys``), none under FULL_DECODE_ONLY, so the draft
runs eagerly between replays and must still see the step's KV lengths. vLLM 0.34's Model Runner
V2 captures FULL graphs of the draft too (``vllm/v1/worker/gpu/spec_decode/``, ours:
``vllm_ascend_graph.mrv2_spec_manager``): there the draft's graphs must be replayed as well, with
the draft step's own lengths.
"""

from __future__ import annotations

import pytest
from _graph_eager_ref import engine_wrappers, graph_llm, replays
from eagle_drafts import save_draft
from engine import close_llm, make_llm

K = 2
PROMPTS = [
    "one two three four five six seven eight. one two three four five six seven eight. one two",
    "The capital of France is",
    "def fibonacci(n):",
]
MAX_TOKENS = 16


def _greedy():
    from vllm import SamplingParams

    return SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True)


def _tokens(llm) -> list[list[int]]:
    return [list(o.outputs[0].token_ids) for o in llm.generate(PROMPTS, _greedy(), use_tqdm=False)]


def _counters(llm) -> dict[str, float]:
    return {m.name[len("vllm:spec_decode_num_"):]: m.value for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode_num_") and hasattr(m, "value")}


@pytest.fixture(scope="module")
def no_spec(model_path):
    llm = make_llm(model_path, max_model_len=512)
    try:
        return _tokens(llm)
    finally:
        close_llm(llm)


def _check_counters(counters: dict[str, float]) -> None:
    drafts = counters.get("drafts", 0)
    assert drafts >= len(PROMPTS) * (MAX_TOKENS // (K + 1)), counters  # every decode step drafted
    assert counters["draft_tokens"] == K * drafts
    assert 0 <= counters.get("accepted_tokens", 0) <= counters["draft_tokens"]


@pytest.mark.parametrize("method", ["eagle", "eagle3"])
def test_greedy_equals_no_speculation(method, model_path, no_spec, tmp_path):
    draft = save_draft(method, tmp_path / method, model_path)
    # async scheduling asked for: vLLM's default on the NPU, off by default in CPU emulation
    # (config_defaults.emulation_engine_defaults); the drafter's async path is the one proven here
    llm = make_llm(model_path, max_model_len=512, disable_log_stats=False, async_scheduling=True,
                   speculative_config={"method": method, "model": draft,
                                       "num_speculative_tokens": K})
    try:
        assert llm.llm_engine.vllm_config.scheduler_config.async_scheduling
        got = _tokens(llm)
        counters = _counters(llm)
    finally:
        close_llm(llm)
    assert got == no_spec
    _check_counters(counters)
    print(f"{method}: accepted {counters.get('accepted_tokens', 0):.0f} of "
          f"{counters['draft_tokens']:.0f} draft tokens")


@pytest.mark.parametrize("method", ["eagle", "eagle3"])
def test_graph_mode_greedy_equals_no_speculation(method, model_path, no_spec, tmp_path):
    """EAGLE / EAGLE-3 with FULL_DECODE_ONLY graphs: same tokens, FULL graphs of 1 + k tokens
    per request captured and replayed."""
    draft = save_draft(method, tmp_path / method, model_path)
    llm = graph_llm(model_path, "FULL_DECODE_ONLY", disable_log_stats=False,
                    speculative_config={"method": method, "model": draft,
                                        "num_speculative_tokens": K})
    try:
        wrappers = engine_wrappers(llm)
        drafts = engine_wrappers(llm, role="draft")
        sizes = sorted({d.num_tokens for w in wrappers for d in w.entries})
        start, draft_start = replays(wrappers), replays(drafts)
        got = _tokens(llm)
        replayed = replays(wrappers) - start
        draft_replayed = replays(drafts) - draft_start
        counters = _counters(llm)
    finally:
        close_llm(llm)
    assert sizes and all(s % (1 + K) == 0 for s in sizes), sizes
    assert replayed > 0, "no FULL decode graph was replayed"
    assert draft_replayed > 0, "no FULL draft graph was replayed"
    assert got == no_spec
    _check_counters(counters)
