# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""n-gram speculative decoding in simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``, float16).

The NPU path of everything speculative decoding touches runs over ``ascend_ops.simulator``
(docs/simulated-npu.md): FIA with ``1 + k``-token verification queries, the rejection-sampling
ops' NPU branch (the runner's host verification, ``host/mrv2_spec_decode.py``), FULL decode graphs captured for
uniform batches of ``1 + k`` tokens per request and replayed with the per-replay attention
parameter update. One child process builds three engines in turn: no speculation (eager),
n-gram eager and n-gram with FULL_DECODE_ONLY graphs (capture sizes 4 and 8 with k = 3; three
requests, 12 tokens, run eagerly and one or two requests replay a graph). Greedy output must be
identical across the three (the exact oracle of greedy speculative decoding).
"""

from __future__ import annotations

import pytest
from _sim_npu import run_child

K = 3
TEXTS = [
    "one two three four five six seven eight. one two three four five six seven eight. one two",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3,",
    "The cat sat on the mat. The cat sat on the mat. The cat",
]
MAX_TOKENS = [8, 14, 20]  # requests finish at different steps: the decode batch shrinks 3 -> 1
NGRAM = {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": 3,
         "prompt_lookup_min": 2}
ENGINE = dict(dtype="float16", max_model_len=256, max_num_seqs=4, gpu_memory_utilization=0.5)


@pytest.fixture(scope="module")
def runs(model_path, oracle, tmp_path_factory) -> dict:
    spec = {
        "model": model_path, "prompts": [oracle.encode_text(t) for t in TEXTS],
        "max_tokens": MAX_TOKENS, "engine": ENGINE,
        "runs": [
            {"name": "no_spec", "engine": {"enforce_eager": True}},
            {"name": "ngram_eager", "engine": {"enforce_eager": True, "speculative_config": NGRAM}},
            {"name": "ngram_graph", "engine": {
                "speculative_config": NGRAM,
                "compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY",
                                       "cudagraph_capture_sizes": [4, 8]}}},
        ],
    }
    return run_child(spec, tmp_path_factory.mktemp("sim_spec_decode"))


@pytest.mark.sim_only
def test_ran_on_the_simulated_npu_path(runs):
    for name, run in runs.items():
        assert run["facts"]["simulated"], name
        assert run["facts"]["backends"] == ["npu"], f"{name}: ops ran on {run['facts']['backends']}"
    graph = runs["ngram_graph"]["facts"]
    assert graph["full_sizes"] == [4, 8]  # multiples of the verification query length 1 + k
    assert graph["full_replays"] > 0 and graph["sim_replays"] > 0


def test_greedy_graph_equals_eager_equals_no_speculation(runs):
    ref = runs["no_spec"]["tokens"]
    assert [len(t) for t in ref] == MAX_TOKENS
    assert runs["ngram_eager"]["tokens"] == ref
    assert runs["ngram_graph"]["tokens"] == ref
