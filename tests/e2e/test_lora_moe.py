"""LoRA on a tiny random Qwen3-MoE (CPU emulation, float32).

vLLM 0.32 applies LoRA to routed experts only inside a modular fused-MoE kernel
(``vllm/lora/layers/fused_moe.py``); the Ascend MoE method is monolithic, so LoRA that would
reach the experts is refused at start-up naming ``--lora-target-modules``
(``vllm_ascend_platform/lora_moe.py``). With the targets restricted to attention, an adapter made
by peft on q/k/v/o serves next to the base model in one batch and matches HF transformers with
the adapter merged by peft (greedy parity rule of ``parity.py``: identical or near ties). The
adapter has rank 256 (``max_lora_rank=256``), above the 128 limit of the NPU operator, so the
ops take their composition path (docs/lora.md).
"""

from __future__ import annotations

import pytest
from engine import close_llm, make_llm
from hf_oracle import HFOracle
from lora_adapters import MergedOracle, make_adapter
from moe_checkpoints import save_tiny
from parity import assert_batch_parity, judge, vllm_step_logprobs

ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
TEXTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time", "1, 2, 3, 4,"]
ROWS = [True, False, True, True]  # adapter rows, with one base-model row in the same batch
NEW = 10
RANK = 256


@pytest.fixture(scope="module")
def tiny(model_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("lora_moe")
    model = save_tiny("qwen3_moe", root / "model", model_path)
    return model, make_adapter(model, root / "adapter", seed=31, rank=RANK, b_std=1.0,
                               targets=ATTENTION)


def test_lora_reaching_moe_experts_fails_at_startup(tiny):
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    try:
        with pytest.raises(Exception, match="LoRA on MoE experts.*--lora-target-modules"):
            close_llm(make_llm(tiny[0], max_model_len=128, enable_lora=True, max_lora_rank=16))
    finally:
        cleanup_dist_env_and_memory()  # the failed start may leave the process group behind


def test_attention_lora_on_moe_matches_hf_merged(tiny):
    import ascend_ops
    from engine import greedy_params
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    model, adapter = tiny
    base, merged = HFOracle(model), MergedOracle(model, adapter)
    prompts = [base.encode_text(t) for t in TEXTS]
    llm = make_llm(model, max_model_len=256, enable_lora=True, max_loras=1, max_lora_rank=RANK,
                   lora_target_modules=ATTENTION)
    try:
        ascend_ops.reset_call_counts()
        req = LoRARequest("attn", 1, adapter)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts],
                            greedy_params(NEW), lora_request=[req if r else None for r in ROWS],
                            use_tqdm=False)
        counts = ascend_ops.call_counts()
    finally:
        close_llm(llm)
    refs = [(merged if r else base).greedy(p, NEW) for r, p in zip(ROWS, prompts, strict=True)]
    verdicts = [judge(list(o.outputs[0].token_ids), vllm_step_logprobs(o.outputs[0]), ref)
                for o, ref in zip(outs, refs, strict=True)]
    assert_batch_parity(verdicts, min_identical=len(TEXTS) - 1, label="qwen3_moe tiny + LoRA")
    changed = sum(ref.tokens != base.greedy(p, NEW).tokens
                  for r, p, ref in zip(ROWS, prompts, refs, strict=True) if r)
    assert changed >= 2, "the adapter barely changes the output"
    assert counts.get("grouped_matmul", 0) > 0, "the Ascend MoE path did not run"
    assert counts.get("lora_linear", 0) + counts.get("sgmv_shrink", 0) > 0, "no LoRA op ran"
