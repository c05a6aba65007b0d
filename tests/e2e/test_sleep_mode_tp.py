# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sleep mode with tensor parallelism (TP=2, CPU emulation, two worker processes) and on a tiny
MoE model (Qwen3-MoE, our MoE runner; TP=1).

Every rank has its own "ascend" sleep-mode backend and tagged memory; vLLM's executor sends
``sleep`` / ``wake_up`` / ``reload_weights`` to all ranks (``collective_rpc``). Oracle: the
engine's own greedy tokens before sleeping (TP=2 vs TP=1 equality is test_parallel.py's). A tiny
random-weight Qwen3 keeps the two-process start short.
"""

from __future__ import annotations

import os
import shutil

import pytest

PROMPTS = ["The capital of France is", "def fibonacci(n):"]


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory) -> str:
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from vllm_ascend import demo_model

    tok_src = str(demo_model.prepare())
    path = tmp_path_factory.mktemp("tiny_qwen3_sleep")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_src, name), path / name)
    cfg = Qwen3Config(
        vocab_size=len(AutoTokenizer.from_pretrained(str(path))), hidden_size=64,
        intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, max_position_embeddings=512, tie_word_embeddings=False,
        torch_dtype="float32", initializer_range=0.2)
    torch.manual_seed(0)
    Qwen3ForCausalLM(cfg).to(torch.float32).save_pretrained(str(path))
    return str(path)


def test_tp2_sleep_wake_reload(tiny_qwen3):
    from engine import close_llm
    from vllm import LLM, SamplingParams

    saved = os.environ.get("VLLM_ASCEND_EMULATE_DEVICE_MEMORY")
    os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = "2GiB"
    llm = LLM(model=tiny_qwen3, dtype="float32", max_model_len=256, enforce_eager=True,
              gpu_memory_utilization=0.3, seed=0, tensor_parallel_size=2,
              enable_sleep_mode=True)
    try:
        params = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)

        def greedy():
            return [list(o.outputs[0].token_ids)
                    for o in llm.generate(PROMPTS, params, use_tqdm=False)]

        reference = greedy()
        states = llm.collective_rpc(lambda self: self.sleep_mode_backend.state())
        assert states == ["RUNNING", "RUNNING"]
        llm.sleep(level=1)
        states = llm.collective_rpc(lambda self: self.sleep_mode_backend.state())
        assert states == ["SUSPENDED", "SUSPENDED"]
        llm.wake_up()
        assert greedy() == reference
        llm.sleep(level=2)
        llm.wake_up(tags=["weights"])
        llm.collective_rpc("reload_weights")
        llm.wake_up(tags=["kv_cache"])
        assert greedy() == reference
    finally:
        close_llm(llm)
        if saved is None:
            os.environ.pop("VLLM_ASCEND_EMULATE_DEVICE_MEMORY", None)
        else:
            os.environ["VLLM_ASCEND_EMULATE_DEVICE_MEMORY"] = saved


def test_moe_sleep_wake_reload(tmp_path):
    from engine import close_llm
    from moe_checkpoints import save_tiny
    from vllm import LLM, SamplingParams

    from vllm_ascend import demo_model

    path = save_tiny("qwen3_moe", tmp_path / "moe", str(demo_model.prepare()))
    llm = LLM(model=path, dtype="float32", max_model_len=256, enforce_eager=True,
              gpu_memory_utilization=0.3, seed=0, enable_sleep_mode=True)
    try:
        params = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)

        def greedy():
            return [list(o.outputs[0].token_ids)
                    for o in llm.generate(PROMPTS, params, use_tqdm=False)]

        reference = greedy()
        llm.sleep(level=1)
        llm.wake_up()
        assert greedy() == reference
        llm.sleep(level=2)
        llm.wake_up(tags=["weights"])
        llm.collective_rpc("reload_weights")
        llm.wake_up(tags=["kv_cache"])
        assert greedy() == reference
    finally:
        close_llm(llm)
