# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""n-gram speculative decoding with tensor parallelism (TP=2, CPU emulation, two worker ranks).

Oracle: greedy output without speculation and without sharding, from HF transformers on the
same checkpoint (an exact oracle: whatever the draft proposes, temperature-0 output must not
change; Leviathan et al. arXiv:2211.17192; our TP=1 engine equals HF on this checkpoint,
``test_parallel.py``, ``test_lora_tp.py``). At TP=2
every rank runs the target on ``1 + k``-token verification queries with its half of the heads,
the LM head's logits are gathered, and the driver's rejection sampler (vLLM's MRv2
``RejectionSampler`` over ``ascend_ops``, ``host/mrv2_spec_decode.py``) decides; the n-gram
proposer runs on the driver only.

A tiny random Qwen3 (``tiny_qwen3.py``: 4 query / 2 KV heads, so both split over 2 ranks;
SmolLM2's 9 heads do not) keeps the start short. A random model seldom repeats itself, so the
lookup goes down to one token (``prompt_lookup_min=1``): a draft is proposed whenever the last
token occurred before in prompt or output, and the last prompt's greedy output repeats a
two-token pair, so a draft is accepted.

Two engines, one after the other, against the one HF reference: eager, and FULL_DECODE_ONLY
ACL graphs with capture sizes that are multiples of the verification query length ``1 + k``
(docs/spec-decode.md "Runner, attention and graphs"). A FULL graph serves a step only when every
running request carries k drafts (a uniform decode batch); the random model's 4-prompt batch
seldom has one, so the graph engine also serves each prompt alone, whose 3-draft steps replay
the size-4 graph. The graphs live in the two worker processes, so they are read there
(``_graph_eager_ref.rank_graph_entries``, vLLM's ``collective_rpc``).
"""

from __future__ import annotations

import os

import pytest
from engine import close_llm, make_llm
from tiny_qwen3 import save_tiny_qwen3

K = 3
NGRAM = {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": 3,
         "prompt_lookup_min": 1}
PROMPTS = [  # token ids of the SmolLM2 vocabulary, each pattern repeated
    [1, 504, 3458, 314, 4536, 504, 3458, 314, 4536, 504, 3458, 314],
    [7, 19, 3456, 22, 901, 7, 19, 3456, 22, 901, 7, 19],
    [2189, 578, 2189, 578, 2189, 578, 2189],
    [5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7],
]
NEW_TOKENS = 24
GRAPH_SIZES = [1 + K, 2 * (1 + K), 4 * (1 + K)]


def _generate(llm, prompts=PROMPTS) -> list[list[int]]:
    """Greedy tokens per prompt (temperature 0, ``NEW_TOKENS`` each, EOS ignored)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True)
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                        use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return save_tiny_qwen3(tmp_path_factory.mktemp("spec_tp") / "model")


@pytest.fixture(scope="module")
def two_gib():
    """2 GiB of emulated device memory per rank (as test_parallel.py's engines get), restored."""
    saved = os.environ.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY")
    os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = "2GiB"
    yield
    if saved is None:
        os.environ.pop("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", None)
    else:
        os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = saved


@pytest.fixture(scope="module")
def reference(tiny) -> list[list[int]]:
    """HF transformers' unsharded greedy tokens per prompt (shared by both engines)."""
    from hf_oracle import HFOracle

    oracle = HFOracle(tiny)
    return [oracle.greedy(p, NEW_TOKENS).tokens for p in PROMPTS]


def _counters(llm) -> dict[str, float]:
    return {m.name: m.value for m in llm.get_metrics()
            if m.name.startswith("vllm:spec_decode_num_") and hasattr(m, "value")}


def test_tp2_ngram_greedy_equals_unsharded_greedy(tiny, two_gib, reference):
    llm = make_llm(tiny, max_model_len=256, max_num_seqs=8, tensor_parallel_size=2,
                   speculative_config=NGRAM, disable_log_stats=False)
    try:
        got = _generate(llm)
        counters = _counters(llm)
    finally:
        close_llm(llm)
    assert got == reference
    drafted = counters.get("vllm:spec_decode_num_draft_tokens", 0)
    accepted = counters.get("vllm:spec_decode_num_accepted_tokens", 0)
    print(f"TP=2 n-gram acceptance {accepted:.0f}/{drafted:.0f}")
    assert 0 < accepted <= drafted, counters


def test_tp2_ngram_graph_mode_greedy_equals_unsharded_greedy(tiny, two_gib, reference):
    from _graph_eager_ref import rank_graph_entries

    llm = make_llm(tiny, max_model_len=256, max_num_seqs=8, tensor_parallel_size=2,
                   speculative_config=NGRAM, disable_log_stats=False, enforce_eager=False,
                   compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY",
                                       "cudagraph_capture_sizes": GRAPH_SIZES})
    try:
        before = rank_graph_entries(llm)
        got = _generate(llm)
        # then each prompt alone: a step is a uniform 1 + k decode (a FULL graph's batch) only
        # when every running request has k drafts, which a random model's batch of 4 seldom has
        alone = [_generate(llm, [p])[0] for p in PROMPTS]
        after = rank_graph_entries(llm)
        counters = _counters(llm)
    finally:
        close_llm(llm)
    assert got == reference
    assert alone == reference
    drafted = counters.get("vllm:spec_decode_num_draft_tokens", 0)
    accepted = counters.get("vllm:spec_decode_num_accepted_tokens", 0)
    drafts = counters.get("vllm:spec_decode_num_drafts", 0)
    print(f"TP=2 n-gram graph acceptance {accepted:.0f}/{drafted:.0f}; graphs {after}")
    assert 0 < accepted <= drafted <= K * drafts, counters
    assert len(after) == 2, after  # one list per rank
    for rank, (start, end) in enumerate(zip(before, after, strict=True)):
        sizes = sorted({n for _, n, _, _ in end})
        assert sizes and all(n % (1 + K) == 0 for n in sizes), (rank, sizes)
        assert {mode for mode, _, _, _ in end} == {"FULL"}, (rank, end)
        assert sum(r for *_, r in end) > sum(r for *_, r in start), \
            f"rank {rank}: no FULL decode graph was replayed"
