# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tiny random DeepSeek-V3.2 (sparse MLA: lightning indexer + sparse flash attention) through
``LLM()`` on the ``ASCEND_SFA`` backend (docs/sparse-attention.md).

The checkpoint is written with transformers' own ``DeepseekV32ForCausalLM``
(``transformers/models/deepseek_v32``: the reference indexer without the Hadamard rotation and
FP8 rounding): q_lora_rank 48, kv_lora_rank 512, rope 64, an indexer of 64 heads x 128 and
``index_topk`` 16, below the long prompts' lengths, so the indexer's choice matters.

One engine per mode, shared by the module's tests:

* CPU emulation, float32, graphs requested: greedy tokens == transformers' (same sparse model);
  the long prompts' tokens differ from the *dense* model's (transformers with ``index_topk``
  above every length: all positions selected, i.e. dense MLA), while the short prompts, whose
  prompt + generated length never exceeds ``index_topk``, equal the dense model's -- the
  indexer selects, and selects everything when it may;
* simulated NPU, bfloat16, graphs requested: both operators run through their torch_npu calls
  on ``ascend_ops.simulator``; >= 97 % of generated positions agree with transformers float32
  teacher-forced.

Graphs: off for sparse models, with a warning naming ``ASCEND_SFA`` and the reason (the
platform's eager rule, ``startup/config_defaults.py``; the backend also declares
``AttentionCGSupport.NEVER``, docs/sparse-attention.md, "Limits"). Both
engines are started with graphs requested and the test checks no graph was captured.
"""

from __future__ import annotations

import json
import shutil

import pytest
from _sim_npu import assert_agreement, run_child, teacher_forced
from engine import close_llm, generate_ids, make_llm
from hf_oracle import HFOracle
from moe_checkpoints import save_tiny

TOPK = 16
SHARED = ("In a small village by the sea there lived an old fisherman who had a daughter, a boat, "
          "a dog and a garden full of roses, and the people of the village said that")
LONG = [SHARED + " every morning", "The capital of France is Paris and the capital of Spain is "
        "Madrid, and the capital of Italy is Rome, and the capital of Germany is"]
SHORT = ["Once upon a time", "1, 2, 3,"]
NEW = 8
CAPTURE_SIZES = [1, 2, 4]


@pytest.fixture(scope="module")
def checkpoints(model_path, tmp_path_factory) -> dict[str, str]:
    """The sparse checkpoint, and the same weights with ``index_topk`` above every length
    (transformers then selects every position: dense MLA)."""
    root = tmp_path_factory.mktemp("dsv32")
    # 16 routed experts in 4 groups: the NPU gating operator needs more than 2 experts per group.
    # 64 indexer heads, DeepSeek-V3.2's own count (and the A3 operator's maximum): with 8 or 32
    # heads of random weights the boundary of the top-k is close enough that bfloat16 rounding
    # flips some selections (measured: 15/32 and 31/32 teacher-forced positions), while a sum of
    # 64 ReLU terms separates the scores (32/32); float16 gives 32/32 with 8 heads.
    sparse = save_tiny("deepseek_v32", root / "sparse", model_path, index_topk=TOPK, n_routed_experts=16,
                       index_n_heads=64)
    dense = root / "dense"
    shutil.copytree(sparse, dense)
    cfg = json.loads((dense / "config.json").read_text())
    cfg["index_topk"] = 4096
    (dense / "config.json").write_text(json.dumps(cfg))
    return {"sparse": sparse, "dense": str(dense)}


def _hf_class():
    # named, not AutoModelForCausalLM: once vLLM has loaded a config in this process, transformers'
    # AutoConfig maps deepseek_v32 to DeepseekV3Config (vllm/transformers_utils/config.py) and an
    # Auto class would build the dense DeepSeek-V3 -- no indexer
    from transformers import DeepseekV32ForCausalLM

    return DeepseekV32ForCausalLM


@pytest.fixture(scope="module")
def oracles(checkpoints) -> dict[str, HFOracle]:
    out = {k: HFOracle(p, model_cls=_hf_class()) for k, p in checkpoints.items()}
    assert all(hasattr(o.model.model.layers[0].self_attn, "indexer") for o in out.values())
    return out


@pytest.fixture(scope="module")
def prompts(oracles) -> dict[str, list[list[int]]]:
    o = oracles["sparse"]
    out = {"long": [o.encode_text(t) for t in LONG], "short": [o.encode_text(t) for t in SHORT]}
    assert all(len(p) > TOPK for p in out["long"]), [len(p) for p in out["long"]]
    assert all(len(p) + NEW <= TOPK for p in out["short"]), [len(p) for p in out["short"]]
    return out


@pytest.fixture(scope="module")
def emulation(checkpoints, prompts) -> dict:
    """One float32 emulation engine (graphs requested); its tokens for every prompt."""
    import ascend_ops

    llm = make_llm(checkpoints["sparse"], max_model_len=256, max_num_seqs=4, block_size=16,
                   max_num_batched_tokens=32, enable_chunked_prefill=True, enforce_eager=False,
                   compilation_config={"cudagraph_capture_sizes": CAPTURE_SIZES})
    try:
        ascend_ops.reset_call_counts()
        long = generate_ids(llm, prompts["long"], NEW)
        short = generate_ids(llm, prompts["short"], NEW)
        counts = ascend_ops.call_counts()
        comp = llm.llm_engine.vllm_config.compilation_config
        mode = (comp.cudagraph_mode.name, comp.mode.name)
    finally:
        close_llm(llm)
    return {"long": [list(o.outputs[0].token_ids) for o in long],
            "short": [list(o.outputs[0].token_ids) for o in short],
            "counts": counts, "cudagraph_mode": mode}


def test_platform_selects_sfa_backend():
    from types import SimpleNamespace

    from vllm_ascend_platform.platform import NPUPlatform

    path = NPUPlatform.get_attn_backend_cls(None, SimpleNamespace(use_mla=True, use_sparse=True))
    assert path == "vllm_ascend_attention.backends.sfa.AscendSFABackend"


def test_emulation_greedy_equals_transformers(emulation, oracles, prompts):
    sparse = oracles["sparse"]
    for kind in ("long", "short"):
        for ours, p in zip(emulation[kind], prompts[kind], strict=True):
            assert ours == sparse.greedy(p, NEW).tokens, (kind, p)
    counts = emulation["counts"]
    # the DSA operators ran, once per layer per step (2 layers), and no dense MLA decode
    assert counts.get("lightning_indexer", 0) >= 2 * NEW
    assert counts.get("sparse_flash_attention", 0) == counts["lightning_indexer"]
    assert counts.get("mla_decode", 0) == 0 and counts.get("mla_prefill", 0) == 0


def test_indexer_selects(emulation, oracles, prompts):
    dense = oracles["dense"]
    # index_topk >= every length: every position is selected, the tokens are dense MLA's
    for ours, p in zip(emulation["short"], prompts["short"], strict=True):
        assert ours == dense.greedy(p, NEW).tokens, p
    # index_topk below the prompt lengths: the selection changes the model's tokens
    differ = [ours != dense.greedy(p, NEW).tokens
              for ours, p in zip(emulation["long"], prompts["long"], strict=True)]
    assert any(differ), "sparse tokens equal dense MLA's on every long prompt: the indexer selected nothing"


def test_graphs_refused_by_the_sparse_backend(emulation):
    # graphs requested: sparse models run eager (config_defaults.py), nothing is captured
    assert emulation["cudagraph_mode"][0] == "NONE", emulation["cudagraph_mode"]


@pytest.fixture(scope="module")
def simulated(checkpoints, prompts, tmp_path_factory) -> dict:
    spec = {"model": checkpoints["sparse"], "prompts": prompts["long"] + prompts["short"],
            "max_tokens": [NEW] * (len(LONG) + len(SHORT)),
            "engine": dict(dtype="bfloat16", max_model_len=256, max_num_seqs=4, block_size=16,
                           gpu_memory_utilization=0.5),
            "runs": [{"name": "graph", "engine": {"compilation_config": {
                "cudagraph_capture_sizes": CAPTURE_SIZES}}}]}
    return run_child(spec, tmp_path_factory.mktemp("sim_sfa"))["graph"]


@pytest.mark.sim_only
def test_simulated_npu_teacher_forced(simulated, checkpoints, prompts):
    facts = simulated["facts"]
    assert facts["simulated"] and facts["backends"] == ["npu"], facts
    calls = facts["op_calls"]
    assert calls.get("lightning_indexer", 0) > 0 and calls.get("sparse_flash_attention", 0) > 0, calls
    assert facts["cudagraph_mode"] == "NONE" and facts["full_replays"] == facts["piecewise_replays"] == 0, facts
    result = teacher_forced(checkpoints["sparse"], prompts["long"] + prompts["short"], simulated["tokens"],
                            model_cls=_hf_class())
    assert_agreement(result, "tiny DeepSeek-V3.2 simulated NPU bf16")


def test_compressed_kv_models_refused():
    from types import SimpleNamespace

    import vllm_ascend_attention

    with pytest.raises(NotImplementedError, match="compress_ratios"):
        vllm_ascend_attention.select_backend(SimpleNamespace(use_mla=True, use_sparse=True),
                                             SimpleNamespace(compress_ratios=[4, 128]))
