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
    """Runs on the worker (collective_rpc): class names, attention backends, block size, the
    serving input batch's block tables and device/host buffer pairs."""
    import torch
    from vllm.platforms import current_platform

    worker = getattr(wrapper, "worker", wrapper)
    ctx = worker.vllm_config.compilation_config.static_forward_context
    backends = sorted({f"{layer.attn_backend.__module__}.{layer.attn_backend.__qualname__}"
                       for layer in ctx.values() if hasattr(layer, "attn_backend")})
    batch = worker.model_runner.input_batch
    tables = [{"direct": "compute_slot_mapping" in vars(t),
               "host_twin": t.block_table.gpu is t.block_table.cpu
               and t.slot_mapping.gpu is t.slot_mapping.cpu}
              for t in batch.block_table.block_tables]
    # InputBatch's device tensors and their host twins (``temperature`` / ``temperature_cpu_tensor``;
    # ``num_tokens_no_spec`` is a numpy view of its host tensor, not a device tensor)
    twins = {name: getattr(batch, name[: -len("_cpu_tensor")], None)
             for name in vars(batch) if name.endswith("_cpu_tensor")}
    pairs = [dev is getattr(batch, name) for name, dev in twins.items()
             if isinstance(dev, torch.Tensor)]
    return {"platform": _mro(current_platform), "worker": _mro(worker),
            "runner": _mro(worker.model_runner), "backends": backends,
            "block_size": worker.vllm_config.cache_config.block_size,
            "block_tables": tables, "batch_pairs": pairs}


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
    assert "vllm_ascend_platform.worker.worker.NPUWorker" in facts["worker"], facts["worker"]
    assert "vllm_ascend_platform.worker.model_runner.NPUModelRunner" in facts["runner"], facts["runner"]


def test_input_batch_of_the_serving_runner_is_adopted(facts):
    """The input batch the runner serves with (vLLM rebuilds it for the KV cache's block sizes)
    has its block tables calling the slot mapping directly and, in emulation, every device
    buffer the same host tensor as its twin (docs/architecture.md, model runner)."""
    assert facts["block_tables"], "no block table"
    assert all(t["direct"] and t["host_twin"] for t in facts["block_tables"]), facts["block_tables"]
    assert facts["batch_pairs"] and all(facts["batch_pairs"]), facts["batch_pairs"]


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
