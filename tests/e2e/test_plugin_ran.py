# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Proof that vLLM ran through our plugin: platform, worker, model runner and attention backend
classes are ours, the KV block size is our backend's preference, and the model's norm,
activation, rope, KV-write and attention paths executed ascend_ops ops (call counters)."""

from __future__ import annotations

import pytest
from engine import generate_ids

EXPECTED_OPS = ("rms_norm", "swiglu", "rotary_embedding", "reshape_and_cache",
                "fused_infer_attention")


def _mro(obj) -> list[str]:
    cls = obj if isinstance(obj, type) else type(obj)
    return [f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__]


def _worker_facts(wrapper) -> dict:
    """Runs on the worker (collective_rpc): class names, attention backends, block size."""
    from vllm.platforms import current_platform

    worker = getattr(wrapper, "worker", wrapper)
    ctx = worker.vllm_config.compilation_config.static_forward_context
    backends = sorted({f"{layer.attn_backend.__module__}.{layer.attn_backend.__qualname__}"
                       for layer in ctx.values() if hasattr(layer, "attn_backend")})
    return {"platform": _mro(current_platform), "worker": _mro(worker),
            "runner": _mro(worker.model_runner), "backends": backends,
            "block_size": worker.vllm_config.cache_config.block_size}


def _op_counts(wrapper) -> dict:
    import ascend_ops

    return dict(ascend_ops.call_counts())


@pytest.fixture(scope="module")
def llm(default_llm):
    """The default engine (conftest ``default_llm``), shared with the other modules using it."""
    return default_llm


@pytest.fixture(scope="module")
def facts(llm) -> dict:
    return llm.collective_rpc(_worker_facts)[0]


def test_platform_is_ours(facts):
    assert "vllm_ascend_platform.platform.NPUPlatform" in facts["platform"], facts["platform"]


def test_worker_and_runner_are_ours(facts):
    assert "vllm_ascend_platform.worker.NPUWorker" in facts["worker"], facts["worker"]
    assert "vllm_ascend_platform.model_runner.NPUModelRunner" in facts["runner"], facts["runner"]


def test_attention_backend_is_ours(facts):
    assert facts["backends"], "no attention layer found in the static forward context"
    assert all(b.startswith("vllm_ascend_attention.") for b in facts["backends"]), facts["backends"]
    assert facts["block_size"] == 128  # the backend's preferred KV block size


def test_ascend_ops_ran_during_generation(llm, prompt_ids):
    before = llm.collective_rpc(_op_counts)[0]
    outs = generate_ids(llm, prompt_ids[:2], n=4)
    after = llm.collective_rpc(_op_counts)[0]
    assert all(len(o.outputs[0].token_ids) == 4 for o in outs)
    grew = {op: after.get(op, 0) - before.get(op, 0) for op in EXPECTED_OPS}
    assert all(n > 0 for n in grew.values()), f"op calls during generation: {grew}"
