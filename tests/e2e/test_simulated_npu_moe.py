# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tiny DeepSeek-V2 (MLA + MoE) and tiny Qwen3-MoE in simulated-NPU mode (float16), and TP=2.

Per model, one child process builds an eager engine and a graph-mode engine (vLLM's default
FULL_AND_PIECEWISE, capture sizes 1, 2, 4, 8) on the NPU code path over ``ascend_ops.simulator``
(docs/simulated-npu.md). Checks: graph tokens == eager tokens; eager agrees with HF
transformers float32 teacher-forced (the checkpoints' own transformers classes) at >= 97 % of
generated positions. Then tiny Qwen3-MoE with tensor parallel size 2 (two simulated NPUs,
collectives on gloo) gives the TP=1 tokens.

The checkpoints are random-weight models written with transformers' classes
(``moe_checkpoints.save_tiny``; wide init so the next-token distributions are peaked); the
DeepSeek-V2 one has 16 routed experts in 4 groups, since the NPU gating operator
(``npu_moe_gating_top_k``) needs more than 2 experts per group.
"""

from __future__ import annotations

import pytest
from _sim_npu import assert_agreement, run_child, teacher_forced
from moe_checkpoints import save_tiny

TEXTS = [
    "In a small village by the sea there lived an old fisherman who had a daughter",
    "def fibonacci(n):",
    "1, 2, 3, 4,",
    "The capital of France is Paris and the capital of Spain is",
    "Once upon a time",
]
MAX_TOKENS = [6, 3, 8, 5, 7]
CAPTURE_SIZES = [1, 2, 4, 8]
FULL_SIZES = [1, 2, 4]  # FULL (uniform decode) graphs stop at max_num_seqs
ENGINE = dict(dtype="float16", max_model_len=256, max_num_seqs=4, gpu_memory_utilization=0.5,
              block_size=16)


@pytest.fixture(scope="module")
def checkpoints(model_path, tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("sim_moe_ckpt")
    # npu_moe_gating_top_k needs more than 2 experts per group: 16 routed experts in 4 groups
    return {"deepseek_v2": save_tiny("deepseek_v2", root / "deepseek_v2", model_path,
                                     n_routed_experts=16),
            "qwen3_moe": save_tiny("qwen3_moe", root / "qwen3_moe", model_path)}


@pytest.fixture(scope="module")
def prompts(oracle) -> list[list[int]]:
    return [oracle.encode_text(t) for t in TEXTS]


def _spec(path: str, prompts, runs: list[dict]) -> dict:
    return {"model": path, "prompts": prompts, "max_tokens": MAX_TOKENS, "engine": ENGINE,
            "runs": runs}


_EAGER_AND_GRAPH = [
    {"name": "eager", "engine": {"enforce_eager": True}},
    {"name": "graph", "engine": {"compilation_config": {"cudagraph_capture_sizes": CAPTURE_SIZES}}},
]


@pytest.fixture(scope="module")
def results(checkpoints, prompts, tmp_path_factory) -> dict[str, dict]:
    return {kind: run_child(_spec(path, prompts, _EAGER_AND_GRAPH),
                            tmp_path_factory.mktemp(f"sim_{kind}"))
            for kind, path in checkpoints.items()}


@pytest.mark.sim_only
@pytest.mark.parametrize("kind", ["deepseek_v2", "qwen3_moe"])
def test_graph_tokens_equal_eager(results, kind):
    runs = results[kind]
    facts = runs["graph"]["facts"]
    assert facts["cudagraph_mode"] == "FULL_AND_PIECEWISE" and facts["full_sizes"] == FULL_SIZES
    assert facts["full_replays"] > 0 and facts["sim_replays"] > 0
    for name in ("eager", "graph"):
        assert runs[name]["facts"]["backends"] == ["npu"], (kind, name, runs[name]["facts"])
    eager, graph = runs["eager"]["tokens"], runs["graph"]["tokens"]
    assert [len(t) for t in eager] == MAX_TOKENS
    for k, (e, g) in enumerate(zip(eager, graph, strict=True)):
        assert g == e, f"{kind} prompt {k}: graph {g} != eager {e}"


@pytest.mark.parametrize("kind", ["deepseek_v2", "qwen3_moe"])
def test_eager_agrees_with_hf_teacher_forced(results, checkpoints, prompts, kind):
    result = teacher_forced(checkpoints[kind], prompts, results[kind]["eager"]["tokens"])
    assert_agreement(result, f"tiny {kind} float16 simulated NPU vs HF float32")


def test_tensor_parallel_2_equals_1(results, checkpoints, prompts, tmp_path_factory):
    tp2 = run_child(_spec(checkpoints["qwen3_moe"], prompts, [
        {"name": "tp2", "engine": {"enforce_eager": True, "tensor_parallel_size": 2}},
    ]), tmp_path_factory.mktemp("sim_qwen3_moe_tp2"))
    assert tp2["tp2"]["tokens"] == results["qwen3_moe"]["eager"]["tokens"]
