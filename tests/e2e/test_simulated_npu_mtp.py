# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""DeepSeek MTP speculative decoding in simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``, float16).

The tiny DeepSeek-V3-shaped checkpoint with one MTP layer (``mtp_checkpoint.py``: MLA + MoE)
runs over ``ascend_ops.simulator`` (docs/simulated-npu.md): the MLA decode's
``npu_fused_infer_attention_score`` with ``query_rope``/``key_rope`` serving ``1 + k``-token
verification queries (TND, ``sparse_mode=3``), inside FULL decode graphs captured for uniform
batches of ``1 + k`` tokens per request and replayed with the per-replay parameter update, the
MTP draft layer's own MLA steps, the MoE ops and the rejection-sampling ops' NPU branch. One child
process builds two engines in turn: no speculation (eager) and MTP with k = 3 and
FULL_DECODE_ONLY graphs (capture sizes 4 and 8). Greedy output must be identical (the exact oracle
of greedy speculative decoding).
"""

from __future__ import annotations

import pytest
from _sim_npu import run_child
from mtp_checkpoint import save_tiny_mtp

K = 3
TEXTS = [
    "one two three four five six seven eight. one two three four five six seven eight. one two",
    "The capital of France is",
    "def fibonacci(n):",
]
MAX_TOKENS = [8, 12, 16]  # requests finish at different steps: the decode batch shrinks 3 -> 1
ENGINE = dict(dtype="float16", max_model_len=256, max_num_seqs=4, gpu_memory_utilization=0.5)


@pytest.fixture(scope="module")
def runs(model_path, oracle, tmp_path_factory) -> dict:
    path = save_tiny_mtp(tmp_path_factory.mktemp("dsv3-mtp-sim"), model_path)
    spec = {
        "model": path, "prompts": [oracle.encode_text(t) for t in TEXTS],
        "max_tokens": MAX_TOKENS, "engine": ENGINE,
        "runs": [
            {"name": "no_spec", "engine": {"enforce_eager": True}},
            {"name": "mtp_graph", "engine": {
                "speculative_config": {"method": "mtp", "num_speculative_tokens": K},
                "compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY",
                                       "cudagraph_capture_sizes": [4, 8]}}},
        ],
    }
    return run_child(spec, tmp_path_factory.mktemp("sim_mtp"))


@pytest.mark.sim_only
def test_mtp_ran_on_the_simulated_npu_path(runs):
    for name, run in runs.items():
        assert run["facts"]["simulated"], name
        assert run["facts"]["backends"] == ["npu"], f"{name}: ops ran on {run['facts']['backends']}"
    graph = runs["mtp_graph"]["facts"]
    assert graph["full_sizes"] == [4, 8]  # multiples of the verification query length 1 + k
    assert graph["full_replays"] > 0 and graph["sim_replays"] > 0
    # the draft's FULL graphs are captured too (vllm_ascend_graph.mrv2_spec_manager): draft
    # prefill graphs of the verification sizes, replayed on the simulator as well
    assert [n for stage, n in graph["draft_full_sizes"] if stage == "prefill"] == [4, 8]
    assert graph["draft_full_replays"] > 0
    assert graph["sim_replays"] >= graph["full_replays"] + graph["draft_full_replays"]
    calls = graph["op_calls"]
    # one prompt step (2 target layers + the MTP layer); every verification is an MLA decode
    assert calls.get("mla_prefill", 0) <= 3 and calls.get("mla_decode", 0) > 0, calls
    assert calls.get("rejection_sample", 0) > 0, calls


def test_mtp_greedy_graph_equals_no_speculation(runs):
    ref = runs["no_spec"]["tokens"]
    assert [len(t) for t in ref] == MAX_TOKENS
    assert runs["mtp_graph"]["tokens"] == ref
