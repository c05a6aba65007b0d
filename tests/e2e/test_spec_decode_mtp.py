# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""DeepSeek MTP speculative decoding on a tiny DeepSeek-V3-shaped checkpoint (MLA + MoE, one MTP
layer, ``mtp_checkpoint.py``) in CPU emulation: k = 1 and k = 3 eager, k = 3 with FULL_DECODE_ONLY
graphs (k = 1 with graphs passed too but is left out to keep the module's CI cost down).

Greedy speculative decoding has an exact oracle: the output equals the output without
speculation token for token, whatever the draft proposes. The MTP layer's weights are arranged so
that some drafts are accepted and others rejected (see ``mtp_checkpoint``), so rows after the
first of a verification query matter. The verification queries (1 + k tokens per decode request)
run through the MLA backend's decode path (``ascend_ops.mla_decode``): ``mla_prefill`` is called
only on the prompt steps, which the op counters check.
"""

from __future__ import annotations

import os

import pytest
from engine import close_llm, make_llm
from mtp_checkpoint import save_tiny_mtp

PROMPTS = [
    "one two three four five six seven eight. one two three four five six seven eight. one two",
    "The capital of France is",
    "def fibonacci(n):",
]
MAX_TOKENS = 16
#: target layers (2) + the MTP layer: the MLA prefill calls of one prompt step with drafting
PREFILL_CALLS_PER_PROMPT_STEP = 3


def _tokens(llm) -> list[list[int]]:
    from vllm import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True)
    return [list(o.outputs[0].token_ids) for o in llm.generate(PROMPTS, params, use_tqdm=False)]


def _counters(llm) -> dict[str, float]:
    return {m.name[len("vllm:spec_decode_num_"):]: m.value for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode_num_") and hasattr(m, "value")}


@pytest.fixture(scope="module")
def checkpoint(model_path, tmp_path_factory) -> str:
    return save_tiny_mtp(tmp_path_factory.mktemp("dsv3-mtp"), model_path)


@pytest.fixture(scope="module")
def no_spec(checkpoint) -> list[list[int]]:
    llm = make_llm(checkpoint, max_model_len=256, max_num_seqs=4)
    try:
        return _tokens(llm)
    finally:
        close_llm(llm)


def _mtp_llm(checkpoint: str, method: str, k: int, graphs: bool):
    extra = {}
    if graphs:
        # sizes that are multiples of 1 + k survive vLLM's filter (uniform verification batches)
        extra = dict(enforce_eager=False, compilation_config={
            "cudagraph_mode": "FULL_DECODE_ONLY", "cudagraph_capture_sizes": [4, 8, 12]})
    return make_llm(checkpoint, max_model_len=256, max_num_seqs=4, disable_log_stats=False,
                    speculative_config={"method": method, "num_speculative_tokens": k}, **extra)


@pytest.mark.parametrize(
    "method,k,graphs",
    [("mtp", 1, False), ("deepseek_mtp", 3, False), ("mtp", 3, True)],
    ids=["eager-k1", "eager-k3-deepseek_mtp", "graph-k3"],
)
def test_mtp_greedy_equals_no_speculation(checkpoint, no_spec, method, k, graphs):
    import ascend_ops
    from _graph_eager_ref import engine_wrappers, replays

    saved = os.environ.get("VLLM_DISABLE_COMPILE_CACHE")
    os.environ["VLLM_DISABLE_COMPILE_CACHE"] = "1"  # run our passes, not a cached artifact
    try:
        llm = _mtp_llm(checkpoint, method, k, graphs)
    finally:
        if saved is None:
            os.environ.pop("VLLM_DISABLE_COMPILE_CACHE", None)
        else:
            os.environ["VLLM_DISABLE_COMPILE_CACHE"] = saved
    try:
        spec = llm.llm_engine.vllm_config.speculative_config
        assert spec.method == "mtp" and spec.num_speculative_tokens == k
        wrappers = engine_wrappers(llm) if graphs else []
        drafts = engine_wrappers(llm, role="draft") if graphs else []
        start, draft_start = replays(wrappers), replays(drafts)
        ascend_ops.reset_call_counts()
        got = _tokens(llm)
        calls = ascend_ops.call_counts()
        counters = _counters(llm)
        replayed = replays(wrappers) - start
        draft_replayed = replays(drafts) - draft_start
    finally:
        close_llm(llm)
    assert got == no_spec
    drafts = counters.get("drafts", 0)
    assert drafts > 0 and counters["draft_tokens"] == k * drafts, counters
    accepted = counters.get("accepted_tokens", 0)
    print(f"{method} k={k}: accepted {accepted:.0f} of {counters['draft_tokens']:.0f} draft tokens")
    assert 0 < accepted <= counters["draft_tokens"], counters  # both outcomes occur (see module doc)
    # the three prompts fit one step (default token budget); every later step is a verification
    # (decode path) followed by the draft's own steps
    assert calls.get("mla_prefill", 0) <= PREFILL_CALLS_PER_PROMPT_STEP, calls
    assert calls.get("mla_decode", 0) > 0, calls
    if graphs:
        sizes = sorted({d.num_tokens for w in wrappers for d in w.entries})
        assert sizes and all(s % (1 + k) == 0 for s in sizes), sizes
        assert replayed > 0, "no FULL decode graph was replayed"
        # the draft's FULL graphs are captured too (vllm_ascend_graph.mrv2_spec_manager)
        assert draft_replayed > 0, "no FULL draft graph was replayed"
