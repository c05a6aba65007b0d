# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE models through ``LLM()`` in emulation: greedy float32 tokens == HF transformers on the same
tiny random weights (Qwen3-MoE, Mixtral), and the MoE path really ran on ascend_ops."""

from __future__ import annotations

import pytest
from engine import close_llm, generate_ids, make_llm
from hf_oracle import HFOracle
from moe_checkpoints import save_tiny
from parity import assert_batch_parity, judge, vllm_step_logprobs

TEXTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time", "1, 2, 3, 4,"]
NEW = 12


def _parity(path, label):
    import ascend_ops

    oracle = HFOracle(path)
    prompts = [oracle.encode_text(t) for t in TEXTS]
    llm = make_llm(path, max_model_len=256)
    try:
        ascend_ops.reset_call_counts()
        outs = generate_ids(llm, prompts, NEW)
        counts = ascend_ops.call_counts()
    finally:
        close_llm(llm)
    verdicts = [judge(list(o.outputs[0].token_ids), vllm_step_logprobs(o.outputs[0]),
                      oracle.greedy(p, NEW)) for o, p in zip(outs, prompts, strict=True)]
    assert_batch_parity(verdicts, min_identical=len(TEXTS) - 1, label=label)
    for op in ("moe_gating_top_k", "moe_init_routing", "grouped_matmul_swiglu", "grouped_matmul",
               "moe_finalize_routing"):
        assert counts.get(op, 0) > 0, f"{op} never ran: the Ascend MoE path was not used ({counts})"


@pytest.mark.parametrize("kind", ["qwen3_moe", "mixtral"])
def test_moe_greedy_parity(kind, model_path, tmp_path):
    _parity(save_tiny(kind, tmp_path / kind, model_path), f"{kind} tiny")


def test_top_k_above_expert_count_fails_at_startup(model_path, tmp_path):
    """num_experts_per_tok > num_experts: LLM() start-up fails naming the setting."""
    path = save_tiny("qwen3_moe", tmp_path / "bad", model_path, num_experts_per_tok=9)
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    try:
        with pytest.raises(Exception, match="num_experts_per_tok=9"):
            close_llm(make_llm(path, max_model_len=128))
    finally:
        cleanup_dist_env_and_memory()  # the failed start may leave the process group behind
