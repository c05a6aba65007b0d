# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""DeepSeek-V2-style tiny checkpoint (MLA: kv_lora_rank 512, rope dim 64; MoE with group-limited
greedy routing, shared expert, routed scaling) through ``LLM()`` in emulation: greedy float32
tokens == HF transformers, with prefix-cache hits and chunked prefill on the MLA backend.

The platform picks the backend through ``vllm_ascend_attention.select_backend``; the first test
checks that choice directly.
"""

from __future__ import annotations

import pytest
from engine import close_llm, generate_ids, make_llm
from hf_oracle import HFOracle
from moe_checkpoints import save_tiny
from parity import assert_batch_parity, judge, vllm_step_logprobs

SHARED = ("In a small village by the sea there lived an old fisherman who had a daughter, a boat, "
          "a dog and a garden full of roses, and the people of the village said that")
TEXTS = [SHARED + " every morning", SHARED + " never", "def fibonacci(n):", "1, 2, 3, 4,"]
NEW = 10


def test_platform_selects_mla_backend():
    from types import SimpleNamespace

    from vllm_ascend_platform.platform import NPUPlatform

    path = NPUPlatform.get_attn_backend_cls(None, SimpleNamespace(use_mla=True, use_sparse=False))
    assert path == "vllm_ascend_attention.backends.mla.AscendMLABackend"


def test_deepseek_v2_mla_moe_parity(model_path, tmp_path):
    import ascend_ops

    path = save_tiny("deepseek_v2", tmp_path / "dsv2", model_path)
    oracle = HFOracle(path)
    prompts = [oracle.encode_text(t) for t in TEXTS]
    # small token budget: the long prompts are prefilled in chunks; the second shares a prefix
    llm = make_llm(path, max_model_len=256, max_num_batched_tokens=16, max_num_seqs=4,
                   enable_chunked_prefill=True, block_size=16)
    try:
        first = generate_ids(llm, prompts[:1], NEW)  # fills the prefix cache
        ascend_ops.reset_call_counts()
        outs = first + generate_ids(llm, prompts[1:], NEW)
        counts = ascend_ops.call_counts()
    finally:
        close_llm(llm)
    verdicts = [judge(list(o.outputs[0].token_ids), vllm_step_logprobs(o.outputs[0]),
                      oracle.greedy(p, NEW)) for o, p in zip(outs, prompts, strict=True)]
    assert_batch_parity(verdicts, min_identical=len(TEXTS) - 1, label="deepseek_v2 tiny (MLA+MoE)")
    assert counts.get("moe_gating_top_k", 0) > 0 and counts.get("grouped_matmul", 0) > 0
    assert outs[1].num_cached_tokens >= 32, "the shared prefix should be a prefix-cache hit"


@pytest.mark.parametrize(
    "cfg,match",
    [
        (dict(use_mla=True, use_sparse=True, ratios=[4, 8]), "compress_ratios"),
        (dict(use_mla=True, use_sparse=False, ratios=[4, 8]), "compress_ratios"),
    ],
)
def test_compressed_models_refused(cfg, match):
    """Compressed-KV (DeepSeek-V4-style) models are refused by name, sparse or not; sparse MLA
    itself is served by ASCEND_SFA (test_sparse_mla.py)."""
    from types import SimpleNamespace

    import vllm_ascend_attention

    hf = SimpleNamespace(compress_ratios=cfg.pop("ratios", None))
    with pytest.raises(NotImplementedError, match=match):
        vllm_ascend_attention.select_backend(SimpleNamespace(**cfg), hf)
